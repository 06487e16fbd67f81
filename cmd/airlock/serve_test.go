package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/store/sqlite"
)

// serveInProcess runs `airlock serve args...` in this process on a free
// loopback port until the test ends, and returns its address once
// /healthz answers, and what it has written to stderr so far.
func serveInProcess(t *testing.T, args ...string) (string, func() string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	// A file, which the server writes and the test reads at once.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", addr}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		stderr.Close()
	})
	logged := func() string {
		b, _ := os.ReadFile(stderr.Name())
		return string(b)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("airlock serve %s exited with status %d: %s", strings.Join(args, " "), code, logged())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return addr, logged
		}
		if time.Now().After(deadline) {
			t.Fatalf("airlock serve %s not healthy: %s", strings.Join(args, " "), logged())
		}
	}
}

// alternate sends each request to the next of addrs in turn.
type alternate struct {
	mu    sync.Mutex
	addrs []string
	next  int
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	addr := a.addrs[a.next]
	a.next = (a.next + 1) % len(a.addrs)
	a.mu.Unlock()
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = addr, addr
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeReplicas: two airlock serve processes with replicas on (one by
// its flag, one by its key in airlock.yaml) sharing a store serve one MCP
// session between them, request by request; its steps are counted once
// in the store. A server without replicas does not know the session.
func TestServeReplicas(t *testing.T) {
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "state.db")
	config := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(config, []byte("replicas: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--workspace", ws, "--store", "sqlite:" + db}
	a, bannerA := serveInProcess(t, append(common, "--replicas")...)
	b, bannerB := serveInProcess(t, append(common, "--config", config)...)
	plain, _ := serveInProcess(t, common...)
	// Both name the same key by its fingerprint, for the operator to see.
	fingerprint := regexp.MustCompile(`fingerprint [0-9a-f]{12}`)
	if fa, fb := fingerprint.FindString(bannerA()), fingerprint.FindString(bannerB()); fa == "" || fa != fb {
		t.Errorf("the replicas' banners name key fingerprints %q and %q, want the same:\n%s\n%s", fa, fb, bannerA(), bannerB())
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + a + "/mcp",
		HTTPClient: &http.Client{Transport: &alternate{addrs: []string{a, b}}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const calls = 5
	var session string
	for i := range calls {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"expression": "6*7"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i+1, err, res)
		}
		s, _ := res.Meta[mcp.MetaSession].(string)
		if i == 0 {
			session = s
		}
		if s == "" || s != session {
			t.Fatalf("call %d in session %q, want %q", i+1, s, session)
		}
	}
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Session(context.Background(), session); err != nil || got.Step != calls {
		t.Errorf("the store holds session %q at step %d (%v), want %d", session, got.Step, err, calls)
	}

	req, _ := http.NewRequest("POST", "http://"+plain+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a server without replicas answered the session with %s, want 404", resp.Status)
	}
}

// TestServeReplicasBadValue: replicas takes true or false, from the flag,
// the variable or the file.
func TestServeReplicasBadValue(t *testing.T) {
	ws := t.TempDir()
	config := filepath.Join(t.TempDir(), "airlock.yaml")
	os.WriteFile(config, []byte("replicas: sometimes\n"), 0o600)
	for _, tt := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"flag", "", []string{"--replicas=maybe"}, "want true or false"},
		{"variable", "yes please", nil, "invalid_setting: replicas"},
		{"file", "", []string{"--config", config}, "invalid_setting: replicas"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AIRLOCK_REPLICAS", tt.env)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stderr strings.Builder
			code := run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--workspace", ws}, tt.args...), strings.NewReader(""), io.Discard, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("status %d, stderr %q; want %d and %q", code, stderr.String(), exitUsage, tt.want)
			}
		})
	}
}
