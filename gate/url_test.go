package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
)

// internalRefuser refuses every URL naming "internal", as an egress
// policy would, and counts what it is asked.
type internalRefuser struct{ checked int }

func (r *internalRefuser) Check(_ context.Context, u string) error {
	r.checked++
	if strings.Contains(u, "internal") {
		return &tool.Error{Code: "egress_denied", Message: u + " is internal", Hint: "Fetch a public host"}
	}
	return nil
}

func TestURLGuard(t *testing.T) {
	var runs int
	fetch := tool.Tool{Name: "fetch", Description: "fetches", Risk: tool.RiskMedium, Effect: tool.EffectExternal,
		URLArgs: []string{"url"},
		Schema:  json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"url":{"type":"string","maxLength":256}}}`),
		Run: func(context.Context, *tool.Call) (tool.Result, error) {
			runs++
			return tool.Result{Content: "page"}, nil
		}}
	reg := tool.NewRegistry()
	if err := reg.Register(fetch); err != nil {
		t.Fatal(err)
	}
	ref := &internalRefuser{}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Egress: ref, Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args, mode, decision string
		code                 tool.Code
		ran                  bool
	}{
		{`{"url":"https://public.example/"}`, "auto", "allow", "", true},
		{`{"url":"http://internal.example/"}`, "auto", "deny", "egress_denied", false},
		// The guard runs before the approval stage: a URL that can never
		// be fetched is refused, not parked for a person.
		{`{"url":"http://internal.example/"}`, "ask", "deny", "egress_denied", false},
		{`{"url":"https://public.example/"}`, "ask", "ask", tool.CodeApprovalRequired, false},
		{`{}`, "auto", "allow", "", true}, // absent: nothing to check
	} {
		before := runs
		res := g.Call(context.Background(), tool.Call{Tool: "fetch", Args: json.RawMessage(c.args), Mode: c.mode})
		code := tool.Code("")
		if res.Error != nil {
			code = res.Error.Code
		}
		if res.Decision != c.decision || code != c.code || (runs > before) != c.ran {
			t.Errorf("%s in %s: %s %q ran %v, want %s %q ran %v", c.args, c.mode, res.Decision, code, runs > before, c.decision, c.code, c.ran)
		}
		if code == "egress_denied" && res.Rule != gate.URLRule {
			t.Errorf("%s: rule %q, want %q", c.args, res.Rule, gate.URLRule)
		}
	}
	g, _ = gate.New(reg, &gate.Options{Policy: policy.Default(), Without: bare})
	if res := g.Call(context.Background(), tool.Call{Tool: "fetch", Args: json.RawMessage(`{"url":"https://public.example/"}`), Mode: "auto"}); res.Decision != "deny" {
		t.Errorf("with no egress policy: %s, want deny", res.Decision)
	}
}
