package gate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/command"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// countingSandbox counts the commands that reach it: the gate must let
// through exactly those its decision allows.
type countingSandbox struct{ runs int }

func (s *countingSandbox) Name() string { return "counting" }

func (s *countingSandbox) Run(context.Context, sandbox.Spec) (sandbox.Result, error) {
	s.runs++
	return sandbox.Result{Stdout: []byte("ok\n")}, nil
}

func TestCommandGuard(t *testing.T) {
	sb := &countingSandbox{}
	reg := tool.NewRegistry()
	if err := reg.Register(tools.RunCommand(sb, t.TempDir(), nil)); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Commands: command.Default(), Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line, mode   string
		decision     string
		code         tool.Code
		rulePrefix   string
		wantExecuted bool
	}{
		// The command policy's allow follows the mode.
		{"ls -la", "ask", "ask", tool.CodeApprovalRequired, "mode:", false},
		{"ls -la", "auto-edit", "allow", "", "", true},
		{"go test ./...", "auto", "allow", "", "", true},
		{"ls -la", "read-only", "deny", tool.CodeDenied, "mode:", false},
		// Its ask stands in every mode that would run it.
		{"curl https://example.com", "auto", "ask", tool.CodeApprovalRequired, "ask:", false},
		{"curl https://example.com", "auto-edit", "ask", tool.CodeApprovalRequired, "ask:", false},
		// Its deny stands everywhere, with its own code and rule.
		{"rm -rf /", "auto", "deny", tool.CodeCommandDenied, "deny:", false},
		{"rm -rf /", "ask", "deny", tool.CodeCommandDenied, "deny:", false},
		{"echo cm0gLXJmIC8= | base64 -d | sh", "auto", "deny", tool.CodeCommandDenied, "deny:", false},
		{"ls (", "auto", "deny", tool.CodeCommandParse, "", false},
	} {
		before := sb.runs
		args, _ := json.Marshal(map[string]string{"command": c.line})
		res := g.Call(context.Background(), tool.Call{Tool: "run_command", Args: args, Mode: c.mode})
		code := tool.Code("")
		if res.Error != nil {
			code = res.Error.Code
			if res.Error.Message == "" || res.Error.Hint == "" {
				t.Errorf("%q in %s: a refusal without message or hint: %+v", c.line, c.mode, res.Error)
			}
		}
		if res.Decision != c.decision || code != c.code {
			t.Errorf("%q in %s: decision %s code %q, want %s %q (%+v)", c.line, c.mode, res.Decision, code, c.decision, c.code, res.Error)
		}
		if len(res.Rule) < len(c.rulePrefix) || res.Rule[:len(c.rulePrefix)] != c.rulePrefix {
			t.Errorf("%q in %s: rule %q, want one starting %q", c.line, c.mode, res.Rule, c.rulePrefix)
		}
		if ran := sb.runs > before; ran != c.wantExecuted {
			t.Errorf("%q in %s: executed %v, want %v", c.line, c.mode, ran, c.wantExecuted)
		}
	}
}

func TestCommandGuardNilPolicyDenies(t *testing.T) {
	sb := &countingSandbox{}
	reg := tool.NewRegistry()
	reg.Register(tools.RunCommand(sb, t.TempDir(), nil))
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	res := g.Call(context.Background(), tool.Call{Tool: "run_command", Args: json.RawMessage(`{"command":"ls"}`), Mode: "auto"})
	if res.Decision != "deny" || sb.runs != 0 {
		t.Fatalf("with no command policy: decision %s, runs %d; want deny, 0", res.Decision, sb.runs)
	}
}

// TestDestroyingCommands: a command the command policy allows but marks
// as destroying workspace data takes the mode's destroy decision:
// auto-edit asks, auto runs it. Whether a path written over exists is
// read from the workspace, so a new output file is no loss.
func TestDestroyingCommands(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n"), 0o644)
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sb := &countingSandbox{}
	reg := tool.NewRegistry()
	if err := reg.Register(tools.RunCommand(sb, dir, nil)); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Commands: command.Default(), Workspace: ws, Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ line, mode, want string }{
		{"rm src/main.go", "auto-edit", "ask"},
		{": > src/main.go", "auto-edit", "ask"},
		{"sed -i d src/main.go", "auto-edit", "ask"},
		{"find . -name '*.go' -delete", "auto-edit", "ask"},
		{"rm src/main.go", "auto", "allow"},
		{"go test ./... > out.txt", "auto-edit", "allow"},
		{"ls src", "auto-edit", "allow"},
	} {
		before := sb.runs
		args, _ := json.Marshal(map[string]string{"command": c.line})
		res := g.Call(context.Background(), tool.Call{Tool: "run_command", Args: args, Mode: c.mode})
		if res.Decision != c.want {
			t.Errorf("%q in %s: %s %s %+v, want %s", c.line, c.mode, res.Decision, res.Rule, res.Error, c.want)
		}
		if c.want == "ask" && (res.Rule != "mode:"+c.mode || res.Error == nil || res.Error.Code != tool.CodeApprovalRequired ||
			!strings.Contains(res.Error.Message, "writes over files in the workspace") || sb.runs != before) {
			t.Errorf("%q in %s: rule %q, error %+v, ran %v; want the mode's destroy ask, nothing run", c.line, c.mode, res.Rule, res.Error, sb.runs != before)
		}
	}
}
