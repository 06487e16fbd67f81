package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/container"
	"airlock.dev/airlock/sandbox/native"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// hashTree describes every entry under dir but .airlock and .git: the
// ground truth the overlay tests compare.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".airlock" || rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:8])
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameHashTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s is %q, want %q", what, p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s should not be there", what, p)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRunCommandUndone: commands that lose work, run by run_command on
// each backend's copy-on-write view (the native backend's overlay, the
// copy view bubblewrap 0.8 and the container engine get), change nothing
// until their changes are applied, and airlock's rollback undoes them once
// applied: the whole workspace deleted, git clean -fdx, git reset --hard,
// renames, links, modes, large and binary files. The workspace's bytes
// are the ground truth. The container's image (busybox) has no git and no
// bash: it runs the other cases under /bin/sh.
func TestRunCommandUndone(t *testing.T) {
	nat, err := native.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, line string }{
		{"delete everything", "find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +"},
		{"every kind of change", "mv src lib && ln -s lib/main.c main-link && ln notes.txt notes-hard && chmod 700 run.sh && " +
			"head -c 5000000 /dev/urandom > big.bin && printf '\\000\\377' > tiny.bin && truncate -s 0 notes.txt"},
		{"git clean -fdx", "git clean -fdx"},
		{"git reset --hard", "git reset --hard || true"},
	}
	for _, b := range []struct {
		sb    sandbox.Sandbox
		shell string
		cases int // how many of cases it runs
	}{
		{nat, "", len(cases)},
		{bwrap.New(nil), "", len(cases)},
		{container.New(nil), "/bin/sh", 2},
	} {
		for _, tc := range cases[:b.cases] {
			t.Run(b.sb.Name()+"/"+tc.name, func(t *testing.T) {
				undoneOn(t, b.sb, b.shell, tc.name, tc.line)
			})
		}
	}
}

func undoneOn(t *testing.T, sb sandbox.Sandbox, shell, name, line string) {
	tc := struct{ name, line string }{name, line}
	dir := t.TempDir()
	for p, c := range map[string]string{"src/main.c": "int main(){}\n", "notes.txt": "keep me\n", "run.sh": "echo hi\n",
		".gitignore": "build/\n", "data/big.bin": strings.Repeat("x", 3<<20)} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "first")
	// Work that git does not hold: untracked, ignored, and an
	// uncommitted edit.
	os.MkdirAll(filepath.Join(dir, "build"), 0o755)
	os.WriteFile(filepath.Join(dir, "build", "out.o"), []byte("object"), 0o644)
	os.WriteFile(filepath.Join(dir, "draft.txt"), []byte("not committed yet"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me, edited\n"), 0o644)
	os.Symlink("notes.txt", filepath.Join(dir, "notes-link"))
	if sb.Name() == "container" {
		// The container runs its command as a user of its own, which may
		// change only what others may write.
		if out, err := exec.Command("chmod", "-R", "a+rwX", dir).CombinedOutput(); err != nil {
			t.Fatalf("chmod: %v\n%s", err, out)
		}
	}
	before := hashTree(t, dir)

	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rc := RunCommand(sb, dir, &RunCommandOptions{Workspace: ws, Shell: shell})
	args, _ := json.Marshal(map[string]string{"command": tc.line})
	res, err := rc.Run(context.Background(), &tool.Call{Args: args, Session: "s1"})
	if err != nil || res.Error != nil {
		t.Fatalf("run: %v %+v", err, res)
	}
	sameHashTree(t, "before the changes are applied", hashTree(t, dir), before)
	if res.Changes == nil {
		if tc.name != "git reset --hard" {
			t.Fatalf("no changes: %s", res.Content)
		}
		return // .git is read-only in the sandbox: git reset fails before touching a file
	}
	if _, err := res.Changes.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := hashTree(t, dir); len(after) == len(before) && tc.name != "git reset --hard" {
		same := true
		for p, d := range after {
			same = same && before[p] == d
		}
		if same {
			t.Fatalf("applied, yet the workspace is as before:\n%s", res.Content)
		}
	}
	rb, err := ws.Rollback("s1")
	if err != nil || len(rb.Conflicts) > 0 {
		t.Fatalf("rollback: %+v, %v", rb, err)
	}
	sameHashTree(t, "after rollback", hashTree(t, dir), before)
}
