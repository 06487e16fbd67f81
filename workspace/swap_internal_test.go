package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"airlock.dev/airlock/tool"
)

// TestUseRefusesALinkSwappedInAfterResolve plays the race deterministically:
// it resolves a path, then swaps a directory on it for a link, then uses
// the canonical path. os.Root alone would follow a link that stays inside
// the root (into another directory, or into .airlock); the component-wise
// walk refuses every one of them.
func TestUseRefusesALinkSwappedInAfterResolve(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(dir, "d"), filepath.Join(dir, "other"), filepath.Join(dir, StateDir), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(dir, "d", "f.txt"):        "inside",
		filepath.Join(dir, "other", "f.txt"):    "other",
		filepath.Join(dir, StateDir, "f.txt"):   "state",
		filepath.Join(outside, "f.txt"):         "outside",
		filepath.Join(dir, "d", "plain"):        "a file, not a directory",
		filepath.Join(dir, "other", "f2.txt"):   "other 2",
		filepath.Join(dir, StateDir, "f2.txt"):  "state 2",
		filepath.Join(outside, "f2.txt"):        "outside 2",
		filepath.Join(dir, "d", "f2.txt"):       "inside 2",
		filepath.Join(dir, StateDir, "keep.md"): "keep",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for _, target := range []string{"other", StateDir, "../outside", outside} {
		canon, err := w.Resolve("d/f.txt")
		if err != nil || canon != "d/f.txt" {
			t.Fatalf("Resolve = %q, %v", canon, err)
		}
		d := filepath.Join(dir, "d")
		if err := os.Rename(d, filepath.Join(dir, "d.real")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, d); err != nil {
			t.Fatal(err)
		}

		if f, _, err := w.openFile(canon); err == nil {
			f.Close()
			t.Errorf("link to %s: openFile of a resolved path followed it", target)
		} else if code(err) != tool.CodePathOutside {
			t.Errorf("link to %s: openFile: %v, want path_outside_workspace", target, err)
		}
		if _, err := w.prior(canon); code(err) != tool.CodePathOutside {
			t.Errorf("link to %s: prior: %v, want path_outside_workspace", target, err)
		}
		if r, err := w.openDir("d", true); err == nil {
			r.Close()
			t.Errorf("link to %s: openDir followed it", target)
		}
		if _, err := w.commit("s", canon, priorState{}, []byte("pwned"), 0); err == nil {
			t.Errorf("link to %s: commit wrote through it", target)
		}

		os.Remove(d)
		if err := os.Rename(filepath.Join(dir, "d.real"), d); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range files {
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
}

// TestEscapeErrorIsPathOutside checks that os.Root's own refusal of a link
// leading out, should it ever surface, is path_outside_workspace.
func TestEscapeErrorIsPathOutside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = w.root.Stat("up/ws")
	if !isEscape(err) {
		t.Fatalf("os.Root's error %v is not recognized as an escape", err)
	}
	if got := code(w.fsError("up/ws", err)); got != tool.CodePathOutside {
		t.Errorf("fsError(escape) has code %q, want path_outside_workspace", got)
	}
}

func code(err error) tool.Code {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}
