package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReviewOverMCP: through `airlock mcp` in auto-edit, a command that
// deletes runs on a copy of the workspace and its changes are put to the
// person, in the client, as a diff; accepted they are applied (and
// `airlock rollback` undoes them), declined nothing reaches the workspace.
// The workspace's files are the ground truth.
func TestReviewOverMCP(t *testing.T) {
	bin := buildAirlock(t, ".")
	for _, accept := range []bool{true, false} {
		name := map[bool]string{true: "accepted", false: "declined"}[accept]
		t.Run(name, func(t *testing.T) {
			ws := workspace(t, "ws")
			if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(ws, "data", "a.txt"), []byte("hello\n"), 0o644)
			env := append(cleanEnv(), "AIRLOCK_MODE=auto-edit", "XDG_CONFIG_HOME="+t.TempDir())
			var question string
			opts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				question = req.Params.Message
				if !accept {
					return &sdk.ElicitResult{Action: "decline"}, nil
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}}
			cmd := exec.Command(bin, "mcp", "--workspace", ws)
			cmd.Env, cmd.Dir = env, t.TempDir()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, opts).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			text, code, err := toolCall(ctx, cs, "run_command", map[string]any{"command": "rm -r data && echo gone"})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"apply what run_command changed", "deleted file mode 100644", "-hello"} {
				if !strings.Contains(question, want) {
					t.Errorf("the question does not show %q:\n%s", want, question)
				}
			}
			_, statErr := os.Stat(filepath.Join(ws, "data", "a.txt"))
			if accept {
				if code != "" || !strings.Contains(text, "gone") || !strings.Contains(text, "--- changes:") {
					t.Fatalf("accepted: code %q, text %q", code, text)
				}
				if statErr == nil {
					t.Fatal("accepted, yet data/a.txt is still in the workspace")
				}
				// The session id is in the result's text ("airlock rollback --session ID").
				_, after, _ := strings.Cut(text, "--session ")
				session, _, _ := strings.Cut(after, " ")
				out, err := exec.Command(bin, "rollback", "--workspace", ws, "--session", session).CombinedOutput()
				if err != nil {
					t.Fatalf("airlock rollback: %v\n%s", err, out)
				}
				if data, err := os.ReadFile(filepath.Join(ws, "data", "a.txt")); err != nil || string(data) != "hello\n" {
					t.Errorf("after rollback data/a.txt = %q, %v", data, err)
				}
				return
			}
			if code != "approval_denied" {
				t.Errorf("declined: code %q, text %q; want approval_denied", code, text)
			}
			if statErr != nil {
				t.Errorf("declined, yet data/a.txt is gone: %v", statErr)
			}
			if ents, _ := os.ReadDir(filepath.Join(ws, ".airlock", "overlay")); len(ents) != 0 {
				t.Errorf("declined, yet changes are still held: %v", ents)
			}
		})
	}
}
