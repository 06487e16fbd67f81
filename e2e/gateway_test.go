package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway/gatewaytest"
)

// The bounds of the gateway's end-to-end tests, generous on a loaded
// two-core machine.
const (
	// gatewayCallTimeout bounds one tools/call or tools/list through a
	// gateway, and gatewayStartTimeout a gateway's start (it starts and
	// lists every upstream first).
	gatewayCallTimeout  = time.Minute
	gatewayStartTimeout = time.Minute
	// gatewayCLITimeout bounds one airlock command beside a gateway
	// (approve, pins, accept, audit verify).
	gatewayCLITimeout = 30 * time.Second
	// recoverWithin bounds how long an upstream that crashed may take to
	// serve again: its first backoff is at most gateway.BackoffBase
	// (0.5 s), and its restart a process start and a handshake.
	recoverWithin = 20 * time.Second
	// retryEvery is the pause between the tries of a call that waits for
	// an upstream's backoff to pass.
	retryEvery = 100 * time.Millisecond
)

// TestGateway drives `airlock gateway` end to end: the reference MCP
// servers from npm (everything, filesystem, memory) and the hostile
// server of gateway/gatewaytest/hostile behind it, with the Go SDK's
// client over stdio, the MCP Inspector's CLI, the TypeScript SDK and the
// conformance suite (over --http). What a call did is read from the
// files it touched, from the servers the test runs (the hostile server's
// cancel log, its /proc environment) and from the workspace's audit log,
// never from the gateway's answer alone.
//
// One airlock binary serves every part; the parts are independent
// gateway processes with workspaces of their own, run at once.
func TestGateway(t *testing.T) {
	e2eDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	noteInputs(t, filepath.Dir(e2eDir))
	h := &gatewayHarness{e2eDir: e2eDir}
	h.node = setup(t, e2eDir)
	// One after the other: the builds share two cores anyway.
	h.airlock = buildAirlock(t, e2eDir)
	h.hostile = gatewaytest.BuildHostile(t)
	if h.self, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	concurrently(t,
		subtest{"npm/admin", h.npmAdmin},
		subtest{"npm/operator", h.npmOperator},
		subtest{"npm/memory", h.npmMemory},
		subtest{"hostile/rug", h.hostileRug},
		subtest{"hostile/rug-at-start", h.hostileRugAtStart},
		subtest{"hostile/limits", h.hostileLimits},
		subtest{"hostile/crash", h.hostileCrash},
		subtest{"hostile/slow", h.hostileSlow},
		subtest{"hostile/garbage", h.hostileGarbage},
		subtest{"hostile/requests", h.hostileRequests},
		subtest{"hostile/relay", h.hostileRelay},
		subtest{"hostile/secrets", h.hostileSecrets},
		subtest{"clients/inspector", h.inspector},
		subtest{"clients/typescript", h.typescript},
		subtest{"clients/conformance", h.conformance},
	)
}

// subtest is one part of TestGateway.
type subtest struct {
	name string
	fn   func(*testing.T)
}

// concurrently runs the subtests each in a goroutine of its own and
// waits for all of them. They mostly wait on processes, so t.Parallel's
// default bound (GOMAXPROCS: two on this machine) would only make them
// queue.
func concurrently(t *testing.T, subtests ...subtest) {
	var wg sync.WaitGroup
	for _, s := range subtests {
		wg.Go(func() {
			start := time.Now()
			t.Run(s.name, s.fn)
			t.Logf("%s: %v", s.name, time.Since(start).Round(10*time.Millisecond))
		})
	}
	wg.Wait()
}

// gatewayHarness holds what every part shares: the binaries.
type gatewayHarness struct {
	e2eDir  string
	node    string // Node 22, as e2e/setup.sh installed it
	airlock string // cmd/airlock, built once
	hostile string // hostile-mcp, built once
	self    string // this test binary, which also runs the primed hostile server (TestMain)
}

// gwSpace is one workspace: its directory, and the environment of every
// airlock process on it (no developer settings; a config directory of
// its own, which holds the approval key that airlock approve signs with).
type gwSpace struct {
	h   *gatewayHarness
	dir string
	env []string
}

func (h *gatewayHarness) space(t *testing.T, extraEnv ...string) *gwSpace {
	t.Helper()
	env := append(cleanEnv(), "XDG_CONFIG_HOME="+t.TempDir())
	return &gwSpace{h: h, dir: workspace(t, "ws"), env: append(env, extraEnv...)}
}

// upstreams writes an upstreams file holding servers (server name to its
// config), as JSON, which the YAML loader reads too.
func upstreams(t *testing.T, servers map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// npmServer is the upstream config of an npm MCP server that gatewaytest
// would run: its command and args, and env.
func npmServer(cmd *exec.Cmd, env map[string]string) map[string]any {
	s := map[string]any{"command": cmd.Path, "args": cmd.Args[1:]}
	if env != nil {
		s["env"] = env
	}
	return s
}

// gatewayProc is one `airlock gateway` process over stdio and the Go
// SDK's client session with it.
type gatewayProc struct {
	cs     *sdk.ClientSession
	cmd    *exec.Cmd
	stderr *gatewaytest.Buffer
}

// gateway starts `airlock gateway --upstreams FILE --workspace DIR
// FLAGS...` with the Go SDK's client (opts: nil for one without
// elicitation) on the newest protocol version both speak, and ends it
// with the test.
func (s *gwSpace) gateway(t *testing.T, file string, opts *sdk.ClientOptions, flags ...string) *gatewayProc {
	t.Helper()
	return s.gatewayOn(t, file, opts, "", flags...)
}

// gatewayOn is gateway with the client asking for protocol version
// version ("" for the newest).
func (s *gwSpace) gatewayOn(t *testing.T, file string, opts *sdk.ClientOptions, version string, flags ...string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(s.h.airlock, append([]string{"gateway", "--upstreams", file, "--workspace", s.dir}, flags...)...)
	cmd.Env = s.env
	// Its own directory, so that no airlock.yaml around the test is read.
	cmd.Dir = t.TempDir()
	g := &gatewayProc{cmd: cmd, stderr: &gatewaytest.Buffer{}}
	cmd.Stderr = g.stderr
	ctx, cancel := context.WithTimeout(context.Background(), gatewayStartTimeout)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-gateway", Version: "1"}, opts).Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("airlock gateway %s: %v\n%s", strings.Join(flags, " "), err, g.stderr.String())
	}
	g.cs = cs
	t.Cleanup(func() {
		g.close()
		if t.Failed() {
			t.Logf("airlock gateway's stderr:\n%s", g.stderr.String())
		}
	})
	return g
}

// close ends the session, and with it the gateway and its upstreams.
func (g *gatewayProc) close() { g.cs.Close() }

// tools lists the names that tools/list offers, sorted.
func (g *gatewayProc) tools(t *testing.T) []string {
	t.Helper()
	return sortedNames(g.toolList(t))
}

// sortedNames are a tool list's names, sorted.
func sortedNames(tools map[string]*sdk.Tool) []string { return slices.Sorted(maps.Keys(tools)) }

// toolList is tools/list, by name.
func (g *gatewayProc) toolList(t *testing.T) map[string]*sdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gatewayCallTimeout)
	defer cancel()
	res, err := g.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// call makes one tools/call and returns its text and the code of its
// error value ("" for a result).
func (g *gatewayProc) call(t *testing.T, name string, args map[string]any) (text, code string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gatewayCallTimeout)
	defer cancel()
	text, code, err := toolCall(ctx, g.cs, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text, code
}

// want calls name and wants the code ("" for a result), with the text
// holding each of contains.
func (g *gatewayProc) want(t *testing.T, name string, args map[string]any, code string, contains ...string) string {
	t.Helper()
	text, got := g.call(t, name, args)
	if got != code {
		t.Fatalf("%s %v: code %q, want %q; text: %.300q", name, args, got, code, text)
	}
	for _, c := range contains {
		if !strings.Contains(text, c) {
			t.Fatalf("%s %v: the text %.300q does not hold %q", name, args, text, c)
		}
	}
	return text
}

// until calls name until it gives a result, for at most recoverWithin,
// and returns the codes it answered before; it fails the test if none
// came.
func (g *gatewayProc) until(t *testing.T, name string, args map[string]any, contains string) []string {
	t.Helper()
	var codes []string
	deadline := time.Now().Add(recoverWithin)
	for {
		text, code := g.call(t, name, args)
		if code == "" && strings.Contains(text, contains) {
			return codes
		}
		if code == "" {
			t.Fatalf("%s: %.300q, want it to hold %q", name, text, contains)
		}
		codes = append(codes, code)
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %q after %v (codes so far: %q)", name, code, recoverWithin, compact(codes))
		}
		time.Sleep(retryEvery)
	}
}

// compact runs of one code into "code×n".
func compact(codes []string) []string {
	var out []string
	for i := 0; i < len(codes); {
		j := i
		for j < len(codes) && codes[j] == codes[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%s×%d", codes[i], j-i))
		i = j
	}
	return out
}

// airlock runs an airlock command on the workspace and returns its
// standard output; it fails the test when the command fails.
func (s *gwSpace) airlock(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gatewayCLITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.h.airlock, args...)
	cmd.Env = s.env
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("airlock %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// auditEntry is what the test reads of one audit record.
type auditEntry struct {
	Tool, Decision, Code string
}

// audit reads the workspace's audit log, after `airlock audit verify`
// has passed on it.
func (s *gwSpace) audit(t *testing.T) ([]auditEntry, string) {
	t.Helper()
	path := filepath.Join(s.dir, ".airlock", "audit.jsonl")
	if out := s.airlock(t, "audit", "verify", path); !strings.Contains(out, ": ok, ") {
		t.Fatalf("airlock audit verify %s: %s", path, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []auditEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r struct{ Entry auditEntry }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: a record that is not JSON: %v", path, err)
		}
		entries = append(entries, r.Entry)
	}
	return entries, string(data)
}

// wantAudited checks that the audit log holds a record of each call, in
// order: tool name and code.
func wantAudited(t *testing.T, entries []auditEntry, calls ...auditEntry) {
	t.Helper()
	i := 0
	for _, e := range entries {
		if i < len(calls) && e.Tool == calls[i].Tool && e.Code == calls[i].Code {
			i++
		}
	}
	if i < len(calls) {
		t.Errorf("the audit log has no record of %+v after the ones before it; it holds %+v", calls[i], entries)
	}
}

// everythingAndFiles is an upstreams file of the everything server and the
// filesystem server (named files) allowed into the directory files.
func everythingAndFiles(t *testing.T, files string) string {
	return upstreams(t, map[string]any{
		"everything": npmServer(gatewaytest.Everything(t), nil),
		"files":      npmServer(gatewaytest.Filesystem(t, files), nil),
	})
}

// npmAdmin: everything and filesystem behind one gateway run as admin in
// the default ask mode, with a client that cannot elicit. A read runs; a
// destructive write asks, writes nothing, and once `airlock approve`d
// (another process, the same workspace) the same call writes the file.
func (h *gatewayHarness) npmAdmin(t *testing.T) {
	s := h.space(t)
	files := t.TempDir()
	file := everythingAndFiles(t, files)
	g := s.gateway(t, file, nil, "--role", "admin")

	names := g.tools(t)
	for _, want := range []string{"everything__echo", "files__read_text_file", "files__write_file", "files__list_directory"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %q", want, names)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "everything__") && !strings.HasPrefix(n, "files__") {
			t.Errorf("tools/list offers %s, which is neither server's", n)
		}
	}

	token := fmt.Sprintf("gateway-e2e %d", time.Now().UnixNano())
	g.want(t, "everything__echo", map[string]any{"message": token}, "", "Echo: "+token)

	note := filepath.Join(files, "note.txt")
	if err := os.WriteFile(note, []byte("first line\n"+token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g.want(t, "files__read_text_file", map[string]any{"path": note}, "", token)

	written := filepath.Join(files, "written.txt")
	args := map[string]any{"path": written, "content": token + "\n"}
	g.want(t, "files__write_file", args, "approval_required")
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Fatalf("write_file waits for approval, yet %s: %v", written, err)
	}
	id := pendingApproval(t, s.airlock(t, "approvals", "--json", "--workspace", s.dir), "files__write_file")
	s.airlock(t, "approve", "--workspace", s.dir, id)
	g.want(t, "files__write_file", args, "")
	if got, err := os.ReadFile(written); err != nil || string(got) != token+"\n" {
		t.Fatalf("the approved write_file: %s is %q, %v; want the content written", written, got, err)
	}
	g.close()

	entries, _ := s.audit(t)
	wantAudited(t, entries,
		auditEntry{Tool: "everything__echo"},
		auditEntry{Tool: "files__read_text_file"},
		auditEntry{Tool: "files__write_file", Code: "approval_required"},
		auditEntry{Tool: "files__write_file"},
	)
}

// npmOperator: an operator is not even shown the filesystem server's
// destructive write_file, and a call of it is refused, writing nothing.
func (h *gatewayHarness) npmOperator(t *testing.T) {
	s := h.space(t)
	files := t.TempDir()
	g := s.gateway(t, upstreams(t, map[string]any{"files": npmServer(gatewaytest.Filesystem(t, files), nil)}), nil, "--role", "operator")
	names := g.tools(t)
	if !slices.Contains(names, "files__read_text_file") || slices.Contains(names, "files__write_file") {
		t.Errorf("tools/list for an operator: %q; want files__read_text_file and not files__write_file (high risk)", names)
	}
	written := filepath.Join(files, "written.txt")
	g.want(t, "files__write_file", map[string]any{"path": written, "content": "x"}, "role_not_allowed")
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Fatalf("write_file was refused, yet %s: %v", written, err)
	}
	g.close()
	entries, _ := s.audit(t)
	wantAudited(t, entries, auditEntry{Tool: "files__write_file", Code: "role_not_allowed"})
}

// npmMemory: in auto-edit the memory server's create_entities runs, and
// read_graph (and the server's own file) then hold the entity.
func (h *gatewayHarness) npmMemory(t *testing.T) {
	s := h.space(t)
	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	file := upstreams(t, map[string]any{
		"memory": npmServer(gatewaytest.Memory(t), map[string]string{"MEMORY_FILE_PATH": graph}),
	})
	g := s.gateway(t, file, nil, "--mode", "auto-edit")
	listed := g.tools(t)
	g.close()
	// The memory server's tools are plain operations on a graph, their
	// definitions free of instructions: none should be flagged. Those
	// that are wait for a person, who accepts them here so that the
	// rest runs on.
	var flagged, signals []string
	for name, p := range s.pins(t, file) {
		if p.State == "flagged" {
			flagged = append(flagged, name)
			signals = append(signals, name+": "+strings.Join(p.Signals, ","))
		}
	}
	if len(flagged) > 0 {
		slices.Sort(signals)
		t.Errorf("the gateway hides %d of the memory server's plain tools as flagged by the injection scanner: %q; tools/list offered only %q", len(flagged), signals, listed)
		s.airlock(t, append([]string{"gateway", "accept", "--workspace", s.dir, "--upstreams", file}, flagged...)...)
	}
	g = s.gateway(t, file, nil, "--mode", "auto-edit")
	name := fmt.Sprintf("e2e-entity-%d", time.Now().UnixNano())
	g.want(t, "memory__create_entities", map[string]any{"entities": []any{
		map[string]any{"name": name, "entityType": "test", "observations": []any{"made through airlock gateway"}},
	}}, "", name)
	g.want(t, "memory__read_graph", map[string]any{}, "", name, "made through airlock gateway")
	if data, err := os.ReadFile(graph); err != nil || !strings.Contains(string(data), name) {
		t.Errorf("the memory server's file %s: %q, %v; want it to hold %s", graph, data, err, name)
	}
	g.close()
	entries, _ := s.audit(t)
	wantAudited(t, entries, auditEntry{Tool: "memory__create_entities"}, auditEntry{Tool: "memory__read_graph"})
}

// nodeEnv is the workspace's environment with Node 22 first on PATH (npx
// runs the Inspector and the suite with it) and a home of the test's own
// (the Inspector may keep state there).
func (s *gwSpace) nodeEnv(t *testing.T) []string {
	return append(slices.Clone(s.env), "PATH="+filepath.Dir(s.h.node)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
}

// inspector: the MCP Inspector's CLI lists the gateway's tools and calls
// everything__echo through it.
func (h *gatewayHarness) inspector(t *testing.T) {
	s := h.space(t)
	file := upstreams(t, map[string]any{"everything": npmServer(gatewaytest.Everything(t), nil)})
	gw := []string{"--", h.airlock, "gateway", "--upstreams", file, "--workspace", s.dir}
	inspect := func(args ...string) string {
		t.Helper()
		argv := slices.Concat([]string{"npx", "--no", "--", "@modelcontextprotocol/inspector", "--cli"}, args, gw)
		out, err := run(h.e2eDir, s.nodeEnv(t), inspectorTimeout, argv...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		return string(out)
	}
	if out := inspect("--method", "tools/list"); !strings.Contains(out, `"everything__echo"`) || !strings.Contains(out, `"inputSchema"`) {
		t.Errorf("the Inspector's tools/list does not list everything__echo:\n%s", out)
	}
	token := fmt.Sprintf("inspector-gateway-%d", time.Now().UnixNano())
	if out := inspect("--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message="+token); !strings.Contains(out, "Echo: "+token) {
		t.Errorf("the Inspector's call of everything__echo does not show the echo of %s:\n%s", token, out)
	}
	entries, _ := s.audit(t)
	wantAudited(t, entries, auditEntry{Tool: "everything__echo"})
}

// typescript: the TypeScript SDK's client over stdio (gateway-client.mjs).
func (h *gatewayHarness) typescript(t *testing.T) {
	s := h.space(t)
	files := t.TempDir()
	file := everythingAndFiles(t, files)
	out, err := run(h.e2eDir, s.env, clientTimeout, h.node, "gateway-client.mjs", h.airlock, file, s.dir, files)
	if err != nil {
		t.Fatalf("node gateway-client.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	if _, err := os.Stat(filepath.Join(files, "ts-note.txt")); err != nil {
		t.Errorf("gateway-client.mjs passed without writing its note: %v", err)
	}
	entries, _ := s.audit(t)
	wantAudited(t, entries,
		auditEntry{Tool: "everything__echo"},
		auditEntry{Tool: "files__read_text_file"},
		auditEntry{Tool: "files__write_file", Code: "role_not_allowed"},
	)
}

// conformance: the official conformance suite's generic server scenarios
// against `airlock gateway --http`, less those gateway-expected-failures.txt
// lists.
func (h *gatewayHarness) conformance(t *testing.T) {
	s := h.space(t)
	file := upstreams(t, map[string]any{"everything": npmServer(gatewaytest.Everything(t), nil)})
	url, _ := startHTTP(t, h.airlock, s.env, "gateway", "--http", "--upstreams", file, "--workspace", s.dir)
	env := append(slices.Clone(s.env), "EXPECTED_FAILURES=gateway-expected-failures.txt")
	out, err := run(h.e2eDir, env, conformanceTimeout, "bash", "conformance.sh", url)
	if err != nil {
		t.Fatalf("conformance.sh %s: %v\n%s", url, err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
