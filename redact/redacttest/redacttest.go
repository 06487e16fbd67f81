// Package redacttest holds the labelled secrets set and the corpus
// generator that redact's tests and the comparison harness in bench share.
//
// Secrets in the set are templates, expanded with a seeded generator, so
// that no token-shaped string is stored in the repository (scanners and
// push protection would flag it) and every run sees the same text:
// ⟦N|alphabet⟧ becomes N characters of the alphabet, where the alphabet is
// one of A (letters and digits), a (lower case and digits), h (lower-case
// hex), U (upper case and digits 2-7), d (digits), b (letters, digits, - _)
// and s (letters, digits, + /) and B (bech32 upper case). «...» marks a span that must be masked,
// with the record's kind or, written «{kind}...», with that kind: a prose
// line may hold an AWS access key id beside the secret key it labels.
//
// A record's name may start with a category and a slash ("cli/curl-user"):
// the comparison in bench reports recall per category as well as per kind.
// A name without one is in the category of its kind.
package redacttest

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

//go:embed testdata/labelled.txt
var labelled string

// Case is one labelled text: a kind ("none" for a hard negative), a name,
// its category, the expanded text, and the spans of it that must be masked
// with the kind of each.
type Case struct {
	Kind      string
	Name      string
	Category  string
	Text      string
	Spans     [][2]int
	SpanKinds []string // the kind each span must be masked with, parallel to Spans
}

var alphabets = map[byte]string{
	'A': "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	'a': "abcdefghijklmnopqrstuvwxyz0123456789",
	'h': "0123456789abcdef",
	'U': "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
	'd': "0123456789",
	'b': "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
	's': "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	'B': "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}

// Cases parses the embedded set, expanding templates with seed.
func Cases(seed uint64) ([]Case, error) {
	return Parse(labelled, seed)
}

// Parse reads a set: records start with a line "=== KIND NAME" and run to
// the next such line; lines starting with "#" before the first record are
// comments. A record's text has no final newline.
func Parse(src string, seed uint64) ([]Case, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var cases []Case
	var cur *Case
	var body []string
	flush := func() error {
		if cur == nil {
			return nil
		}
		text, spans, kinds, err := expand(strings.Join(body, "\n"), rng)
		if err != nil {
			return fmt.Errorf("case %s: %w", cur.Name, err)
		}
		cur.Text, cur.Spans, cur.SpanKinds = text, spans, kinds
		for i, k := range kinds {
			if k == "" {
				kinds[i] = cur.Kind
			}
		}
		if cur.Kind == "none" && len(spans) > 0 {
			return fmt.Errorf("case %s: a negative case marks spans", cur.Name)
		}
		if cur.Kind != "none" && len(spans) == 0 {
			return fmt.Errorf("case %s: a positive case marks no span", cur.Name)
		}
		cases = append(cases, *cur)
		return nil
	}
	for i, line := range strings.Split(src, "\n") {
		if h, ok := strings.CutPrefix(line, "=== "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			kind, name, _ := strings.Cut(h, " ")
			if name == "" {
				name = kind + "#" + strconv.Itoa(i+1)
			}
			cat, _, ok := strings.Cut(name, "/")
			if !ok {
				cat = kind
			}
			cur, body = &Case{Kind: kind, Name: name, Category: cat}, nil
			continue
		}
		if cur == nil {
			continue
		}
		body = append(body, line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cases, nil
}

// expand replaces templates and removes span marks; a span's kind is ""
// unless the span names one.
func expand(s string, rng *rand.Rand) (string, [][2]int, []string, error) {
	var b strings.Builder
	var spans [][2]int
	var kinds []string
	open, kind := -1, ""
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "«"):
			if open >= 0 {
				return "", nil, nil, fmt.Errorf("nested «")
			}
			open, kind = b.Len(), ""
			s = s[len("«"):]
			if rest, ok := strings.CutPrefix(s, "{"); ok {
				k, after, ok := strings.Cut(rest, "}")
				if !ok || k == "" || strings.ContainsAny(k, " «»") {
					return "", nil, nil, fmt.Errorf("bad span kind after «")
				}
				kind, s = k, after
			}
		case strings.HasPrefix(s, "»"):
			if open < 0 {
				return "", nil, nil, fmt.Errorf("» without «")
			}
			spans = append(spans, [2]int{open, b.Len()})
			kinds = append(kinds, kind)
			open = -1
			s = s[len("»"):]
		case strings.HasPrefix(s, "⟦"):
			end := strings.Index(s, "⟧")
			if end < 0 {
				return "", nil, nil, fmt.Errorf("⟦ without ⟧")
			}
			spec := s[len("⟦"):end]
			ns, alpha, ok := strings.Cut(spec, "|")
			n, err := strconv.Atoi(ns)
			chars := ""
			if len(alpha) == 1 {
				chars = alphabets[alpha[0]]
			}
			if !ok || err != nil || n < 0 || chars == "" {
				return "", nil, nil, fmt.Errorf("bad template ⟦%s⟧", spec)
			}
			b.WriteString(Random(rng, n, chars))
			s = s[end+len("⟧"):]
		default:
			b.WriteByte(s[0])
			s = s[1:]
		}
	}
	if open >= 0 {
		return "", nil, nil, fmt.Errorf("« without »")
	}
	return b.String(), spans, kinds, nil
}

// Random returns n characters drawn from chars.
func Random(rng *rand.Rand, n int, chars string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}
