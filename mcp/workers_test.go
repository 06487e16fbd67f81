package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
)

// TestCallGateNeverWaitsForAWorker runs twice as many blocking calls at
// once as there are workers: they must all be running together (the
// calls past the workers in their callers' goroutines), and all return.
func TestCallGateNeverWaitsForAWorker(t *testing.T) {
	const calls = 2 * gateWorkers
	var started atomic.Int32
	release := make(chan struct{})
	reg := blockingTools(&started, release)
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]tool.Result, calls)
	for i := range calls {
		wg.Go(func() {
			results[i] = callGate(context.Background(), g, tool.Call{Tool: "block", Args: json.RawMessage(`{}`)})
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < calls && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := started.Load(); n < calls {
		t.Errorf("only %d of %d calls are running at once: calls wait for a worker", n, calls)
	}
	close(release)
	wg.Wait()
	for i, res := range results {
		if res.Error != nil || res.Content != "done" {
			t.Errorf("call %d: %+v", i, res)
		}
	}
}

// blockingTools holds the tool "block", which counts itself started and
// returns "done" once release is closed (or its call ends).
func blockingTools(started *atomic.Int32, release chan struct{}) *tool.Registry {
	reg := tool.NewRegistry()
	reg.Register(tool.Tool{
		Name: "block", Description: "waits until released",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Risk:   tool.RiskLow, Effect: tool.EffectRead,
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return tool.Result{Content: "done"}, nil
		},
	})
	return reg
}
