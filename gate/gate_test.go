package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/protect"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// counted is a tool whose executor counts how often it is reached.
type counted struct {
	name   string
	risk   tool.Risk
	effect tool.Effect
	runs   atomic.Int64
}

func (c *counted) tool() tool.Tool {
	return tool.Tool{
		Name: c.name, Description: "counts its runs", Risk: c.risk, Effect: c.effect,
		PathArgs: []string{"path"},
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,
			"properties":{"path":{"type":"string","maxLength":256,"format":"relative-path"},
			"n":{"type":"integer","minimum":0,"maximum":100}}}`),
		Run: func(ctx context.Context, call *tool.Call) (tool.Result, error) {
			c.runs.Add(1)
			return tool.Result{Content: "ran"}, nil
		},
	}
}

type fixture struct {
	gate    *gate.Gate
	dir     string
	log     *audit.Log
	counted map[string]*counted
}

func newFixture(t testing.TB, policyFile string) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	pol := policy.Default()
	if policyFile != "" {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		os.WriteFile(path, []byte(policyFile), 0o600)
		if pol, err = policy.Load(path); err != nil {
			t.Fatal(err)
		}
	}
	log, err := audit.Open(filepath.Join(dir, workspace.StateDir, "audit.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	reg := tool.NewRegistry()
	f := &fixture{dir: dir, log: log, counted: map[string]*counted{}}
	for _, c := range []*counted{
		{name: "probe_read_low", risk: tool.RiskLow, effect: tool.EffectRead},
		{name: "probe_write_medium", risk: tool.RiskMedium, effect: tool.EffectWrite},
		{name: "probe_external_medium", risk: tool.RiskMedium, effect: tool.EffectExternal},
		{name: "probe_external_high", risk: tool.RiskHigh, effect: tool.EffectExternal},
		{name: "probe_read_high", risk: tool.RiskHigh, effect: tool.EffectRead},
	} {
		f.counted[c.name] = c
		if err := reg.Register(c.tool()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tl := range append([]tool.Tool{tools.Calculate()}, tools.FileTools(ws)...) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	g, err := gate.New(reg, &gate.Options{Policy: pol, Workspace: ws, Audit: log,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	f.gate = g
	return f
}

func call(tl, args, role, mode string) tool.Call {
	return tool.Call{Tool: tl, Args: json.RawMessage(args), Role: role, Mode: mode}
}

// TestDecisionPaths walks every way a call can end, through the real gate
// with the built-in policy.
func TestDecisionPaths(t *testing.T) {
	f := newFixture(t, `rules:
  - id: no-big-n
    when: 'has(args.n) && args.n > 50'
    decision: deny
    message: n above 50 is refused
    hint: use n of 50 or less
  - id: ask-secret
    when: 'has(args.path) && args.path.startsWith("secret")'
    decision: ask
    message: secrets need a person
    hint: ask for approval
`)
	os.MkdirAll(filepath.Join(f.dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("hello\n"), 0o644)
	tests := []struct {
		name       string
		call       tool.Call
		decision   string
		code       tool.Code
		rule       string
		wantRunsOf string // a counted tool that must have run once
	}{
		{"allow low read", call("probe_read_low", `{}`, "", ""), "allow", "", "", "probe_read_low"},
		{"calculate", call("calculate", `{"expression":"2*21"}`, "", ""), "allow", "", "", ""},
		{"calculate refusal is the tool's error", call("calculate", `{"expression":"2 x 3"}`, "", ""), "allow", "invalid_syntax", "", ""},
		{"unknown tool", call("nope", `{}`, "", ""), "deny", tool.CodeUnknownTool, "", ""},
		{"malformed json", call("calculate", `{"expression":`, "", ""), "deny", tool.CodeInvalidArguments, "", ""},
		{"unknown argument", call("calculate", `{"expression":"1","x":1}`, "", ""), "deny", tool.CodeInvalidArguments, "", ""},
		{"too large", call("calculate", `{"expression":"`+strings.Repeat("1", 5<<20)+`"}`, "", ""), "deny", tool.CodeArgumentsTooLarge, "", ""},
		{"unknown role", call("probe_read_low", `{}`, "root", ""), "deny", tool.CodeInvalidCall, "", ""},
		{"unknown mode", call("probe_read_low", `{}`, "", "yolo"), "deny", tool.CodeInvalidCall, "", ""},
		{"viewer cannot medium", call("probe_write_medium", `{}`, "viewer", "auto"), "deny", tool.CodeRoleNotAllowed, "role-bound", ""},
		{"operator cannot high", call("probe_read_high", `{}`, "operator", "auto"), "deny", tool.CodeRoleNotAllowed, "role-bound", ""},
		{"admin high asks in auto", call("probe_external_high", `{}`, "admin", "auto"), "ask", tool.CodeApprovalRequired, "high-risk-asks", ""},
		{"ask mode write asks", call("probe_write_medium", `{}`, "", "ask"), "ask", tool.CodeApprovalRequired, "mode:ask", ""},
		{"default mode is ask", call("probe_write_medium", `{}`, "", ""), "ask", tool.CodeApprovalRequired, "mode:ask", ""},
		{"read-only denies write", call("probe_write_medium", `{}`, "", "read-only"), "deny", tool.CodeDenied, "mode:read-only", ""},
		{"read-only denies external", call("probe_external_medium", `{}`, "", "read-only"), "deny", tool.CodeDenied, "mode:read-only", ""},
		{"auto-edit allows write", call("probe_write_medium", `{}`, "", "auto-edit"), "allow", "", "", "probe_write_medium"},
		{"auto-edit asks external", call("probe_external_medium", `{}`, "", "auto-edit"), "ask", tool.CodeApprovalRequired, "mode:auto-edit", ""},
		{"auto allows external", call("probe_external_medium", `{}`, "", "auto"), "allow", "", "", "probe_external_medium"},
		{"rule denies", call("probe_read_low", `{"n":60}`, "", ""), "deny", tool.CodeDenied, "no-big-n", ""},
		{"rule asks", call("probe_read_low", `{"path":"secret.txt"}`, "", ""), "ask", tool.CodeApprovalRequired, "ask-secret", ""},
		{"path outside", call("probe_read_low", `{"path":"../x"}`, "", ""), "deny", tool.CodeInvalidArguments, "", ""},
		{"symlink outside", call("probe_read_low", `{"path":"out/x"}`, "", ""), "deny", tool.CodePathOutside, "", ""},
		{"state dir", call("probe_read_low", `{"path":".airlock/audit.jsonl"}`, "", ""), "deny", tool.CodePathOutside, "", ""},
		{"git write asks in auto-edit", call("probe_write_medium", `{"path":".git/config"}`, "", "auto-edit"), "ask", tool.CodeApprovalRequired, protect.RuleHostExecuted, ""},
		{"git write asks in auto", call("probe_write_medium", `{"path":"x/../.git/hooks/pre-commit"}`, "", "auto"), "ask", tool.CodeApprovalRequired, protect.RuleHostExecuted, ""},
		{"git read is fine", call("probe_read_low", `{"path":".git/config"}`, "", ""), "allow", "", "", ""},
		{"read_file", call("read_file", `{"path":"a.txt"}`, "", ""), "allow", "", "", ""},
		{"read_file missing", call("read_file", `{"path":"none.txt"}`, "", ""), "allow", tool.CodeNotFound, "", ""},
	}
	os.Symlink(filepath.Dir(f.dir), filepath.Join(f.dir, "out"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before int64
			if c := f.counted[tt.wantRunsOf]; c != nil {
				before = c.runs.Load()
			}
			res := f.gate.Call(context.Background(), tt.call)
			var code tool.Code
			if res.Error != nil {
				code = res.Error.Code
				if res.Error.Message == "" || res.Error.Hint == "" {
					t.Errorf("error %+v lacks a message or hint", res.Error)
				}
			}
			if res.Decision != tt.decision || code != tt.code {
				t.Fatalf("got %s/%q (%+v), want %s/%q", res.Decision, code, res.Error, tt.decision, tt.code)
			}
			if tt.rule != "" && res.Rule != tt.rule {
				t.Errorf("rule %q, want %q", res.Rule, tt.rule)
			}
			if c := f.counted[tt.wantRunsOf]; c != nil && c.runs.Load() != before+1 {
				t.Errorf("%s ran %d times, want once", tt.wantRunsOf, c.runs.Load()-before)
			}
			if res.CallID == "" || res.Session == "" {
				t.Errorf("result lacks call id or session: %+v", res)
			}
		})
	}
}

// TestRefusedCallsNeverExecute is the gate's central property: on random
// calls, an executor runs exactly when the decision is allow.
func TestRefusedCallsNeverExecute(t *testing.T) {
	f := newFixture(t, `rules:
  - id: deny-odd
    when: 'has(args.n) && int(args.n) % 2 == 1'
    decision: deny
    message: odd n is refused
    hint: use an even n
`)
	rng := rand.New(rand.NewPCG(7, 8))
	names := []string{"probe_read_low", "probe_write_medium", "probe_external_medium", "probe_external_high", "probe_read_high"}
	roles := []string{"", "viewer", "operator", "admin", "bogus"}
	modes := []string{"", "read-only", "ask", "auto-edit", "auto", "bogus"}
	paths := []string{"", `"a.txt"`, `".git/x"`, `"../x"`, `".airlock/x"`, `"/etc/passwd"`}
	seen := map[string]int{}
	for i := 0; i < 3000; i++ {
		name := names[rng.IntN(len(names))]
		args := fmt.Sprintf(`{"n":%d`, rng.IntN(120))
		if p := paths[rng.IntN(len(paths))]; p != "" {
			args += `,"path":` + p
		}
		args += "}"
		c := f.counted[name]
		before := c.runs.Load()
		res := f.gate.Call(context.Background(), call(name, args, roles[rng.IntN(len(roles))], modes[rng.IntN(len(modes))]))
		ran := c.runs.Load() - before
		seen[res.Decision]++
		if (res.Decision == "allow") != (ran == 1) || ran > 1 {
			t.Fatalf("%s %s: decision %s (%+v) but the executor ran %d times", name, args, res.Decision, res.Error, ran)
		}
	}
	if seen["allow"] == 0 || seen["deny"] == 0 || seen["ask"] == 0 {
		t.Fatalf("the random calls did not reach every decision: %v", seen)
	}
}

// TestCheckExecutesNothing: Check decides exactly as Call would, and runs
// nothing.
func TestCheckExecutesNothing(t *testing.T) {
	f := newFixture(t, "")
	c := f.counted["probe_write_medium"]
	res := f.gate.Check(context.Background(), call("probe_write_medium", `{}`, "", "auto-edit"))
	if res.Decision != "allow" || res.Error != nil || c.runs.Load() != 0 {
		t.Fatalf("check: %+v, runs %d", res, c.runs.Load())
	}
	res = f.gate.Check(context.Background(), call("write_file", `{"path":"new.txt","content":"x"}`, "", "auto-edit"))
	if res.Decision != "allow" {
		t.Fatalf("check write_file: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("check wrote the file: %v", err)
	}
}

// TestEveryCallIsAudited: one record per call, with stages, and the chain
// verifies.
func TestEveryCallIsAudited(t *testing.T) {
	f := newFixture(t, "")
	for _, c := range []tool.Call{
		call("calculate", `{"expression":"1+1"}`, "", ""),
		call("nope", `{}`, "", ""),
		call("probe_write_medium", `{}`, "", ""),
	} {
		f.gate.Call(context.Background(), c)
	}
	if err := f.log.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, workspace.StateDir, "audit.jsonl")
	rep, err := audit.Verify(path)
	if err != nil || !rep.OK || rep.Records != 3 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "1+1") {
		t.Fatal("the audit log holds call arguments; it must hold only sizes and hashes")
	}
}

// TestAuditedStages: each call's audit entry names every stage it passed,
// in order, with the stage's decision and, where the call ended, its
// code; a check stops before execute.
func TestAuditedStages(t *testing.T) {
	f := newFixture(t, "")
	os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("hello\n"), 0o644)
	ctx := context.Background()
	tests := []struct {
		name     string
		run      func(context.Context, tool.Call) tool.Result
		call     tool.Call
		decision string
		stages   string
	}{
		{"allowed", f.gate.Call, call("calculate", `{"expression":"1+1"}`, "", ""), "allow",
			"decode:pass validate:pass authorize:allow guards:pass intent:skip loop:skip approval:pass idempotency:skip execute:pass review:skip after:pass"},
		{"checked", f.gate.Check, call("probe_write_medium", `{}`, "", "auto-edit"), "allow",
			"decode:pass validate:pass authorize:allow guards:pass intent:skip loop:skip approval:pass idempotency:skip"},
		{"unknown tool", f.gate.Call, call("nope", `{}`, "", ""), "deny",
			"decode:deny:unknown_tool"},
		{"denied by the mode", f.gate.Call, call("probe_write_medium", `{}`, "", "read-only"), "deny",
			"decode:pass validate:pass authorize:deny:denied"},
		{"denied by a guard", f.gate.Call, call("probe_read_low", `{"path":".airlock/audit.jsonl"}`, "", ""), "deny",
			"decode:pass validate:pass authorize:allow guards:deny:path_outside_workspace"},
		{"asked", f.gate.Call, call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask"), "ask",
			"decode:pass validate:pass authorize:ask guards:ask intent:skip loop:skip approval:ask:approval_required"},
	}
	for _, tt := range tests {
		c := tt.call
		c.ID = "call-" + strings.ReplaceAll(tt.name, " ", "-")
		res := tt.run(ctx, c)
		if res.Decision != tt.decision {
			t.Errorf("%s: decision %s, want %s", tt.name, res.Decision, tt.decision)
		}
		e := auditEntry(t, f, c.ID)
		var got []string
		for _, s := range e.Stages {
			got = append(got, strings.TrimSuffix(s.Name+":"+s.Decision+":"+s.Code, ":"))
		}
		if g := strings.Join(got, " "); g != tt.stages || e.Decision != tt.decision {
			t.Errorf("%s: audited %s with stages\n\t%s\nwant %s with\n\t%s", tt.name, e.Decision, g, tt.decision, tt.stages)
		}
	}
}

// auditEntry reads the audit entry of the call with id from the fixture's
// log.
func auditEntry(t *testing.T, f *fixture, id string) audit.Entry {
	t.Helper()
	if err := f.log.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(f.dir, workspace.StateDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Entry.CallID == id {
			return r.Entry
		}
	}
	t.Fatalf("no audit entry for call %s", id)
	return audit.Entry{}
}

// TestDeadline: an executor that overruns the deadline ends the call with
// deadline_exceeded.
func TestDeadline(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tool.Tool{Name: "sleepy", Description: "sleeps", Risk: tool.RiskLow, Effect: tool.EffectRead,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Run: func(ctx context.Context, _ *tool.Call) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}})
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Timeout: 50 * time.Millisecond, Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	res := g.Call(context.Background(), call("sleepy", `{}`, "", ""))
	if res.Error == nil || res.Error.Code != tool.CodeDeadlineExceeded {
		t.Fatalf("got %+v", res)
	}
}

// TestCancelled: a call whose caller cancels it (a client that sent
// notifications/cancelled, or went away) ends with cancelled, not
// deadline_exceeded, in the result and in the audit log; its own
// deadline still ends it with deadline_exceeded.
func TestCancelled(t *testing.T) {
	started := make(chan struct{}, 1)
	reg := tool.NewRegistry()
	reg.Register(tool.Tool{Name: "sleepy", Description: "sleeps", Risk: tool.RiskLow, Effect: tool.EffectRead,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Run: func(ctx context.Context, _ *tool.Call) (tool.Result, error) {
			started <- struct{}{}
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}})
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Audit: log, Timeout: time.Minute,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	res := g.Call(ctx, call("sleepy", `{}`, "", ""))
	if res.Error == nil || res.Error.Code != tool.CodeCancelled || strings.Contains(res.Error.Message, "deadline") {
		t.Fatalf("cancelled call: %+v, want cancelled", res.Error)
	}
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"code":"cancelled"`) || strings.Contains(string(data), "deadline_exceeded") {
		t.Errorf("audit log %s, want the call recorded as cancelled", data)
	}
}

// TestNilPolicyDenies: a gate without a policy fails closed.
func TestNilPolicyDenies(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	g, err := gate.New(reg, &gate.Options{Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	if res := g.Call(context.Background(), call("calculate", `{"expression":"1"}`, "", "")); res.Decision != "deny" {
		t.Fatalf("got %+v", res)
	}
}

// BenchmarkCallCalculate measures the gate's overhead per allowed calculate
// call with the audit log on (group commit).
func BenchmarkCallCalculate(b *testing.B) {
	f := newFixture(b, "")
	c := call("calculate", `{"expression":"($100 + $250.75) * 20%"}`, "", "")
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := f.gate.Call(context.Background(), c); res.Error != nil {
				b.Fatal(res.Error)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res := f.gate.Call(context.Background(), c); res.Error != nil {
					b.Fatal(res.Error)
				}
			}
		})
	})
}

// fileTools is a workspace with the file tools and an approvals store (the
// embedded SQLite file), for the approval tests.
func fileTools(t *testing.T) (dir string, ws *workspace.Workspace, reg *tool.Registry, approvals *sqlite.DB) {
	t.Helper()
	dir = t.TempDir()
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg = tool.NewRegistry()
	for _, tl := range tools.FileTools(ws) {
		reg.Register(tl)
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dir, ws, reg, db
}

// TestApprovalFlow: an ask parks the exact call; once approved, that call
// runs once, and only with the same arguments (in any key order).
func TestApprovalFlow(t *testing.T) {
	dir, ws, reg, approvals := fileTools(t)
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals, Without: bare})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inSession := func(c tool.Call, session string) tool.Call { c.Session = session; return c }
	first := g.Call(ctx, inSession(call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask"), "s1"))
	if first.Error == nil || first.Error.Code != tool.CodeApprovalRequired || first.Approval == nil {
		t.Fatalf("first call: %+v", first)
	}
	if string(first.Approval.Args) != `{"content":"x","path":"a.txt"}` || first.Approval.Tool != "write_file" {
		t.Fatalf("the approval is not bound to the exact call: %+v", first.Approval)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the asked call ran")
	}
	// A check never parks anything.
	g.Check(ctx, call("write_file", `{"path":"b.txt","content":"x"}`, "", "ask"))
	if pending, err := approvals.PendingApprovals(ctx, time.Now()); err != nil || len(pending) != 1 {
		t.Fatalf("%d approvals parked (%v), want 1", len(pending), err)
	}
	if _, err := approvals.DecideApproval(ctx, first.Approval.ID, true, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Other arguments, or another session, need their own approval.
	if res := g.Call(ctx, inSession(call("write_file", `{"path":"a.txt","content":"y"}`, "", "ask"), "s1")); res.Error == nil {
		t.Fatalf("an approval of other arguments let this run: %+v", res)
	}
	if res := g.Call(ctx, inSession(call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask"), "s2")); res.Error == nil {
		t.Fatalf("an approval from another session let this run: %+v", res)
	}
	// The same call, keys in another order, runs once.
	res := g.Call(ctx, inSession(call("write_file", `{"content":"x","path":"a.txt"}`, "", "ask"), "s1"))
	if res.Error != nil || res.Decision != "allow" {
		t.Fatalf("approved call: %+v", res)
	}
	if again := g.Call(ctx, inSession(call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask"), "s1")); again.Error == nil {
		t.Fatal("an approval was used twice")
	}
}

// TestEarlierApproval: a call that names the approval an earlier
// attempt was parked under ends with approval_denied once a person denied
// it, and names it again while it is pending; naming another call's
// approval changes nothing.
func TestEarlierApproval(t *testing.T) {
	dir, ws, reg, approvals := fileTools(t)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals, Audit: log,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mk := func(args, approval string) tool.Call {
		c := call("write_file", args, "", "ask")
		c.Session, c.Approval = "s1", approval
		return c
	}
	first := g.Call(ctx, mk(`{"path":"a.txt","content":"x"}`, ""))
	other := g.Call(ctx, mk(`{"path":"b.txt","content":"y"}`, ""))
	if first.Approval == nil || other.Approval == nil {
		t.Fatalf("not parked: %+v, %+v", first, other)
	}
	id := first.Approval.ID

	// Pending: the same approval is named again, and no other is parked.
	again := g.Call(ctx, mk(`{"path":"a.txt","content":"x"}`, id))
	if again.Error == nil || again.Error.Code != tool.CodeApprovalRequired || again.Approval == nil || again.Approval.ID != id {
		t.Fatalf("pending: %+v, want approval_required naming %s", again, id)
	}
	if pending, err := approvals.PendingApprovals(ctx, time.Now()); err != nil || len(pending) != 2 {
		t.Fatalf("%d approvals parked (%v), want 2", len(pending), err)
	}

	if _, err := approvals.DecideApproval(ctx, id, false, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Another call naming the denied approval is not this call's: it is
	// parked as its own.
	if res := g.Call(ctx, mk(`{"path":"b.txt","content":"y"}`, id)); res.Error == nil || res.Error.Code != tool.CodeApprovalRequired || res.Approval == nil || res.Approval.ID == id {
		t.Fatalf("another call naming %s: %+v, want its own approval", id, res)
	}
	denied := g.Call(ctx, mk(`{"path":"a.txt","content":"x"}`, id))
	if denied.Error == nil || denied.Error.Code != tool.CodeApprovalDenied || denied.Decision != "deny" || denied.Approval == nil || denied.Approval.ID != id {
		t.Fatalf("denied: %+v, want approval_denied", denied)
	}
	if strings.Contains(denied.Error.Hint, "airlock approve") || strings.Contains(denied.Error.Message, "pending") {
		t.Errorf("denied call says it is pending: %+v", denied.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the denied call ran")
	}
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), `"code":"approval_denied"`) {
		t.Errorf("the audit log does not record the denial:\n%s", data)
	}
}

// TestPlantedApprovalDoesNotMatch: with a key, an approval written into the
// store by someone without the key (a repository that ships a state file)
// matches no call, whether approved once or remembered for a session or
// the workspace.
func TestPlantedApprovalDoesNotMatch(t *testing.T) {
	for _, scope := range []store.Scope{store.ScopeOnce, store.ScopeSession, store.ScopeWorkspace} {
		t.Run(string(scope), func(t *testing.T) {
			dir, ws, reg, approvals := fileTools(t)
			unkeyed, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals, Without: bare})
			keyed, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals,
				ApprovalKey: []byte("a secret the planter does not have"),
				Without:     gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions})
			ctx := context.Background()
			c := call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask")
			c.Session = "s1"
			// The planter parks and approves the call without the key.
			parked := unkeyed.Call(ctx, c)
			now := time.Now()
			var err error
			if scope == store.ScopeOnce {
				_, err = approvals.DecideApproval(ctx, parked.Approval.ID, true, "planter", now)
			} else {
				_, err = approvals.RememberApproval(ctx, parked.Approval.ID, scope, "planter", now, now.Add(store.RememberFor))
			}
			if err != nil {
				t.Fatal(err)
			}
			if res := keyed.Call(ctx, c); res.Error == nil || res.Error.Code != tool.CodeApprovalRequired {
				t.Fatalf("a planted approval let the call run: %+v", res)
			}
			if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
				t.Fatal("the file was written")
			}
		})
	}
}

// memSessions is a store.Sessions of kill flags only, for the loop stage.
type memSessions struct {
	store.Sessions
	all    bool
	killed map[string]bool
}

func (m *memSessions) KillAll(context.Context) (bool, error) { return m.all, nil }
func (m *memSessions) Session(_ context.Context, id string) (store.Session, error) {
	if !m.killed[id] {
		return store.Session{}, store.ErrNotFound
	}
	return store.Session{ID: id, Killed: true}, nil
}
func (m *memSessions) State(_ context.Context, id string, _ int64) (store.SessionState, error) {
	return store.SessionState{Session: store.Session{ID: id, Killed: m.killed[id]}, Exists: m.killed[id], KillAll: m.all}, nil
}

func TestKillSwitchRefusesCalls(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	ss := &memSessions{killed: map[string]bool{"dead": true}}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Sessions: ss,
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	call := func(session string) tool.Result {
		return g.Call(context.Background(), tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"1+1"}`), Session: session})
	}
	if res := call("alive"); res.Error != nil {
		t.Errorf("a live session's call = %+v", res.Error)
	}
	if res := call("dead"); res.Error == nil || res.Error.Code != tool.CodeKilled || res.Decision != "deny" {
		t.Errorf("a killed session's call = %+v, want killed", res)
	}
	ss.all = true
	if res := call("alive"); res.Error == nil || res.Error.Code != tool.CodeKilled || !strings.Contains(res.Error.Message, "every session") {
		t.Errorf("a call under the global kill = %+v, want killed", res)
	}
	// A check runs nothing, so it reads no kill switch.
	if res := g.Check(context.Background(), tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"1+1"}`), Session: "dead"}); res.Error != nil {
		t.Errorf("a check in a killed session = %+v", res.Error)
	}
}

func TestFallbackMustBeAnotherToolWithTheSameArguments(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"q":{"type":"string","maxLength":10}}}`)
	other := json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"r":{"type":"string","maxLength":10}}}`)
	run := func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{}, nil }
	for _, c := range []struct {
		name     string
		fallback tool.Tool
		ok       bool
	}{
		{"same args", tool.Tool{Name: "b", Description: "b", Schema: schema, Risk: tool.RiskLow, Effect: tool.EffectRead, Run: run}, true},
		{"other args", tool.Tool{Name: "b", Description: "b", Schema: other, Risk: tool.RiskLow, Effect: tool.EffectRead, Run: run}, false},
		{"missing", tool.Tool{Name: "c", Description: "c", Schema: schema, Risk: tool.RiskLow, Effect: tool.EffectRead, Run: run}, false},
	} {
		reg := tool.NewRegistry()
		reg.Register(tool.Tool{Name: "a", Description: "a", Schema: schema, Risk: tool.RiskLow, Effect: tool.EffectRead, Fallback: "b", Run: run})
		reg.Register(c.fallback)
		_, err := gate.New(reg, &gate.Options{Without: bare})
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
}

// TestKillStopsWorkInFlight: a kill set while a call runs (by any process:
// here straight into the store) ends that call with killed within about
// KillPoll, its context cancelled, whether this session or every session
// was killed.
func TestKillStopsWorkInFlight(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all=%v", all), func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			started := make(chan struct{})
			reg := tool.NewRegistry()
			reg.Register(tool.Tool{
				Name: "wait", Description: "runs until its call ends",
				Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
				Risk:   tool.RiskLow, Effect: tool.EffectRead,
				Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
					close(started)
					<-ctx.Done()
					return tool.Result{}, ctx.Err()
				},
			})
			g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Sessions: db, Timeout: time.Minute,
				Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutApprovalKey})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			done := make(chan tool.Result, 1)
			go func() { done <- g.Call(ctx, tool.Call{Tool: "wait", Args: json.RawMessage(`{}`), Session: "s1"}) }()
			<-started
			killedAt := time.Now()
			if all {
				err = db.SetKillAll(ctx, true)
			} else {
				_, err = db.KillSession(ctx, "s1", true, time.Now())
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case res := <-done:
				if res.Error == nil || res.Error.Code != tool.CodeKilled {
					t.Errorf("the call in flight ended %+v, want killed", res)
				}
				t.Logf("stopped %v after the kill", time.Since(killedAt))
			case <-time.After(10 * time.Second):
				t.Fatal("the call in flight still runs 10 s after the kill")
			}
		})
	}
}
