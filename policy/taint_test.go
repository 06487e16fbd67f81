package policy

import (
	"strings"
	"testing"
)

// TestTaintedEgress: untrusted.tainted_egress names the hosts and tools a
// tainted session may still reach; what would switch the protection off,
// or is not a host or tool name, is refused with the entry named.
func TestTaintedEgress(t *testing.T) {
	p, err := Parse([]byte(`version: 1
untrusted:
  tainted_egress:
    allow_hosts: [docs.python.org, "*.corp.example", 192.0.2.10]
    allow_tools: [post_status]
`), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	te := p.TaintedEgress()
	for host, want := range map[string]bool{
		"docs.python.org": true, "DOCS.python.org.": true, "evil.docs.python.org": false, "python.org": false,
		"ci.corp.example": true, "a.b.corp.example": true, "corp.example": false, "evilcorp.example": false,
		"192.0.2.10": true, "192.0.2.1": false,
	} {
		if got := te.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%q) = %v, want %v", host, got, want)
		}
	}
	if !te.AllowsTool("post_status") || te.AllowsTool("pay_invoice") {
		t.Errorf("AllowsTool: %+v", te)
	}
	if d := Default().TaintedEgress(); d.AllowsHost("docs.python.org") || len(d.AllowTools) != 0 {
		t.Errorf("the built-in policy loosens the taint: %+v", d)
	}
	var nilPolicy *Policy
	if nilPolicy.TaintedEgress().AllowsHost("x.example") {
		t.Error("a nil policy loosens the taint")
	}

	for _, c := range []struct{ entry, want string }{
		{`allow_hosts: ["*"]`, `allow_hosts "*" would let a tainted session send anywhere`},
		{`allow_hosts: ["*.com"]`, `too wide`},
		{`allow_hosts: [localhost]`, `too wide`},
		{`allow_hosts: ["Evil.Example"]`, `want a lower-case host name`},
		{`allow_hosts: ["https://x.example/"]`, `want a lower-case host name`},
		{`allow_tools: ["pay.invoice"]`, `is not a tool name`},
		{`allow_hosts: [` + strings.Repeat(`a.example, `, MaxTaintedEgress) + `b.example]`, `MaxTaintedEgress`},
	} {
		_, err := Parse([]byte("version: 1\nuntrusted:\n  tainted_egress:\n    "+c.entry+"\n"), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), "untrusted.tainted_egress") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.entry, err, c.want)
		}
	}
}

// TestDestroy: the mode's decision for a command that destroys workspace
// data: auto-edit asks, auto runs it, read-only denies, an unknown mode
// is denied; each says why and names its mode.
func TestDestroy(t *testing.T) {
	p := Default()
	for mode, want := range map[string]Action{"read-only": Deny, "ask": Ask, "auto-edit": Ask, "auto": Allow, "nope": Deny} {
		d := p.Destroy(mode)
		if d.Action != want || d.Reason == "" || (want != Allow && (d.Hint == "" || d.Code == "")) {
			t.Errorf("Destroy(%q) = %+v, want %s with a reason, code and hint", mode, d, want)
		}
		if mode != "nope" && d.Rule != "mode:"+mode {
			t.Errorf("Destroy(%q).Rule = %q", mode, d.Rule)
		}
	}
	var nilPolicy *Policy
	if d := nilPolicy.Destroy("auto"); d.Action != Deny {
		t.Errorf("a nil policy: %+v, want deny", d)
	}
}
