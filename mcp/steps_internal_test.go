package mcp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
)

// A session's step counter goes when the session ends: the map holds only
// live sessions, however many come and go.
func TestStepCountersEndWithTheirSession(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{gate: g, opts: (*Options)(nil).withDefaults()}
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	for _, tl := range g.Tools() {
		s.addTool(srv, tl)
	}
	ctx := context.Background()
	count := func() int {
		n := 0
		s.steps.Range(func(any, any) bool { n++; return true })
		return n
	}
	for range 5 {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"expression": "1+1"}}); err != nil {
			t.Fatal(err)
		}
		if count() != 1 {
			t.Fatalf("%d step counters while one session is live", count())
		}
		cs.Close()
		ss.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for count() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d step counters left after the session ended", n)
		}
	}
}
