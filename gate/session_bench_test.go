package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/storeurl/storeurltest"
	"airlock.dev/airlock/tool"
)

// BenchmarkSessionState is what keeping a session's state in the store
// costs a call, side by side with the gate's memory alone (no Sessions:
// nothing shared across processes), on each backend:
//   - medium: a medium-risk call, which reads the session's state (kill
//     flags, flagged bit, new observations) before it runs;
//   - untrusted: a low-risk call whose untrusted result carries ten
//     values, which are written to the session's observations.
//
// The audit log, the ledger and the redactor are off, so that the
// figures are the session's alone.
func BenchmarkSessionState(b *testing.B) {
	page := ""
	for i := range 10 {
		page += fmt.Sprintf("see https://host%d.example/page%d ", i, i)
	}
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		{Name: "lookup", Description: "a medium-risk read", Risk: tool.RiskMedium, Effect: tool.EffectRead,
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"url":{"type":"string","maxLength":512}}}`),
			Run:    func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Content: "ok"}, nil }},
		{Name: "page", Description: "an untrusted page", Risk: tool.RiskLow, Effect: tool.EffectRead, Untrusted: true,
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Run:    func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Content: page}, nil }},
	} {
		if err := reg.Register(tl); err != nil {
			b.Fatal(err)
		}
	}
	type backend struct {
		name     string
		sessions store.Sessions
	}
	backends := []backend{{"memory", nil}}
	for _, sb := range storeurltest.Backends(b, "gate_bench") {
		backends = append(backends, backend{sb.Name, storeurltest.Open(b, sb)})
	}
	ctx := context.Background()
	for _, be := range backends {
		o := &gate.Options{Policy: policy.Default(), Sessions: be.sessions,
			Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutApprovalKey}
		if be.sessions == nil {
			o.Without |= gate.WithoutSessions
		}
		g, err := gate.New(reg, o)
		if err != nil {
			b.Fatal(err)
		}
		// The session has read a page before: its state is not empty.
		if res := g.Call(ctx, tool.Call{Tool: "page", Args: json.RawMessage(`{}`), Session: "bench", Mode: "auto"}); res.Error != nil {
			b.Fatal(res.Error)
		}
		medium := tool.Call{Tool: "lookup", Args: json.RawMessage(`{"url":"https://docs.example/"}`), Session: "bench", Mode: "auto"}
		b.Run("medium/"+be.name, func(b *testing.B) {
			for b.Loop() {
				if res := g.Call(ctx, medium); res.Error != nil {
					b.Fatal(res.Error)
				}
			}
		})
		untrusted := tool.Call{Tool: "page", Args: json.RawMessage(`{}`), Session: "bench", Mode: "auto"}
		b.Run("untrusted/"+be.name, func(b *testing.B) {
			for b.Loop() {
				if res := g.Call(ctx, untrusted); res.Error != nil {
					b.Fatal(res.Error)
				}
			}
		})
	}
}
