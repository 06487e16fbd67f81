package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/tool"
)

func open(t *testing.T, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.ApprovalKey == nil {
		cfg.ApprovalKey = []byte("a test's approval key, 32 bytes.")
	}
	rt, err := runtime.Open(context.Background(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestOpenCallClose: a runtime on a fresh workspace runs a call, writes it
// to the audit log under .airlock, and Close lets go of everything, so
// the log verifies and a second runtime opens on the same workspace.
func TestOpenCallClose(t *testing.T) {
	ws := t.TempDir()
	rt := open(t, runtime.Config{Workspace: ws})
	res := rt.Gate.Call(context.Background(), tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"2*21"}`)})
	if res.Error != nil || !strings.Contains(res.Content, "42") {
		t.Fatalf("calculate: %+v", res)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(filepath.Join(ws, ".airlock", "audit.jsonl"))
	if err != nil || !rep.OK || rep.Records != 1 {
		t.Fatalf("audit after one call: %+v, %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".airlock", "state.db")); err != nil {
		t.Errorf("the embedded store is not where the workspace keeps it: %v", err)
	}
	open(t, runtime.Config{Workspace: ws}).Close()
}

// TestOpenRefuses: a bad configuration is an error and leaves nothing
// open: a missing workspace, a policy that does not load, an unknown
// command network, a .airlock that is a symlink.
func TestOpenRefuses(t *testing.T) {
	ws := t.TempDir()
	elsewhere := t.TempDir()
	linked := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(linked, ".airlock")); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]runtime.Config{
		"no workspace":      {},
		"missing workspace": {Workspace: filepath.Join(ws, "none")},
		"missing policy":    {Workspace: ws, Policy: filepath.Join(ws, "none.yaml")},
		"command network":   {Workspace: ws, CommandNetwork: "everywhere"},
		"symlinked state":   {Workspace: linked},
	} {
		cfg.ApprovalKey = []byte("k")
		if rt, err := runtime.Open(context.Background(), &cfg); err == nil {
			rt.Close()
			t.Errorf("%s: opened", name)
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("a refused runtime wrote through the symlinked .airlock: %v", ents)
	}
}

// TestKillSwitchEveryDoor: a runtime's gate reads the kill switch, so a
// killed session's call, or any call while every session is killed, is
// refused with killed before it runs; clearing it lets calls run again.
func TestKillSwitchEveryDoor(t *testing.T) {
	ws := t.TempDir()
	rt := open(t, runtime.Config{Workspace: ws})
	defer rt.Close()
	ctx := context.Background()
	write := func(session, name string) tool.Result {
		return rt.Gate.Call(ctx, tool.Call{Session: session, Mode: "auto", Tool: "write_file",
			Args: json.RawMessage(`{"path":"` + name + `","content":"x"}`)})
	}
	if _, err := rt.Store.KillSession(ctx, "s1", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res := write("s1", "a.txt"); res.Error == nil || res.Error.Code != tool.CodeKilled {
		t.Errorf("a killed session's write: %+v", res)
	}
	if res := write("s2", "b.txt"); res.Error != nil {
		t.Errorf("another session's write: %+v", res.Error)
	}
	if err := rt.Store.SetKillAll(ctx, true); err != nil {
		t.Fatal(err)
	}
	if res := write("s3", "c.txt"); res.Error == nil || res.Error.Code != tool.CodeKilled {
		t.Errorf("a write while every session is killed: %+v", res)
	}
	if err := rt.Store.SetKillAll(ctx, false); err != nil {
		t.Fatal(err)
	}
	if res := write("s3", "c.txt"); res.Error != nil {
		t.Errorf("a write once the kill is lifted: %+v", res.Error)
	}
	for name, want := range map[string]bool{"a.txt": false, "b.txt": true, "c.txt": true} {
		if _, err := os.Stat(filepath.Join(ws, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
}

// TestUpstreamTools: Config.Upstream adds tools made with the open store,
// NoBuiltins leaves airlock's own out, and an Upstream error leaves
// nothing open.
func TestUpstreamTools(t *testing.T) {
	ws := t.TempDir()
	var sawStore bool
	echo := tool.Tool{Name: "up__echo", Server: "up", Description: "echoes", Risk: tool.RiskLow, Effect: tool.EffectRead,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":10}}}`),
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Result{Content: string(c.Args)}, nil
		}}
	rt := open(t, runtime.Config{Workspace: ws, NoBuiltins: true,
		Upstream: func(ctx context.Context, rt *runtime.Runtime, rd *redact.Redactor) ([]tool.Tool, error) {
			sawStore = rt.Store != nil && rd != nil
			return []tool.Tool{echo}, nil
		}})
	defer rt.Close()
	if !sawStore {
		t.Error("Upstream was called without the store or the redactor")
	}
	var names []string
	for _, tl := range rt.Gate.Tools() {
		names = append(names, tl.Name)
	}
	if len(names) != 1 || names[0] != "up__echo" {
		t.Errorf("tools = %v, want only up__echo", names)
	}
	if res := rt.Gate.Call(context.Background(), tool.Call{Tool: "up__echo", Args: json.RawMessage(`{"s":"hi"}`)}); res.Error != nil {
		t.Errorf("up__echo: %+v", res.Error)
	}
	_, err := runtime.Open(context.Background(), &runtime.Config{Workspace: t.TempDir(), ApprovalKey: []byte("k"),
		Upstream: func(context.Context, *runtime.Runtime, *redact.Redactor) ([]tool.Tool, error) {
			return nil, errors.New("no upstream")
		}})
	if err == nil || !strings.Contains(err.Error(), "no upstream") {
		t.Errorf("an Upstream error: %v", err)
	}
}
