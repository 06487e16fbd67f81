package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
)

// taintFixture is a gate with a page tool (untrusted output), a note tool
// (a workspace write with a path), a low-risk fetch (egress), a pay tool
// (payment) and a send tool (send), each counting what it was asked to
// do; and a sandboxed command tool with a network (egress class).
type taintFixture struct {
	g   *gate.Gate
	ran map[string]int
}

func newTaintFixture(t *testing.T, pol *policy.Policy, sessions store.Sessions) *taintFixture {
	t.Helper()
	f := &taintFixture{ran: map[string]int{}}
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` + props + `}}`)
	}
	str := `{"type":"string","maxLength":4096}`
	count := func(name string) tool.Executor {
		return func(context.Context, *tool.Call) (tool.Result, error) {
			f.ran[name]++
			return tool.Result{Content: "done"}, nil
		}
	}
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		{Name: "page", Description: "a page", Risk: tool.RiskLow, Effect: tool.EffectRead, Untrusted: true,
			Schema: obj(`"text":{"type":"string","maxLength":32768}`),
			Run: func(_ context.Context, c *tool.Call) (tool.Result, error) {
				var a struct{ Text string }
				json.Unmarshal(c.Args, &a)
				return tool.Result{Content: a.Text, Provenance: tool.Provenance{Tool: "page", Source: "web"}}, nil
			}},
		{Name: "note", Description: "writes a note", Risk: tool.RiskMedium, Effect: tool.EffectWrite,
			Schema: obj(`"path":` + str + `,"text":` + str), Run: count("note")},
		{Name: "fetch", Description: "fetches a url", Risk: tool.RiskLow, Effect: tool.EffectExternal, Class: tool.ClassEgress,
			URLArgs: []string{"url"}, Schema: obj(`"url":` + str), Run: count("fetch")},
		{Name: "pay", Description: "pays", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Class: tool.ClassPayment,
			Schema: obj(`"iban":` + str + `,"amount":{"type":"number","minimum":0,"maximum":1e9}`), Run: count("pay")},
		{Name: "send", Description: "sends a message", Risk: tool.RiskMedium, Effect: tool.EffectExternal, Class: tool.ClassSend,
			Schema: obj(`"to":` + str + `,"body":` + str), Run: count("send")},
		{Name: "shell", Description: "runs a command with a network", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Class: tool.ClassEgress,
			CommandArg: "command", Schema: obj(`"command":` + str), Run: count("shell")},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cmds := pol.Commands()
	o := gate.Options{Policy: pol, Redactor: rd, Commands: cmds, Egress: allowAll{}, Sessions: sessions,
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutApprovalKey}
	if sessions == nil {
		o.Without |= gate.WithoutSessions
	}
	if f.g, err = gate.New(reg, &o); err != nil {
		t.Fatal(err)
	}
	return f
}

// allowAll is an egress check that lets every URL through, so that only
// the taint decides here.
type allowAll struct{}

func (allowAll) Check(context.Context, string) error { return nil }

func (f *taintFixture) call(session, mode, name, args, goal string) tool.Result {
	return f.g.Call(context.Background(), tool.Call{Tool: name, Args: json.RawMessage(args), Session: session, Mode: mode, Goal: goal})
}

// TestTaintAsksForExternalEffects: once a session took in untrusted
// content, even content that holds no value to match, every call with an
// external effect asks, of any risk and in every mode that would run it,
// naming ask:tainted-egress; unless the user named each destination, or
// the policy allows the host or the tool. Writes in the workspace and
// commands without a network are not external effects.
func TestTaintAsksForExternalEffects(t *testing.T) {
	f := newTaintFixture(t, policy.Default(), nil)
	const benign = "Quarterly notes: the team met on Tuesday and agreed on the plan."
	calls := []struct{ name, args string }{
		{"fetch", `{"url":"https://attacker.example/x"}`},
		{"pay", `{"iban":"GB82WEST12345698765432","amount":10}`},
		{"send", `{"to":"someone@attacker.example","body":"hi"}`},
		{"shell", `{"command":"ls"}`},
	}
	for _, c := range calls {
		if r := f.call("clean-"+c.name, "auto", c.name, c.args, ""); r.Decision != "allow" {
			t.Errorf("%s before any untrusted content: %s %s %+v, want allow", c.name, r.Decision, r.Rule, r.Error)
		}
	}
	for _, mode := range []string{"auto", "auto-edit", "ask"} {
		for _, c := range calls {
			s := mode + "-" + c.name
			if r := f.page(s, benign); !r.OK() {
				t.Fatalf("page: %+v", r.Error)
			}
			before := f.ran[c.name]
			r := f.call(s, mode, c.name, c.args, "")
			if r.Decision != "ask" || f.ran[c.name] != before {
				t.Errorf("%s in mode %s after untrusted content: %s %s, ran %d times; want an ask", c.name, mode, r.Decision, r.Rule, f.ran[c.name]-before)
			}
			if mode == "auto" && (r.Rule != gate.TaintRule || r.Error == nil || r.Error.Code != tool.CodeApprovalRequired ||
				!strings.Contains(r.Error.Message, "untrusted content") || r.Error.Hint == "") {
				t.Errorf("%s in mode %s: rule %q, error %+v; want %s with a reason and a hint", c.name, mode, r.Rule, r.Error, gate.TaintRule)
			}
		}
	}
	// A write in the workspace is not an external effect.
	f.page("w", benign)
	if r := f.call("w", "auto", "note", `{"path":"notes/a.md","text":"x"}`, ""); r.Decision != "allow" {
		t.Errorf("a workspace write after untrusted content: %s %s, want allow", r.Decision, r.Rule)
	}

	// The user named the destinations: in a message, or in the goal.
	f.page("u", benign)
	f.g.ObserveUser(context.Background(), "u", "fetch https://docs.example.org/guide and pay GB82 WEST 1234 5698 7654 32 the 10 pounds")
	for _, c := range []struct{ name, args, goal string }{
		{"fetch", `{"url":"https://docs.example.org/other/page"}`, ""},
		{"fetch", `{"url":"https://DOCS.example.org./guide"}`, ""},
		{"pay", `{"iban":"GB82WEST12345698765432","amount":10}`, ""},
		{"send", `{"to":"ops-team","body":"the build is green"}`, "tell ops-team when the build is green."},
	} {
		if r := f.call("u", "auto", c.name, c.args, c.goal); r.Decision != "allow" {
			t.Errorf("%s %s to a destination the user named: %s %s %+v, want allow", c.name, c.args, r.Decision, r.Rule, r.Error)
		}
	}
	for _, c := range []struct{ name, args, goal string }{
		{"fetch", `{"url":"https://evil.docs.example.org.attacker.example/"}`, ""},
		{"fetch", `{"url":"https://example.org/"}`, ""},
		{"send", `{"to":"ops-team-leak","body":"x"}`, "tell ops-team when the build is green"},
		{"send", `{"to":"ops","body":"x"}`, "tell ops-team when the build is green"},
		{"send", `{"body":"no recipient at all"}`, ""},
		{"shell", `{"command":"git status"}`, "fetch https://docs.example.org/guide"},
	} {
		if r := f.call("u", "auto", c.name, c.args, c.goal); r.Decision != "ask" || r.Rule != gate.TaintRule {
			t.Errorf("%s %s: %s %s, want an ask by %s", c.name, c.args, r.Decision, r.Rule, gate.TaintRule)
		}
	}

	// The policy loosens the taint per host and per tool.
	pol, err := policy.Parse([]byte("version: 1\nuntrusted:\n  tainted_egress:\n    allow_hosts: [\"*.corp.example\"]\n    allow_tools: [send]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f = newTaintFixture(t, pol, nil)
	f.page("p", benign)
	for _, c := range []struct {
		name, args, want string
	}{
		{"fetch", `{"url":"https://ci.corp.example/status"}`, "allow"},
		{"fetch", `{"url":"https://corp.example.attacker.example/"}`, "ask"},
		{"send", `{"to":"anyone@attacker.example","body":"x"}`, "allow"},
		{"pay", `{"iban":"GB82WEST12345698765432","amount":10}`, "ask"},
	} {
		if r := f.call("p", "auto", c.name, c.args, ""); r.Decision != c.want {
			t.Errorf("with the policy's tainted_egress, %s %s: %s %s, want %s", c.name, c.args, r.Decision, r.Rule, c.want)
		}
	}
}

func (f *taintFixture) page(session, text string) tool.Result {
	args, _ := json.Marshal(map[string]string{"text": text})
	return f.g.Call(context.Background(), tool.Call{Tool: "page", Args: args, Session: session, Mode: "auto"})
}

// TestTaintHoldsAcrossProcesses: the taint is kept in the session store,
// so a gate that never saw the page (another process, a resumed run)
// still asks; and a session flooded with junk past what the store keeps
// is truncated for good, so a value it read before the flood still asks
// as untrusted even once forgotten.
func TestTaintHoldsAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() *sqlite.DB {
		db, err := sqlite.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	first := newTaintFixture(t, policy.Default(), open())
	if r := first.page("s", "nothing to see here"); !r.OK() {
		t.Fatalf("page: %+v", r.Error)
	}
	later := newTaintFixture(t, policy.Default(), open())
	if r := later.call("s", "auto", "fetch", `{"url":"https://attacker.example/x"}`, ""); r.Decision != "ask" || r.Rule != gate.TaintRule {
		t.Fatalf("a gate that never saw the page: %s %s, want an ask by %s", r.Decision, r.Rule, gate.TaintRule)
	}
	if r := later.call("other", "auto", "fetch", `{"url":"https://attacker.example/x"}`, ""); r.Decision != "allow" {
		t.Fatalf("another session: %s %s, want allow", r.Decision, r.Rule)
	}

	// The flood: a path from the page, then more junk values than the
	// store keeps, in pages of 500.
	first.page("flood", "the config lives at /srv/app/deploy.key")
	for i := 0; i < store.MaxObservations/500+2; i++ {
		var b strings.Builder
		for j := range 500 {
			fmt.Fprintf(&b, "https://junk-%d-%d.example.net/ ", i, j)
		}
		if r := first.page("flood", b.String()); !r.OK() {
			t.Fatalf("page %d: %+v", i, r.Error)
		}
	}
	later = newTaintFixture(t, policy.Default(), open())
	for _, p := range []string{"/srv/app/deploy.key", "/srv/app/never-seen"} {
		r := later.call("flood", "auto", "note", `{"path":"`+p+`","text":"x"}`, "")
		if r.Decision != "ask" || r.Rule != gate.IntentRule {
			t.Errorf("a write to %s after the flood: %s %s, want an ask by %s", p, r.Decision, r.Rule, gate.IntentRule)
		}
	}
}
