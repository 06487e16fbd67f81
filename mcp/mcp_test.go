package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// fixture is a real gate over a workspace in a temporary directory, with
// the built-in tools, the built-in policy, an audit log and a probe tool
// that shows what the gate handed its executor.
type fixture struct {
	gate     *gate.Gate
	dir      string
	log      *audit.Log
	logPath  string
	probeRun atomic.Int64
}

// probeSeen is what the probe tool returns: the call as its executor got it.
type probeSeen struct {
	Args    string `json:"args"`
	Session string `json:"session"`
	Role    string `json:"role"`
	Mode    string `json:"mode"`
	Step    int64  `json:"step"`
}

func newFixture(t testing.TB) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith is newFixture with a gate that parks asked calls in approvals.
func newFixtureWith(t testing.TB, approvals store.Approvals) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	f := &fixture{dir: dir, logPath: filepath.Join(t.TempDir(), "audit.jsonl")}
	f.log, err = audit.Open(f.logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.log.Close() })
	reg := tool.NewRegistry()
	probe := tool.Tool{
		Name: "probe", Description: "returns the call as the executor sees it",
		Risk: tool.RiskLow, Effect: tool.EffectRead,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{
			"s":{"type":"string","maxLength":4096},
			"sleep_ms":{"type":"integer","minimum":0,"maximum":5000}}}`),
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			f.probeRun.Add(1)
			var a struct {
				SleepMS int `json:"sleep_ms"`
			}
			json.Unmarshal(c.Args, &a)
			select {
			case <-time.After(time.Duration(a.SleepMS) * time.Millisecond):
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
			out, _ := json.Marshal(probeSeen{Args: string(c.Args), Session: c.Session, Role: c.Role, Mode: c.Mode, Step: c.Step})
			return tool.Result{Content: string(out)}, nil
		},
	}
	for _, tl := range append([]tool.Tool{tools.Calculate(), probe}, tools.FileTools(ws)...) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f.gate, err = gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Audit: f.log, Approvals: approvals,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// audited returns the audit entries of one call id.
func (f *fixture) audited(t *testing.T, callID string) []audit.Entry {
	t.Helper()
	if err := f.log.Flush(); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(f.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []audit.Entry
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Entry.CallID == callID {
			out = append(out, r.Entry)
		}
	}
	return out
}

// legacyVersion is the newest protocol version before 2026-07-28, the
// last in which a server may send elicitation/create while it serves a
// tools/call.
const legacyVersion = "2025-11-25"

// connect serves g in memory and returns a connected SDK client session,
// on the SDK's latest protocol version.
func connect(t *testing.T, g *gate.Gate, opts *mcp.Options, copts *sdk.ClientOptions) *sdk.ClientSession {
	return connectVersion(t, g, opts, copts, "")
}

// connectVersion is connect on the given protocol version.
func connectVersion(t *testing.T, g *gate.Gate, opts *mcp.Options, copts *sdk.ClientOptions, version string) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(g, opts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v; want a tool result", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured returns a refusal's structuredContent as a map.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", data, err)
	}
	return m
}

func probe(t *testing.T, res *sdk.CallToolResult) probeSeen {
	t.Helper()
	if res.IsError {
		t.Fatalf("probe refused: %s", text(res))
	}
	var p probeSeen
	if err := json.Unmarshal([]byte(text(res)), &p); err != nil {
		t.Fatalf("probe result %q: %v", text(res), err)
	}
	return p
}

// TestListToolsByRole checks that tools/list shows a caller only the
// tools its role may call, and none that Options.Visible hides; a hidden
// tool's call is still answered by the gate.
func TestListToolsByRole(t *testing.T) {
	f := newFixture(t)
	names := func(opts *mcp.Options) []string {
		res, err := connect(t, f.gate, opts, nil).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	viewer := names(&mcp.Options{Role: "viewer"})
	for _, tl := range f.gate.Tools() {
		if shown := slices.Contains(viewer, tl.Name); shown != (tl.Risk == tool.RiskLow) {
			t.Errorf("viewer: %s (risk %s) shown = %v", tl.Name, tl.Risk, shown)
		}
	}
	if operator := names(&mcp.Options{Role: "operator"}); !slices.Contains(operator, "write_file") || len(operator) <= len(viewer) {
		t.Errorf("operator sees %v; want the medium-risk tools too", operator)
	}
	hidden := names(&mcp.Options{Role: "operator", Visible: func(name string) bool { return name != "calculate" }})
	if slices.Contains(hidden, "calculate") || !slices.Contains(hidden, "read_file") {
		t.Errorf("with calculate hidden, tools/list = %v", hidden)
	}
	cs := connect(t, f.gate, &mcp.Options{Role: "viewer"}, nil)
	if res := callTool(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "x"}); !res.IsError || structured(t, res)["code"] != string(tool.CodeRoleNotAllowed) {
		t.Errorf("a viewer's call of an unlisted tool: %s", text(res))
	}
}

func TestListTools(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	for _, want := range f.gate.Tools() {
		got, ok := byName[want.Name]
		if !ok {
			t.Errorf("tools/list lacks %s", want.Name)
			continue
		}
		if got.Description != want.Description {
			t.Errorf("%s: description %q, want %q", want.Name, got.Description, want.Description)
		}
		// The schema the client sees is the gate's, bound for bound, in
		// standard keywords only: no $schema, no custom format.
		gotJSON, _ := json.Marshal(got.InputSchema)
		shown, gate := leaves(t, gotJSON), leaves(t, want.Schema)
		for ptr, v := range gate {
			if ptr == "/$schema" || strings.HasSuffix(ptr, "/format") && (v == "relative-path" || v == "http-url") {
				if _, ok := shown[ptr]; ok {
					t.Errorf("%s: the client is shown %s %v", want.Name, ptr, v)
				}
				continue
			}
			if fmt.Sprint(shown[ptr]) != fmt.Sprint(v) {
				t.Errorf("%s: %s is %v, the gate's %v", want.Name, ptr, shown[ptr], v)
			}
		}
	}
	for _, name := range []string{"calculate", "read_file", "write_file", "edit_file", "list_dir", "glob", "grep"} {
		if byName[name] == nil {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	if len(res.Tools) != len(f.gate.Tools()) {
		t.Errorf("tools/list has %d tools, the gate %d", len(res.Tools), len(f.gate.Tools()))
	}
	schema, _ := byName["calculate"].InputSchema.(map[string]any)
	if schema["type"] != "object" || schema["additionalProperties"] != false {
		t.Errorf("calculate schema = %v, want a closed object", schema)
	}
	if a := byName["read_file"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("read_file annotations = %+v, want read-only", a)
	}
	if a := byName["write_file"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("write_file annotations = %+v, want destructive", a)
	}
}

// leaves flattens a JSON document to its scalar values by JSON pointer.
func leaves(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), e)
			}
		default:
			out[ptr] = x
		}
	}
	walk("", v)
	return out
}

func TestCallTool(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("hello from the workspace\n"), 0o644)
	tests := []struct {
		name     string
		mode     string
		tool     string
		args     any
		wantText string    // a substring of the text content
		wantCode tool.Code // "" for a success
		decision string
	}{
		{"calculate", "", "calculate", map[string]any{"expression": "($100 + $250.75) * 20%"}, "70.15", "", ""},
		{"read_file", "", "read_file", map[string]any{"path": "notes.txt"}, "hello from the workspace", "", ""},
		{"tool's own refusal", "", "calculate", map[string]any{"expression": "2 x 3"}, "invalid_syntax: ", "invalid_syntax", "allow"},
		{"invalid arguments", "", "calculate", map[string]any{"expr": "1"}, "invalid_arguments: ", tool.CodeInvalidArguments, "deny"},
		{"absent arguments are {}", "", "calculate", nil, "invalid_arguments: ", tool.CodeInvalidArguments, "deny"},
		{"denied in read-only", "read-only", "write_file", map[string]any{"path": "x.txt", "content": "x"}, "denied: ", tool.CodeDenied, "deny"},
		{"asked in ask", "ask", "write_file", map[string]any{"path": "x.txt", "content": "x"}, "approval_required: ", tool.CodeApprovalRequired, "ask"},
		{"outside the workspace", "", "read_file", map[string]any{"path": "../etc/passwd"}, "Hint: ", "", "deny"},
		{"unknown mode", "yolo", "calculate", map[string]any{"expression": "1"}, "invalid_call: ", tool.CodeInvalidCall, "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, f.gate, &mcp.Options{Mode: tt.mode}, nil)
			res := callTool(t, cs, tt.tool, tt.args)
			got := text(res)
			if !strings.Contains(got, tt.wantText) {
				t.Errorf("text = %q, want it to contain %q", got, tt.wantText)
			}
			if res.Meta[mcp.MetaCallID] == nil {
				t.Errorf("_meta = %v, want %s", res.Meta, mcp.MetaCallID)
			}
			if tt.decision == "" {
				if res.IsError {
					t.Fatalf("isError, want success: %s", got)
				}
				return
			}
			if !res.IsError {
				t.Fatalf("success %q, want isError", got)
			}
			sc := structured(t, res)
			if tt.wantCode != "" && sc["code"] != string(tt.wantCode) {
				t.Errorf("structured code = %v, want %s", sc["code"], tt.wantCode)
			}
			if sc["decision"] != tt.decision {
				t.Errorf("structured decision = %v, want %s", sc["decision"], tt.decision)
			}
			if h, _ := sc["hint"].(string); h == "" || !strings.Contains(got, "Hint: "+h) {
				t.Errorf("hint %q missing from structured content or text %q", h, got)
			}
			if !strings.HasPrefix(got, sc["code"].(string)+": ") {
				t.Errorf("text %q does not start with the code %v", got, sc["code"])
			}
		})
	}
}

func TestInvalidArgumentsListViolations(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, nil, nil)
	res := callTool(t, cs, "read_file", map[string]any{"path": 3, "offset": -1, "extra": true})
	sc := structured(t, res)
	vs, _ := sc["violations"].([]any)
	if sc["code"] != string(tool.CodeInvalidArguments) || len(vs) < 2 {
		t.Fatalf("structured = %v, want invalid_arguments with every violation", sc)
	}
	for _, v := range vs {
		msg, _ := v.(map[string]any)["message"].(string)
		if !strings.Contains(text(res), msg) {
			t.Errorf("text %q lacks violation %q", text(res), msg)
		}
	}
	if _, ok := sc["rule"]; ok {
		t.Errorf("structured = %v: rule present though none decided", sc)
	}
}

func TestCallCarriesSessionRoleMode(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, &mcp.Options{Role: "admin", Mode: "auto"}, nil)
	first := probe(t, callTool(t, cs, "probe", map[string]any{"s": "a"}))
	second := probe(t, callTool(t, cs, "probe", map[string]any{"s": "b"}))
	if first.Session == "" || first.Session != second.Session {
		t.Errorf("sessions %q and %q, want one id for the session", first.Session, second.Session)
	}
	// Each call of a session is its own step, so that the ledger keys
	// the same call made again later apart from the first.
	if first.Step < 1 || second.Step != first.Step+1 {
		t.Errorf("steps %d then %d, want one after the other from 1", first.Step, second.Step)
	}
	if first.Role != "admin" || first.Mode != "auto" {
		t.Errorf("role, mode = %q, %q; want admin, auto", first.Role, first.Mode)
	}
	other := probe(t, callTool(t, connect(t, f.gate, nil, nil), "probe", map[string]any{}))
	if other.Session == first.Session {
		t.Errorf("two sessions share the id %q", other.Session)
	}
	if other.Role != policy.DefaultRole {
		t.Errorf("default role = %q, want %q", other.Role, policy.DefaultRole)
	}
}

func TestUnknownToolIsToolResult(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, nil, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("an unlisted tool: protocol error %v; want a tool result", err)
	}
	sc := structured(t, res)
	if !res.IsError || sc["code"] != string(tool.CodeUnknownTool) || sc["hint"] == "" || !strings.HasPrefix(text(res), "unknown_tool: ") {
		t.Fatalf("an unlisted tool: %s %v, want an unknown_tool refusal", text(res), sc)
	}
	// The gate saw it: the refusal is audited.
	id, _ := res.Meta[mcp.MetaCallID].(string)
	if entries := f.audited(t, id); len(entries) != 1 || entries[0].Code != string(tool.CodeUnknownTool) {
		t.Errorf("audit of the unknown tool's call %q: %+v", id, entries)
	}
	// The session still serves.
	if got := text(callTool(t, cs, "calculate", map[string]any{"expression": "2*21"})); got != "42" {
		t.Errorf("after an unknown tool: %q, want 42", got)
	}
}

// TestResultsAreObjects: every result carries an object as structured
// content, beside the text: a client that finds none parses the text
// as JSON (Gemini CLI), and 70.15 is a number, not the object it wants.
func TestResultsAreObjects(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("hello\n"), 0o644)
	cs := connect(t, f.gate, nil, nil)

	res := callTool(t, cs, "calculate", map[string]any{"expression": "($100 + $250.75) * 20%"})
	if sc := structured(t, res); text(res) != "70.15" || sc["value"] != "70.15" || sc["float"] != 70.15 || sc["exact"] != true {
		t.Errorf("calculate: text %q, structured %v; want 70.15 and {value 70.15, float 70.15, exact true}", text(res), sc)
	}
	res = callTool(t, cs, "calculate", map[string]any{"expression": "2/3"})
	if sc := structured(t, res); sc["exact"] != false || !strings.HasPrefix(sc["value"].(string), "0.6666") {
		t.Errorf("calculate 2/3: structured %v, want an inexact value", sc)
	}
	res = callTool(t, cs, "read_file", map[string]any{"path": "notes.txt"})
	if sc := structured(t, res); res.IsError || sc["text"] != text(res) || sc["source"] != "workspace:notes.txt" {
		t.Errorf("read_file: structured %v, want the text %q and its source", sc, text(res))
	}
	res = callTool(t, cs, "list_dir", map[string]any{"path": "."})
	if sc := structured(t, res); res.IsError || sc["text"] != text(res) {
		t.Errorf("list_dir: structured %v, want the text %q", sc, text(res))
	}
	// No tool declares an output schema: a client checks structured
	// content against one, and a refusal's would not match it.
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.OutputSchema != nil {
			t.Errorf("%s declares an output schema", tl.Name)
		}
	}
}

// TestGlobSource: a glob result's envelope names the pattern as it is.
func TestGlobSource(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644)
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	reg := tool.NewRegistry()
	for _, tl := range tools.FileTools(ws) {
		reg.Register(tl)
	}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Envelopes: true,
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	got := text(callTool(t, connect(t, g, nil, nil), "glob", map[string]any{"pattern": "**/*.go"}))
	if !strings.Contains(got, `source="workspace:glob **/*.go"`) || !strings.Contains(got, "a.go") {
		t.Errorf("glob result %q, want an envelope from workspace:glob **/*.go", got)
	}
}

// TestCancelledCall: a call the client cancels is recorded as cancelled,
// not as past its deadline.
func TestCancelledCall(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.probeRun.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "probe", Arguments: map[string]any{"sleep_ms": 5000}}); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(f.logPath)
		f.log.Flush()
		switch {
		case strings.Contains(string(data), `"code":"cancelled"`):
			if strings.Contains(string(data), "deadline_exceeded") {
				t.Errorf("audit log %s records a deadline", data)
			}
			return
		case strings.Contains(string(data), "deadline_exceeded"), time.Now().After(deadline):
			t.Fatalf("audit log %s, want the probe recorded as cancelled", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
