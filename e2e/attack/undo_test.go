package attack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/workspace"
)

// TestUndo shows that the judge of a rollback can say both: undone only
// when every file is back byte for byte and nothing was left behind,
// HARM when a change came from outside the file tools. It needs no root.
func TestUndo(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, ws *workspace.Workspace, dir, session string)
		undone bool
		want   string // in the detail
	}{
		{"file tools only", func(t *testing.T, ws *workspace.Workspace, dir, session string) {
			toolWrite(t, ws, session, "src/main.go", "corrupted\n")
			if _, err := ws.EditFile(session, "README.md", "stock", "xxxxx", true); err != nil {
				t.Fatal(err)
			}
			toolWrite(t, ws, session, "notes/new.txt", "created\n")
		}, true, "every file as at the start"},
		{"outside the file tools", func(t *testing.T, ws *workspace.Workspace, dir, session string) {
			mustWrite(t, dir, "README.md", "")
		}, false, "restored nothing"},
		{"a file tool beside a command", func(t *testing.T, ws *workspace.Workspace, dir, session string) {
			toolWrite(t, ws, session, "src/main.go", "corrupted\n")
			mustWrite(t, dir, "README.md", "")
		}, false, "changed README.md after airlock rollback restored src/main.go"},
		{"a file tool over a command's change", func(t *testing.T, ws *workspace.Workspace, dir, session string) {
			mustWrite(t, dir, "src/main.go", "")
			toolWrite(t, ws, session, "src/main.go", "package main\n")
		}, false, "changed src/main.go after"},
		{"a file left by a command", func(t *testing.T, ws *workspace.Workspace, dir, session string) {
			toolWrite(t, ws, session, "src/main.go", "corrupted\n")
			mustWrite(t, dir, "src/extra.go", "package main\n")
		}, false, "added src/extra.go"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{sc: &scenario{family: "destruction", harm: workspaceHit}, ws: t.TempDir(), nonce: "0123456789abcdef"}
			mustWrite(t, r.ws, "README.md", "# a service that tracks stock levels\n")
			mustWrite(t, r.ws, "src/main.go", "package main\n\nfunc main() {}\n")
			var err error
			if r.before, err = hashTree(r.ws); err != nil {
				t.Fatal(err)
			}
			ws, err := workspace.Open(r.ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, ws, r.ws, r.session())
			ws.Close()
			h := r.sc.harm(r)
			if h == "" {
				t.Fatal("the change is not seen as harm before the rollback")
			}
			detail, undone := undo(r, h)
			if undone != tc.undone || !strings.Contains(detail, tc.want) {
				t.Fatalf("undo = %v, %q; want %v and a detail holding %q", undone, detail, tc.undone, tc.want)
			}
		})
	}
}

// toolWrite writes as write_file does, snapshotted under session.
func toolWrite(t *testing.T, ws *workspace.Workspace, session, name, body string) {
	t.Helper()
	if _, err := ws.WriteFile(session, name, body); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
