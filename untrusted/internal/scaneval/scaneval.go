// Package scaneval loads the injection scanner's evaluation set
// (untrusted/testdata/scaneval): hand-written documents, each labelled
// with its category (an attack category or a kind of clean document) and
// its split (train, held out or blind), with readable {{op:arg}}
// expansions for invisible and encoded text. The evaluation test reads it
// through Load, and so would a trainer, which must read the Train split
// only.
package scaneval

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Splits. Every HoldoutEvery-th document of a file, from index
// HoldoutEvery-1, is held out: about a third of each category. Files
// named with BlindPrefix are the blind split, every document of them:
// written by authors who never saw the scanner's rules, so that it
// measures how the rules generalise rather than how well they were fitted.
const (
	Train   = "train"
	Holdout = "holdout"
	Blind   = "blind"
	// BlindPrefix starts the name of a blind split's file:
	// blind-attack-encoded.txt is the blind split of category encoded.
	BlindPrefix = "blind-"
	// HoldoutEvery spaces the held-out documents in each file.
	HoldoutEvery = 3
	// MaxBlobBytes bounds a {{blob:N}} or {{pem:N}} expansion.
	MaxBlobBytes = 1 << 16
	// MaxNesting bounds nested expansions ({{b64:{{b64:...}}}}).
	MaxNesting = 4
)

// Doc is one labelled document.
type Doc struct {
	Name     string `json:"name"`     // file stem and document name: "attack-encoded/b64-email"
	Category string `json:"category"` // the file stem less its "attack-" or "clean-" prefix
	Attack   bool   `json:"attack"`   // true: the scanner should flag it
	Split    string `json:"split"`    // Train, Holdout or Blind
	Text     string `json:"text"`
}

// Load reads every attack-*.txt and clean-*.txt file in dir, and their
// blind-attack-*.txt and blind-clean-*.txt counterparts, in name order.
func Load(dir string) ([]Doc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var docs []Doc
	for _, f := range files {
		stem := strings.TrimSuffix(filepath.Base(f), ".txt")
		kind, blind := strings.CutPrefix(stem, BlindPrefix)
		var attack bool
		var cat string
		switch {
		case strings.HasPrefix(kind, "attack-"):
			attack, cat = true, strings.TrimPrefix(kind, "attack-")
		case strings.HasPrefix(kind, "clean-"):
			cat = strings.TrimPrefix(kind, "clean-")
		default:
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		parsed, err := parse(stem, string(b))
		if err != nil {
			return nil, err
		}
		for i, d := range parsed {
			d.Category, d.Attack, d.Split = cat, attack, Train
			switch {
			case blind:
				d.Split = Blind
			case i%HoldoutEvery == HoldoutEvery-1:
				d.Split = Holdout
			}
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("scaneval: no documents in %s", dir)
	}
	return docs, nil
}

// parse splits a file at its "%%% name" lines and expands each body.
func parse(stem, src string) ([]Doc, error) {
	var docs []Doc
	seen := map[string]bool{}
	for _, part := range strings.Split("\n"+src, "\n%%% ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			return nil, fmt.Errorf("scaneval: %s: empty or repeated document name %q", stem, name)
		}
		seen[name] = true
		full := stem + "/" + name
		text, err := expand(full, strings.TrimRight(body, "\n"), 0)
		if err != nil {
			return nil, fmt.Errorf("scaneval: %s: %w", full, err)
		}
		docs = append(docs, Doc{Name: full, Text: text})
	}
	return docs, nil
}

// expand replaces each {{op:arg}} in s, innermost first.
func expand(name, s string, depth int) (string, error) {
	if depth > MaxNesting {
		return "", fmt.Errorf("expansions nested deeper than %d", MaxNesting)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		op, _, _ := strings.Cut(s[i+2:], ":")
		if !ops[op] {
			// Not an expansion: template syntax such as {{ title }} in a
			// document stays as it is.
			b.WriteString("{{")
			s = s[i+2:]
			continue
		}
		j := matchClose(s, i)
		if j < 0 {
			return "", fmt.Errorf("unclosed {{%s: at byte %d", op, i)
		}
		arg := s[i+3+len(op) : j]
		arg, err := expand(name, arg, depth+1)
		if err != nil {
			return "", err
		}
		out, err := apply(name, op, arg)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
		s = s[j+2:]
	}
}

// ops are the expansion operators.
var ops = map[string]bool{"u": true, "zw": true, "tag": true, "b64": true, "hex": true, "rot13": true, "rev": true, "blob": true, "pem": true}

// matchClose returns the index of the "}}" that closes the "{{" at i.
func matchClose(s string, i int) int {
	level := 0
	for k := i; k+1 < len(s); k++ {
		switch s[k : k+2] {
		case "{{":
			level++
			k++
		case "}}":
			level--
			if level == 0 {
				return k
			}
			k++
		}
	}
	return -1
}

func apply(name, op, arg string) (string, error) {
	switch op {
	case "u":
		n, err := strconv.ParseUint(arg, 16, 32)
		if err != nil {
			return "", fmt.Errorf("u:%s: %w", arg, err)
		}
		return string(rune(n)), nil
	case "zw":
		return strings.Join(strings.Split(arg, ""), "\u200b"), nil
	case "tag":
		var b strings.Builder
		for _, r := range arg {
			if r < 0x20 || r > 0x7e {
				return "", fmt.Errorf("tag: %q is not printable ASCII", r)
			}
			b.WriteRune(0xE0000 + r)
		}
		return b.String(), nil
	case "b64":
		return base64.StdEncoding.EncodeToString([]byte(arg)), nil
	case "hex":
		return hex.EncodeToString([]byte(arg)), nil
	case "rot13":
		return rot13(arg), nil
	case "rev":
		r := []rune(arg)
		slices.Reverse(r)
		return string(r), nil
	case "blob", "pem":
		n, err := strconv.Atoi(arg)
		if err != nil || n <= 0 || n > MaxBlobBytes {
			return "", fmt.Errorf("%s:%s: want a size from 1 to %d", op, arg, MaxBlobBytes)
		}
		h := fnv.New64a()
		h.Write([]byte(name))
		rng := rand.New(rand.NewPCG(h.Sum64(), uint64(n)))
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		enc := base64.StdEncoding.EncodeToString(raw)
		if op == "blob" {
			return enc, nil
		}
		var lines []string
		for len(enc) > 64 {
			lines = append(lines, enc[:64])
			enc = enc[64:]
		}
		return strings.Join(append(lines, enc), "\n"), nil
	}
	return "", fmt.Errorf("unknown expansion op %q", op)
}

func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}
