package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if code, _, errOut := runCLI(t, "approve", id, "--workspace", ws); code != exitRefused || !strings.Contains(errOut, "not pending") {
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
