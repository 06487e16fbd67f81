package workspace_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// These tests mount a real overlayfs, as the sandbox does, in a mount
// namespace of their own (util-linux unshare, as root), run a shell
// script in the merged view, and then check what Apply and Rollback do to
// the workspace against ground truth: the same script run on a plain copy
// of the workspace.

// overlayOptions are the options the sandbox mounts with (sandbox.Overlay).
const overlayOptions = "redirect_dir=off,metacopy=off,index=off"

// runOnOverlay runs script with its working directory the merged view of
// o over dir.
func runOnOverlay(t *testing.T, dir string, o *workspace.Overlay, script string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the overlay tests mount overlayfs and need root (CI runs as root)")
	}
	merged := t.TempDir()
	mount := fmt.Sprintf("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s,%s %s && cd %s && %s",
		dir, o.Upper, o.Work, overlayOptions, merged, merged, script)
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-ec", mount).CombinedOutput()
	if err != nil {
		t.Fatalf("script on the overlay: %v\n%s", err, out)
	}
}

// runPlain runs script in dir itself: the ground truth.
func runPlain(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
}

// tree describes every entry under dir but .airlock: type, permission
// bits, and content hash or link target; hard-linked files name their
// link group by the first path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	inodes := map[uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == ".airlock" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%s %o", fi.Mode().Type(), fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:8])
			st := fi.Sys().(*syscall.Stat_t)
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					desc += " link of " + first
				} else {
					inodes[st.Ino] = rel
				}
			}
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: %s is missing (want %s)", what, p, w)
		} else if g != w {
			t.Errorf("%s: %s is %s, want %s", what, p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s should not be there (%s)", what, p, g)
		}
	}
}

// populate makes the workspace every overlay test starts from.
func populate(t *testing.T, dir string) {
	t.Helper()
	runPlain(t, dir, `
		printf 'one\ntwo\nthree\n' > a.txt
		echo bee > b.txt
		mkdir -p d/sub keep empty
		echo x > d/x; echo y > d/sub/y; echo k > keep/k
		ln -s a.txt link
		printf '#!/bin/sh\necho hi\n' > run.sh; chmod 644 run.sh
		echo shared > h1; ln h1 h2
		echo same > same.txt
		head -c 3000000 /dev/zero | tr '\0' 'q' > big.bin
		chmod 700 empty
	`)
}

// copyTree copies dir (but .airlock) to a new directory.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	runPlain(t, dir, "tar --exclude=./.airlock -cf - . | (cd "+dst+" && tar -xpf -)")
	return dst
}

const everyKind = `
	echo new > c.txt
	echo four >> a.txt
	rm b.txt
	rm -rf d; mkdir d; echo z > d/z
	mv keep kept
	chmod 755 run.sh
	chmod 755 empty
	ln -s c.txt link2
	rm link; ln -s b.txt link
	ln c.txt c-hard
	seq 1 300000 > seq.txt; printf '\000\001\377' > bin.dat
	head -c 3000000 /dev/zero | tr '\0' 'r' > big.bin
	mkdir -p fresh/deep/er; echo f > fresh/deep/er/f; ln -s ../.. fresh/up
	echo other > h1.new; mv h1.new h1
	ln same.txt same-hard
`

// everyKindTruth populates f's workspace and returns its tree, and the
// tree everyKind makes of it, run on a plain copy: the ground truth.
func everyKindTruth(t *testing.T, f *fixture) (before, want map[string]string) {
	t.Helper()
	populate(t, f.dir)
	before = tree(t, f.dir)
	truth := copyTree(t, f.dir)
	runPlain(t, truth, everyKind)
	return before, tree(t, truth)
}

// A view is a way to run a command on the workspace without changing
// it, whose changes are then read and applied: an overlay, mounted as the
// native sandbox does, or a copy view, for a sandbox that cannot mount
// one (with plain bash in the copy, as a sandbox would run there).
type view struct {
	name string
	open func(t *testing.T, f *fixture) *workspace.Overlay
	run  func(t *testing.T, dir string, o *workspace.Overlay, script string)
}

var views = []view{
	{"overlay", func(t *testing.T, f *fixture) *workspace.Overlay {
		t.Helper()
		o, err := f.w.NewOverlay()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}, runOnOverlay},
	{"copy", newCopyView, func(t *testing.T, _ string, o *workspace.Overlay, script string) {
		t.Helper()
		runPlain(t, o.Copy, script)
	}},
}

// forEachView runs test once on each view.
func forEachView(t *testing.T, test func(t *testing.T, v view)) {
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) { test(t, v) })
	}
}

func TestOverlayApplyAndRollback(t *testing.T) {
	forEachView(t, func(t *testing.T, v view) {
		f := newFixture(t, nil)
		before, want := everyKindTruth(t, f)

		o := v.open(t, f)
		v.run(t, f.dir, o, everyKind)
		sameTree(t, "the workspace while the command's changes wait", tree(t, f.dir), before)
		set, err := o.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if !set.Destroys() {
			t.Error("Destroys() = false for changes that delete b.txt and d/x")
		}
		a, err := o.Apply("s1", set)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("applied: %+v", a)
		sameTree(t, "after Apply", tree(t, f.dir), want)
		if ents, _ := os.ReadDir(filepath.Join(f.dir, workspace.OverlaysDir)); len(ents) > 0 {
			t.Errorf("the overlay is still there after Apply: %v", ents)
		}
		// The new states name the entries now in place, which Rollback
		// checks.
		for _, c := range set.Changes {
			if c.Kind == workspace.ChangeDeleted || c.New.Type == workspace.TypeDir {
				continue
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(f.dir, c.Path), &st); err != nil {
				t.Errorf("%s: %v", c.Path, err)
			} else if st.Ino != c.New.Ino || st.Mtim.Nano() != c.New.MtimeNs {
				t.Errorf("%s: New is inode %d at %d, the workspace holds inode %d at %d", c.Path, c.New.Ino, c.New.MtimeNs, st.Ino, st.Mtim.Nano())
			}
		}

		res, err := f.w.Rollback("s1")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Conflicts) > 0 {
			t.Errorf("conflicts: %+v", res.Conflicts)
		}
		sameTree(t, "after Rollback", tree(t, f.dir), before)
		if again, err := f.w.Rollback("s1"); err != nil || len(again.Restored) > 0 {
			t.Errorf("second Rollback = %+v, %v; want nothing", again, err)
		}
	})
}

func TestOverlayNothingChanged(t *testing.T) {
	forEachView(t, func(t *testing.T, v view) {
		f := newFixture(t, nil)
		populate(t, f.dir)
		o := v.open(t, f)
		// Opening for writing copies a file up; writing the same bytes
		// back, a new time and the same mode change nothing.
		v.run(t, f.dir, o, `cat a.txt > /tmp/a.copy; cat /tmp/a.copy > a.txt; touch -m b.txt big.bin; chmod 644 run.sh; ls -R >/dev/null`)
		set, err := o.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Changes) > 0 || len(set.Skipped) > 0 {
			t.Errorf("changes %+v, skipped %v; want none", set.Changes, set.Skipped)
		}
		if err := o.Discard(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(filepath.Join(f.dir, workspace.OverlaysDir)); len(ents) > 0 {
			t.Errorf("the overlay is still there after Discard: %v", ents)
		}
	})
}

func TestOverlayWholeWorkspaceDeleted(t *testing.T) {
	forEachView(t, func(t *testing.T, v view) {
		f := newFixture(t, nil)
		populate(t, f.dir)
		before := tree(t, f.dir)
		o := v.open(t, f)
		v.run(t, f.dir, o, `find . -mindepth 1 -maxdepth 1 ! -name .airlock -exec rm -rf {} +`)
		set, err := o.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Apply("s2", set); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, f.dir); len(got) != 0 {
			t.Fatalf("after applying the deletion of everything: %v", got)
		}
		if _, err := f.w.Rollback("s2"); err != nil {
			t.Fatal(err)
		}
		sameTree(t, "after Rollback", tree(t, f.dir), before)
	})
}

func TestRollbackConflicts(t *testing.T) { forEachView(t, rollbackConflicts) }

func rollbackConflicts(t *testing.T, v view) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	o := v.open(t, f)
	v.run(t, f.dir, o, `echo changed > a.txt; rm b.txt; echo n > new.txt; echo q > d/x`)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s3", set); err != nil {
		t.Fatal(err)
	}
	// Someone else changes a.txt, makes b.txt again and edits new.txt.
	writeFile(t, f.path("a.txt"), "theirs\n")
	writeFile(t, f.path("b.txt"), "theirs too\n")
	writeFile(t, f.path("new.txt"), "edited\n")
	res, err := f.w.Rollback("s3")
	if err != nil {
		t.Fatal(err)
	}
	conflicted := map[string]bool{}
	for _, c := range res.Conflicts {
		conflicted[c.Path] = true
	}
	for _, p := range []string{"a.txt", "b.txt", "new.txt"} {
		if !conflicted[p] {
			t.Errorf("%s changed by someone else since, not reported as a conflict: %+v", p, res.Conflicts)
		}
	}
	for p, want := range map[string]string{"a.txt": "theirs\n", "b.txt": "theirs too\n", "new.txt": "edited\n", "d/x": "x\n"} {
		if got := readFile(t, f.path(p)); got != want {
			t.Errorf("%s = %q, want %q (a conflict is never overwritten; d/x is undone)", p, got, want)
		}
	}
	// Once b.txt and new.txt are dealt with, a second Rollback undoes
	// them; a.txt stays someone else's.
	os.Remove(f.path("b.txt"))
	os.Remove(f.path("new.txt"))
	res, err = f.w.Rollback("s3")
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f.path("b.txt")); got != "bee\n" {
		t.Errorf("b.txt after the second Rollback = %q, want bee", got)
	}
	if _, err := os.Lstat(f.path("new.txt")); err == nil {
		t.Error("new.txt is there after the second Rollback")
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "a.txt" {
		t.Errorf("second Rollback conflicts = %+v, want a.txt alone", res.Conflicts)
	}
}

// TestOverlayCrashMidApply kills a process applying changes after some of
// them, checks that every path is then either as it was or as the command
// left it, and that Recover, as the next start does, finishes the work;
// for an overlay and for a copy view.
func TestOverlayCrashMidApply(t *testing.T) {
	if dir := os.Getenv("AIRLOCK_TEST_CRASH_DIR"); dir != "" {
		crashChild(dir)
		return
	}
	for _, view := range []string{"overlay", "copy"} {
		for _, step := range []int{0, 1, 3, 6, 9} {
			t.Run(view+"/"+strconv.Itoa(step), func(t *testing.T) { crashMidApply(t, view, step) })
		}
	}
}

func crashMidApply(t *testing.T, view string, step int) {
	f := newFixture(t, nil)
	before, want := everyKindTruth(t, f)
	f.w.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverlayCrashMidApply$")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_CRASH_DIR="+f.dir, "AIRLOCK_TEST_CRASH_STEP="+strconv.Itoa(step),
		"AIRLOCK_TEST_CRASH_VIEW="+view)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the applying child was not killed: %v\n%s", err, out)
	}
	mid := unlinked(tree(t, f.dir))
	b, w := unlinked(before), unlinked(want)
	for p := range union(b, w) {
		if g := mid[p]; g != b[p] && g != w[p] {
			t.Errorf("after the crash %s is %q: neither as before (%q) nor as after (%q)", p, g, b[p], w[p])
		}
	}
	ws, err := workspace.Open(f.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Recover(); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Recover", tree(t, f.dir), want)
	if _, err := ws.Rollback("s4"); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Rollback", tree(t, f.dir), before)
}

// unlinked drops the hard-link notes of a tree: while changes are applied
// a link group is part old, part new.
func unlinked(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for p, d := range m {
		d, _, _ = strings.Cut(d, " link of ")
		out[p] = d
	}
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for p := range a {
		out[p] = true
	}
	for p := range b {
		out[p] = true
	}
	return out
}

// crashChild applies everyKind to the workspace at dir, run on an
// overlay or a copy view (AIRLOCK_TEST_CRASH_VIEW), and kills itself
// with SIGKILL after the given number of applied changes.
func crashChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	step, _ := strconv.Atoi(os.Getenv("AIRLOCK_TEST_CRASH_STEP"))
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		fail(err)
	}
	var o *workspace.Overlay
	var run *exec.Cmd
	if os.Getenv("AIRLOCK_TEST_CRASH_VIEW") == "copy" {
		if o, err = ws.NewCopyView(); err != nil {
			fail(err)
		}
		run = exec.Command("bash", "-ec", everyKind)
		run.Dir = o.Copy
	} else {
		if o, err = ws.NewOverlay(); err != nil {
			fail(err)
		}
		merged, err := os.MkdirTemp("", "merged")
		if err != nil {
			fail(err)
		}
		mount := fmt.Sprintf("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s,%s %s && cd %s && %s",
			dir, o.Upper, o.Work, overlayOptions, merged, merged, everyKind)
		run = exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-ec", mount)
	}
	if out, err := run.CombinedOutput(); err != nil {
		fail(fmt.Errorf("%v: %s", err, out))
	}
	set, err := o.Changes()
	if err != nil {
		fail(err)
	}
	workspace.SetApplyHook(func(i int) {
		if i == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	if _, err := o.Apply("s4", set); err != nil {
		fail(err)
	}
	fail(fmt.Errorf("applied all %d changes without reaching step %d", len(set.Changes), step))
}

// TestRollbackCommandThenEdit: a file a command changed and the file
// tools then edited rolls back to what it was before both, without a
// conflict (the edit's undo writes the command's version anew).
func TestRollbackCommandThenEdit(t *testing.T) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	before := tree(t, f.dir)
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, `echo by-command > a.txt; echo made > made.txt`)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s5", set); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.EditFile("s5", "a.txt", "by-command", "by-edit", false); err != nil {
		t.Fatal(err)
	}
	res, err := f.w.Rollback("s5")
	if err != nil || len(res.Conflicts) > 0 {
		t.Fatalf("Rollback = %+v, %v", res, err)
	}
	sameTree(t, "after Rollback", tree(t, f.dir), before)
}

// TestSnapshotLimits: changes whose old versions would pass a snapshot
// limit are named over it (the gate then holds them for a person), a
// session at its limit runs no more commands, and Recover prunes a
// session's snapshot idle for KeepSnapshots and changes held for
// KeepHeld.
func TestSnapshotLimits(t *testing.T) {
	f := newFixture(t, &workspace.Options{MaxSessionSnapshotBytes: 100, MaxSnapshotFileBytes: 50})
	writeFile(t, f.path("big.txt"), strings.Repeat("b", 60))
	writeFile(t, f.path("small1.txt"), strings.Repeat("s", 40))
	writeFile(t, f.path("small2.txt"), strings.Repeat("s", 40))
	changes := func(script string) (*workspace.Overlay, *workspace.ChangeSet) { return overlayChanges(t, f, script) }
	kept, err := f.w.CheckSnapshotRoom("s6")
	if err != nil || kept != 0 {
		t.Fatalf("a new session: kept %d, %v", kept, err)
	}
	o, set := changes("rm big.txt")
	if why := f.w.OverLimit(set, kept); !strings.Contains(why, "MaxSnapshotFileBytes") {
		t.Errorf("deleting a 60-byte file with MaxSnapshotFileBytes 50: %q", why)
	}
	o.Discard()
	o, set = changes("rm small1.txt")
	if why := f.w.OverLimit(set, kept); why != "" {
		t.Errorf("deleting 40 bytes of 100: %q", why)
	}
	if _, err := o.Apply("s6", set); err != nil {
		t.Fatal(err)
	}
	if kept, _ = f.w.SessionKept("s6"); kept != 40 {
		t.Errorf("SessionKept = %d, want 40", kept)
	}
	o, set = changes("truncate -s 0 small2.txt")
	if why := f.w.OverLimit(set, kept+30); !strings.Contains(why, "MaxSessionSnapshotBytes") {
		t.Errorf("40 more bytes past a session at 70 of 100: %q", why)
	}
	if _, err := o.Apply("s6", set); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.path("x.txt"), strings.Repeat("x", 30))
	o, set = changes("rm x.txt")
	if _, err := o.Apply("s6", set); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.CheckSnapshotRoom("s6"); codeOf(err) != tool.CodeChangesTooLarge {
		t.Errorf("a session keeping 110 of 100 bytes: %v, want changes_too_large", err)
	}

	// Held changes and idle snapshots are pruned once old enough.
	o, _ = changes("echo n > n.txt")
	if err := o.Hold("a1", []byte("result")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-workspace.KeepSnapshots - time.Hour)
	os.Chtimes(filepath.Join(f.dir, workspace.OverlaysDir, "held-a1", "result"), old, old)
	os.Chtimes(filepath.Join(f.dir, workspace.SnapshotsDir, "s6"), old, old)
	if _, err := f.w.Recover(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.w.HeldOverlay("a1"); codeOf(err) != tool.CodeNotFound {
		t.Errorf("held changes older than KeepHeld: %v, want not_found", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, workspace.SnapshotsDir, "s6")); !os.IsNotExist(err) {
		t.Errorf("a snapshot idle for KeepSnapshots is still there: %v", err)
	}
}
