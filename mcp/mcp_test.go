package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	"airlock.dev/airlock/store/sqlite"
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
	f.gate, err = gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Audit: f.log, Approvals: approvals})
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
		// The schema the client sees is the gate's, value for value.
		var wantSchema any
		json.Unmarshal(want.Schema, &wantSchema)
		gotJSON, _ := json.Marshal(got.InputSchema)
		wantJSON, _ := json.Marshal(wantSchema)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: schema\n%s\nwant\n%s", want.Name, gotJSON, wantJSON)
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

func TestUnknownToolIsProtocolError(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, nil, nil)
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("calling an unlisted tool succeeded")
	}
	// The session still serves.
	if got := text(callTool(t, cs, "calculate", map[string]any{"expression": "2*21"})); got != "42" {
		t.Errorf("after an unknown tool: %q, want 42", got)
	}
}

func TestApprove(t *testing.T) {
	writeArgs := map[string]any{"path": "x.txt", "content": "x"}
	hookErr := errors.New("the approver is away")
	tests := []struct {
		name     string
		approved bool
		err      error
		runs     int // gate calls recorded for the call id
	}{
		{"approved runs the same call again", true, nil, 2},
		{"not approved", false, nil, 1},
		{"error is not approved", true, hookErr, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var asked atomic.Int64
			var gotCall tool.Call
			var gotRes tool.Result
			opts := &mcp.Options{Mode: "ask", Approve: func(ctx context.Context, ss *sdk.ServerSession, c tool.Call, r tool.Result) (bool, error) {
				asked.Add(1)
				gotCall, gotRes = c, r
				if ss == nil {
					t.Error("Approve got no session")
				}
				if _, ok := ctx.Deadline(); !ok {
					t.Error("Approve's context has no deadline")
				}
				return tt.approved, tt.err
			}}
			cs := connect(t, f.gate, opts, nil)
			res := callTool(t, cs, "write_file", writeArgs)
			if asked.Load() != 1 {
				t.Fatalf("Approve called %d times, want 1", asked.Load())
			}
			if gotRes.Error == nil || gotRes.Error.Code != tool.CodeApprovalRequired {
				t.Errorf("Approve got %+v, want the approval_required result", gotRes)
			}
			if gotCall.Tool != "write_file" || gotCall.ID == "" || gotCall.ID != gotRes.CallID {
				t.Errorf("Approve got call %+v, want write_file with the gate's call id %s", gotCall, gotRes.CallID)
			}
			entries := f.audited(t, gotRes.CallID)
			if len(entries) != tt.runs {
				t.Errorf("the gate saw the call %d times, want %d", len(entries), tt.runs)
			}
			// The gate has no approvals store yet, so the re-run is asked
			// again; the result returned is the last gate call's.
			if sc := structured(t, res); sc["code"] != string(tool.CodeApprovalRequired) {
				t.Errorf("structured = %v, want approval_required", sc)
			}
			if res.Meta[mcp.MetaCallID] != gotRes.CallID {
				t.Errorf("result call id %v, want %s", res.Meta[mcp.MetaCallID], gotRes.CallID)
			}
		})
	}
}

// TestApproveWithStore runs the whole approval path against a gate with
// an approvals store: the hook records the person's decision in the store,
// and the re-run consumes the approval and runs the call once.
func TestApproveWithStore(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprint("approve=", approve), func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			f := newFixtureWith(t, db)
			var approvalID string
			opts := &mcp.Options{Mode: "ask", Approve: func(ctx context.Context, _ *sdk.ServerSession, c tool.Call, r tool.Result) (bool, error) {
				if r.Approval == nil {
					return false, errors.New("no pending approval")
				}
				approvalID = r.Approval.ID
				if _, err := db.DecideApproval(ctx, r.Approval.ID, approve, "tester", time.Now()); err != nil {
					return false, err
				}
				return approve, nil
			}}
			cs := connect(t, f.gate, opts, nil)
			res := callTool(t, cs, "write_file", map[string]any{"path": "approved.txt", "content": "yes\n"})
			data, readErr := os.ReadFile(filepath.Join(f.dir, "approved.txt"))
			if !approve {
				sc := structured(t, res)
				if !res.IsError || sc["code"] != string(tool.CodeApprovalRequired) || sc["approval_id"] != approvalID {
					t.Errorf("denied approval: %v, want approval_required naming %s", sc, approvalID)
				}
				if readErr == nil {
					t.Error("the file was written without approval")
				}
				return
			}
			if res.IsError {
				t.Fatalf("approved call refused: %s", text(res))
			}
			if string(data) != "yes\n" {
				t.Errorf("file = %q, %v; want the approved write", data, readErr)
			}
			id, _ := res.Meta[mcp.MetaCallID].(string)
			entries := f.audited(t, id)
			if len(entries) != 2 || entries[0].Code != string(tool.CodeApprovalRequired) || entries[1].Decision != "allow" {
				t.Errorf("audit of call %s: %+v; want the ask, then the approved run", id, entries)
			}
			// The approval was used up: the same call parks a new one.
			first := approvalID
			callTool(t, cs, "write_file", map[string]any{"path": "approved.txt", "content": "yes\n"})
			if approvalID == first {
				t.Errorf("the second call reused approval %s", first)
			}
		})
	}
}

func TestApproveNotCalledForOtherRefusals(t *testing.T) {
	f := newFixture(t)
	var asked atomic.Int64
	opts := &mcp.Options{Mode: "read-only", Approve: func(context.Context, *sdk.ServerSession, tool.Call, tool.Result) (bool, error) {
		asked.Add(1)
		return true, nil
	}}
	cs := connect(t, f.gate, opts, nil)
	callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
	callTool(t, cs, "calculate", map[string]any{"expression": "1+1"})
	if asked.Load() != 0 {
		t.Errorf("Approve called %d times for a deny and a success, want 0", asked.Load())
	}
}

func TestElicitApproval(t *testing.T) {
	yes := &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	tests := []struct {
		name    string
		version string
		answer  *sdk.ElicitResult // nil: the client cannot elicit
		runs    int
	}{
		{"accepted yes", legacyVersion, yes, 2},
		{"accepted no", legacyVersion, &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, 1},
		{"declined", legacyVersion, &sdk.ElicitResult{Action: "decline"}, 1},
		{"cancelled", legacyVersion, &sdk.ElicitResult{Action: "cancel"}, 1},
		{"no elicitation", legacyVersion, nil, 1},
		// From 2026-07-28 a server may not send a request while serving
		// one (SEP-2322): the SDK refuses, and the call stays unapproved.
		{"2026-07-28 refuses elicitation", "", yes, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var message string
			copts := &sdk.ClientOptions{}
			if tt.answer != nil {
				copts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					message = req.Params.Message
					return tt.answer, nil
				}
			}
			cs := connectVersion(t, f.gate, &mcp.Options{Mode: "ask", Approve: mcp.ElicitApproval}, copts, tt.version)
			res := callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
			id, _ := res.Meta[mcp.MetaCallID].(string)
			if got := len(f.audited(t, id)); got != tt.runs {
				t.Errorf("the gate saw the call %d times, want %d", got, tt.runs)
			}
			if sc := structured(t, res); sc["code"] != string(tool.CodeApprovalRequired) {
				t.Errorf("structured = %v, want approval_required", sc)
			}
			if tt.answer != nil && tt.version != "" && (!strings.Contains(message, "write_file") || !strings.Contains(message, id)) {
				t.Errorf("elicitation message %q lacks the tool or the call id %s", message, id)
			}
		})
	}
}

func TestElicitApprovalCutsLongArguments(t *testing.T) {
	f := newFixture(t)
	var message string
	copts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		message = req.Params.Message
		return &sdk.ElicitResult{Action: "decline"}, nil
	}}
	cs := connectVersion(t, f.gate, &mcp.Options{Mode: "ask", Approve: mcp.ElicitApproval}, copts, legacyVersion)
	callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": strings.Repeat("é", mcp.MaxElicitArgBytes)})
	if len(message) > mcp.MaxElicitArgBytes+512 || !strings.Contains(message, "MaxElicitArgBytes") {
		t.Errorf("message of %d bytes, want it cut at MaxElicitArgBytes and saying so", len(message))
	}
	if !strings.Contains(message, "Call id:") {
		t.Errorf("message %q lacks the call id", message)
	}
}
