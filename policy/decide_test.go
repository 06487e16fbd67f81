package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"airlock.dev/airlock/tool"
)

var (
	allRisks   = []tool.Risk{tool.RiskLow, tool.RiskMedium, tool.RiskHigh}
	allEffects = []tool.Effect{tool.EffectRead, tool.EffectWrite, tool.EffectExternal}
)

// want is the part of a Decision a table checks.
type want struct {
	action Action
	code   tool.Code
	rule   string
}

func got(d Decision) want { return want{d.Action, d.Code, d.Rule} }

func (w want) String() string { return fmt.Sprintf("%s/%s/%s", w.action, w.code, w.rule) }

var (
	allow = func(rule string) want { return want{Allow, "", rule} }
	ask   = func(rule string) want { return want{Ask, tool.CodeApprovalRequired, rule} }
	deny  = func(rule string) want { return want{Deny, tool.CodeDenied, rule} }
)

// TestDecideMatrix checks every role, mode, effect and risk of the default
// policy against the tables written out here by hand.
func TestDecideMatrix(t *testing.T) {
	maxRisk := map[string]tool.Risk{
		"viewer": tool.RiskLow, "operator": tool.RiskMedium, "admin": tool.RiskHigh,
		"": tool.RiskMedium, // DefaultRole
	}
	needs := map[tool.Risk]string{tool.RiskMedium: "operator", tool.RiskHigh: "admin"}
	modes := map[string]map[tool.Effect]Action{
		"read-only": {tool.EffectRead: Allow, tool.EffectWrite: Deny, tool.EffectExternal: Deny},
		"ask":       {tool.EffectRead: Allow, tool.EffectWrite: Ask, tool.EffectExternal: Ask},
		"auto-edit": {tool.EffectRead: Allow, tool.EffectWrite: Allow, tool.EffectExternal: Ask},
		"auto":      {tool.EffectRead: Allow, tool.EffectWrite: Allow, tool.EffectExternal: Allow},
		"":          {tool.EffectRead: Allow, tool.EffectWrite: Ask, tool.EffectExternal: Ask}, // DefaultMode
	}
	p := Default()
	n := 0
	for role, bound := range maxRisk {
		for mode, byEffect := range modes {
			for _, effect := range allEffects {
				for _, risk := range allRisks {
					modeRule := "mode:" + mode
					if mode == "" {
						modeRule = "mode:ask"
					}
					var w want
					switch {
					case risk > bound:
						w = want{Deny, tool.CodeRoleNotAllowed, "role-bound"}
					case byEffect[effect] == Deny:
						w = deny(modeRule)
					case risk == tool.RiskHigh:
						w = ask("high-risk-asks") // the rule names an ask over the mode's
					case byEffect[effect] == Ask:
						w = ask(modeRule)
					default:
						w = allow(modeRule)
					}
					in := Input{Tool: "t", Risk: risk, Effect: effect, Role: role, Mode: mode}
					d := p.Decide(context.Background(), in)
					if got(d) != w {
						t.Errorf("role %q mode %q %s %s: got %v, want %v", role, mode, effect, risk, got(d), w)
					}
					if d.Action != Allow && (d.Reason == "" || d.Hint == "") {
						t.Errorf("role %q mode %q %s %s: %s without reason or hint: %+v", role, mode, effect, risk, d.Action, d)
					}
					if w.rule == "role-bound" && !strings.Contains(d.Hint, "role "+needs[risk]) {
						t.Errorf("role %q %s: hint %q does not name role %s", role, risk, d.Hint, needs[risk])
					}
					n++
				}
			}
		}
	}
	if n != 4*5*3*3 {
		t.Errorf("checked %d cases", n)
	}
}

func TestDecideDefaultPolicy(t *testing.T) {
	p := Default()
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{"read in default mode", Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead}, allow("mode:ask")},
		{"write in default mode", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite}, ask("mode:ask")},
		{"write in read-only", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "read-only"}, deny("mode:read-only")},
		{"external in auto-edit", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto-edit"}, ask("mode:auto-edit")},
		{"write in auto-edit", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "auto-edit"}, allow("mode:auto-edit")},
		{"external in auto", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto"}, allow("mode:auto")},
		{"high risk admin auto", Input{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto"}, ask("high-risk-asks")},
		{"high risk admin read-only write", Input{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectWrite, Role: "admin", Mode: "read-only"}, deny("mode:read-only")},
		{"high risk operator", Input{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectRead, Mode: "auto"}, want{Deny, tool.CodeRoleNotAllowed, "role-bound"}},
		{"medium risk viewer", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectRead, Role: "viewer"}, want{Deny, tool.CodeRoleNotAllowed, "role-bound"}},
		{"unknown role", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "root"}, want{Deny, tool.CodeInvalidCall, "unknown-role"}},
		{"unknown mode", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "yolo"}, want{Deny, tool.CodeInvalidCall, "unknown-mode"}},
		{"role names are exact", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "Admin"}, want{Deny, tool.CodeInvalidCall, "unknown-role"}},
		{"no risk", Input{Tool: "t", Effect: tool.EffectRead}, want{Deny, tool.CodeInternal, "invalid-tool"}},
		{"risk out of range", Input{Tool: "t", Risk: 9, Effect: tool.EffectRead}, want{Deny, tool.CodeInternal, "invalid-tool"}},
		{"no effect", Input{Tool: "t", Risk: tool.RiskLow}, want{Deny, tool.CodeInternal, "invalid-tool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g := got(p.Decide(context.Background(), tt.in)); g != tt.want {
				t.Errorf("got %v, want %v", g, tt.want)
			}
		})
	}
}

func TestDecideUnknownNamesHint(t *testing.T) {
	p := Default()
	tests := []struct {
		in         Input
		wantReason string
		wantHint   string
	}{
		{Input{Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "root"}, `unknown role "root"`, "Use one of the roles: viewer, operator, admin"},
		{Input{Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "yolo"}, `unknown mode "yolo"`, "Use one of the modes: read-only, ask, auto-edit, auto"},
		{Input{Risk: tool.RiskLow, Effect: tool.EffectRead, Role: strings.Repeat("x", 1000)}, `unknown role "` + strings.Repeat("x", maxEcho) + `"...`, "Use one of the roles: viewer, operator, admin"},
	}
	for _, tt := range tests {
		d := p.Decide(context.Background(), tt.in)
		if d.Reason != tt.wantReason || d.Hint != tt.wantHint {
			t.Errorf("got %q / %q, want %q / %q", d.Reason, d.Hint, tt.wantReason, tt.wantHint)
		}
	}
}

func TestDecideNoPolicy(t *testing.T) {
	in := Input{Tool: "calculate", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "admin", Mode: "auto"}
	for name, p := range map[string]*Policy{"zero": {}, "nil": nil} {
		d := p.Decide(context.Background(), in)
		if g, w := got(d), deny("no-policy"); g != w {
			t.Errorf("%s: got %v, want %v", name, g, w)
		}
		if d.Reason == "" || d.Hint == "" {
			t.Errorf("%s: no reason or hint: %+v", name, d)
		}
		if m := p.DefaultMode(); m != "" {
			t.Errorf("%s: DefaultMode %q", name, m)
		}
		if e := p.Effective(); !strings.Contains(string(e), "every call is denied") {
			t.Errorf("%s: Effective %q", name, e)
		}
	}
	var zero Action
	if zero != Deny {
		t.Errorf("the zero Action is %s", zero)
	}
}

// rulesPolicy parses a file of rules, failing the test on error.
func rulesPolicy(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecideRules(t *testing.T) {
	p := rulesPolicy(t, `
rules:
  - id: ask-fetch
    when: tool == "web_fetch"
    decision: ask
    message: fetches are checked
    hint: wait for approval
  - id: allow-everything
    when: "true"
    decision: allow
    message: all fine
  - id: no-secrets
    when: has(args.path) && args.path.endsWith(".env")
    decision: deny
    message: no secrets
    hint: read another file
  - id: no-fetch-evil
    when: tool == "web_fetch" && has(args.url) && args.url.contains("evil")
    decision: deny
    message: evil host
    hint: fetch another host
  - id: ask-large
    when: has(args.n) && args.n > 100
    decision: ask
    message: large
    hint: use a smaller n
  - id: deny-large-too
    when: has(args.n) && args.n > 1000
    decision: deny
    message: too large
    hint: use a smaller n
  - id: quarantine
    when: session == "q" && role == "admin" && mode == "auto" && risk == "low" && effect == "read"
    decision: deny
    message: quarantined
    hint: start another session
  - id: no-upstream-deletes
    when: server == "github" && tool.endsWith("__delete_repo")
    decision: deny
    message: no repository deletes
    hint: delete it on github.com
  - id: no-items
    when: has(args.items) && args.items.exists(i, i == "bad")
    decision: deny
    message: a bad item
    hint: drop it
`)
	read := func(tl string, args map[string]any) Input {
		return Input{Tool: tl, Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "auto", Args: args}
	}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{"allow rule names an allow", read("read_file", nil), allow("allow-everything")},
		{"deny rule", read("read_file", map[string]any{"path": "a/.env"}), deny("no-secrets")},
		{"ask rule in auto", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto"}, ask("ask-fetch")},
		{"a later deny beats an earlier ask", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto", Args: map[string]any{"url": "https://evil.example"}}, deny("no-fetch-evil")},
		{"an allow rule cannot loosen a mode ask", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "ask"}, ask("mode:ask")},
		{"an allow rule cannot loosen a mode deny", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "read-only"}, deny("mode:read-only")},
		{"an allow rule cannot loosen a role bound", Input{Tool: "x", Risk: tool.RiskHigh, Effect: tool.EffectRead, Mode: "auto"}, want{Deny, tool.CodeRoleNotAllowed, "role-bound"}},
		{"an allow rule cannot loosen high-risk-asks", Input{Tool: "x", Risk: tool.RiskHigh, Effect: tool.EffectRead, Role: "admin", Mode: "auto"}, ask("high-risk-asks")},
		{"a rule deny names a deny the mode also gives", Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "read-only", Args: map[string]any{"path": ".env"}}, deny("no-secrets")},
		{"a rule ask names an ask the mode also gives", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "ask"}, ask("ask-fetch")},
		{"the first of two asks names it", Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto", Args: map[string]any{"n": 500.0}}, ask("ask-fetch")},
		{"ask from a number", read("calculate", map[string]any{"n": 101.0}), ask("ask-large")},
		{"ints and doubles compare", read("calculate", map[string]any{"n": 101}), ask("ask-large")},
		{"a later deny over an ask on the same argument", read("calculate", map[string]any{"n": 5000.0}), deny("deny-large-too")},
		{"below both bounds", read("calculate", map[string]any{"n": 100.0}), allow("allow-everything")},
		{"every variable", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "admin", Mode: "auto", Session: "q"}, deny("quarantine")},
		{"every variable, other session", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "admin", Mode: "auto", Session: "r"}, allow("allow-everything")},
		{"a tool's name alone is not its server", read("github__delete_repo", nil), allow("allow-everything")},
		{"a server's tool, server given", Input{Tool: "github__delete_repo", Server: "github", Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "auto"}, deny("no-upstream-deletes")},
		{"the same name on another server", Input{Tool: "github__delete_repo", Server: "gitlab", Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "auto"}, allow("allow-everything")},
		{"a list argument", read("t", map[string]any{"items": []any{"good", "bad"}}), deny("no-items")},
		{"a list argument, nothing bad", read("t", map[string]any{"items": []any{"good"}}), allow("allow-everything")},
		{"unknown role still first", Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "x", Args: map[string]any{"path": ".env"}}, want{Deny, tool.CodeInvalidCall, "unknown-role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(context.Background(), tt.in)
			if g := got(d); g != tt.want {
				t.Errorf("got %v, want %v (%s)", g, tt.want, d.Cause)
			}
		})
	}
}

// TestDecideRuleTexts checks that a rule's message and hint are what the
// caller sees.
func TestDecideRuleTexts(t *testing.T) {
	p := rulesPolicy(t, `
rules:
  - id: no-x
    when: tool == "x"
    decision: deny
    message: x is off
    hint: use y
`)
	d := p.Decide(context.Background(), Input{Tool: "x", Risk: tool.RiskLow, Effect: tool.EffectRead})
	w := Decision{Action: Deny, Code: tool.CodeDenied, Reason: "x is off", Hint: "use y", Rule: "no-x"}
	if d != w {
		t.Errorf("got %+v, want %+v", d, w)
	}
}

func TestDecideFailsClosed(t *testing.T) {
	p := rulesPolicy(t, `
rules:
  - id: ask-first
    when: tool == "t"
    decision: ask
    message: asked
    hint: wait
  - id: path-check
    when: args.path.startsWith("/etc")
    decision: deny
    message: no /etc
    hint: use the workspace
  - id: big-list
    when: has(args.items) && args.items.exists(i, i == "needle")
    decision: allow
  - id: typed
    when: has(args.n) && args.n + 1 > 2
    decision: allow
`)
	big := make([]any, 100000)
	for i := range big {
		big[i] = "hay"
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		args     map[string]any
		want     want
		wantText string // in the reason
	}{
		{"a missing key", context.Background(), map[string]any{}, want{Deny, tool.CodePolicyError, "path-check"}, "could not be evaluated"},
		{"no args at all", context.Background(), nil, want{Deny, tool.CodePolicyError, "path-check"}, "could not be evaluated"},
		{"a key of the wrong type", context.Background(), map[string]any{"path": 7}, want{Deny, tool.CodePolicyError, "path-check"}, "could not be evaluated"},
		{"an unsupported Go value", context.Background(), map[string]any{"path": struct{}{}}, want{Deny, tool.CodePolicyError, "path-check"}, "could not be evaluated"},
		{"over the cost limit", context.Background(), map[string]any{"path": "a", "items": big}, want{Deny, tool.CodePolicyError, "big-list"}, "MaxRuleCost"},
		{"a list under the cost limit", context.Background(), map[string]any{"path": "a", "items": big[:100]}, ask("ask-first"), "asked"},
		{"a failing arithmetic", context.Background(), map[string]any{"path": "a", "n": "s"}, want{Deny, tool.CodePolicyError, "typed"}, "could not be evaluated"},
		{"a cancelled context", cancelled, map[string]any{"path": "a", "items": big}, want{Deny, tool.CodePolicyError, "big-list"}, "big-list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead, Mode: "auto", Args: tt.args}
			d := p.Decide(tt.ctx, in)
			if g := got(d); g != tt.want {
				t.Errorf("got %v, want %v (%v)", g, tt.want, d.Cause)
			}
			if !strings.Contains(d.Reason, tt.wantText) {
				t.Errorf("reason %q does not say %q", d.Reason, tt.wantText)
			}
			if (d.Code == tool.CodePolicyError) != (d.Cause != nil) {
				t.Errorf("code %s with cause %v", d.Code, d.Cause)
			}
		})
	}
}

// TestDecideNilContext checks that a nil context is taken as Background
// rather than crashing the evaluation.
func TestDecideNilContext(t *testing.T) {
	p := rulesPolicy(t, "rules:\n  - {id: a, when: 'tool == \"t\"', decision: deny, message: m, hint: h}\n")
	var ctx context.Context // nil, as a careless caller might pass
	d := p.Decide(ctx, Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead})
	if g, w := got(d), deny("a"); g != w {
		t.Errorf("got %v, want %v", g, w)
	}
}

// TestDecideConcurrent decides from many goroutines at once; run with
// -race it checks that a Policy is safe for concurrent use.
func TestDecideConcurrent(t *testing.T) {
	p, err := Load("testdata/ten-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []Input{
		{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "docs/a.md"}},
		{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "/etc/passwd"}},
		{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto", Args: map[string]any{"command": "sudo ls"}},
		{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto", Args: map[string]any{"url": "https://docs.example.com/x"}},
	}
	want := make([]want, len(inputs))
	for i, in := range inputs {
		want[i] = got(p.Decide(context.Background(), in))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(inputs))
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for i, in := range inputs {
					if g := got(p.Decide(context.Background(), in)); g != want[i] {
						errs <- fmt.Sprintf("input %d: got %v, want %v", i, g, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestDecideTenRules checks the benchmark's rules decide as they say.
func TestDecideTenRules(t *testing.T) {
	p, err := Load("testdata/ten-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   Input
		want want
	}{
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "src/main.go"}}, allow("mode:ask")},
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "/etc/passwd"}}, deny("no-etc")},
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "a/.env"}}, deny("no-dotenv")},
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "viewer", Args: map[string]any{"path": "src/a"}}, deny("viewers-read-docs-only")},
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Role: "viewer", Args: map[string]any{"path": "docs/a"}}, allow("mode:ask")},
		{Input{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto", Args: map[string]any{"command": "git push --force"}}, deny("no-force-push")},
		{Input{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto", Args: map[string]any{"command": "sudo ls"}}, ask("high-risk-asks")},
		{Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto", Args: map[string]any{"url": "https://docs.example.com/x"}}, allow("mode:auto")},
		{Input{Tool: "web_fetch", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto", Args: map[string]any{"url": "https://other.example/"}}, ask("fetch-known-hosts")},
		{Input{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "auto", Args: map[string]any{"path": "a", "content": strings.Repeat("x", 100001)}}, ask("ask-big-writes")},
		{Input{Tool: "send_payment", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Mode: "auto"}, deny("no-payments-in-auto")},
		{Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Session: "quarantine"}, deny("quarantined-session")},
		{Input{Tool: "calculate", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"expression": "1+1"}}, allow("calc-always-fine")},
	}
	for _, tt := range tests {
		d := p.Decide(context.Background(), tt.in)
		if g := got(d); g != tt.want {
			t.Errorf("%s %v: got %v, want %v (%v)", tt.in.Tool, tt.in.Args, g, tt.want, d.Cause)
		}
	}
}

func TestAction(t *testing.T) {
	tests := []struct {
		a    Action
		want string
	}{
		{Deny, "deny"}, {Ask, "ask"}, {Allow, "allow"}, {Action(7), "Action(7)"},
	}
	for _, tt := range tests {
		if g := tt.a.String(); g != tt.want {
			t.Errorf("%d: got %q, want %q", tt.a, g, tt.want)
		}
		b, _ := tt.a.MarshalText()
		if string(b) != tt.want {
			t.Errorf("%d: MarshalText %q, want %q", tt.a, b, tt.want)
		}
		a, err := ParseAction(tt.want)
		if tt.a <= Allow && (a != tt.a || err != nil) {
			t.Errorf("ParseAction(%q) = %s, %v", tt.want, a, err)
		}
		if tt.a > Allow && (a != Deny || err == nil) {
			t.Errorf("ParseAction(%q) = %s, %v: want an error", tt.want, a, err)
		}
	}
}

// TestLists checks which tools a role is shown: the role's bound and the
// rules over the tool's shape decide; rules over arguments and the mode's
// table do not.
func TestLists(t *testing.T) {
	p := rulesPolicy(t, `
rules:
  - id: no-deletes
    when: server == "github" && tool == "github__delete_repo"
    decision: deny
    message: no deletes
    hint: delete on github.com
  - id: no-env
    when: has(args.path) && args.path == ".env"
    decision: deny
    message: no secrets
    hint: read another file
`)
	in := func(name, server string, r tool.Risk, e tool.Effect, role, mode string) Input {
		return Input{Tool: name, Server: server, Risk: r, Effect: e, Role: role, Mode: mode}
	}
	tests := []struct {
		name string
		in   Input
		want bool
	}{
		{"viewer, low", in("read_file", "", tool.RiskLow, tool.EffectRead, "viewer", ""), true},
		{"viewer, medium", in("write_file", "", tool.RiskMedium, tool.EffectWrite, "viewer", ""), false},
		{"operator, medium", in("write_file", "", tool.RiskMedium, tool.EffectWrite, "operator", ""), true},
		{"operator, high", in("run_command", "", tool.RiskHigh, tool.EffectWrite, "operator", ""), false},
		{"admin, high", in("run_command", "", tool.RiskHigh, tool.EffectWrite, "admin", ""), true},
		{"a rule over the shape hides", in("github__delete_repo", "github", tool.RiskLow, tool.EffectWrite, "admin", "auto"), false},
		{"the same name elsewhere", in("github__delete_repo", "gitlab", tool.RiskLow, tool.EffectWrite, "admin", "auto"), true},
		{"a rule over arguments does not hide", in("read_file", "", tool.RiskLow, tool.EffectRead, "operator", ""), true},
		{"a mode that denies the effect does not hide", in("write_file", "", tool.RiskMedium, tool.EffectWrite, "operator", "read-only"), true},
		{"an unknown role sees nothing", in("read_file", "", tool.RiskLow, tool.EffectRead, "nobody", ""), false},
	}
	for _, tt := range tests {
		if got := p.Lists(context.Background(), tt.in); got != tt.want {
			t.Errorf("%s: Lists = %v, want %v", tt.name, got, tt.want)
		}
	}
	if (*Policy)(nil).Lists(context.Background(), Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead}) {
		t.Error("no policy lists a tool")
	}
}
