package redacttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Planted is a secret placed in a generated corpus: its kind, the category
// of its case, and its byte span.
type Planted struct {
	Kind       string
	Category   string
	Start, End int
}

// filler lines: code, prose and logs with the words rules key on (token,
// key, password, basic, bearer, @, ://) in harmless places, so that a
// detector's prefilter has real work to do.
var filler = []string{
	"func (s *Server) handle(w http.ResponseWriter, r *http.Request) { ctx := r.Context() }",
	"\tif err != nil { return fmt.Errorf(\"open %s: %w\", path, err) }",
	"const maxTokens = 4096 // the token budget per request",
	"import { useState, useEffect } from 'react';",
	"    for key, value in sorted(config.items()):",
	"        self.cache_key = f\"{prefix}:{user_id}\"",
	"SELECT id, email_verified, created_at FROM users WHERE id = $1 LIMIT 50;",
	"The basic idea is simple: each request carries a bearer credential issued by the server.",
	"Authentication is covered in the next chapter, along with password reset flows.",
	"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.",
	"We shipped version 2.14.1 on Tuesday; see https://github.com/org/project/releases for notes.",
	"2024-03-15T10:21:33.120Z INFO  http: GET /api/v1/items?page=2 200 12.4ms remote=10.0.3.17:51234",
	"2024-03-15T10:21:33.452Z WARN  retrying upstream https://api.internal.svc:8443/health (attempt 2/5)",
	"2024-03-15T10:21:34.001Z DEBUG token refreshed for session 9b2f4c1e-7a3d-4e5f-8a9b-0c1d2e3f4a5b",
	"Mar 15 10:21:35 host sshd[48213]: Accepted publickey for deploy from 192.168.1.20 port 52144",
	"commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main, origin/main)",
	"  \"integrity\": \"sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==\",",
	"github.com/stretchr/testify v1.9.0 h1:HtqpIVDClZ4nwg75+f6Lvsy/wHu+3BoSGCbBAcpTsTg=",
	"Please reply to the thread or ping @oncall in #incidents; the key rotation is on Friday.",
	"| name | type | default |\n|------|------|---------|\n| timeout | duration | 30s |",
	"RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl",
	"    password_min_length: 12",
	"  - name: api_key_header\n    value: X-Api-Key",
	"<div class=\"card\"><a href=\"https://docs.example.org/guide\">Guide</a></div>",
}

// Corpus generates about size bytes of mixed text from seed, with the
// labelled set's positive cases planted at random lines (about one line in
// every secretEvery) and its negative cases mixed in as often. The same
// seed gives the same bytes.
func Corpus(size int, seed uint64, secretEvery int) ([]byte, []Planted, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var pos, neg []string
	var posCases []Case
	// Many expansions of the set, so tokens differ across the corpus.
	for round := uint64(0); round < 8; round++ {
		cases, err := Cases(seed*31 + round)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cases {
			if c.Kind == "none" {
				neg = append(neg, c.Text)
			} else {
				pos = append(pos, c.Text)
				posCases = append(posCases, c)
			}
		}
	}
	if secretEvery < 1 {
		return nil, nil, fmt.Errorf("secretEvery must be at least 1")
	}
	var b strings.Builder
	b.Grow(size + 4096)
	var planted []Planted
	for b.Len() < size {
		switch n := rng.IntN(secretEvery); {
		case n == 0:
			i := rng.IntN(len(pos))
			off := b.Len()
			b.WriteString(pos[i])
			c := posCases[i]
			for j, sp := range c.Spans {
				planted = append(planted, Planted{Kind: c.SpanKinds[j], Category: c.Category, Start: off + sp[0], End: off + sp[1]})
			}
		case n == 1:
			b.WriteString(neg[rng.IntN(len(neg))])
		default:
			b.WriteString(filler[rng.IntN(len(filler))])
		}
		b.WriteByte('\n')
	}
	return []byte(b.String()), planted, nil
}
