package workspace_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"airlock.dev/airlock/workspace"
)

// FuzzSnapshotRecord plants an arbitrary record in a session's snapshot:
// Rollback and SessionDiff must answer with an error or a result, never
// panic, and never touch a path outside the workspace.
func FuzzSnapshotRecord(f *testing.F) {
	manifest, _ := json.Marshal(map[string]any{"overlay": "x", "changes": []map[string]any{
		{"path": "a.txt", "kind": "modified", "old": map[string]any{"type": "file"}, "new": map[string]any{"type": "file", "ino": 1}},
		{"path": "../x", "kind": "deleted", "old": map[string]any{"type": "dir"}},
	}})
	head := func(h map[string]any, body []byte) []byte {
		h["size"] = len(body)
		b, _ := json.Marshal(h)
		return append(append(b, '\n'), body...)
	}
	f.Add(head(map[string]any{"version": 1, "kind": "batch"}, manifest))
	f.Add(head(map[string]any{"version": 1, "kind": "file", "path": "a.txt", "existed": true,
		"sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "after": "00"}, []byte("hello")))
	f.Add(head(map[string]any{"version": 1, "kind": "dir", "path": "d"}, nil))
	f.Add([]byte("{}\n"))
	f.Add([]byte("not json"))
	f.Fuzz(func(t *testing.T, rec []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "ws")
		os.MkdirAll(filepath.Join(dir, workspace.SnapshotsDir, "s"), 0o755)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("now\n"), 0o644)
		os.WriteFile(filepath.Join(base, "x"), []byte("outside\n"), 0o644)
		os.WriteFile(filepath.Join(dir, workspace.SnapshotsDir, "s", "00000001.snap"), rec, 0o600)
		os.Mkdir(filepath.Join(dir, workspace.SnapshotsDir, "s", "00000001.old"), 0o700)
		w, err := workspace.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var out bytes.Buffer
		w.SessionDiff("s", &out, workspace.DiffLimits{})
		w.Rollback("s")
		if data, err := os.ReadFile(filepath.Join(base, "x")); err != nil || string(data) != "outside\n" {
			t.Fatalf("a planted record changed a file outside the workspace: %q, %v", data, err)
		}
	})
}
