package redacttest

import (
	"bytes"
	"testing"
)

func TestParse(t *testing.T) {
	cs, err := Parse("# comment\n=== github-token env\nT=«ghp_⟦4|h⟧»\n=== none\nplain", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "env" || cs[0].Category != "github-token" || cs[1].Name != "none#4" || cs[1].Text != "plain" {
		t.Fatalf("got %+v", cs)
	}
	c := cs[0]
	if len(c.Spans) != 1 || c.Text[:2] != "T=" || c.Text[c.Spans[0][0]:c.Spans[0][1]] != c.Text[2:] || len(c.Text) != 2+4+4 {
		t.Fatalf("got %+v", c)
	}
	cs, err = Parse("=== password cli/x\nk «{aws-access-key-id}AKIA» s «pw»", 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs[0]; c.Category != "cli" || c.Name != "cli/x" || c.Text != "k AKIA s pw" || len(c.SpanKinds) != 2 ||
		c.SpanKinds[0] != "aws-access-key-id" || c.SpanKinds[1] != "password" || c.Text[c.Spans[0][0]:c.Spans[0][1]] != "AKIA" {
		t.Fatalf("got %+v", c)
	}
	for _, bad := range []string{
		"=== k\n«{}a»", "=== k\n«{a b}c»", "=== k\n«{kind",
		"=== k\n«a«b»»", "=== k\na»", "=== k\n«a", "=== k\n⟦4|h", "=== k\n⟦x|h⟧", "=== k\n⟦4|?⟧", "=== k\n⟦4|⟧", "=== k\n⟦4⟧", "=== k\n⟦-1|h⟧",
		"=== none\n«a»", "=== k\nno span",
	} {
		if _, err := Parse(bad, 1); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

func TestCorpusDeterministic(t *testing.T) {
	a, pa, err := Corpus(64<<10, 9, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, pb, _ := Corpus(64<<10, 9, 10)
	c, _, _ := Corpus(64<<10, 10, 10)
	if !bytes.Equal(a, b) || len(pa) != len(pb) || len(pa) == 0 {
		t.Fatal("the same seed gave different corpora")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same corpus")
	}
	for _, p := range pa {
		if p.Start < 0 || p.End > len(a) || p.Start >= p.End {
			t.Fatalf("planted span %+v outside %d bytes", p, len(a))
		}
	}
	if _, _, err := Corpus(10, 1, 0); err == nil {
		t.Fatal("secretEvery 0 accepted")
	}
}
