package gate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// auditNotes reads the audit log at path from the file and returns each
// record's decision and note, in order.
func auditNotes(t *testing.T, path string) (decisions, notes []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		decisions, notes = append(decisions, r.Entry.Decision), append(notes, r.Entry.Note)
	}
	return decisions, notes
}

// TestRememberedApproval: approved with scope workspace, the same call
// runs in a new session without asking, and the audit names the remembered
// approval; other arguments, another mode or another workspace still ask;
// revoked, it asks again.
func TestRememberedApproval(t *testing.T) {
	dir, ws, reg, approvals := fileTools(t)
	key := []byte("the approval key of this test")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals, ApprovalKey: key, Audit: log,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(session, args, mode string) tool.Result {
		c := call("write_file", args, "", mode)
		c.Session = session
		return g.Call(ctx, c)
	}
	first := write("s1", `{"path":"a.txt","content":"x"}`, "ask")
	if first.Error == nil || first.Error.Code != tool.CodeApprovalRequired || first.Approval == nil {
		t.Fatalf("first call: %+v", first)
	}
	if !strings.Contains(first.Error.Hint, "--remember") {
		t.Errorf("the hint does not tell of --remember: %q", first.Error.Hint)
	}
	id := first.Approval.ID
	if _, err := approvals.RememberApproval(ctx, id, store.ScopeWorkspace, "alice", time.Now(), time.Now().Add(store.RememberFor)); err != nil {
		t.Fatal(err)
	}
	// A new session, keys in another order: it runs, and again.
	for i, session := range []string{"s2", "s3"} {
		os.Remove(filepath.Join(dir, "a.txt"))
		res := write(session, `{"content":"x","path":"a.txt"}`, "ask")
		if res.Error != nil || res.Decision != "allow" {
			t.Fatalf("call %d in a new session: %+v", i+1, res)
		}
		if body, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(body) != "x" {
			t.Fatalf("call %d: a.txt = %q, %v", i+1, body, err)
		}
	}
	// Anything else still asks.
	for _, tc := range []struct{ name, session, args, mode string }{
		{"other content", "s4", `{"path":"a.txt","content":"y"}`, "ask"},
		{"other path", "s4", `{"path":"b.txt","content":"x"}`, "ask"},
		{"plan mode", "s4", `{"path":"a.txt","content":"x"}`, "plan"},
	} {
		if res := write(tc.session, tc.args, tc.mode); res.Decision == "allow" {
			t.Errorf("%s: a remembered approval let it run: %+v", tc.name, res)
		}
	}
	// The same store and key on another workspace: not this workspace.
	otherDir := t.TempDir()
	other, err := workspace.Open(otherDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	og, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: other, Approvals: approvals, ApprovalKey: key,
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions})
	oc := call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask")
	oc.Session = "s5"
	if res := og.Call(ctx, oc); res.Decision == "allow" {
		t.Errorf("a remembered approval of one workspace let a call run in another: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(otherDir, "a.txt")); !os.IsNotExist(err) {
		t.Error("the other workspace's file was written")
	}

	if _, err := approvals.RevokeRemembered(ctx, id, "bob", time.Now()); err != nil {
		t.Fatal(err)
	}
	if res := write("s6", `{"path":"a.txt","content":"x"}`, "ask"); res.Error == nil || res.Error.Code != tool.CodeApprovalRequired {
		t.Fatalf("after revoking, the call = %+v, want approval_required", res)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	decisions, notes := auditNotes(t, logPath)
	var used []string
	for i, n := range notes {
		if strings.Contains(n, "remembered approval") {
			used = append(used, n)
			if decisions[i] != "allow" || !strings.Contains(n, id) || !strings.Contains(n, "alice") || !strings.Contains(n, "workspace") {
				t.Errorf("audit record %d: %s, %q; want allow, naming approval %s, alice and its scope", i+1, decisions[i], n, id)
			}
		}
	}
	if len(used) != 2 {
		t.Errorf("the audit names a remembered approval %d times, want 2: %q", len(used), notes)
	}
}

// TestRememberedForASession: approved with scope session, the same call
// runs again and again in that session, and asks in any other.
func TestRememberedForASession(t *testing.T) {
	_, ws, reg, approvals := fileTools(t)
	g, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Approvals: approvals, ApprovalKey: []byte("k"),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions})
	ctx := context.Background()
	c := call("write_file", `{"path":"a.txt","content":"x"}`, "", "ask")
	c.Session = "s1"
	first := g.Call(ctx, c)
	if first.Approval == nil {
		t.Fatalf("first call: %+v", first)
	}
	if _, err := approvals.RememberApproval(ctx, first.Approval.ID, store.ScopeSession, "alice", time.Now(), time.Now().Add(store.RememberFor)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if res := g.Call(ctx, c); res.Error != nil || res.Decision != "allow" {
			t.Fatalf("call %d in the session: %+v", i+1, res)
		}
	}
	c.Session = "s2"
	if res := g.Call(ctx, c); res.Error == nil || res.Error.Code != tool.CodeApprovalRequired {
		t.Fatalf("in another session: %+v, want approval_required", res)
	}
}
