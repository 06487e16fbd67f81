package policy

import (
	"context"
	"testing"

	"airlock.dev/airlock/tool"
)

// TestShapeOnlyMemo: a rule that reads neither args nor session is
// remembered per call shape, and the remembered answers stay right as
// shapes alternate; a rule that reads args is never remembered.
func TestShapeOnlyMemo(t *testing.T) {
	p, err := Parse([]byte(`rules:
  - id: auto-write-x
    when: tool == "x" && mode == "auto" && effect == "write"
    decision: ask
    message: m
    hint: h
  - id: big-n
    when: has(args.n) && args.n > 5
    decision: deny
    message: m
    hint: h
`), "memo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var shapeOnly, byArgs *rule
	for _, r := range p.c.rules {
		switch r.id {
		case "auto-write-x":
			shapeOnly = r
		case "big-n":
			byArgs = r
		}
	}
	if shapeOnly == nil || !shapeOnly.shapeOnly || byArgs == nil || byArgs.shapeOnly {
		t.Fatalf("shape-only flags wrong: %+v %+v", shapeOnly, byArgs)
	}
	for i := 0; i < 3; i++ { // the second and third rounds answer from the memo
		for _, tc := range []struct {
			tool, mode string
			n          int64
			want       Action
		}{
			{"x", "auto", 1, Ask},
			{"y", "auto", 1, Allow},
			{"x", "auto-edit", 1, Allow},
			{"x", "auto", 9, Deny},
			{"y", "auto", 9, Deny},
		} {
			d := p.Decide(context.Background(), Input{Tool: tc.tool, Risk: tool.RiskLow, Effect: tool.EffectWrite,
				Mode: tc.mode, Args: map[string]any{"n": tc.n}})
			if d.Action != tc.want {
				t.Fatalf("round %d %+v: got %v (%s)", i, tc, d.Action, d.Rule)
			}
		}
	}
	if n := shapeOnly.memoLen.Load(); n != 3 {
		t.Errorf("the shape-only rule remembers %d shapes, want 3", n)
	}
	if n := byArgs.memoLen.Load(); n != 0 {
		t.Errorf("the args rule remembers %d shapes, want 0", n)
	}
}
