package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestApprovalsAcrossProcesses: an asked call parks an approval in the
// embedded store; another invocation (another process, in real use) lists
// and approves it; the same call then runs once.
func TestApprovalsAcrossProcesses(t *testing.T) {
	ws := t.TempDir()
	call := []string{"call", "--workspace", ws, "--session", "s1", "--json", "write_file", `{"path":"a.txt","content":"x"}`}
	code, out, _ := runCLI(t, call...)
	var res callOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitRefused || res.Error == nil ||
		res.Error.Code != "approval_required" {
		t.Fatalf("first call: exit %d, %s", code, out)
	}
	id := res.Approval.ID
	if id == "" || string(res.Approval.Args) != `{"content":"x","path":"a.txt"}` {
		t.Fatalf("the result does not name the approval and its exact call: %s", out)
	}

	_, out, _ = runCLI(t, "approvals", "--workspace", ws, "--json")
	if !strings.Contains(out, `"id":"`+id+`"`) || !strings.Contains(out, `"tool":"write_file"`) {
		t.Fatalf("approvals does not list %s: %s", id, out)
	}
	if code, _, errOut := runCLI(t, "approve", id, "--workspace", ws); code != exitOK {
		t.Fatalf("approve: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "approve", id, "--workspace", ws); code != exitRefused || !strings.Contains(errOut, "is approved already") {
		t.Fatalf("second approve: exit %d: %s", code, errOut)
	}
	if code, out, _ := runCLI(t, call...); code != exitOK {
		t.Fatalf("approved call: exit %d: %s", code, out)
	}
	if body, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(body) != "x" {
		t.Fatalf("a.txt = %q", body)
	}
	if code, _, _ := runCLI(t, call...); code != exitRefused {
		t.Fatal("an approval let the call run twice")
	}
	if code, _, errOut := runCLI(t, "deny", "nope", "--workspace", ws); code != exitRefused || !strings.Contains(errOut, "no approval nope") {
		t.Fatalf("deny of an unknown id: exit %d: %s", code, errOut)
	}
}

// TestDecideSaysWhatBecameOfIt: approve or deny of an approval that is no
// longer pending names what it is (approved, denied, used, expired) and
// what to do, never an empty state.
func TestDecideSaysWhatBecameOfIt(t *testing.T) {
	ws := t.TempDir()
	db, err := sqlite.Open(runtime.StatePath(ws), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	now := time.Now()
	park := func(id string, created time.Time) {
		t.Helper()
		args := `{"path":"` + id + `"}`
		if err := db.CreateApproval(ctx, store.Approval{ID: id, Tool: "write_file", Args: json.RawMessage(args),
			ArgsHash: "h-" + id, Session: "s1", Status: store.StatusPending, Created: created, Expires: created.Add(store.DefaultApprovalTTL)}); err != nil {
			t.Fatal(err)
		}
	}
	decideAt := func(id string, approve bool, at time.Time) {
		t.Helper()
		if _, err := db.DecideApproval(ctx, id, approve, "alice", at); err != nil {
			t.Fatal(err)
		}
	}
	park("approved", now)
	decideAt("approved", true, now)
	park("denied", now)
	decideAt("denied", false, now)
	park("used", now)
	decideAt("used", true, now)
	if _, ok, err := db.ConsumeApproval(ctx, "write_file", "h-used", now); err != nil || !ok {
		t.Fatalf("ConsumeApproval = %v, %v", ok, err)
	}
	past := now.Add(-time.Hour)
	park("expired", past)
	park("lapsed", past)
	decideAt("lapsed", true, past.Add(time.Minute))

	for _, tc := range []struct {
		id   string
		want []string // in the message, in this order
	}{
		{"approved", []string{"approval approved is approved already", "by alice", "runs once when it is made again in session s1"}},
		{"denied", []string{"approval denied is denied already", "by alice", "make the call again"}},
		{"used", []string{"approval used is used", "approved by alice", "has run", "asks anew"}},
		{"expired", []string{"approval expired is expired", "no one decided it", "make the call again"}},
		{"lapsed", []string{"approval lapsed is expired", "approved by alice", "never made again", "make the call again"}},
	} {
		for _, verb := range []string{"approve", "deny"} {
			code, _, errOut := runCLI(t, verb, tc.id, "--workspace", ws)
			if code != exitRefused {
				t.Errorf("%s %s: exit %d, want %d", verb, tc.id, code, exitRefused)
			}
			rest := errOut
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("%s %s said %q; want %q in it (after the earlier parts)", verb, tc.id, errOut, w)
					break
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(errOut, " is ,") || strings.Contains(errOut, " is  ") {
				t.Errorf("%s %s names no state: %q", verb, tc.id, errOut)
			}
		}
	}
	// What a refused decision found is what the store holds: nothing changed.
	for id, want := range map[string]store.Status{"approved": store.StatusApproved, "denied": store.StatusDenied,
		"used": store.StatusUsed, "expired": store.StatusExpired, "lapsed": store.StatusExpired} {
		a, err := db.Approval(ctx, id, time.Now())
		if err != nil || a.Status != want {
			t.Errorf("approval %s is now %q, %v; want %q", id, a.Status, err, want)
		}
	}
}

// TestRememberWorkspace: approved with --remember workspace, the same call
// runs in later one-shot invocations (each a new session) without asking;
// another argument still asks; the remembered approval is listed, and once
// revoked the call asks again.
func TestRememberWorkspace(t *testing.T) {
	ws := t.TempDir()
	target := filepath.Join(ws, "a.txt")
	callWith := func(args string) (int, callOutput) {
		t.Helper()
		code, out, _ := runCLI(t, "call", "--workspace", ws, "--json", "write_file", args)
		var res callOutput
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("call output %q: %v", out, err)
		}
		return code, res
	}
	code, res := callWith(`{"path":"a.txt","content":"x"}`)
	if code != exitRefused || res.Error == nil || res.Error.Code != "approval_required" || res.Approval == nil {
		t.Fatalf("first call: exit %d, %+v", code, res)
	}
	id := res.Approval.ID

	for _, bad := range [][]string{
		{"approve", id, "--remember", "forever"},
		{"deny", id, "--remember", "workspace"},
	} {
		if code, _, errOut := runCLI(t, append(bad, "--workspace", ws)...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d: %s", bad, code, exitUsage, errOut)
		}
	}
	code, out, errOut := runCLI(t, "approve", id, "--remember", "workspace", "--workspace", ws)
	if code != exitOK || !strings.Contains(out, "approved "+id) || !strings.Contains(out, "this workspace") || !strings.Contains(out, "airlock revoke "+id) {
		t.Fatalf("approve --remember workspace: exit %d: %s%s", code, out, errOut)
	}
	_, out, _ = runCLI(t, "approvals", "--remembered", "--json", "--workspace", ws)
	var listed store.Remembered
	if err := json.Unmarshal([]byte(out), &listed); err != nil || listed.ID != id || listed.Scope != store.ScopeWorkspace ||
		listed.Tool != "write_file" || string(listed.Args) != `{"content":"x","path":"a.txt"}` {
		t.Fatalf("approvals --remembered --json = %s (%v)", out, err)
	}
	if want := time.Now().Add(store.RememberFor); listed.Expires.Before(want.Add(-time.Hour)) || listed.Expires.After(want) {
		t.Errorf("it expires %v, want about %v", listed.Expires, want)
	}

	// Each call is a new session, which the one-shot approval does not
	// reach: every one runs under the remembered approval.
	for i := range 3 {
		os.Remove(target)
		code, res := callWith(`{"content":"x","path":"a.txt"}`)
		if code != exitOK || res.Decision != "allow" {
			t.Fatalf("call %d after approving: exit %d, %+v", i+1, code, res)
		}
		if body, err := os.ReadFile(target); err != nil || string(body) != "x" {
			t.Fatalf("call %d: a.txt = %q, %v", i+1, body, err)
		}
	}
	if code, res := callWith(`{"path":"a.txt","content":"y"}`); code != exitRefused || res.Error == nil || res.Error.Code != "approval_required" {
		t.Fatalf("another content: exit %d, %+v; want approval_required", code, res)
	}
	if body, _ := os.ReadFile(target); string(body) != "x" {
		t.Fatalf("a.txt = %q after a call that should have asked", body)
	}
	_, out, _ = runCLI(t, "approvals", "--remembered", "--workspace", ws)
	if !strings.Contains(out, id) || !strings.Contains(out, "used 3 times") {
		t.Errorf("approvals --remembered = %q; want %s, used 3 times", out, id)
	}

	if code, out, errOut := runCLI(t, "revoke", id, "--workspace", ws); code != exitOK || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke: exit %d: %s%s", code, out, errOut)
	}
	if _, out, _ := runCLI(t, "approvals", "--remembered", "--json", "--workspace", ws); out != "" {
		t.Errorf("after revoking, approvals --remembered --json = %q", out)
	}
	os.Remove(target)
	if code, res := callWith(`{"path":"a.txt","content":"x"}`); code != exitRefused || res.Error == nil || res.Error.Code != "approval_required" {
		t.Fatalf("after revoking: exit %d, %+v; want approval_required", code, res)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the call ran after its remembered approval was revoked")
	}
	if code, _, errOut := runCLI(t, "revoke", id, "--workspace", ws); code != exitRefused || !strings.Contains(errOut, "revoked already") {
		t.Errorf("second revoke: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "revoke", "nope", "--workspace", ws); code != exitRefused || !strings.Contains(errOut, "no remembered approval nope") {
		t.Errorf("revoke of an unknown id: exit %d: %s", code, errOut)
	}
}

// TestRememberSession: approved with --remember session, the same call
// runs again and again in its session, and asks in a new one.
func TestRememberSession(t *testing.T) {
	ws := t.TempDir()
	call := []string{"call", "--workspace", ws, "--session", "s1", "--json", "write_file", `{"path":"a.txt","content":"x"}`}
	_, out, _ := runCLI(t, call...)
	var res callOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Approval == nil {
		t.Fatalf("first call: %s", out)
	}
	if code, out, errOut := runCLI(t, "approve", res.Approval.ID, "--remember", "session", "--workspace", ws); code != exitOK || !strings.Contains(out, "session s1") {
		t.Fatalf("approve --remember session: exit %d: %s%s", code, out, errOut)
	}
	for i := range 3 {
		if code, out, _ := runCLI(t, call...); code != exitOK {
			t.Fatalf("call %d in the session: exit %d: %s", i+1, code, out)
		}
	}
	if code, _, _ := runCLI(t, "call", "--workspace", ws, "--session", "s2", "write_file", `{"path":"a.txt","content":"x"}`); code != exitRefused {
		t.Fatalf("in another session: exit %d, want %d", code, exitRefused)
	}
}
