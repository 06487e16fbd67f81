package redact

import (
	"strings"
	"testing"
)

// FuzzShellWords checks, on any command line, that the words are in order,
// every byte of a word comes from the byte it says, and the count is bounded.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{
		`mysqldump -uroot -p'S3 cret' --all-databases > dump.sql`,
		`curl -u "ci:pa\"ss" https://x; echo done`,
		`sshpass -p 'unterminated`, `a\ b "c\\d" 'e\f' # comment`, "x\ty\r\nz", `"$PW" '$PW' \$PW`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text := []byte(s)
		words := shellWords(text, 0, len(text))
		if len(words) > MaxCLIWords {
			t.Fatalf("%d words, over MaxCLIWords", len(words))
		}
		last := -1
		for _, w := range words {
			if len(w.text) != len(w.at) || len(w.text) != len(w.lit) {
				t.Fatalf("word %q: %d offsets, %d literal marks", w.text, len(w.at), len(w.lit))
			}
			for i, at := range w.at {
				if at <= last || at >= len(text) || text[at] != w.text[i] {
					t.Fatalf("word %q byte %d from offset %d after %d", w.text, i, at, last)
				}
				last = at
			}
		}
	})
}

// FuzzFlagTemplate checks that any template either is refused or parses to
// a flag that starts with '-' or '/' and reads back the way it was written.
func FuzzFlagTemplate(f *testing.F) {
	for _, s := range []string{"-p VALUE", "-pVALUE", "--password=VALUE", "-u USER:VALUE", "-passout pass:VALUE", "/p:VALUE", "-p USER", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ft, err := parseFlagTemplate(s)
		if err != nil {
			return
		}
		if len(ft.flag) < 2 || ft.flag[0] != '-' && ft.flag[0] != '/' {
			t.Fatalf("%q: flag %q", s, ft.flag)
		}
		back := ft.flag
		if !ft.attached {
			back += " "
		}
		if ft.user != 0 {
			back += "USER" + string([]byte{ft.user})
		}
		if back += ft.prefix + "VALUE"; back != s {
			t.Fatalf("%q reads back as %q", s, back)
		}
		if strings.Contains(ft.prefix, " ") {
			t.Fatalf("%q: prefix %q has a space", s, ft.prefix)
		}
	})
}
