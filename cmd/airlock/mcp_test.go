package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsProtocol is the newest protocol version with roots: 2026-07-28
// deprecates them and lets a server send no requests of its own.
const rootsProtocol = "2025-11-25"

// connectMCP runs `airlock mcp args...` in-process on pipes and connects
// the official SDK's client to it, with the given roots, on the given
// protocol version ("" for the SDK's latest).
func connectMCP(t *testing.T, version string, roots []string, args ...string) *sdk.ClientSession {
	t.Helper()
	return connectMCPWith(t, version, nil, roots, args...)
}

// connectMCPWith is connectMCP with the client's options (an elicitation
// handler, say).
func connectMCPWith(t *testing.T, version string, copts *sdk.ClientOptions, roots []string, args ...string) *sdk.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"mcp"}, args...), sr, sw, io.Discard)
		sw.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts)
	for _, r := range roots {
		client.AddRoots(&sdk.Root{URI: "file://" + r})
	}
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cw.Close()
		cancel()
		<-done
	})
	return cs
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPWorkspaceFromRoots: without --workspace, the client's first root
// is the workspace.
func TestMCPWorkspaceFromRoots(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("from the root\n"), 0o644)
	t.Chdir(t.TempDir()) // the current directory is somewhere else
	cs := connectMCP(t, rootsProtocol, []string{root})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 7 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	text, isErr := callText(t, cs, "read_file", map[string]any{"path": "hello.txt"})
	if isErr || !strings.Contains(text, "from the root") {
		t.Fatalf("read_file: %q (isError %v)", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(root, ".airlock", "audit.jsonl")); err != nil {
		t.Fatalf("the audit log is not in the root's workspace: %v", err)
	}
}

// TestMCPRefusesHomeAsImplicitWorkspace: with no roots and the home
// directory as the current directory, calls are refused with a clear error.
func TestMCPRefusesHomeAsImplicitWorkspace(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(home)
	cs := connectMCP(t, rootsProtocol, nil)
	text, isErr := callText(t, cs, "calculate", map[string]any{"expression": "1+1"})
	if !isErr || !strings.Contains(text, "refusing the implicit workspace") {
		t.Fatalf("calculate: %q (isError %v)", text, isErr)
	}
}

// TestMCPExplicitWorkspace: --workspace wins over the client's roots.
func TestMCPExplicitWorkspace(t *testing.T) {
	ws, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("explicit\n"), 0o644)
	cs := connectMCP(t, rootsProtocol, []string{root}, "--workspace", ws)
	text, isErr := callText(t, cs, "read_file", map[string]any{"path": "a.txt"})
	if isErr || !strings.Contains(text, "explicit") {
		t.Fatalf("read_file: %q (isError %v)", text, isErr)
	}
}

// TestMCPLatestProtocolUsesCurrentDirectory: a client on 2026-07-28 has no
// roots, so an implicit workspace is the current directory.
func TestMCPLatestProtocolUsesCurrentDirectory(t *testing.T) {
	cwd, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(cwd, "here.txt"), []byte("current directory\n"), 0o644)
	t.Chdir(cwd)
	cs := connectMCP(t, "", []string{root})
	text, isErr := callText(t, cs, "read_file", map[string]any{"path": "here.txt"})
	if isErr || !strings.Contains(text, "current directory") {
		t.Fatalf("read_file: %q (isError %v)", text, isErr)
	}
}

// TestMCPKilledClient: a client that is killed closes its ends of the
// pipes; airlock's next write to stdout must end the session quietly with
// status 0, not kill the process with SIGPIPE. It runs airlock as its own
// process (this test binary, as testscript's "airlock" command), since
// only a write to a process's own stdout raises SIGPIPE.
func TestMCPKilledClient(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := &exec.Cmd{Path: exe, Args: []string{"airlock", "mcp", "--workspace", ws}, Dir: ws,
		Env: append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), Stdout: outW, Stderr: &stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+rootsProtocol+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, `"id":0`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	// The client dies: it reads no more, and its input to airlock ends
	// after one last request, whose answer has nowhere to go.
	outR.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("airlock mcp after its client was killed: %v, want status 0\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("airlock mcp did not end after its client was killed")
	}
	if s := stderr.String(); strings.Contains(s, "level=ERROR") || strings.Contains(s, "broken pipe") {
		t.Errorf("stderr after a killed client:\n%s", s)
	}
}

// TestMCPApprovalsSetting: with approvals client (the default) a write in
// mode ask is put to the person at a client that can elicit; with
// out-of-band that client is never asked, the call parks in the store as
// approval_required, and once a person approves it with airlock approve,
// the model's repeat call runs. Ground truth is the workspace, the store
// (airlock approvals) and whether the client's handler was called.
func TestMCPApprovalsSetting(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		env       string // AIRLOCK_APPROVALS
		wantAsked bool
	}{
		{"default", nil, "", true},
		{"client", []string{"--approvals", "client"}, "", true},
		{"out-of-band flag", []string{"--approvals", "out-of-band"}, "", false},
		{"out-of-band variable", nil, "out-of-band", false},
	} {
		for _, version := range []string{rootsProtocol, ""} {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // the approval key
				t.Setenv("AIRLOCK_APPROVALS", tt.env)
				ws := t.TempDir()
				var asked atomic.Int64
				copts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked.Add(1)
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}}
				cs := connectMCPWith(t, version, copts, nil, append([]string{"--workspace", ws, "--mode", "ask"}, tt.args...)...)
				args := map[string]any{"path": "out.txt", "content": "approved\n"}
				text, isErr := callText(t, cs, "write_file", args)
				if got := asked.Load() > 0; got != tt.wantAsked {
					t.Fatalf("the client was asked %d times; want asked: %v (result %q)", asked.Load(), tt.wantAsked, text)
				}
				if tt.wantAsked {
					if got, err := os.ReadFile(filepath.Join(ws, "out.txt")); isErr || string(got) != "approved\n" {
						t.Fatalf("approved through the client: %q (isError %v); file %q, %v", text, isErr, got, err)
					}
					return
				}
				if _, err := os.Stat(filepath.Join(ws, "out.txt")); !os.IsNotExist(err) {
					t.Fatalf("out.txt before any approval: %v; want it absent", err)
				}
				pending := cliApprovals(t, ws)
				if !isErr || !strings.Contains(text, "approval_required") || len(pending) != 1 || !strings.Contains(text, pending[0]) {
					t.Fatalf("parked write: %q (isError %v); pending %q; want approval_required naming the one pending approval", text, isErr, pending)
				}
				var stderr strings.Builder
				if code := run(context.Background(), []string{"approve", pending[0], "--workspace", ws}, strings.NewReader(""), io.Discard, &stderr); code != exitOK {
					t.Fatalf("airlock approve %s: status %d: %s", pending[0], code, stderr.String())
				}
				text, isErr = callText(t, cs, "write_file", args)
				if got, err := os.ReadFile(filepath.Join(ws, "out.txt")); isErr || string(got) != "approved\n" {
					t.Fatalf("the repeat call after airlock approve: %q (isError %v); file %q, %v", text, isErr, got, err)
				}
				if left := cliApprovals(t, ws); len(left) != 0 {
					t.Errorf("pending after the approved call ran: %q", left)
				}
				if asked.Load() != 0 {
					t.Errorf("the client was asked %d times; want never", asked.Load())
				}
			})
		}
	}
}

// cliApprovals returns the ids `airlock approvals --json` lists as pending.
func cliApprovals(t *testing.T, ws string) []string {
	t.Helper()
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"approvals", "--json", "--workspace", ws}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("airlock approvals: status %d: %s", code, stderr.String())
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line == "" {
			continue
		}
		var a struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.ID == "" {
			t.Fatalf("airlock approvals --json line %q: %v", line, err)
		}
		ids = append(ids, a.ID)
	}
	return ids
}

// TestMCPApprovalsBadValue: a value of approvals other than client and
// out-of-band is refused at start-up by both doors, from the flag or the
// variable, with the code, what is wrong and what to pass instead.
func TestMCPApprovalsBadValue(t *testing.T) {
	ws := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"mcp flag", []string{"mcp", "--approvals", "never"}, ""},
		{"mcp variable", []string{"mcp"}, "Client"},
		{"serve flag", []string{"serve", "--addr", "127.0.0.1:0", "--approvals", "out-of-band "}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AIRLOCK_APPROVALS", tt.env)
			// A door that took the value would serve until the timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stderr strings.Builder
			code := run(ctx, append(tt.args, "--workspace", ws), strings.NewReader(""), io.Discard, &stderr)
			if code != exitUsage {
				t.Errorf("status %d, want %d (usage)", code, exitUsage)
			}
			for _, want := range []string{"invalid_setting: approvals", "Hint: pass --approvals client", "--approvals out-of-band"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q; want it to hold %q", stderr.String(), want)
				}
			}
		})
	}
}
