package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
)

// TestBusyLimits: past MaxSessionCalls calls of one session, or MaxCalls
// in all, running at once, a call is answered busy at once (not queued),
// and nothing of it runs; once calls end, calls run again.
func TestBusyLimits(t *testing.T) {
	var started atomic.Int32
	release := make(chan struct{})
	reg := blockingTools(&started, release)
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(g, &Options{MaxCalls: 3, MaxSessionCalls: 2})
	ctx := context.Background()
	connect := func() *sdk.ClientSession {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *sdk.ClientSession) string {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if err != nil {
			t.Error(err)
			return ""
		}
		if !res.IsError {
			return "ok"
		}
		var e tool.Error
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &e)
		return string(e.Code)
	}
	waitStarted := func(n int32) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); started.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls started, want %d", started.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	a, b := connect(), connect()
	var wg sync.WaitGroup
	results := make(chan string, 3)
	for range 2 {
		wg.Go(func() { results <- call(a) })
	}
	waitStarted(2)
	if got := call(a); got != string(tool.CodeBusy) {
		t.Errorf("a third call of a session at MaxSessionCalls 2: %q, want busy", got)
	}
	wg.Go(func() { results <- call(b) })
	waitStarted(3)
	if got := call(b); got != string(tool.CodeBusy) {
		t.Errorf("a call past MaxCalls 3 in all: %q, want busy", got)
	}
	if n := started.Load(); n != 3 {
		t.Errorf("%d calls ran, want the 3 admitted", n)
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if r != "ok" {
			t.Errorf("an admitted call ended %q", r)
		}
	}
	if got := call(a); got != "ok" {
		t.Errorf("a call once the others ended: %q", got)
	}
}
