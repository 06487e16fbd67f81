package scaneval

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a{{u:200B}}b", "a\u200bb"},
		{"{{zw:abc}}", "a\u200bb\u200bc"},
		{"{{tag:Hi}}", "\U000E0048\U000E0069"},
		{"{{hex:ok}}", "6f6b"},
		{"{{rot13:Abc}}", "Nop"},
		{"{{rev:abc}}", "cba"},
		{"{{b64:{{rev:ab}}}}", base64.StdEncoding.EncodeToString([]byte("ba"))},
		{"<title>{{ title }}</title> {{user_email}}", "<title>{{ title }}</title> {{user_email}}"},
	} {
		got, err := expand("t", c.in, 0)
		if err != nil || got != c.want {
			t.Errorf("expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"{{b64:open", "{{u:zz}}", "{{blob:0}}", "{{tag:é}}", strings.Repeat("{{rev:", 6) + "x" + strings.Repeat("}}", 6)} {
		if _, err := expand("t", bad, 0); err == nil {
			t.Errorf("expand(%q): no error", bad)
		}
	}
	a, _ := expand("one", "{{blob:48}}", 0)
	b, _ := expand("two", "{{blob:48}}", 0)
	if a == b || len(a) != 64 {
		t.Errorf("blobs: %q %q", a, b)
	}
}

func TestLoadSplits(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		src.WriteString("%%% " + n + "\nbody " + n + "\n=== RUN inside a body\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "attack-x.txt"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, d := range docs {
		if d.Category != "x" || !d.Attack || !strings.HasPrefix(d.Text, "body ") {
			t.Errorf("bad doc %+v", d)
		}
		if d.Split == Holdout {
			held = append(held, d.Name)
		}
	}
	if len(docs) != 6 || strings.Join(held, ",") != "attack-x/c,attack-x/f" {
		t.Fatalf("%d docs, held out %v", len(docs), held)
	}
	// A blind file is all blind, whatever the index, and leaves the
	// train and held-out assignment of the other files as it was.
	if err := os.WriteFile(filepath.Join(dir, "blind-attack-x.txt"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if docs, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, d := range docs {
		counts[d.Split]++
		blind := strings.HasPrefix(d.Name, "blind-attack-x/")
		if d.Category != "x" || !d.Attack || blind != (d.Split == Blind) {
			t.Errorf("bad doc %+v", d)
		}
	}
	if counts[Train] != 4 || counts[Holdout] != 2 || counts[Blind] != 6 {
		t.Fatalf("splits %v, want 4 train, 2 held out, 6 blind", counts)
	}
	if err := os.WriteFile(filepath.Join(dir, "clean-y.txt"), []byte("%%% a\nx\n%%% a\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Fatal("a repeated name was accepted")
	}
}
