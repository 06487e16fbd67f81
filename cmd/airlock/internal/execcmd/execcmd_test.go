package execcmd

import "testing"

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512", 512, true}, {"64K", 64 << 10, true}, {"64M", 64 << 20, true}, {"1G", 1 << 30, true},
		{"64MB", 64 << 20, true}, {"64MiB", 64 << 20, true}, {"2k", 2 << 10, true},
		{"", 0, false}, {"M", 0, false}, {"-1M", 0, false}, {"1.5G", 0, false}, {"lots", 0, false},
		{"99999999999G", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestNeedsFull(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--", "true"}, false},
		{[]string{"--json", "--timeout", "2s", "--", "curl", "--network"}, false},
		{[]string{"--network", "proxy", "--", "true"}, true},
		{[]string{"-network=proxy", "--", "true"}, true},
		{[]string{"--resolve", "a:1.2.3.4", "--", "true"}, true},
		{[]string{"--backend", "container", "--", "true"}, true},
		{[]string{"--backend=container", "--", "true"}, true},
		{[]string{"--backend", "bwrap", "--", "true"}, false},
	} {
		if got := NeedsFull(c.args); got != c.want {
			t.Errorf("NeedsFull(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
