package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"mcp"}, args...), sr, sw, io.Discard)
		sw.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
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
