package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway/gatewaytest/hostile"
)

// This test binary also runs the hostile server, wrapped, when
// hostileToolsEnv is in its environment (see TestMain): an upstreams file
// names the binary as the command, with these variables in its env. The
// wrapper changes when the server's tools change, which the test must
// control.
const (
	// hostileToolsEnv is the hostile server's tools, comma-separated (""
	// for all).
	hostileToolsEnv = "AIRLOCK_E2E_HOSTILE_TOOLS"
	// hostilePrimedEnv=1: the server has answered one tools/list (to the
	// wrapper) before its client's first, and the list_changed that
	// follows is dropped: its client is only ever offered what it offers
	// from its second listing on (rug as hostile.RugAfter). It stands for
	// an upstream that changed a tool's definition for good.
	hostilePrimedEnv = "AIRLOCK_E2E_HOSTILE_PRIMED"
	// hostileChangeWhenEnv=FILE: the list_changed that the server sends
	// after its first listing is held until FILE exists, so that the
	// test chooses the moment of the rug pull.
	hostileChangeWhenEnv = "AIRLOCK_E2E_HOSTILE_CHANGE_WHEN"
	// maxHold bounds how long a held list_changed waits for its file, and
	// holdPoll is how often the wrapper looks.
	maxHold  = 5 * time.Minute
	holdPoll = 20 * time.Millisecond
)

func TestMain(m *testing.M) {
	if tools, ok := os.LookupEnv(hostileToolsEnv); ok {
		os.Exit(runWrappedHostile(tools, os.Getenv(hostilePrimedEnv) == "1", os.Getenv(hostileChangeWhenEnv)))
	}
	os.Exit(m.Run())
}

// primedID is the id of the tools/list request that primes the server.
const primedID = `"airlock-e2e-primed"`

const listChanged = "notifications/tools/list_changed"

func runWrappedHostile(tools string, primed bool, changeWhen string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &hostileFilter{w: os.Stdout, priming: primed, primedDone: make(chan struct{}), changeWhen: changeWhen}
	var in io.Reader = os.Stdin
	if primed {
		in = io.MultiReader(
			strings.NewReader(`{"jsonrpc":"2.0","id":`+primedID+`,"method":"tools/list"}`+"\n"),
			&heldReader{r: os.Stdin, until: out.primedDone},
		)
	}
	opts := hostile.Options{Stderr: os.Stderr}
	if tools != "" {
		opts.Tools = strings.Split(tools, ",")
	}
	if err := hostile.Serve(ctx, in, out, opts); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "wrapped hostile server: %v\n", err)
		return 1
	}
	return 0
}

// heldReader reads nothing until its channel is closed.
type heldReader struct {
	r     io.Reader
	until <-chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	<-h.until
	return h.r.Read(p)
}

// hostileFilter is the wrapped server's output. Primed, it drops the
// answer to the priming tools/list and the list_changed that follows it,
// then closes primedDone; with changeWhen, it holds the first
// list_changed until that file exists. The hostile server writes one
// whole message a Write.
type hostileFilter struct {
	w          io.Writer
	mu         sync.Mutex
	priming    bool // dropping the answer to the priming tools/list
	dropNext   bool // dropping the list_changed that follows it
	primedDone chan struct{}
	changeWhen string
}

func (f *hostileFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(p, &m)
	switch {
	case f.priming && string(m.ID) == primedID:
		f.priming, f.dropNext = false, true
		return len(p), nil
	case f.dropNext && m.Method == listChanged:
		f.dropNext = false
		close(f.primedDone)
		return len(p), nil
	case f.changeWhen != "" && m.Method == listChanged:
		go f.release(f.changeWhen, bytes.Clone(p))
		f.changeWhen = ""
		return len(p), nil
	}
	return f.w.Write(p)
}

// release writes msg once path exists, for at most maxHold.
func (f *hostileFilter) release(path string, msg []byte) {
	for deadline := time.Now().Add(maxHold); time.Now().Before(deadline); time.Sleep(holdPoll) {
		if _, err := os.Stat(path); err == nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			_, _ = f.w.Write(msg)
			return
		}
	}
}

// wrappedHostile is the upstream config of this binary running the
// hostile server offering tools, wrapped as env (pairs of the variables
// above and their values) says.
func (h *gatewayHarness) wrappedHostile(tools string, env ...string) map[string]any {
	vars := map[string]string{hostileToolsEnv: tools}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	return map[string]any{"command": h.self, "env": vars}
}

// hostileServer is the upstream config of the hostile server offering
// tools (comma-separated), with the extra hostile-mcp flags given.
func (h *gatewayHarness) hostileServer(tools string, flags ...string) map[string]any {
	return map[string]any{"command": h.hostile, "args": append([]string{"-tools", tools}, flags...)}
}

// beside starts a gateway in auto mode, on a workspace of its own, with
// the hostile server of config hostile beside a steady one (named steady,
// offering echo), whose tool must keep working whatever the hostile one
// does.
func (h *gatewayHarness) beside(t *testing.T, hostile map[string]any) *gatewayProc {
	t.Helper()
	return h.space(t).gateway(t, upstreams(t, map[string]any{"hostile": hostile, "steady": h.hostileServer("echo")}), nil, "--mode", "auto")
}

// with adds keys to a server's config.
func with(server map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		server[kv[i].(string)] = kv[i+1]
	}
	return server
}

// pinView is what the test reads of `airlock gateway pins --json`.
type pinView struct {
	Tool, State, Hash, Diff string
	SeenHash                string `json:"seen_hash"`
	Signals                 []string
}

func (s *gwSpace) pins(t *testing.T, file string) map[string]pinView {
	t.Helper()
	out := s.airlock(t, "gateway", "pins", "--json", "--workspace", s.dir, "--upstreams", file)
	pins := map[string]pinView{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var p pinView
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("airlock gateway pins --json: %q: %v", line, err)
		}
		pins[p.Tool] = p
	}
	return pins
}

// hostileRug: rug, offered and working, is changed by the hostile server
// (a later listing describes it as RugAfter, and the server says its
// tools changed, at a moment the test chooses); the gateway disables it
// (gone from tools/list, tool_changed when called) and keeps poisoned
// hidden (tool_flagged). `airlock gateway pins` shows the change as a
// diff; once `airlock gateway accept`ed, a new gateway, whose upstream
// offers the accepted definitions, offers both.
func (h *gatewayHarness) hostileRug(t *testing.T) {
	s := h.space(t)
	change := filepath.Join(t.TempDir(), "change")
	file := upstreams(t, map[string]any{"hostile": h.wrappedHostile("echo,rug,poisoned", hostileChangeWhenEnv, change)})
	g := s.gateway(t, file, nil, "--mode", "auto")
	tools := g.toolList(t)
	if tl := tools["hostile__rug"]; tl == nil || tl.Description != hostile.RugBefore {
		t.Fatalf("before the change, hostile__rug is %+v; want it offered, described as RugBefore", tl)
	}
	token := fmt.Sprintf("rug %d", time.Now().UnixNano())
	g.want(t, "hostile__rug", map[string]any{"text": token}, "", token)

	// The rug pull: the upstream now describes rug as RugAfter, and says
	// that its tools changed.
	if err := os.WriteFile(change, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tools = g.toolList(t); tools["hostile__rug"] == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tools/list still offers hostile__rug 10 s after the upstream changed it and sent list_changed")
		}
		time.Sleep(retryEvery)
	}
	if tools["hostile__echo"] == nil || tools["hostile__poisoned"] != nil {
		t.Errorf("tools/list: %q; want hostile__echo, and not hostile__poisoned (flagged)", sortedNames(tools))
	}
	g.want(t, "hostile__rug", map[string]any{"text": token}, "tool_changed")
	g.want(t, "hostile__poisoned", map[string]any{"a": 1, "b": 2}, "tool_flagged")
	g.want(t, "hostile__echo", map[string]any{"text": token}, "", token)
	g.close()

	pins := s.pins(t, file)
	rug, poisoned := pins["hostile__rug"], pins["hostile__poisoned"]
	if rug.State != "changed" || rug.SeenHash == "" || rug.SeenHash == rug.Hash {
		t.Fatalf("the pin of hostile__rug: %+v; want changed, with the hash seen", rug)
	}
	if !hasLine(rug.Diff, "+", "~/.aws/credentials") || !hasLine(rug.Diff, "-", `"Echoes its text back."`) {
		t.Errorf("the pin of hostile__rug: its diff does not show the description changed from RugBefore to RugAfter:\n%s", rug.Diff)
	}
	if poisoned.State != "flagged" || len(poisoned.Signals) == 0 {
		t.Errorf("the pin of hostile__poisoned: %+v; want flagged, with the scanner's signals", poisoned)
	}
	s.airlock(t, "gateway", "accept", "--workspace", s.dir, "--upstreams", file, "--hash", rug.SeenHash, "hostile__rug")
	s.airlock(t, "gateway", "accept", "--workspace", s.dir, "--upstreams", file, "--hash", poisoned.Hash, "hostile__poisoned")
	pins = s.pins(t, file)
	if p := pins["hostile__rug"]; p.State != "offered" || p.Hash != rug.SeenHash {
		t.Errorf("the pin of hostile__rug once accepted: %+v; want offered with hash %s", p, rug.SeenHash)
	}
	if p := pins["hostile__poisoned"]; p.State != "offered" {
		t.Errorf("the pin of hostile__poisoned once accepted: %+v; want offered", p)
	}

	primed := upstreams(t, map[string]any{"hostile": h.wrappedHostile("echo,rug,poisoned", hostilePrimedEnv, "1")})
	g2 := s.gateway(t, primed, nil, "--mode", "auto")
	tools = g2.toolList(t)
	if tl := tools["hostile__rug"]; tl == nil || tl.Description != hostile.RugAfter {
		t.Errorf("a new gateway after the accept: hostile__rug is %+v; want it offered, described as RugAfter", tl)
	}
	if tools["hostile__poisoned"] == nil {
		t.Errorf("a new gateway after the accept does not offer hostile__poisoned: %q", sortedNames(tools))
	}
	g2.want(t, "hostile__rug", map[string]any{"text": token}, "", token)
	g2.want(t, "hostile__poisoned", map[string]any{"a": 1, "b": 2}, "", "3")
	g2.close()
	entries, _ := s.audit(t)
	wantAudited(t, entries,
		auditEntry{Tool: "hostile__rug"},
		auditEntry{Tool: "hostile__rug", Code: "tool_changed"},
		auditEntry{Tool: "hostile__poisoned", Code: "tool_flagged"},
		auditEntry{Tool: "hostile__echo"},
		auditEntry{Tool: "hostile__rug"},
		auditEntry{Tool: "hostile__poisoned"},
	)
}

// hostileRugAtStart: the hostile server changes rug right after the
// gateway's first listing, while the gateway is still starting (another
// upstream is slow to start). The first definition the gateway saw,
// RugBefore, must be the one pinned, and RugAfter the change waiting for
// a person, whatever the order in which the gateway gets to reconcile
// them.
func (h *gatewayHarness) hostileRugAtStart(t *testing.T) {
	s := h.space(t)
	file := upstreams(t, map[string]any{
		"hostile": h.hostileServer("echo,rug"),
		// Listed a second after the hostile server: its list_changed, and
		// the gateway's second listing, come before the gateway's start
		// is done.
		"sleepy": map[string]any{"command": "sh", "args": []string{"-c", "sleep 1 && exec " + h.hostile + " -tools echo"}},
	})
	g := s.gateway(t, file, nil, "--mode", "auto")
	if !waitFor(10*time.Second, func() bool { return g.toolList(t)["hostile__rug"] == nil }) {
		t.Fatal("tools/list still offers hostile__rug 10 s after the upstream changed it")
	}
	g.close()
	rug := s.pins(t, file)["hostile__rug"]
	if rug.State != "changed" || !hasLine(rug.Diff, "-", `"Echoes its text back."`) || !hasLine(rug.Diff, "+", "~/.aws/credentials") {
		t.Errorf("the pin of hostile__rug: state %s; want changed from the first definition seen (RugBefore) to RugAfter, got the diff:\n%s", rug.State, rug.Diff)
	}
}

// hasLine says whether a diff has a line starting with prefix (and not a
// file header) that holds s.
func hasLine(diff, prefix, s string) bool {
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, prefix) && !strings.HasPrefix(l, prefix+prefix+prefix) && strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// hostileLimits: a result over the gate's 1 MiB cap is refused; a message
// over the gateway's 16 MiB line bound ends the upstream's connection,
// the other server serves on, and the upstream is started again.
func (h *gatewayHarness) hostileLimits(t *testing.T) {
	g := h.beside(t, h.hostileServer("echo,huge"))
	g.want(t, "hostile__huge", map[string]any{"bytes": 2 << 20}, "file_too_large")
	pid := h.upstreamPID(t, g, "echo,huge")
	text := g.want(t, "hostile__huge", map[string]any{"bytes": 17 << 20}, "upstream_unavailable")
	t.Logf("hostile__huge of 17 MiB: %s", text)
	g.want(t, "steady__echo", map[string]any{"text": "steady"}, "", "steady")
	// The process whose connection ended is ended too: none is left
	// behind for each oversized message.
	if !waitFor(5*time.Second, func() bool { return gone(pid) }) {
		t.Errorf("the upstream's process %d, whose connection ended, is still there, alive or unreaped", pid)
	}
	codes := g.until(t, "hostile__echo", map[string]any{"text": "back"}, "back")
	t.Logf("after the 17 MiB message, hostile__echo answered %q before it served again", compact(codes))
	if again := h.upstreamPID(t, g, "echo,huge"); again == pid {
		t.Errorf("hostile__echo serves, but from the process (%d) whose connection ended", pid)
	}
	g.want(t, "hostile__huge", map[string]any{"bytes": 1000}, "", "hostile ")
}

// hostileCrash: an upstream that dies mid-call answers
// upstream_unavailable; another server in the same gateway serves on at
// once, and the dead one is started again after its backoff.
func (h *gatewayHarness) hostileCrash(t *testing.T) {
	g := h.beside(t, h.hostileServer("echo,crash"))
	pid := h.upstreamPID(t, g, "echo,crash")
	text := g.want(t, "hostile__crash", map[string]any{}, "upstream_unavailable")
	t.Logf("hostile__crash: %s", text)
	// The server died with the call in flight: whether the call had its
	// effect is unknown, and the model must be told so rather than
	// invited to try again (README: "a server that dies mid-call answers
	// upstream_unavailable, saying that the call's effect is unknown").
	if !strings.Contains(text, "effect is unknown") {
		t.Errorf("hostile__crash: the result does not say that the call's effect is unknown: %s", text)
	}
	g.want(t, "steady__echo", map[string]any{"text": "steady"}, "", "steady")
	if !waitFor(5*time.Second, func() bool { return gone(pid) }) {
		t.Errorf("the crashed upstream's process %d is still there, alive or unreaped", pid)
	}
	codes := g.until(t, "hostile__echo", map[string]any{"text": "back"}, "back")
	t.Logf("after the crash, hostile__echo answered %q before it served again", compact(codes))
	if again := h.upstreamPID(t, g, "echo,crash"); again == pid {
		t.Errorf("hostile__echo serves from the crashed process %d", pid)
	}
	g.want(t, "steady__echo", map[string]any{"text": "steady"}, "", "steady")
}

// hostileSlow: a call the client cancels is cancelled upstream (the
// hostile server's cancel log gets the request's id), and a call past
// the server's timeout answers deadline_exceeded.
func (h *gatewayHarness) hostileSlow(t *testing.T) {
	s := h.space(t)
	patientLog := filepath.Join(t.TempDir(), "patient-cancelled.jsonl")
	slowLog := filepath.Join(t.TempDir(), "slow-cancelled.jsonl")
	const timeout = 2 * time.Second
	g := s.gateway(t, upstreams(t, map[string]any{
		"patient": h.hostileServer("slow,echo", "-cancel-log", patientLog),
		"slow":    with(h.hostileServer("slow,echo", "-cancel-log", slowLog), "timeout", timeout.String()),
	}), nil, "--mode", "auto")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.cs.CallTool(ctx, &sdk.CallToolParams{Name: "patient__slow", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	// Time for the call to reach the upstream; a cancel before it would
	// have nothing to cancel there.
	time.Sleep(time.Second)
	if ids := logLines(t, patientLog); len(ids) != 0 {
		t.Fatalf("the cancel log holds %q before any cancel", ids)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled call ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call has not returned 10 s after the cancel")
	}
	var ids []string
	if !waitFor(5*time.Second, func() bool { ids = logLines(t, patientLog); return len(ids) > 0 }) {
		t.Fatal("the client cancelled patient__slow, but the upstream's cancel log stays empty: the cancel was not forwarded")
	}
	if len(ids) != 1 || !isRequestID(ids[0]) {
		t.Errorf("the upstream's cancel log: %q; want the one request id", ids)
	}
	t.Logf("cancel forwarded: the upstream's cancel log holds request id %s", ids[0])

	start := time.Now()
	g.want(t, "slow__slow", map[string]any{"ms": 60000}, "deadline_exceeded")
	if took := time.Since(start); took < timeout || took > timeout+10*time.Second {
		t.Errorf("slow__slow answered deadline_exceeded after %v, want about its timeout %v", took, timeout)
	}
	if waitFor(5*time.Second, func() bool { return len(logLines(t, slowLog)) > 0 }) {
		t.Logf("past the timeout the gateway cancelled the call upstream too: %q", logLines(t, slowLog))
	} else {
		t.Errorf("past its timeout, the call was not cancelled upstream (the cancel log is empty): the upstream still works on it")
	}
	g.want(t, "slow__echo", map[string]any{"text": "after"}, "", "after")
	g.want(t, "patient__slow", map[string]any{"ms": 10}, "", "slept 10 ms")
}

// isRequestID says whether s is a JSON-RPC request id: a JSON number or
// string.
func isRequestID(s string) bool {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return false
	}
	switch v.(type) {
	case float64, string:
		return true
	}
	return false
}

// logLines are the non-empty lines of a file that may not exist yet.
func logLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// hostileGarbage: for each kind of malformed line the hostile server
// writes instead of an answer, the call ends with an error result, the
// other server in the gateway serves on, and the hostile one serves again.
func (h *gatewayHarness) hostileGarbage(t *testing.T) {
	var subs []subtest
	for _, kind := range []string{hostile.GarbageTruncated, hostile.GarbageText, hostile.GarbageBinary} {
		subs = append(subs, subtest{kind, func(t *testing.T) {
			// A truncated line may hold the call until its timeout.
			const timeout = 3 * time.Second
			g := h.beside(t, with(h.hostileServer("garbage,echo"), "timeout", timeout.String()))
			start := time.Now()
			text, code := g.call(t, "hostile__garbage", map[string]any{"kind": kind})
			t.Logf("garbage %s: code %q after %v: %s", kind, code, time.Since(start).Round(time.Millisecond), text)
			if code != "upstream_unavailable" && code != "deadline_exceeded" {
				t.Errorf("garbage %s: code %q, want upstream_unavailable or deadline_exceeded", kind, code)
			}
			g.want(t, "steady__echo", map[string]any{"text": "steady"}, "", "steady")
			codes := g.until(t, "hostile__echo", map[string]any{"text": "back"}, "back")
			t.Logf("garbage %s: then hostile__echo answered %q before it served again", kind, compact(codes))
		}})
	}
	concurrently(t, subs...)
}

// hostileRequests: by default the gateway refuses the upstream's sampling
// and elicitation requests itself; the client, which could answer an
// elicitation, is never asked.
func (h *gatewayHarness) hostileRequests(t *testing.T) {
	s := h.space(t)
	client := &answerer{content: map[string]any{"password": "hunter2-from-the-client"}}
	g := s.gateway(t, upstreams(t, map[string]any{"hostile": h.hostileServer("sample,elicit")}), client.options(), "--mode", "auto")
	g.want(t, "hostile__sample", map[string]any{}, "", "refused: code=")
	text := g.want(t, "hostile__elicit", map[string]any{"message": "e2e: the default config refuses this"}, "", "refused: code=")
	if strings.Contains(text, "hunter2") {
		t.Errorf("hostile__elicit got the client's answer with elicitation denied: %s", text)
	}
	if asked := client.questions(); len(asked) != 0 {
		t.Errorf("the client was asked %q; with elicitation denied it should not be", asked)
	}
}

// answerer is a client's elicitation handler: it answers every question
// with content, and keeps the questions.
type answerer struct {
	content map[string]any
	mu      sync.Mutex
	asked   []string
}

func (a *answerer) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.asked = append(a.asked, req.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: a.content}, nil
	}}
}

func (a *answerer) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// hostileRelay: with `elicitation: relay`, the upstream's question reaches
// the client whose call is in flight, and the client's answer reaches the
// upstream, for a client on 2025-11-25, which takes the question as a
// request of the server's. A client on 2026-07-28 (the Go SDK's default)
// takes questions only as input requests of a call's result, which the
// gateway does not relay: the upstream is told so, and nobody is asked.
func (h *gatewayHarness) hostileRelay(t *testing.T) {
	concurrently(t,
		subtest{"2025-11-25", func(t *testing.T) { h.relay(t, "2025-11-25") }},
		subtest{"2026-07-28", func(t *testing.T) { h.relay(t, "2026-07-28") }},
	)
}

func (h *gatewayHarness) relay(t *testing.T, version string) {
	s := h.space(t)
	answer := fmt.Sprintf("answer-%d", time.Now().UnixNano())
	question := "e2e: relay this question " + answer
	// The note is the answer's proof: airlock redacts a field named
	// password in what the client sees of the upstream's result.
	client := &answerer{content: map[string]any{"password": "p4ss-" + answer, "note": answer}}
	g := s.gatewayOn(t, upstreams(t, map[string]any{
		"hostile": with(h.hostileServer("elicit"), "elicitation", "relay"),
	}), client.options(), version, "--mode", "auto")
	if got := g.cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the gateway negotiated protocol version %s, want %s", got, version)
	}
	if version == "2026-07-28" {
		g.want(t, "hostile__elicit", map[string]any{"message": question}, "", "refused: ", "cannot ask the client")
		if asked := client.questions(); len(asked) != 0 {
			t.Errorf("the client was asked %q", asked)
		}
		return
	}
	g.want(t, "hostile__elicit", map[string]any{"message": question}, "", "answered: ", `"action":"accept"`, `"note":"`+answer+`"`)
	if asked := client.questions(); len(asked) != 1 || asked[0] != question {
		t.Errorf("the client was asked %q; want the upstream's one question %q", asked, question)
	}
}

// hostileSecrets: the fake keys the secret tool returns are redacted in
// the result, and the one it writes to stderr is redacted in the
// gateway's log; the gateway's own environment does not reach the
// upstream, and a credential does, as the upstream's /proc shows, while
// the result, the log and the audit log mask its value.
func (h *gatewayHarness) hostileSecrets(t *testing.T) {
	const ownSecret = "AIRLOCK_E2E_SECRET=xyz-gateway-only"
	s := h.space(t, ownSecret)
	credential := fmt.Sprintf("e2e-credential-%d", time.Now().UnixNano())
	creds := filepath.Join(t.TempDir(), "credentials.yaml")
	data, _ := json.Marshal(map[string]any{"credentials": []any{
		map[string]any{"server": "hostile", "variable": "HOSTILE_TOKEN", "value": credential},
	}})
	if err := os.WriteFile(creds, data, 0o600); err != nil {
		t.Fatal(err)
	}
	g := s.gateway(t, upstreams(t, map[string]any{"hostile": h.hostileServer("secret,env")}), nil,
		"--mode", "auto", "--credentials", creds)

	text := g.want(t, "hostile__secret", map[string]any{}, "", "[REDACTED")
	for _, fake := range []string{hostile.FakeAWSKey, hostile.FakeGitHubToken} {
		if strings.Contains(text, fake) {
			t.Errorf("hostile__secret's result holds %s: %s", fake, text)
		}
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(g.stderr.String(), "authenticating with token") }) {
		t.Errorf("the hostile server's stderr line never reached the gateway's log:\n%s", g.stderr.String())
	}

	g.want(t, "hostile__env", map[string]any{"name": "AIRLOCK_E2E_SECRET"}, "", "AIRLOCK_E2E_SECRET is not set")
	text = g.want(t, "hostile__env", map[string]any{"name": "HOSTILE_TOKEN"}, "", "HOSTILE_TOKEN=")
	if strings.Contains(text, credential) || strings.Contains(text, "is not set") {
		t.Errorf("hostile__env HOSTILE_TOKEN: %q; want it set, its value masked", text)
	}
	environ := procEnviron(t, h.upstreamPID(t, g, "secret,env"))
	if !slices.Contains(environ, "HOSTILE_TOKEN="+credential) {
		t.Errorf("the upstream's environment lacks the credential HOSTILE_TOKEN: %q", environ)
	}
	if slices.Contains(environ, ownSecret) {
		t.Errorf("the upstream's environment holds the gateway's own %s", ownSecret)
	}
	g.close()

	_, log := s.audit(t)
	for _, secret := range []string{hostile.FakeAWSKey, hostile.FakeGitHubToken, credential} {
		if strings.Contains(g.stderr.String(), secret) {
			t.Errorf("the gateway's stderr holds %s", secret)
		}
		if strings.Contains(log, secret) {
			t.Errorf("the audit log holds %s", secret)
		}
	}
}

// upstreamPID is the pid of the gateway's child running hostile-mcp with
// -tools tools; it fails the test when there is not exactly one.
func (h *gatewayHarness) upstreamPID(t *testing.T, g *gatewayProc, tools string) int {
	t.Helper()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err1 != nil || err2 != nil {
			continue
		}
		// stat: pid (comm) state ppid ...; comm may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[1] != strconv.Itoa(g.cmd.Process.Pid) {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if argv[0] == h.hostile && slices.Contains(argv, tools) {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("the gateway's hostile-mcp -tools %s processes: %v; want one", tools, pids)
	}
	return pids[0]
}

// gone says whether pid has exited and been reaped (a zombie is not
// gone).
func gone(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return errors.Is(err, os.ErrNotExist)
}

// procEnviron is a process's environment, as the kernel holds it.
func procEnviron(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}
