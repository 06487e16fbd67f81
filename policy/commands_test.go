package policy_test

import (
	"errors"
	"testing"

	"airlock.dev/airlock/command"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/protect"
)

func TestCommandsSection(t *testing.T) {
	p, err := policy.Parse([]byte(`
commands:
  deny:
    - name: make
      id: deny:no-make
      message: builds run in CI only
      hint: Push the branch instead
  allow: [curl]
`), "team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		want command.Verdict
		rule string
	}{
		{"make all", command.Deny, "deny:no-make"},
		{"curl https://example.com", command.Allow, ""},
		{"rm -rf /", command.Deny, ""}, // an allow list never loosens a built-in deny
		{"ls", command.Allow, ""},
	} {
		d := p.Commands().Check(c.line, nil)
		if d.Verdict != c.want || c.rule != "" && d.Rule != c.rule {
			t.Errorf("%q: %v (%s), want %v (%s)", c.line, d.Verdict, d.Rule, c.want, c.rule)
		}
	}
	if d := policy.Default().Commands().Check("make all", nil); d.Verdict != command.Allow {
		t.Errorf("the built-in policy: make is %v, want allow", d.Verdict)
	}
	var zero policy.Policy
	if d := zero.Commands().Check("ls", nil); d.Verdict != command.Deny {
		t.Errorf("the zero policy: ls is %v, want deny", d.Verdict)
	}
}

func TestCommandsSectionErrors(t *testing.T) {
	_, err := policy.Parse([]byte("version: 1\ncommands:\n  deny:\n    - name: \"\"\n"), "bad.yaml")
	var pe *policy.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("got %v, want a ParseError at line 2", err)
	}
	if _, err := policy.Parse([]byte("commands:\n  forbid: [x]\n"), "bad.yaml"); err == nil {
		t.Fatal("an unknown list name must be refused")
	}
}

func TestRedactSection(t *testing.T) {
	p, err := policy.Parse([]byte("redact:\n  allow:\n    values: [AKIAEXAMPLEEXAMPLE12]\n    patterns: ['sk-test-[a-z]+']\n"), "team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a := p.RedactAllow(); len(a.Values) != 1 || len(a.Patterns) != 1 {
		t.Fatalf("RedactAllow = %+v", a)
	}
	if _, err := policy.Parse([]byte("redact:\n  allow:\n    patterns: ['(']\n"), "bad.yaml"); err == nil {
		t.Fatal("a pattern that does not compile must be refused")
	}
	if a := policy.Default().RedactAllow(); len(a.Values)+len(a.Patterns) != 0 {
		t.Fatalf("the built-in policy allows %+v", a)
	}
}

func TestUntrustedSection(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"deliver", ""}, {"ask", "ask"}, {"deny", "deny"}} {
		p, err := policy.Parse([]byte("untrusted:\n  on_flagged: "+c.in+"\n"), "team.yaml")
		if err != nil || p.OnFlagged() != c.want {
			t.Fatalf("on_flagged %s: %q, %v; want %q", c.in, p.OnFlagged(), err, c.want)
		}
	}
	if _, err := policy.Parse([]byte("untrusted:\n  on_flagged: maybe\n"), "bad.yaml"); err == nil {
		t.Fatal("an unknown on_flagged must be refused")
	}
}

func TestProtectedSection(t *testing.T) {
	p, err := policy.Parse([]byte("protected:\n  ask: [pyproject.toml]\n  deny: [deploy/]\n  remove: [Makefile]\n"), "team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want protect.Verdict
	}{
		{"pyproject.toml", protect.Ask},
		{"deploy/prod.env", protect.Deny},
		{"Makefile", protect.Allow},
		{".git/config", protect.Ask},
	} {
		if d := p.Protected().Check(c.path); d.Verdict != c.want {
			t.Errorf("Protected().Check(%q) = %v, want %v", c.path, d.Verdict, c.want)
		}
	}
	// The command policy judges writes by the same list.
	for _, c := range []struct {
		line string
		want command.Verdict
		rule string
	}{
		{"echo x >> pyproject.toml", command.Ask, protect.RuleHostExecuted},
		{"cp x deploy/prod.env", command.Deny, protect.RuleProtected},
		{"echo all: > Makefile", command.Allow, ""},
		{"echo x > .git/config", command.Ask, protect.RuleHostExecuted},
	} {
		d := p.Commands().Check(c.line, nil)
		if d.Verdict != c.want || c.rule != "" && d.Rule != c.rule {
			t.Errorf("%q: %v (%s), want %v (%s)", c.line, d.Verdict, d.Rule, c.want, c.rule)
		}
	}
	if d := policy.Default().Commands().Check("echo all: > Makefile", nil); d.Rule != protect.RuleHostExecuted {
		t.Errorf("the built-in policy: writing Makefile is %v %s, want %s", d.Verdict, d.Rule, protect.RuleHostExecuted)
	}
	_, err = policy.Parse([]byte("version: 1\nprotected:\n  remove: [.airlock]\n"), "bad.yaml")
	var pe *policy.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("removing airlock's own state: %v, want a ParseError at line 2", err)
	}
}
