package policy

import (
	"context"
	"testing"

	"airlock.dev/airlock/tool"
)

// BenchmarkDecide decides a typical call, a file read in the default mode,
// against the default policy plus the ten rules of testdata/ten-rules.yaml;
// none of them matches, so every condition is evaluated.
func BenchmarkDecide(b *testing.B) {
	p, err := Load("testdata/ten-rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	in := Input{
		Tool:    "read_file",
		Risk:    tool.RiskLow,
		Effect:  tool.EffectRead,
		Session: "s-1",
		Args:    map[string]any{"path": "src/main.go", "max_bytes": 65536.0},
	}
	ctx := context.Background()
	if d := p.Decide(ctx, in); d.Action != Allow || d.Rule != "mode:ask" {
		b.Fatalf("got %+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(ctx, in)
	}
}

// BenchmarkDecideDefault is the same call against the default policy alone.
func BenchmarkDecideDefault(b *testing.B) {
	p := Default()
	in := Input{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead, Args: map[string]any{"path": "src/main.go"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(ctx, in)
	}
}
