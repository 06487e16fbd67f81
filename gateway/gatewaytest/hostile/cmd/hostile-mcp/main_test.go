package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway/gatewaytest/hostile"
)

// waitFor bounds each wait for the process; generous on a loaded machine.
const waitFor = 20 * time.Second

func TestRunFlags(t *testing.T) {
	t.Setenv("HOSTILE_MCP_TOOLS", "")
	t.Setenv("HOSTILE_MCP_CANCEL_LOG", "")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"end of input", nil, 0, ""},
		{"bad flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"argument", []string{"extra"}, 2, `unexpected argument "extra"`},
		{"unknown tool", []string{"-tools", "echo,nope"}, 1, `names "nope", which is not a tool`},
		{"cancel log in no directory", []string{"-cancel-log", filepath.Join(t.TempDir(), "no", "log")}, 1, "opening the cancel log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("run %q = %d, stderr %q; want %d, stderr with %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

func TestRunCrash(t *testing.T) {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash"}}` + "\n")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), nil, in, &stdout, &stderr); code != crashStatus || stdout.Len() > 0 {
		t.Errorf("crash: status %d, stdout %q; want %d and nothing written", code, stdout.String(), crashStatus)
	}
}

func TestRunCancelLog(t *testing.T) {
	const input = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-7"}}` + "\n"
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "cancelled")
			var args []string
			if how == "flag" {
				args = []string{"-cancel-log", log}
			} else {
				t.Setenv("HOSTILE_MCP_CANCEL_LOG", log)
			}
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), args, strings.NewReader(input), &stdout, &stderr); code != 0 {
				t.Fatalf("run = %d: %s", code, stderr.String())
			}
			if got, err := os.ReadFile(log); string(got) != `"a-7"`+"\n" {
				t.Errorf("the cancel log holds %q (%v), want %q", got, err, `"a-7"`+"\n")
			}
		})
	}
}

// build compiles hostile-mcp into the test's temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostile-mcp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestProcess runs the built command as an MCP client would: its flags
// and environment, its stderr, and its exit status after crash.
func TestProcess(t *testing.T) {
	bin := build(t)
	cmd := exec.Command(bin, "-tools", "echo,slow,secret,env,crash")
	cmd.Env = append(os.Environ(), "HOSTILE_PROBE=seen")
	// A file, written by the process itself, read once it wrote.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr

	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "hostile-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", bin, err)
	}
	defer cs.Close()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"echo", "slow", "crash", "secret", "env"}; !slices.Equal(names, want) {
		t.Errorf("-tools: listed %v, want %v", names, want)
	}

	text := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := text("env", map[string]any{"name": "HOSTILE_PROBE"}); got != "HOSTILE_PROBE=seen" {
		t.Errorf("env = %q, want the process's environment", got)
	}
	text("secret", nil)
	// The line is written before the answer, so it is there now.
	if logged, err := os.ReadFile(stderr.Name()); !bytes.Contains(logged, []byte(hostile.FakeGitHubToken)) {
		t.Errorf("stderr = %q (%v), want the secret tool's line", logged, err)
	}

	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); err == nil {
		t.Fatalf("crash answered %+v", res)
	}
	_ = cs.Close() // waits for the process
	if cmd.ProcessState == nil {
		t.Fatal("the process was not waited for after crash")
	}
	if code := cmd.ProcessState.ExitCode(); code != crashStatus {
		t.Errorf("after crash the process exited %d, want %d", code, crashStatus)
	}
}
