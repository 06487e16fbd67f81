package mcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/store/storeurl/storeurltest"
	"airlock.dev/airlock/tool"
)

// replicaKey is the SessionKey the test's replicas share.
var replicaKey = bytes.Repeat([]byte("k"), mcp.MinSessionKeyBytes)

// roundRobin is a reverse proxy that sends each request to the next of
// its backends in turn, and counts the tools/call requests each served.
type roundRobin struct {
	backends []*url.URL
	mu       sync.Mutex
	next     int
	calls    []int
}

func newRoundRobin(t *testing.T, backends ...*httptest.Server) (*roundRobin, *httptest.Server) {
	rr := &roundRobin{calls: make([]int, len(backends))}
	for _, b := range backends {
		u, _ := url.Parse(b.URL)
		rr.backends = append(rr.backends, u)
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	return rr, srv
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rr.mu.Lock()
	i := rr.next
	rr.next = (rr.next + 1) % len(rr.backends)
	if bytes.Contains(body, []byte(`"tools/call"`)) {
		rr.calls[i]++
	}
	rr.mu.Unlock()
	target := rr.backends[i]
	p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = target.Host
	}}
	p.ServeHTTP(w, r)
}

func (rr *roundRobin) served() []int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]int(nil), rr.calls...)
}

// sessionStore is a SQLite store for the steps of the test's sessions.
func sessionStore(t *testing.T) store.Sessions {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// replicas serves f's gate as two replicas sharing one SQLite store and
// replicaKey, behind a round-robin proxy; opts.Sessions is set to the
// store.
func replicas(t *testing.T, f *fixture, opts *mcp.Options, h *mcp.HTTPOptions) (*roundRobin, *httptest.Server) {
	t.Helper()
	if opts.Sessions == nil {
		opts.Sessions = sessionStore(t)
	}
	if h == nil {
		h = &mcp.HTTPOptions{}
	}
	h.Replicas, h.SessionKey = true, replicaKey
	return newRoundRobin(t, newHTTP(t, f, opts, h), newHTTP(t, f, opts, h))
}

// TestReplicasShareSessions: one MCP session's calls alternate between
// two replicas, on every protocol version; each call is in the same
// gate session, and the steps go on from one replica to the other.
func TestReplicasShareSessions(t *testing.T) {
	for _, version := range []string{legacyVersion, latestVersion} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t)
			rr, proxy := replicas(t, f, &mcp.Options{}, nil)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
				&sdk.StreamableClientTransport{Endpoint: proxy.URL + "/mcp", MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.ID() == "" {
				t.Fatal("no Mcp-Session-Id was issued")
			}
			var session string
			for i := range 6 {
				p := probe(t, callTool(t, cs, "probe", map[string]any{"s": "x"}))
				if i == 0 {
					session = p.Session
				}
				if p.Session != session || p.Step != int64(i+1) {
					t.Fatalf("call %d: session %q step %d; want session %q step %d", i+1, p.Session, p.Step, session, i+1)
				}
			}
			if !strings.HasPrefix(cs.ID(), session+".") {
				t.Errorf("gate session %q is not the id of Mcp-Session-Id %q", session, cs.ID())
			}
			if got := rr.served(); got[0] == 0 || got[1] == 0 {
				t.Errorf("tools/call per replica %v: want both to serve the session", got)
			}
		})
	}
}

// rawPost posts one JSON-RPC message to srv's /mcp.
func rawPost(t *testing.T, srv *httptest.Server, method, session, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestReplicaSessionIDs: a session id is served by every replica with
// the key, for the token it was issued to; an edited one, one for
// another token, or one from a replica with another key is answered 404.
func TestReplicaSessionIDs(t *testing.T) {
	f := newFixture(t)
	db := sessionStore(t)
	h := func(key []byte) *mcp.HTTPOptions {
		return &mcp.HTTPOptions{Tokens: testTokens, Replicas: true, SessionKey: key}
	}
	a := newHTTP(t, f, &mcp.Options{Sessions: db}, h(replicaKey))
	b := newHTTP(t, f, &mcp.Options{Sessions: db}, h(replicaKey))
	other := newHTTP(t, f, &mcp.Options{Sessions: db}, h(bytes.Repeat([]byte("o"), mcp.MinSessionKeyBytes)))

	resp := rawPost(t, a, "POST", "", operatorToken, initializeBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || !strings.Contains(id, ".") {
		t.Fatalf("initialize: %s, Mcp-Session-Id %q; want 200 and ID.TAG", resp.Status, id)
	}
	edited := []byte(id)
	edited[len(edited)-1] ^= 1
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	tests := []struct {
		name    string
		srv     *httptest.Server
		method  string
		session string
		token   string
		want    int
	}{
		{"same replica", a, "POST", id, operatorToken, http.StatusOK},
		{"other replica", b, "POST", id, operatorToken, http.StatusOK},
		{"another token", b, "POST", id, viewerToken, http.StatusNotFound},
		{"edited tag", b, "POST", string(edited), operatorToken, http.StatusNotFound},
		{"no tag", b, "POST", id[:strings.IndexByte(id, '.')], operatorToken, http.StatusNotFound},
		{"another key", other, "POST", id, operatorToken, http.StatusNotFound},
		{"no token", b, "POST", id, "", http.StatusUnauthorized},
		{"standalone stream", b, "GET", id, operatorToken, http.StatusMethodNotAllowed},
		{"delete another's", b, "DELETE", id, viewerToken, http.StatusNotFound},
		{"delete", b, "DELETE", id, operatorToken, http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawPost(t, tt.srv, tt.method, tt.session, tt.token, list)
			if resp.StatusCode != tt.want {
				t.Errorf("%s: %s, want %d", tt.name, resp.Status, tt.want)
			}
			if got := resp.Header.Get("Mcp-Session-Id"); got != "" && tt.session != "" {
				t.Errorf("%s: a request in a session got a new Mcp-Session-Id %q", tt.name, got)
			}
		})
	}
}

// TestReplicasApprovalQuestion: a client on 2026-07-28 is asked, and its
// answer reaches the other replica, which verifies the request state
// with the shared key: the call runs once. A client before 2026-07-28
// cannot be asked by a stateless server: its call ends at once with
// approval_required, naming the pending approval.
func TestReplicasApprovalQuestion(t *testing.T) {
	for _, version := range []string{legacyVersion, latestVersion} {
		t.Run(version, func(t *testing.T) {
			f, db, opts := approvals(t)
			opts.Sessions = db.(store.Sessions)
			rr, proxy := replicas(t, f, opts, nil)
			asked := 0
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
				ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked++
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: proxy.URL + "/mcp", MaxRetries: -1},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			start := time.Now()
			res := callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "approved\n"})
			data, readErr := os.ReadFile(filepath.Join(f.dir, "x.txt"))
			pending, _ := db.PendingApprovals(context.Background(), time.Now())
			if version == legacyVersion {
				sc := structured(t, res)
				if asked != 0 || sc["code"] != string(tool.CodeApprovalRequired) || len(pending) != 1 || sc["approval_id"] != pending[0].ID || readErr == nil {
					t.Fatalf("asked %d, result %s, pending %+v, file %v: want approval_required naming the one pending approval, nothing written", asked, text(res), pending, readErr)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the call took %v: the stateless server waited for an answer it cannot get", d)
				}
				return
			}
			if asked != 1 || res.IsError || string(data) != "approved\n" || len(pending) != 0 {
				t.Fatalf("asked %d, result %s, file %q (%v), %d pending: want asked once and the file written", asked, text(res), data, readErr, len(pending))
			}
			if got := rr.served(); got[0] != 1 || got[1] != 1 {
				t.Errorf("tools/call per replica %v: want the question from one and the answer at the other", got)
			}
		})
	}
}

// NewHTTPHandler refuses Replicas without a shared store for the steps,
// and with a SessionKey shorter than MinSessionKeyBytes.
func TestReplicasNeedStoreAndKey(t *testing.T) {
	f := newFixture(t)
	db := sessionStore(t)
	for name, tt := range map[string]struct {
		opts *mcp.Options
		key  []byte
	}{
		"no store":  {&mcp.Options{}, replicaKey},
		"nil opts":  {nil, replicaKey},
		"no key":    {&mcp.Options{Sessions: db}, nil},
		"short key": {&mcp.Options{Sessions: db}, replicaKey[1:]},
	} {
		if _, err := mcp.NewHTTPHandler(f.gate, tt.opts, &mcp.HTTPOptions{Replicas: true, SessionKey: tt.key}); err == nil {
			t.Errorf("%s: NewHTTPHandler accepted Replicas", name)
		}
	}
	if _, err := mcp.NewHTTPHandler(f.gate, &mcp.Options{Sessions: db}, &mcp.HTTPOptions{Replicas: true, SessionKey: replicaKey}); err != nil {
		t.Errorf("a store and a key: %v", err)
	}
}

// BenchmarkReplicaCall measures the tools/call round trip of calculate
// over Streamable HTTP, from the SDK's client: the stateful door with its
// steps in memory and in each store backend, and the Replicas door
// (stateless, behind airlock's session layer) with its steps in each.
func BenchmarkReplicaCall(b *testing.B) {
	backends := append([]storeurltest.Backend{{Name: "memory"}}, storeurltest.Backends(b, "mcp_bench")...)
	for _, replicas := range []bool{false, true} {
		for _, st := range backends {
			if replicas && st.URL == "" {
				continue // Replicas needs a store
			}
			b.Run(map[bool]string{false: "stateful", true: "replicas"}[replicas]+"/"+st.Name, func(b *testing.B) {
				f := newFixture(b)
				opts := &mcp.Options{}
				if st.URL != "" {
					opts.Sessions = storeurltest.Open(b, st)
				}
				srv := newHTTP(b, f, opts, &mcp.HTTPOptions{Replicas: replicas, SessionKey: replicaKey})
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
					&sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"expression": "6*7"}}
				for b.Loop() {
					if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
						b.Fatalf("call: %v %+v", err, res)
					}
				}
			})
		}
	}
}

// TestReplicasCancel: a replica ends a call whose client cancelled it,
// on every protocol version: the client's cancel notification may reach
// another replica, so the call ends with its HTTP request.
func TestReplicasCancel(t *testing.T) {
	for _, version := range []string{legacyVersion, latestVersion} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t)
			srv := newHTTP(t, f, &mcp.Options{Sessions: sessionStore(t)}, &mcp.HTTPOptions{Replicas: true, SessionKey: replicaKey})
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
				&sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "probe", Arguments: map[string]any{"sleep_ms": 5000}}); err == nil {
				t.Fatal("the call outlived its client's deadline")
			}
			deadline := time.Now().Add(2 * time.Second)
			for !f.cancelled(t) {
				if time.Now().After(deadline) {
					t.Fatal("the call still runs 2 s after its client cancelled it: no cancelled entry in the audit log")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// cancelled reports whether the audit log holds a call that ended
// cancelled.
func (f *fixture) cancelled(t *testing.T) bool {
	t.Helper()
	if err := f.log.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data, []byte(`"code":"cancelled"`))
}
