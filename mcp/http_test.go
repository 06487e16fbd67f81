package mcp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/tool"
)

const (
	viewerToken   = "viewer-token-0123456789"
	operatorToken = "operator-token-0123456789"
	adminToken    = "admin-token-0123456789abc"
)

var testTokens = map[string]string{viewerToken: "viewer", operatorToken: "operator", adminToken: "admin"}

func newHTTP(t testing.TB, f *fixture, opts *mcp.Options, h *mcp.HTTPOptions) *httptest.Server {
	t.Helper()
	handler, err := mcp.NewHTTPHandler(f.gate, opts, h)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// tokenTransport adds a bearer token to every request.
type tokenTransport struct{ token string }

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects the SDK's Streamable HTTP client with a token ("" for none).
func connectHTTP(t *testing.T, srv *httptest.Server, token string) *sdk.ClientSession {
	t.Helper()
	hc := &http.Client{}
	if token != "" {
		hc.Transport = tokenTransport{token}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with token %q: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestHTTPGuards(t *testing.T) {
	f := newFixture(t)
	srv := newHTTP(t, f, nil, &mcp.HTTPOptions{Tokens: testTokens, MaxBodyBytes: 4096})
	big := initializeBody[:len(initializeBody)-1] + `,"pad":"` + strings.Repeat("x", 5000) + `"}`
	tests := []struct {
		name       string
		method     string
		path       string
		host       string // "" leaves the server's own
		origin     string
		auth       string
		body       io.Reader
		wantStatus int
		wantHeader string // a header the response must have
	}{
		{"health", "GET", "/healthz", "", "", "", nil, 200, ""},
		{"health needs no token or local host", "GET", "/healthz", "monitor.internal", "", "", nil, 200, ""},
		{"unknown path", "GET", "/nope", "", "", "Bearer " + operatorToken, nil, 404, ""},
		{"foreign host", "POST", "/mcp", "evil.example", "", "Bearer " + operatorToken, strings.NewReader(initializeBody), 403, ""},
		{"foreign host with local port", "POST", "/mcp", "evil.example:8080", "", "Bearer " + operatorToken, strings.NewReader(initializeBody), 403, ""},
		{"localhost by name", "POST", "/mcp", "localhost:9", "", "Bearer " + operatorToken, strings.NewReader(initializeBody), 200, ""},
		{"IPv6 loopback", "POST", "/mcp", "[::1]:9", "", "Bearer " + operatorToken, strings.NewReader(initializeBody), 200, ""},
		{"IPv6 loopback origin", "POST", "/mcp", "", "https://[::1]:9", "Bearer " + operatorToken, strings.NewReader(initializeBody), 200, ""},
		{"loopback name as a subdomain", "POST", "/mcp", "localhost.evil.example", "", "Bearer " + operatorToken, strings.NewReader(initializeBody), 403, ""},
		{"foreign origin", "POST", "/mcp", "", "http://evil.example", "Bearer " + operatorToken, strings.NewReader(initializeBody), 403, ""},
		{"null origin", "POST", "/mcp", "", "null", "Bearer " + operatorToken, strings.NewReader(initializeBody), 403, ""},
		{"local origin", "POST", "/mcp", "", "http://localhost:5173", "Bearer " + operatorToken, strings.NewReader(initializeBody), 200, ""},
		{"foreign origin before the token", "POST", "/mcp", "", "https://evil.example", "", strings.NewReader(initializeBody), 403, ""},
		{"no token", "POST", "/mcp", "", "", "", strings.NewReader(initializeBody), 401, "WWW-Authenticate"},
		{"wrong token", "POST", "/mcp", "", "", "Bearer not-a-token-0123456789", strings.NewReader(initializeBody), 401, "WWW-Authenticate"},
		{"token prefix", "POST", "/mcp", "", "", "Bearer " + operatorToken[:10], strings.NewReader(initializeBody), 401, "WWW-Authenticate"},
		{"basic auth", "POST", "/mcp", "", "", "Basic " + operatorToken, strings.NewReader(initializeBody), 401, "WWW-Authenticate"},
		{"lower-case scheme", "POST", "/mcp", "", "", "bearer " + operatorToken, strings.NewReader(initializeBody), 200, ""},
		{"body too large", "POST", "/mcp", "", "", "Bearer " + operatorToken, strings.NewReader(big), 413, ""},
		{"chunked body too large", "POST", "/mcp", "", "", "Bearer " + operatorToken, io.MultiReader(strings.NewReader(big)), 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, strings.TrimSpace(string(body)), tt.wantStatus)
			}
			if tt.wantHeader != "" && resp.Header.Get(tt.wantHeader) == "" {
				t.Errorf("response lacks %s", tt.wantHeader)
			}
			if tt.path == "/healthz" && string(body) != "ok" {
				t.Errorf("healthz body %q, want ok", body)
			}
		})
	}
}

func TestHTTPRoleFromToken(t *testing.T) {
	f := newFixture(t)
	srv := newHTTP(t, f, &mcp.Options{Role: "admin", Mode: "auto"}, &mcp.HTTPOptions{Tokens: testTokens})
	tests := []struct {
		token    string
		role     string
		wantCode tool.Code // of write_file in mode auto
	}{
		{viewerToken, "viewer", tool.CodeRoleNotAllowed},
		{operatorToken, "operator", ""},
		{adminToken, "admin", ""},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			cs := connectHTTP(t, srv, tt.token)
			seen := probe(t, callTool(t, cs, "probe", map[string]any{"s": "x"}))
			if seen.Role != tt.role || seen.Session != cs.ID() || seen.Mode != "auto" {
				t.Errorf("probe saw %+v; want role %s, session %s, mode auto", seen, tt.role, cs.ID())
			}
			res := callTool(t, cs, "write_file", map[string]any{"path": tt.role + ".txt", "content": "x"})
			if tt.wantCode == "" {
				if res.IsError {
					t.Errorf("write_file: %s", text(res))
				}
				return
			}
			if sc := structured(t, res); !res.IsError || sc["code"] != string(tt.wantCode) {
				t.Errorf("write_file: %v, want %s", sc, tt.wantCode)
			}
			if got := text(callTool(t, cs, "calculate", map[string]any{"expression": "($100 + $250.75) * 20%"})); got != "70.15" {
				t.Errorf("calculate = %q, want 70.15", got)
			}
		})
	}
}

// TestHTTPSessionBoundToToken checks that a session opened with one token
// cannot be used with another, so a role cannot change mid-session.
func TestHTTPSessionBoundToToken(t *testing.T) {
	f := newFixture(t)
	srv := newHTTP(t, f, nil, &mcp.HTTPOptions{Tokens: testTokens})
	cs := connectHTTP(t, srv, viewerToken)
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"probe","arguments":{}}}`
	for _, tt := range []struct {
		token string
		want  int
	}{{adminToken, http.StatusForbidden}, {viewerToken, http.StatusOK}} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tt.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("session of the viewer token with token %s…: status %d, want %d", tt.token[:6], resp.StatusCode, tt.want)
		}
	}
}

func TestHTTPWithoutTokens(t *testing.T) {
	f := newFixture(t)
	srv := newHTTP(t, f, &mcp.Options{Role: "viewer"}, nil)
	cs := connectHTTP(t, srv, "")
	if seen := probe(t, callTool(t, cs, "probe", map[string]any{})); seen.Role != "viewer" {
		t.Errorf("role %q, want Options.Role viewer", seen.Role)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// An unknown tool is a tool result, and the session goes on.
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"}); err != nil || !res.IsError {
		t.Errorf("unknown tool: %v, %v; want a refusal as a tool result", res, err)
	}
	if got := text(callTool(t, cs, "calculate", map[string]any{"expression": "1+1"})); got != "2" {
		t.Errorf("after an error: %q, want 2", got)
	}
}

func TestHTTPConfigErrors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		h    mcp.HTTPOptions
		want string
	}{
		{"short token", mcp.HTTPOptions{Tokens: map[string]string{"short": "viewer"}}, "MinTokenBytes"},
		{"token without role", mcp.HTTPOptions{Tokens: map[string]string{operatorToken: ""}}, "no role"},
		{"bad origin", mcp.HTTPOptions{AllowedOrigins: []string{"localhost:3000"}}, "AllowedOrigins"},
		{"origin with path", mcp.HTTPOptions{AllowedOrigins: []string{"https://a.example/app"}}, "AllowedOrigins"},
		{"bad host", mcp.HTTPOptions{AllowedHosts: []string{"http://a.example"}}, "AllowedHosts"},
		{"host with bad port", mcp.HTTPOptions{AllowedHosts: []string{"a.example:x"}}, "AllowedHosts"},
		{"origin with wildcard and port", mcp.HTTPOptions{AllowedOrigins: []string{"http://a.example:80:*"}}, "AllowedOrigins"},
		{"ftp origin", mcp.HTTPOptions{AllowedOrigins: []string{"ftp://a.example"}}, "AllowedOrigins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcp.NewHTTPHandler(f.gate, nil, &tt.h)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestHTTPAllowedHostsAndOrigins(t *testing.T) {
	f := newFixture(t)
	srv := newHTTP(t, f, nil, &mcp.HTTPOptions{
		AllowedHosts:   []string{"airlock.internal", "127.0.0.1", "gw.example:8443"},
		AllowedOrigins: []string{"https://console.example", "http://localhost:3000", "http://dev.example:*"},
	})
	tests := []struct {
		host, origin string
		want         int
	}{
		{"airlock.internal:1234", "", 200},
		{"AIRLOCK.internal", "", 200},
		{"gw.example:8443", "", 200},
		{"gw.example:8444", "", 403},
		{"localhost", "", 403}, // no longer in the list
		{"127.0.0.1", "https://console.example", 200},
		{"127.0.0.1", "https://console.example:443", 200}, // the default port, spelled out
		{"127.0.0.1", "https://console.example:8443", 403},
		{"127.0.0.1", "http://console.example", 403},
		{"127.0.0.1", "http://localhost:3000", 200},
		{"127.0.0.1", "http://localhost:3001", 403},
		{"127.0.0.1", "http://localhost", 403},
		{"127.0.0.1", "http://user@localhost:3000", 403},
		{"127.0.0.1", "http://localhost:3000/path", 403},
		{"127.0.0.1", "http://127.0.0.1:5173", 403}, // the defaults are replaced
		{"127.0.0.1", "http://dev.example:1", 200},
		{"127.0.0.1", "http://dev.example", 200},
		{"127.0.0.1", "https://dev.example", 403},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(initializeBody))
		req.Host = tt.host
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q Origin %q: status %d, want %d", tt.host, tt.origin, resp.StatusCode, tt.want)
		}
	}
}

// TestServe runs the handler with Serve's timeouts: a call that streams
// its result after the read timeout still arrives, and cancelling the
// context shuts the server down.
func TestServe(t *testing.T) {
	f := newFixture(t)
	h := &mcp.HTTPOptions{Tokens: testTokens, ReadTimeout: 200 * time.Millisecond}
	handler, err := mcp.NewHTTPHandler(f.gate, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- mcp.Serve(ctx, ln, handler, h) }()

	hc := &http.Client{Transport: tokenTransport{operatorToken}}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := probe(t, callTool(t, cs, "probe", map[string]any{"sleep_ms": 1000}))
	if seen.Role != "operator" {
		t.Errorf("role %q, want operator", seen.Role)
	}
	cs.Close()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(mcp.ShutdownTimeout + 30*time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestListenAndServeRefusesOpenAddressWithoutTokens(t *testing.T) {
	f := newFixture(t)
	handler, err := mcp.NewHTTPHandler(f.gate, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ addr, want string }{
		{"0.0.0.0:0", "without tokens"},
		{":0", "without tokens"},
		{"192.0.2.1:0", "without tokens"},
		{"", "Addr is empty"},
	} {
		err := mcp.ListenAndServe(context.Background(), handler, &mcp.HTTPOptions{Addr: tt.addr})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.addr, err, tt.want)
		}
	}
	// A loopback address serves until cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := mcp.ListenAndServe(ctx, handler, &mcp.HTTPOptions{Addr: "127.0.0.1:0"}); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("127.0.0.1:0: %v", err)
	}
}

// TestHTTPEndsQuietly: clients that close their session, or go away in
// the middle of a call, log no error.
func TestHTTPEndsQuietly(t *testing.T) {
	f := newFixture(t)
	var logs lockedBuffer
	srv := newHTTP(t, f, &mcp.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}, nil)
	for _, version := range []string{legacyVersion, ""} {
		client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1},
			&sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		callTool(t, cs, "calculate", map[string]any{"expression": "1+1"})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cs.CallTool(ctx, &sdk.CallToolParams{Name: "probe", Arguments: map[string]any{"sleep_ms": 2000}})
		cancel()
		cs.Close()
	}
	time.Sleep(500 * time.Millisecond) // the server's side of the cancelled calls
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("clients ending normally logged errors:\n%s", logs.String())
	}
}
