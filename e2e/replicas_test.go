package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/store/storeurl/storeurltest"
)

// replicasTimeout bounds TestReplicas's calls, all together; it takes a
// few seconds.
const replicasTimeout = time.Minute

// balancer is a reverse proxy in front of the replicas that knows nothing
// of MCP sessions: it sends each tools/call to the next replica in turn
// (and any other request to the next in another turn), and notes which
// replica served each tools/call of which session.
type balancer struct {
	replicas []*url.URL
	mu       sync.Mutex
	nextCall int
	nextRest int
	served   []servedCall
}

// servedCall is one tools/call the balancer passed on.
type servedCall struct {
	replica int
	session string // its Mcp-Session-Id
}

func newBalancer(t *testing.T, urls ...string) (*balancer, string) {
	b := &balancer{}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "" // the request's own path, /mcp, is kept
		b.replicas = append(b.replicas, u)
	}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv.URL + "/mcp"
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct{ Method string }
	json.Unmarshal(body, &msg)
	b.mu.Lock()
	var i int
	if msg.Method == "tools/call" {
		i = b.nextCall
		b.nextCall = (i + 1) % len(b.replicas)
		b.served = append(b.served, servedCall{i, r.Header.Get("Mcp-Session-Id")})
	} else {
		i = b.nextRest
		b.nextRest = (i + 1) % len(b.replicas)
	}
	b.mu.Unlock()
	target := b.replicas[i]
	(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}).ServeHTTP(w, r)
}

// calls returns the tools/call passed on so far.
func (b *balancer) calls() []servedCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]servedCall(nil), b.served...)
}

// TestReplicas: two `airlock serve --replicas` processes share one
// Postgres store and one workspace, behind a balancer with no sticky
// sessions, and the official Go SDK's client talks to the balancer. One
// MCP session is served by both, request by request: its steps go on from
// one to the other; an approval parked through one and approved with
// `airlock approve` runs once through the other; the same answer sent to
// both runs once (the ledger); `airlock kill SESSION` stops a sandboxed
// command in flight on either within a second; and the audit log both
// appended to verifies.
func TestReplicas(t *testing.T) {
	bin := buildAirlock(t, ".")
	var pg storeurltest.Backend
	for _, b := range storeurltest.Backends(t, "e2e_replicas") {
		if b.Name == "postgres" {
			pg = b
		}
	}
	db := storeurltest.Open(t, pg) // fails, never skips, without Postgres; its schema goes at the end
	ws := workspace(t, "ws")
	// One config directory: the replicas share the approval key file.
	env := append(cleanEnv(), "XDG_CONFIG_HOME="+t.TempDir())
	flags := []string{"--replicas", "--store", pg.URL, "--mode", "ask"}
	lb, endpoint := newBalancer(t, serve(t, bin, ws, env, flags...), serve(t, bin, ws, env, flags...))
	airlock := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--store", pg.URL)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Every call ends within the test's bound, so that a replica that
	// does not answer fails the test rather than hang it.
	ctx, cancel := context.WithTimeout(context.Background(), replicasTimeout)
	defer cancel()
	// connect connects a client on the protocol version given ("" for
	// the SDK's latest, 2026-07-28).
	connect := func(copts *sdk.ClientOptions, version string) *sdk.ClientSession {
		t.Helper()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, copts).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect through the balancer: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	// gateSession is the gate's session of an MCP session: the id in
	// its Mcp-Session-Id, before the tag.
	gateSession := func(cs *sdk.ClientSession) string {
		t.Helper()
		id, _, _ := strings.Cut(cs.ID(), ".")
		if id == "" {
			t.Fatal("the replicas issued no Mcp-Session-Id")
		}
		return id
	}
	// servedBy is the replica that served the n-th tools/call, from 0,
	// which must be one of cs.
	servedBy := func(cs *sdk.ClientSession, n int) int {
		t.Helper()
		calls := lb.calls()
		if n >= len(calls) || calls[n].session != cs.ID() {
			t.Fatalf("tools/call %d: the balancer saw %+v, want it in session %s", n, calls, cs.ID())
		}
		return calls[n].replica
	}

	run := t.Run("one session on both", func(t *testing.T) {
		for _, version := range []string{"2025-11-25", ""} {
			cs := connect(nil, version)
			first := len(lb.calls())
			for i := range 4 {
				if text, code, err := toolCall(ctx, cs, "calculate", map[string]any{"expression": fmt.Sprintf("%d*7", i+1)}); err != nil || code != "" || text != fmt.Sprint((i+1)*7) {
					t.Fatalf("%s: calculate %d: %q, code %q, %v", version, i+1, text, code, err)
				}
			}
			per := map[int]int{}
			for n := range 4 {
				per[servedBy(cs, first+n)]++
			}
			if per[0] != 2 || per[1] != 2 {
				t.Errorf("%s: tools/call per replica %v, want 2 and 2", version, per)
			}
			session := gateSession(cs)
			st, err := db.Session(ctx, session)
			if err != nil || st.Step != 4 {
				t.Errorf("%s: the store holds session %s at step %d (%v), want 4: one count across both", version, session, st.Step, err)
			}
			t.Logf("protocol %s: session %s served by both replicas", cs.InitializeResult().ProtocolVersion, session)
		}
	})

	cs := connect(nil, "")
	session := gateSession(cs)

	run = run && t.Run("approval", func(t *testing.T) {
		args := map[string]any{"path": "approved.txt", "content": "approved\n"}
		first := len(lb.calls())
		text, code, err := toolCall(ctx, cs, "write_file", args)
		if err != nil || code != "approval_required" {
			t.Fatalf("write_file in mode ask: %q, code %q, %v; want approval_required", text, code, err)
		}
		id := pendingApproval(t, airlock("approvals", "--json"), "write_file")
		if !strings.Contains(text, id) {
			t.Fatalf("the result %q does not name the pending approval %s", text, id)
		}
		airlock("approve", id)
		if text, code, err := toolCall(ctx, cs, "write_file", args); err != nil || code != "" {
			t.Fatalf("the approved call: %q, code %q, %v", text, code, err)
		}
		if a, b := servedBy(cs, first), servedBy(cs, first+1); a == b {
			t.Errorf("the parked call and the approved one both went to replica %d, want one each", a)
		}
		if got, err := os.ReadFile(filepath.Join(ws, "approved.txt")); err != nil || string(got) != "approved\n" {
			t.Fatalf("approved.txt: %q, %v", got, err)
		}
		a, err := db.Approval(ctx, id, time.Now())
		if err != nil || a.Status != "used" {
			t.Errorf("approval %s is %q (%v), want used: run once", id, a.Status, err)
		}
	})

	run = run && t.Run("ledger", func(t *testing.T) {
		// A client on 2026-07-28 that answers approval questions itself:
		// the question names the call's step, in the state the replicas
		// signed; the same answer made twice at once, once to each
		// replica, is the same call, keyed once in the ledger.
		lc := connect(&sdk.ClientOptions{
			MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return nil, fmt.Errorf("the test answers by hand")
			}}, "")
		args := map[string]any{"command": "echo ran >> sink.txt; sleep 1; echo done"}
		q, err := lc.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: args})
		if err != nil || !q.NeedsInput() || q.RequestState == "" {
			t.Fatalf("run_command in mode ask: %+v, %v; want an approval question", q, err)
		}
		id := pendingApproval(t, airlock("approvals", "--json"), "run_command")
		// Remembered for the session, the approval lets both answers
		// past the approval stage: only the ledger stands between them.
		airlock("approve", id, "--remember", "session")
		before := len(lb.calls())
		var wg sync.WaitGroup
		codes := make([]string, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				res, err := lc.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: args,
					InputResponses: sdk.InputResponseMap{}, RequestState: q.RequestState})
				if errs[i] = err; err == nil && res.IsError {
					var e struct{ Code string }
					b, _ := json.Marshal(res.StructuredContent)
					json.Unmarshal(b, &e)
					codes[i] = e.Code
				}
			})
		}
		wg.Wait()
		calls := lb.calls()[before:]
		if len(calls) != 2 || calls[0].replica == calls[1].replica {
			t.Errorf("the two answers went to %+v, want one to each replica", calls)
		}
		sink, _ := os.ReadFile(filepath.Join(ws, "sink.txt"))
		t.Logf("the answer sent to both replicas: codes %q (\"\" ran or replayed the stored result), errors %v; sink %q", codes, errs, sink)
		if string(sink) != "ran\n" {
			t.Errorf("sink.txt is %q: the command ran %d times, want once", sink, strings.Count(string(sink), "ran"))
		}
		for i := range 2 {
			if errs[i] != nil || (codes[i] != "" && codes[i] != "in_progress") {
				t.Errorf("answer %d: code %q, %v; want it to run, replay, or be in_progress", i, codes[i], errs[i])
			}
		}
	})

	run = run && t.Run("kill", func(t *testing.T) {
		marker := sleepMarker(30)
		if _, code, err := toolCall(ctx, cs, "run_command", map[string]any{"command": "sleep " + marker}); err != nil || code != "approval_required" {
			t.Fatalf("run_command in mode ask: code %q, %v; want approval_required", code, err)
		}
		airlock("approve", pendingApproval(t, airlock("approvals", "--json"), "run_command"))
		var running int
		killInFlight(ctx, t, cs, marker, func() {
			calls := lb.calls()
			running = calls[len(calls)-1].replica
			t.Logf("the approved sleep runs through replica %d; airlock kill %s", running, session)
			airlock("kill", session)
		})
		// The session's next call, on the other replica, is refused too.
		if _, code, err := toolCall(ctx, cs, "calculate", map[string]any{"expression": "1+1"}); err != nil || code != "killed" {
			t.Errorf("the killed session's next call: code %q, %v; want killed", code, err)
		}
		if calls := lb.calls(); calls[len(calls)-1].replica == running {
			t.Errorf("the call after the kill went to replica %d again, want the other", running)
		}
		airlock("kill", "--clear", session)
		if text, code, err := toolCall(ctx, cs, "calculate", map[string]any{"expression": "1+1"}); err != nil || code != "" || text != "2" {
			t.Errorf("once the kill is lifted: %q, code %q, %v", text, code, err)
		}
	})

	if !run {
		return // each part goes on from the one before
	}
	out, err := exec.Command(bin, "audit", "verify", filepath.Join(ws, ".airlock", "audit.jsonl")).CombinedOutput()
	if err != nil {
		t.Fatalf("airlock audit verify: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

// pendingApproval returns the id of the one pending approval of tool in
// the output of `airlock approvals --json`.
func pendingApproval(t *testing.T, out, tool string) string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var a struct{ ID, Tool string }
		if json.Unmarshal([]byte(line), &a) == nil && a.Tool == tool {
			ids = append(ids, a.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("pending approvals of %s: %q; want one\n%s", tool, ids, out)
	}
	return ids[0]
}
