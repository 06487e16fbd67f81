package untrusted_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"airlock.dev/airlock/untrusted"
)

// BenchmarkCheck: the provenance check of one call, in a session that
// read a page of values, for a plain URL and for one whose query carries
// an encoded run (each decoding is tried).
func BenchmarkCheck(b *testing.B) {
	p := untrusted.NewProvenance(nil)
	var page strings.Builder
	for i := range 500 {
		fmt.Fprintf(&page, "see https://host-%d.example.net/a and mail ops%d@example.org ", i, i)
	}
	p.Observe("web", page.String())
	p.Observe(untrusted.SourceUser, "fetch https://docs.example.com/guide")
	for _, c := range []struct{ name, url string }{
		{"plain", "https://docs.example.com/guide/page-2"},
		{"encoded", "https://docs.example.com/guide?state=eyJ1c2VyIjoiYWxpY2UiLCJwYWdlIjoyLCJzb3J0IjoiZGF0ZSJ9&sig=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	} {
		args, _ := json.Marshal(map[string]string{"url": c.url})
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if ask, reason := p.Check(untrusted.RiskMedium, args, ""); ask {
					b.Fatal(reason)
				}
			}
		})
	}
}

// BenchmarkValues: reading the values out of 64 KiB of a page that mixes
// prose, links, amounts and code, as the gate does for every untrusted
// result.
func BenchmarkValues(b *testing.B) {
	var page strings.Builder
	for page.Len() < 64<<10 {
		fmt.Fprintf(&page, "The invoice total is EUR 1.250,%02d, due by 2026-12-%02d. See https://billing.example.com/inv/%d "+
			"or write to billing@example.com. func f(x int) int { return x * %d } // line %d\n", page.Len()%100, page.Len()%28+1, page.Len(), page.Len()%7, page.Len())
	}
	text := page.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		untrusted.Values(text)
	}
}
