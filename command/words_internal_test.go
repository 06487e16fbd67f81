package command

import "testing"

// TestDecodeANSICUnicode: \u and \U decode to the bytes bash 5.2 prints
// for them (checked with printf %s $'...' | od), also where UTF-8 proper
// has no encoding.
func TestDecodeANSICUnicode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`\u72m`, "rm"},
		{`\U10FFFF`, "\xf4\x8f\xbf\xbf"},
		{`0\U200000`, "0\xf8\x88\x80\x80\x80"},
		{`\uD800`, "\xed\xa0\x80"},
		{`\U7FFFFFFF`, "\xfd\xbf\xbf\xbf\xbf\xbf"},
		{`\U80000000`, ""},
		{`\u0`, ""},
		{`0\U0X`, "0"},
		{`ca\x00t`, "ca"},
		{`ca\0t`, "ca"},
		{`a\U0b`, "a\x0b"},
	} {
		if got := decodeANSIC(c.in); got != c.want {
			t.Errorf("$'%s' = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSedRuns(t *testing.T) {
	for _, c := range []struct {
		script string
		runs   bool
	}{
		{"s/a/b/", false}, {"s/a/b/g", false}, {"s/e/f/g", false}, {"s|/e|e|", false}, {"/eee/d", false},
		{"1,5p", false}, {"$!N", false}, {"y/abc/xyz/", false}, {"# e comment", false}, {"a\\\n text e", false},
		{"e", true}, {"1e", true}, {"s/a/b/e", true}, {"s/a/b/ge", true}, {"s,a,b,w out", true},
		{"p;e", true}, {"/x/ e", true}, {"w out.txt", true}, {"{e}", true}, {"s/a/b/;e", true},
	} {
		if got := sedRuns(c.script) != ""; got != c.runs {
			t.Errorf("sedRuns(%q) = %v, want %v", c.script, got, c.runs)
		}
	}
}
