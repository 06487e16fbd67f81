package agent_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/command"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/sandbox/native"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// harness is one "process" of airlock: a real gate with the built-in tools
// (file tools, calculate, run_command in the native sandbox, web_fetch
// allowed to reach loopback test servers), on a SQLite store in dir. Two
// harnesses on the same dir are two processes sharing the state, which is
// what a restart is.
type harness struct {
	t    *testing.T
	dir  string // holds the workspace and the state
	ws   *workspace.Workspace
	db   *sqlite.DB
	gate *gate.Gate
	log  *audit.Log
}

// newHarness builds a harness; fetchPort, when not zero, is a loopback
// port web_fetch may reach (a pageServer's).
func newHarness(t *testing.T, dir string, fetchPort int, extra ...tool.Tool) *harness {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	h := &harness{t: t, dir: dir}
	wsDir := filepath.Join(dir, "ws")
	if err := os.MkdirAll(wsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.ws, err = workspace.Open(wsDir, nil); err != nil {
		t.Fatal(err)
	}
	if h.db, err = sqlite.Open(filepath.Join(dir, "state.db"), nil); err != nil {
		t.Fatal(err)
	}
	if h.log, err = audit.Open(filepath.Join(dir, "audit.jsonl"), nil); err != nil {
		t.Fatal(err)
	}
	sb, err := native.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ports := []int{80, 443}
	if fetchPort != 0 {
		ports = append(ports, fetchPort)
	}
	fetch, err := egress.NewClient(&egress.Options{
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Ports:      ports,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	all := append(tools.FileTools(h.ws), tools.Calculate(), tools.RunCommand(sb, h.ws.Dir(), nil), tools.WebFetch(fetch))
	for _, tl := range append(all, extra...) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	led, err := ledger.New(h.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.gate, err = gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: h.ws, Audit: h.log, Approvals: h.db,
		Commands: command.Default(), Ledger: led, Redactor: rd, Envelopes: true, Egress: fetch, Sessions: h.db,
		ApprovalKey: []byte("test key")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	h.log.Close()
	h.db.Close()
	h.ws.Close()
}

// agent builds an agent on the harness's gate and store with the planner
// and options given; Mode defaults to auto.
func (h *harness) agent(planner model.Client, o agent.Options) *agent.Agent {
	h.t.Helper()
	o.Gate, o.Sessions, o.Runs, o.Approvals, o.Planner = h.gate, h.db, h.db, h.db, planner
	if o.Mode == "" {
		o.Mode = "auto"
	}
	a, err := agent.New(&o)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// pageServer serves body as text/plain on loopback and returns the URL
// of a document and the port, for newHarness.
func pageServer(t *testing.T, body string) (string, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return srv.URL + "/doc.txt", port
}
