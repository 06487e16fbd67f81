package redact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPrefilterMatchesNaive compares the automaton with a plain search for
// every keyword, on random text over a small alphabet so that keywords
// overlap and nest often.
func TestPrefilterMatchesNaive(t *testing.T) {
	words := []string{"ab", "b", "abc", "bca", "cab", "AbCa", "aaaa", "c-", "-"}
	p := newPrefilter(words)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		text := make([]byte, rng.IntN(60))
		for i := range text {
			text[i] = "abcABC-x"[rng.IntN(8)]
		}
		var got []string
		p.find(text, func(h hit) { got = append(got, fmt.Sprint(h.word, "@", h.start)) })
		low := bytes.ToLower(text)
		var want []string
		for end := 1; end <= len(text); end++ {
			for wi, w := range words {
				lw := bytes.ToLower([]byte(w))
				if end >= len(lw) && bytes.Equal(low[end-len(lw):end], lw) {
					want = append(want, fmt.Sprint(wi, "@", end-len(lw)))
				}
			}
		}
		if fmt.Sprint(sortStrings(got)) != fmt.Sprint(sortStrings(want)) {
			t.Fatalf("%q: got %v, want %v", text, got, want)
		}
	}
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestShippedRulesCompile keeps rules.yaml valid and its kinds well formed.
func TestShippedRulesCompile(t *testing.T) {
	specs, rules, err := parseRules(rulesYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != len(rules) || len(rules) < 40 {
		t.Fatalf("%d specs, %d rules", len(specs), len(rules))
	}
	for _, bad := range []string{
		"rules: [{kind: Bad_Kind, keywords: [x], pattern: x}]",
		"rules: [{kind: ok, keywords: [x], pattern: '('}]",
		"rules: [{kind: ok, pattern: x}]",
		"rules: [{kind: ok, keywords: [x], check: nope}]",
		"rules: [{kind: ok, keywords: [x], pattern: x, group: nope}]",
		"rules: []",
		"rules: {",
	} {
		if _, _, err := parseRules([]byte(bad)); err == nil {
			t.Errorf("%s: compiled", bad)
		}
	}
}
