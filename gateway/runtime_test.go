package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/tool"
)

// TestThroughTheGate: upstream tools in a runtime's gate: a non-idempotent
// tool called twice under one idempotency key runs once upstream, a rule
// over server denies before the upstream sees anything, and the audit
// log records the calls.
func TestThroughTheGate(t *testing.T) {
	up := newUpstream(t)
	var counted atomic.Int32
	up.srv.AddTool(&sdk.Tool{Name: "count", Description: "Counts a charge.", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			counted.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "counted"}}}, nil
		})
	ws := t.TempDir()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte(`version: 1
rules:
  - id: no-upstream-writes
    when: server == "up" && tool == "up__write"
    decision: deny
    message: writes to up are not allowed
    hint: use another server
`), 0o600)
	c := config(t, map[string]*gateway.Server{"up": {URL: up.url}})
	var gw *gateway.Gateway
	rt, err := runtime.Open(context.Background(), &runtime.Config{Workspace: ws, Policy: pol, ApprovalKey: []byte("k"), NoBuiltins: true,
		Upstream: func(ctx context.Context, rt *runtime.Runtime, _ *redact.Redactor) ([]tool.Tool, error) {
			var err error
			if gw, err = gateway.Open(ctx, c, &gateway.Options{Pins: rt.Store}); err != nil {
				return nil, err
			}
			return gw.Tools(), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	defer rt.Close()
	call := func(name, key string) tool.Result {
		return rt.Gate.Call(context.Background(), tool.Call{Tool: name, Args: json.RawMessage(`{}`), Session: "s", Mode: "auto", IdempotencyKey: key})
	}
	first, second := call("up__count", "charge-1"), call("up__count", "charge-1")
	if first.Error != nil || second.Error != nil || !second.Replayed || counted.Load() != 1 {
		t.Errorf("one key, two calls: %+v / %+v; the upstream counted %d", first.Error, second, counted.Load())
	}
	if res := call("up__count", "charge-2"); res.Error != nil || counted.Load() != 2 {
		t.Errorf("another key: %+v; counted %d", res.Error, counted.Load())
	}
	if res := call("up__write", ""); res.Error == nil || res.Rule != "no-upstream-writes" {
		t.Errorf("a rule over server: %+v", res)
	}
	if res := rt.Gate.Call(context.Background(), tool.Call{Tool: "up__count", Args: json.RawMessage(`{}`), Session: "s2"}); res.Error == nil || res.Error.Code != tool.CodeApprovalRequired {
		t.Errorf("an unannotated tool in ask mode: %+v, want approval_required", res)
	}
	if counted.Load() != 2 {
		t.Errorf("the upstream counted %d calls, want 2", counted.Load())
	}
}
