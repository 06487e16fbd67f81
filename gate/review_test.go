package gate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/command"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
)

// fakeChanges records how the gate ended them.
type fakeChanges struct {
	destroys  bool
	overLimit string
	ended     string // "applied", "held ID" or "discarded"
	content   string // what Hold kept
}

func (f *fakeChanges) Summary() string   { return "1 added, 0 modified, 2 deleted" }
func (f *fakeChanges) Destroys() bool    { return f.destroys }
func (f *fakeChanges) OverLimit() string { return f.overLimit }
func (f *fakeChanges) Diff() string      { return "diff --airlock a/x b/x\ndeleted file mode 100644\n" }
func (f *fakeChanges) Apply(context.Context) (string, error) {
	f.ended = "applied"
	return "applied them", nil
}
func (f *fakeChanges) Hold(id, content string) error {
	f.ended, f.content = "held "+id, content
	return nil
}
func (f *fakeChanges) Discard() error { f.ended = "discarded"; return nil }

// reviewed is a command-like tool whose runs make the changes next holds.
type reviewed struct {
	runs, helds atomic.Int64
	next        *fakeChanges
	heldBy      map[string]*fakeChanges
}

func (r *reviewed) tool() tool.Tool {
	return tool.Tool{
		Name: "cmd", Description: "changes files", Risk: tool.RiskMedium, Effect: tool.EffectWrite,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"line":{"type":"string","maxLength":64}}}`),
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			r.runs.Add(1)
			return tool.Result{Content: "exit code: 0\n", Changes: r.next}, nil
		},
		Held: func(ctx context.Context, c *tool.Call, id string) (tool.Result, error) {
			r.helds.Add(1)
			ch := r.heldBy[id]
			if ch == nil {
				return tool.Fail(tool.CodeNotFound, "nothing held under "+id, "run it again"), nil
			}
			return tool.Result{Content: ch.content, Changes: &fakeChanges{destroys: ch.destroys}}, nil
		},
	}
}

// TestReviewStage: a command's changes are applied when they only add and
// rewrite, when the mode allows destroying, or when a person approved the
// call; held, with their diff, when the mode asks (auto-edit) or a
// snapshot limit is passed; and a held set, once approved, is applied by
// the same call made again without running it a second time.
// reviewGate is a gate over the file tools and a reviewed tool, with an
// approvals store and a key.
func reviewGate(t *testing.T) (*gate.Gate, *reviewed, *sqlite.DB) {
	t.Helper()
	_, ws, reg, approvals := fileTools(t)
	r := &reviewed{heldBy: map[string]*fakeChanges{}}
	if err := reg.Register(r.tool()); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals,
		ApprovalKey: []byte("review test key"), Without: bare &^ gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	return g, r, approvals
}

func TestReviewStage(t *testing.T) {
	g, r, approvals := reviewGate(t)
	ctx := context.Background()
	run := func(ch *fakeChanges, mode string) tool.Result {
		r.next = ch
		c := call("cmd", `{"line":"rm -r data"}`, "", mode)
		c.Session = "s1"
		return g.Call(ctx, c)
	}

	for _, tc := range []struct {
		name  string
		ch    *fakeChanges
		mode  string
		ended string
	}{
		{"adds only, auto-edit", &fakeChanges{}, "auto-edit", "applied"},
		{"destroys, auto", &fakeChanges{destroys: true}, "auto", "applied"},
		{"destroys, auto-edit", &fakeChanges{destroys: true}, "auto-edit", "held"},
		{"over a limit, auto", &fakeChanges{overLimit: "it keeps too much"}, "auto", "held"},
	} {
		res := run(tc.ch, tc.mode)
		if !strings.HasPrefix(tc.ch.ended, tc.ended) {
			t.Errorf("%s: the changes were %q, want %s (result %+v)", tc.name, tc.ch.ended, tc.ended, res)
		}
		switch tc.ended {
		case "applied":
			if res.Error != nil || !strings.Contains(res.Content, "--- changes: applied them") {
				t.Errorf("%s: result %+v", tc.name, res)
			}
		case "held":
			if res.Error == nil || res.Error.Code != tool.CodeApprovalRequired || res.Approval == nil || res.Rule != gate.ReviewRule {
				t.Fatalf("%s: result %+v", tc.name, res)
			}
			if !strings.Contains(res.Approval.Diff, "deleted file mode") || tc.ch.ended != "held "+res.Approval.ID {
				t.Errorf("%s: approval %+v, changes %q", tc.name, res.Approval, tc.ch.ended)
			}
			if !strings.Contains(res.Error.Message, "nothing reached the workspace") {
				t.Errorf("%s: message %q", tc.name, res.Error.Message)
			}
			r.heldBy[res.Approval.ID] = tc.ch
		}
	}

	// The auto-edit hold, approved: the same call applies it, runs nothing.
	held := run(&fakeChanges{destroys: true}, "auto-edit")
	id := held.Approval.ID
	r.heldBy[id] = &fakeChanges{destroys: true, content: "exit code: 0\n"}
	if _, err := approvals.DecideApproval(ctx, id, true, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	runs := r.runs.Load()
	res := run(&fakeChanges{destroys: true}, "auto-edit")
	if res.Error != nil || r.runs.Load() != runs || r.helds.Load() != 1 {
		t.Fatalf("the approved call: %+v (runs %d -> %d, helds %d)", res, runs, r.runs.Load(), r.helds.Load())
	}
	if !strings.Contains(res.Content, "--- changes: applied them") {
		t.Errorf("the approved call's content: %q", res.Content)
	}
	// Once used, the approval applies nothing more: the call runs anew.
	again := run(&fakeChanges{destroys: true}, "auto-edit")
	if r.runs.Load() != runs+1 || again.Error == nil || again.Error.Code != tool.CodeApprovalRequired {
		t.Errorf("the call after the approval was used: %+v", again)
	}

	// In ask mode a person approves the run; its destroying changes are
	// then theirs and are applied.
	first := run(&fakeChanges{destroys: true}, "ask")
	if first.Approval == nil || first.Rule == gate.ReviewRule {
		t.Fatalf("ask mode, first call: %+v", first)
	}
	if _, err := approvals.DecideApproval(ctx, first.Approval.ID, true, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	ch := &fakeChanges{destroys: true}
	if res := run(ch, "ask"); res.Error != nil || ch.ended != "applied" {
		t.Errorf("ask mode, approved call: %+v, changes %q", res, ch.ended)
	}
}

// TestReviewAsk: a command the command policy asks about only for what
// it would do to the workspace's own data (rm -rf *) runs on a reviewable
// tool and is held with its changes, in auto too; a check answers that it
// asks; a script that also asks for another reason asks before it runs.
func TestReviewAsk(t *testing.T) {
	_, ws, reg, approvals := fileTools(t)
	runs := 0
	ch := &fakeChanges{}
	reg.Register(tool.Tool{
		Name: "run_command", Description: "runs", Risk: tool.RiskMedium, Effect: tool.EffectWrite, CommandArg: "command",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"command":{"type":"string","maxLength":64}}}`),
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			runs++
			return tool.Result{Content: "exit code: 0\n", Changes: ch}, nil
		},
		Held: func(ctx context.Context, c *tool.Call, id string) (tool.Result, error) {
			return tool.Result{}, nil
		},
	})
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Commands: command.Default(), Workspace: ws, Approvals: approvals,
		ApprovalKey: []byte("review test key"), Without: bare &^ gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := call("run_command", `{"command":"rm -rf *"}`, "", "auto")
	c.Session = "s1"
	if chk := g.Check(ctx, c); chk.Decision != "ask" {
		t.Errorf("check of rm -rf * in auto: %+v, want ask", chk)
	}
	res := g.Call(ctx, c)
	if runs != 1 || res.Error == nil || res.Error.Code != tool.CodeApprovalRequired || res.Rule != gate.ReviewRule || !strings.HasPrefix(ch.ended, "held ") {
		t.Errorf("rm -rf * in auto: runs %d, result %+v, changes %q; want it run and held", runs, res, ch.ended)
	}
	c = call("run_command", `{"command":"rm -rf * && curl https://example.com"}`, "", "auto")
	c.Session = "s1"
	if res := g.Call(ctx, c); runs != 1 || res.Error == nil || res.Error.Code != tool.CodeApprovalRequired || res.Rule == gate.ReviewRule {
		t.Errorf("with a network ask too: runs %d, result %+v; want asked before running", runs, res)
	}
}

// TestChangesOfAnEndedCallDiscarded: a call that ends in the execute
// stage (here cancelled by its caller while it ran) drops the changes its
// command made; they are never left open.
func TestChangesOfAnEndedCallDiscarded(t *testing.T) {
	_, ws, reg, approvals := fileTools(t)
	ch := &fakeChanges{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.Register(tool.Tool{
		Name: "cmd", Description: "changes files", Risk: tool.RiskMedium, Effect: tool.EffectWrite,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Run: func(context.Context, *tool.Call) (tool.Result, error) {
			cancel()
			return tool.Result{Content: "exit code: 0\n", Changes: ch}, nil
		},
		Held: func(context.Context, *tool.Call, string) (tool.Result, error) { return tool.Result{}, nil },
	})
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals,
		ApprovalKey: []byte("review test key"), Without: bare &^ gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	res := g.Call(ctx, call("cmd", `{}`, "", "auto"))
	if res.Error == nil || ch.ended != "discarded" {
		t.Errorf("cancelled call: %+v, changes %q; want an error and the changes discarded", res, ch.ended)
	}
}

// TestCheckOfADestroyingCommand: airlock check of a command whose syntax
// deletes answers the mode's destroy decision (auto-edit asks), though
// the call itself runs it and asks about what it did.
func TestCheckOfADestroyingCommand(t *testing.T) {
	dir, ws, reg, approvals := fileTools(t)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "data", "a.txt"), []byte("work\n"), 0o644)
	reg.Register(tool.Tool{
		Name: "run_command", Description: "runs", Risk: tool.RiskMedium, Effect: tool.EffectWrite, CommandArg: "command",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"command":{"type":"string","maxLength":64}}}`),
		Run: func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{Content: "exit code: 0\n", Changes: &fakeChanges{destroys: true}}, nil
		},
		Held: func(context.Context, *tool.Call, string) (tool.Result, error) { return tool.Result{}, nil },
	})
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Commands: command.Default(), Workspace: ws, Approvals: approvals,
		ApprovalKey: []byte("review test key"), Without: bare &^ gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	c := call("run_command", `{"command":"rm -r data"}`, "", "auto-edit")
	if chk := g.Check(context.Background(), c); chk.Decision != "ask" {
		t.Errorf("check: %+v, want ask", chk)
	}
	if res := g.Call(context.Background(), c); res.Rule != gate.ReviewRule {
		t.Errorf("call: %+v, want it run and held under %s", res, gate.ReviewRule)
	}
}

// TestOverLimitInAskMode: in ask mode a person approves the command line;
// changes past a snapshot limit are still held for them to see, and once
// they approve those, the same call applies them in ask mode too.
func TestOverLimitInAskMode(t *testing.T) {
	g, r, approvals := reviewGate(t)
	ctx := context.Background()
	run := func(ch *fakeChanges) tool.Result {
		r.next = ch
		c := call("cmd", `{"line":"make"}`, "", "ask")
		c.Session = "s1"
		return g.Call(ctx, c)
	}
	first := run(nil)
	if first.Approval == nil {
		t.Fatalf("ask mode: %+v", first)
	}
	approvals.DecideApproval(ctx, first.Approval.ID, true, "alice", time.Now())
	ch := &fakeChanges{overLimit: "it keeps too much"}
	held := run(ch)
	if held.Rule != gate.ReviewRule || !strings.HasPrefix(ch.ended, "held ") {
		t.Fatalf("approved run past a limit: %+v, changes %q; want them held", held, ch.ended)
	}
	r.heldBy[held.Approval.ID] = &fakeChanges{overLimit: "it keeps too much"}
	approvals.DecideApproval(ctx, held.Approval.ID, true, "alice", time.Now())
	runs := r.runs.Load()
	if res := run(nil); res.Error != nil || r.runs.Load() != runs || !strings.Contains(res.Content, "--- changes: applied them") {
		t.Errorf("the approved held changes in ask mode: %+v (runs %d -> %d)", res, runs, r.runs.Load())
	}
}
