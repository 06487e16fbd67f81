package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// doorEnv is the environment of every airlock process of one test: no
// developer settings, mode auto (so writes run without asking), and an
// approval key of the test's own.
func doorEnv(t testing.TB) []string {
	return append(cleanEnv(), "AIRLOCK_MODE=auto", "XDG_CONFIG_HOME="+t.TempDir())
}

// stdioClient connects the official Go SDK's client to `airlock mcp` on
// ws, a process of its own.
func stdioClient(t *testing.T, bin, ws string, env []string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--workspace", ws)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	return commandClient(t, cmd)
}

// commandClient connects the official Go SDK's client to cmd over its
// stdin and stdout; the session is closed when the test ends.
func commandClient(t testing.TB, cmd *exec.Cmd) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// httpClient connects the official Go SDK's client to an MCP server over
// Streamable HTTP (airlock serve, airlock gateway --http, mcp-proxy).
func httpClient(t testing.TB, url string) *sdk.ClientSession {
	t.Helper()
	return httpClientWith(t, url, nil)
}

// httpClientWith is httpClient whose requests go through hc (nil:
// http.DefaultClient).
func httpClientWith(t testing.TB, url string, hc *http.Client) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolCall makes one tools/call and returns its text, or the code of its
// error value.
func toolCall(ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any) (text, code string, err error) {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", "", err
	}
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		var e struct{ Code string }
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &e)
		return text, e.Code, nil
	}
	return text, "", nil
}

// cliCall runs `airlock call --json` and returns its error code ("" when
// it succeeded).
func cliCall(bin, ws string, env []string, tool, args string) (string, error) {
	cmd := exec.Command(bin, "call", "--json", "--workspace", ws, tool, args)
	cmd.Env = env
	out, err := cmd.Output()
	var c struct {
		OK    bool
		Error *struct{ Code string }
	}
	if jerr := json.Unmarshal(out, &c); jerr != nil {
		return "", fmt.Errorf("airlock call %s: %q (%v)", tool, out, err)
	}
	if c.OK {
		return "", nil
	}
	return c.Error.Code, nil
}

// TestDoorsShareAWorkspace: two `airlock mcp` processes, `airlock serve`
// and several `airlock call` processes work on one workspace at once. All
// their calls run (none waits on another's audit log), every effect is on
// disk, and the one audit log they all appended to verifies, holding a
// record of every call.
func TestDoorsShareAWorkspace(t *testing.T) {
	bin := buildAirlock(t, ".")
	ws := workspace(t, "ws")
	env := doorEnv(t)
	url := serve(t, bin, ws, env)
	clients := map[string]*sdk.ClientSession{
		"mcp1":  stdioClient(t, bin, ws, env),
		"mcp2":  stdioClient(t, bin, ws, env),
		"serve": httpClient(t, url),
	}
	const perClient, cliCalls = 15, 6
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		files []string
	)
	for name, cs := range clients {
		wg.Go(func() {
			for i := range perClient {
				f := fmt.Sprintf("%s-%d.txt", name, i)
				if _, code, err := toolCall(ctx, cs, "write_file", map[string]any{"path": f, "content": f}); err != nil || code != "" {
					t.Errorf("%s: write_file %s: code %q, %v", name, f, code, err)
					continue
				}
				mu.Lock()
				files = append(files, f)
				mu.Unlock()
			}
		})
	}
	for i := range cliCalls {
		wg.Go(func() {
			f := fmt.Sprintf("call-%d.txt", i)
			if code, err := cliCall(bin, ws, env, "write_file", fmt.Sprintf(`{"path":%q,"content":%q}`, f, f)); err != nil || code != "" {
				t.Errorf("airlock call write_file %s: code %q, %v", f, code, err)
				return
			}
			mu.Lock()
			files = append(files, f)
			mu.Unlock()
		})
	}
	wg.Wait()
	if want := len(clients)*perClient + cliCalls; len(files) != want {
		t.Errorf("%d calls succeeded, want %d", len(files), want)
	}
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(b) != f {
			t.Errorf("%s on disk: %q, %v", f, b, err)
		}
	}
	for _, cs := range clients {
		cs.Close()
	}
	out, err := exec.Command(bin, "audit", "verify", filepath.Join(ws, ".airlock", "audit.jsonl")).CombinedOutput()
	if err != nil {
		t.Fatalf("airlock audit verify: %v\n%s", err, out)
	}
	var records int
	if _, err := fmt.Sscanf(string(out[bytes.Index(out, []byte(": ok, "))+6:]), "%d records", &records); err != nil || records < len(files) {
		t.Errorf("the shared audit log: %s (%v); want it to verify with at least %d records", out, err, len(files))
	}
}

// TestKillAcrossDoors: `airlock kill --all`, a process of its own, stops a
// sandboxed command that `airlock mcp` runs within a second, leaves no
// process of it behind, and refuses the next call of every door with
// killed, until `airlock kill --clear --all`.
func TestKillAcrossDoors(t *testing.T) {
	bin := buildAirlock(t, ".")
	ws := workspace(t, "ws")
	env := doorEnv(t)
	cs := stdioClient(t, bin, ws, env)
	ctx := context.Background()
	killInFlight(ctx, t, cs, sleepMarker(31), func() {
		kill := exec.Command(bin, "kill", "--all", "--workspace", ws)
		kill.Env = env
		if out, err := kill.CombinedOutput(); err != nil {
			t.Fatalf("airlock kill --all: %v\n%s", err, out)
		}
	})
	if _, code, err := toolCall(ctx, cs, "calculate", map[string]any{"expression": "1+1"}); err != nil || code != "killed" {
		t.Errorf("airlock mcp after the kill: code %q, %v; want killed", code, err)
	}
	if code, err := cliCall(bin, ws, env, "calculate", `{"expression":"1+1"}`); err != nil || code != "killed" {
		t.Errorf("airlock call after the kill: code %q, %v; want killed", code, err)
	}
	clear := exec.Command(bin, "kill", "--clear", "--all", "--workspace", ws)
	clear.Env = env
	if out, err := clear.CombinedOutput(); err != nil {
		t.Fatalf("airlock kill --clear --all: %v\n%s", err, out)
	}
	if text, code, err := toolCall(ctx, cs, "calculate", map[string]any{"expression": "1+1"}); err != nil || code != "" || !strings.Contains(text, "2") {
		t.Errorf("airlock mcp once the kill is lifted: %q, code %q, %v", text, code, err)
	}
	if code, err := cliCall(bin, ws, env, "calculate", `{"expression":"1+1"}`); err != nil || code != "" {
		t.Errorf("airlock call once the kill is lifted: code %q, %v", code, err)
	}
}

// killWithin bounds how long a call in flight may take to end after
// airlock kill: the gate reads the kill switch every gate.KillPoll
// (200 ms), whichever process set it.
const killWithin = time.Second

// sleepMarker is a length of sleep of about seconds that no other process
// uses, to find the sleep in /proc.
func sleepMarker(seconds int) string {
	return fmt.Sprintf("%d.%06d", seconds, time.Now().UnixNano()%1000000)
}

// killInFlight makes the call run_command {"command": "sleep MARKER"}
// through cs, waits until the sandboxed sleep runs, calls kill, and
// checks that the call ends with killed within killWithin of kill's
// return, leaving no sleep behind.
func killInFlight(ctx context.Context, t *testing.T, cs *sdk.ClientSession, marker string, kill func()) {
	t.Helper()
	type result struct {
		code string
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, code, err := toolCall(ctx, cs, "run_command", map[string]any{"command": "sleep " + marker})
		done <- result{code, err, time.Now()}
	}()
	if !waitFor(20*time.Second, func() bool { return len(procsWith("sleep", marker)) > 0 }) {
		t.Fatalf("the sandboxed sleep %s never started", marker)
	}
	start := time.Now()
	kill()
	killed := time.Now()
	select {
	case r := <-done:
		if r.err != nil || r.code != "killed" {
			t.Errorf("the call in flight ended with code %q (%v), want killed", r.code, r.err)
		}
		d := r.at.Sub(killed)
		t.Logf("the call in flight ended %v after the kill returned (%v after it started)", d, r.at.Sub(start))
		if d > killWithin {
			t.Errorf("the call in flight ended %v after the kill, want within %v", d, killWithin)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight still runs 30 s after the kill")
	}
	if !waitFor(5*time.Second, func() bool { return len(procsWith("sleep", marker)) == 0 }) {
		t.Errorf("sleep %s is still running after the kill: pids %v", marker, procsWith("sleep", marker))
	}
}

// procsWith lists the pids whose command line is name followed by arg.
func procsWith(name, arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) == 2 && filepath.Base(argv[0]) == name && argv[1] == arg {
			pids = append(pids, pid)
		}
	}
	return pids
}
