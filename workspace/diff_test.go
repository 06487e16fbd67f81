package workspace_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// overlayChanges runs script on a new overlay of the fixture's workspace
// and reads its changes; the overlay is left for the caller.
func overlayChanges(t *testing.T, f *fixture, script string) (*workspace.Overlay, *workspace.ChangeSet) {
	t.Helper()
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, script)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	return o, set
}

// overlayDiff runs script on an overlay of the fixture's workspace and
// returns the diff of its changes, the overlay left for the caller.
func overlayDiff(t *testing.T, f *fixture, script string, lim workspace.DiffLimits) (string, *workspace.Overlay, *workspace.ChangeSet) {
	t.Helper()
	o, set := overlayChanges(t, f, script)
	var out bytes.Buffer
	if err := o.Diff(set, &out, lim); err != nil {
		t.Fatal(err)
	}
	return out.String(), o, set
}

func checkText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n--- got\n%s\n--- want\n%s", what, got, want)
	}
}

func TestOverlayDiff(t *testing.T) {
	f := newFixture(t, nil)
	runPlain(t, f.dir, `
		seq 1 12 > a.txt
		echo bye > del.txt
		printf '#!/bin/sh\n' > mode.sh; chmod 644 mode.sh
		ln -s a.txt link
		printf 'x' > noeol.txt
		mkdir -p gone/sub; echo g > gone/g; echo s > gone/sub/s
		head -c 300 /dev/zero | tr '\0' 'l' > large.txt
		echo was a file > typed
	`)
	got, o, set := overlayDiff(t, f, `
		sed -i 's/^5$/five/' a.txt
		echo hello > add.txt
		rm del.txt
		chmod 755 mode.sh
		rm link; ln -s del.txt link
		printf 'y' > noeol.txt
		rm -rf gone
		printf 'a\000b' > bin.dat
		head -c 301 /dev/zero | tr '\0' 'l' > large.txt
		mkdir empty
		rm typed; ln -s a.txt typed
		printf 'two\nlines\n' > 'with space'
		printf 'odd\n' > "$(printf 'new\nline')"
	`, workspace.DiffLimits{MaxFileBytes: 200})
	want := `diff --airlock a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
diff --airlock a/add.txt b/add.txt
new file mode 100644
--- /dev/null
+++ b/add.txt
@@ -0,0 +1 @@
+hello
diff --airlock a/bin.dat b/bin.dat
new file mode 100644
Binary files /dev/null and b/bin.dat differ (0 bytes -> 3 bytes)
diff --airlock a/del.txt b/del.txt
deleted file mode 100644
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --airlock a/empty b/empty
new directory mode 040755
diff --airlock a/gone/g b/gone/g
deleted file mode 100644
--- a/gone/g
+++ /dev/null
@@ -1 +0,0 @@
-g
diff --airlock a/gone/sub/s b/gone/sub/s
deleted file mode 100644
--- a/gone/sub/s
+++ /dev/null
@@ -1 +0,0 @@
-s
diff --airlock a/large.txt b/large.txt
Files a/large.txt and b/large.txt differ (300 bytes -> 301 bytes), too large to show (DiffLimits.MaxFileBytes)
diff --airlock a/link b/link
--- a/link
+++ b/link
@@ -1 +1 @@
-a.txt
\ No newline at end of file
+del.txt
\ No newline at end of file
diff --airlock a/mode.sh b/mode.sh
old mode 100644
new mode 100755
diff --airlock "a/new\nline" "b/new\nline"
new file mode 100644
--- /dev/null
+++ "b/new\nline"
@@ -0,0 +1 @@
+odd
diff --airlock a/noeol.txt b/noeol.txt
--- a/noeol.txt
+++ b/noeol.txt
@@ -1 +1 @@
-x
\ No newline at end of file
+y
\ No newline at end of file
diff --airlock a/typed b/typed
deleted file mode 100644
--- a/typed
+++ /dev/null
@@ -1 +0,0 @@
-was a file
diff --airlock a/typed b/typed
new file mode 120000
--- /dev/null
+++ b/typed
@@ -0,0 +1 @@
+a.txt
\ No newline at end of file
diff --airlock a/with space b/with space
new file mode 100644
--- /dev/null
+++ b/with space	
@@ -0,0 +1,2 @@
+two
+lines
`
	checkText(t, "the diff", got, want)
	t.Logf("summary: %s", set.Summary())
	if err := o.Discard(); err != nil {
		t.Fatal(err)
	}
}

// TestOverlayDiffApplies is the ground truth for the hunks: a diff of
// many random text edits, applied by patch -p1 and by git apply to a
// copy of the old tree, must give the new tree, file for file.
func TestOverlayDiffApplies(t *testing.T) {
	f := newFixture(t, nil)
	rng := rand.New(rand.NewSource(1))
	stage := t.TempDir() // the new versions, copied over the workspace by the command
	var removed []string
	for i := range 80 {
		name := fmt.Sprintf("f%02d.txt", i)
		switch i % 10 {
		case 7:
			name = fmt.Sprintf("dir %d/with space.txt", i)
		case 8:
			name = fmt.Sprintf("deep/er/f%02d.txt", i)
		}
		old := randomText(rng, 1+rng.Intn(200))
		writeFileAll(t, f.path(name), old)
		switch i % 13 {
		case 3:
			removed = append(removed, name)
		case 5:
			// Unchanged.
		default:
			writeFileAll(t, filepath.Join(stage, name), editText(rng, old))
		}
	}
	for i := range 5 {
		writeFileAll(t, filepath.Join(stage, fmt.Sprintf("new/n%d.txt", i)), randomText(rng, 1+rng.Intn(30)))
	}
	// Quadratic for difflib alone: every other line of a long file
	// changed, and a file of few distinct lines shuffled.
	var every, everyNew, few, fewNew strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&every, "line %d\n", i)
		if i%2 == 0 {
			fmt.Fprintf(&everyNew, "line %d\n", i)
		} else {
			fmt.Fprintf(&everyNew, "changed %d\n", i)
		}
		fmt.Fprintf(&few, "%d\n", i%7)
		fmt.Fprintf(&fewNew, "%d\n", rng.Intn(7))
	}
	writeFileAll(t, f.path("every.txt"), every.String())
	writeFileAll(t, filepath.Join(stage, "every.txt"), everyNew.String())
	writeFileAll(t, f.path("few.txt"), few.String())
	writeFileAll(t, filepath.Join(stage, "few.txt"), fewNew.String())
	// Against the anchors: blocks of lines that each occur twice, so
	// that only the lines between blocks anchor, and every other line of
	// each block changed; two such files pass the work bound of one diff.
	var adv, advNew strings.Builder
	for k := 0; adv.Len() < 1<<20; k++ {
		for c := range 2 {
			fmt.Fprintf(&adv, "U %d %d\n", k, c)
			fmt.Fprintf(&advNew, "U %d %d\n", k, c)
			for j := range 1000 {
				fmt.Fprintf(&adv, "%d-%d\n", k, j)
				fmt.Fprintf(&advNew, "%d-%d%s\n", k, j, strings.Repeat("x", j%2))
			}
		}
	}
	for _, name := range []string{"adv1.txt", "adv2.txt"} {
		writeFileAll(t, f.path(name), adv.String())
		writeFileAll(t, filepath.Join(stage, name), advNew.String())
	}
	writeFileAll(t, f.path("gone/a.txt"), "a\n")
	writeFileAll(t, f.path("gone/b/c.txt"), "c\nc\n")
	removed = append(removed, "gone")

	old := copyTree(t, f.dir)
	script := "cp -r " + stage + "/. ."
	for _, p := range removed {
		script += fmt.Sprintf(" && rm -rf '%s'", p)
	}
	truth := copyTree(t, f.dir)
	runPlain(t, truth, script)

	start := time.Now()
	got, o, _ := overlayDiff(t, f, script, workspace.DiffLimits{MaxBytes: 64 << 20, MaxFileBytes: 4 << 20})
	took := time.Since(start)
	t.Logf("diff: %d bytes in %v (the command and its overlay included)", len(got), took)
	if took > time.Minute {
		t.Errorf("the diff took %v: its matching is not bounded", took)
	}
	defer o.Discard()
	patchFile := filepath.Join(t.TempDir(), "changes.diff")
	writeFile(t, patchFile, got)

	byPatch := copyTree(t, old)
	cmd := exec.Command("patch", "-p1", "-s", "-i", patchFile)
	cmd.Dir = byPatch
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch -p1: %v\n%s", err, out)
	}
	sameTree(t, "the old tree patched by patch -p1", contents(t, byPatch), contents(t, truth))

	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git: git apply not tried")
		return
	}
	byGit := copyTree(t, old)
	cmd = exec.Command("git", "apply", "-p1", patchFile)
	cmd.Dir = byGit
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	sameTree(t, "the old tree patched by git apply", contents(t, byGit), contents(t, truth))
}

// contents maps each regular file under dir (but .airlock) to its bytes.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".airlock" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			out[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFileAll(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content)
}

// randomText makes n lines from a small vocabulary, so that lines repeat
// as in code ("}", blank lines) and others are unique; the last line
// sometimes has no line end.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		switch rng.Intn(4) {
		case 0:
			b.WriteString("}\n")
		case 1:
			b.WriteString("\n")
		default:
			fmt.Fprintf(&b, "line %d %d\n", i, rng.Intn(1000))
		}
	}
	s := b.String()
	if rng.Intn(4) == 0 {
		s = strings.TrimSuffix(s, "\n") + "no end"
	}
	return s
}

// editText changes some lines of s: deletes, inserts, replaces, moves a
// block, and adds or drops the last line end; it never leaves it empty.
func editText(rng *rand.Rand, s string) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for range 1 + rng.Intn(8) {
		i := rng.Intn(len(lines) + 1)
		switch rng.Intn(5) {
		case 0:
			if i < len(lines) && len(lines) > 1 {
				lines = append(lines[:i], lines[i+1:]...)
			}
		case 1:
			lines = append(lines[:i], append([]string{fmt.Sprintf("inserted %d\n", rng.Intn(100))}, lines[i:]...)...)
		case 2:
			if i < len(lines) {
				lines[i] = "}\n"
			}
		case 3:
			if j := i + rng.Intn(10); j < len(lines) {
				block := append([]string(nil), lines[i:j]...)
				lines = append(lines[:i], lines[j:]...)
				k := rng.Intn(len(lines) + 1)
				lines = append(lines[:k], append(block, lines[k:]...)...)
			}
		case 4:
			last := len(lines) - 1
			if strings.HasSuffix(lines[last], "\n") {
				lines[last] = strings.TrimSuffix(lines[last], "\n")
			} else {
				lines[last] += "\n"
			}
		}
	}
	// Only the last line may lack its end.
	for k := range lines[:len(lines)-1] {
		if !strings.HasSuffix(lines[k], "\n") {
			lines[k] += "\n"
		}
	}
	return strings.Join(lines, "")
}

func TestOverlayDiffLimits(t *testing.T) {
	f := newFixture(t, nil)
	script := `for i in 1 2 3 4 5; do echo $i > f$i; done`
	for _, tc := range []struct {
		lim  workspace.DiffLimits
		want string
	}{
		{workspace.DiffLimits{MaxFiles: 2}, `diff --airlock a/f1 b/f1
new file mode 100644
--- /dev/null
+++ b/f1
@@ -0,0 +1 @@
+1
diff --airlock a/f2 b/f2
new file mode 100644
--- /dev/null
+++ b/f2
@@ -0,0 +1 @@
+2
[the diff stops at its limit of 2 paths (DiffLimits.MaxFiles); not shown: 3 more paths]
`},
		{workspace.DiffLimits{MaxBytes: 100}, `diff --airlock a/f1 b/f1
new file mode 100644
--- /dev/null
+++ b/f1
@@ -0,0 +1 @@
+1
[the diff stops at its limit of 100 bytes of diff (DiffLimits.MaxBytes); not shown: 4 more paths]
`},
		{workspace.DiffLimits{MaxBytes: 10}, `[the diff stops at its limit of 10 bytes of diff (DiffLimits.MaxBytes); not shown: 5 more paths]
`},
	} {
		got, o, _ := overlayDiff(t, f, script, tc.lim)
		checkText(t, fmt.Sprintf("the diff within %+v", tc.lim), got, tc.want)
		o.Discard()
	}
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	defer o.Discard()
	if err := o.Diff(&workspace.ChangeSet{}, &bytes.Buffer{}, workspace.DiffLimits{MaxFiles: -1}); err == nil {
		t.Error("Diff took a negative limit")
	}
	bad := &workspace.ChangeSet{Changes: []workspace.Change{{Path: "../outside/secret.txt", Kind: workspace.ChangeModified,
		Old: workspace.State{Type: workspace.TypeFile}, New: workspace.State{Type: workspace.TypeFile}}}}
	var out bytes.Buffer
	if err := o.Diff(bad, &out, workspace.DiffLimits{}); err == nil || strings.Contains(out.String(), "SECRET") {
		t.Errorf("Diff of a change set naming a path outside: %v, %q", err, out.String())
	}
}

func TestSummary(t *testing.T) {
	file := workspace.State{Type: workspace.TypeFile}
	for _, tc := range []struct {
		set  *workspace.ChangeSet
		want string
	}{
		{nil, "no changes"},
		{&workspace.ChangeSet{}, "no changes"},
		{&workspace.ChangeSet{Changes: []workspace.Change{{Kind: workspace.ChangeAdded, New: file}}}, "1 added"},
		{&workspace.ChangeSet{Changes: []workspace.Change{
			{Kind: workspace.ChangeAdded}, {Kind: workspace.ChangeAdded}, {Kind: workspace.ChangeAdded},
			{Kind: workspace.ChangeModified}, {Kind: workspace.ChangeDeleted}, {Kind: workspace.ChangeDeleted},
		}, OldBytes: 48 << 10}, "3 added, 1 modified, 2 deleted (48KiB kept for rollback)"},
		{&workspace.ChangeSet{Changes: []workspace.Change{{Kind: workspace.ChangeDeleted}}, OldBytes: 1}, "1 deleted (1 byte kept for rollback)"},
		{&workspace.ChangeSet{Changes: []workspace.Change{{Kind: workspace.ChangeModified}}, OldBytes: 3 << 19}, "1 modified (1.5MiB kept for rollback)"},
		{&workspace.ChangeSet{Skipped: []string{"fifo"}}, "1 special file not applied"},
	} {
		if got := tc.set.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

// TestSessionDiff mixes the file tools' records and a command's batch,
// then someone else's changes, and checks the whole diff: each path from
// before the session's first change to now.
func TestSessionDiff(t *testing.T) {
	f := newFixture(t, nil)
	runPlain(t, f.dir, `
		seq 1 8 > keep.txt
		echo old notes > notes.txt
		mkdir -p d/sub; echo x > d/x; echo y > d/sub/y
		echo a > conf.txt
		echo t > theirs.txt
		echo u > untouched.txt
	`)
	w := f.w
	for _, err := range []error{
		second(w.WriteFile("s", "new.txt", "new\n")),
		second(w.EditFile("s", "keep.txt", "4", "four", false)),
		second(w.WriteFile("s", "sub/deep/made.txt", "m\n")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	o, err := w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, `echo more >> keep.txt; rm -rf d; chmod 755 conf.txt; echo t2 > theirs.txt; rm notes.txt; ln -s keep.txt ln`)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s", set); err != nil {
		t.Fatal(err)
	}
	if _, err := w.EditFile("s", "keep.txt", "more", "more!", false); err != nil {
		t.Fatal(err)
	}
	// Someone else, afterwards.
	writeFile(t, f.path("theirs.txt"), "someone\n")
	writeFileAll(t, f.path("d/x"), "back\n")

	var out bytes.Buffer
	if err := w.SessionDiff("s", &out, workspace.DiffLimits{}); err != nil {
		t.Fatal(err)
	}
	want := `diff --airlock a/conf.txt b/conf.txt
old mode 100644
new mode 100755
diff --airlock a/d/sub/y b/d/sub/y
deleted file mode 100644
--- a/d/sub/y
+++ /dev/null
@@ -1 +0,0 @@
-y
diff --airlock a/d/x b/d/x (changed since by someone else)
--- a/d/x
+++ b/d/x
@@ -1 +1 @@
-x
+back
diff --airlock a/keep.txt b/keep.txt
--- a/keep.txt
+++ b/keep.txt
@@ -1,8 +1,9 @@
 1
 2
 3
-4
+four
 5
 6
 7
 8
+more!
diff --airlock a/ln b/ln
new file mode 120000
--- /dev/null
+++ b/ln
@@ -0,0 +1 @@
+keep.txt
\ No newline at end of file
diff --airlock a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+new
diff --airlock a/notes.txt b/notes.txt
deleted file mode 100644
--- a/notes.txt
+++ /dev/null
@@ -1 +0,0 @@
-old notes
diff --airlock a/sub/deep/made.txt b/sub/deep/made.txt
new file mode 100644
--- /dev/null
+++ b/sub/deep/made.txt
@@ -0,0 +1 @@
+m
diff --airlock a/theirs.txt b/theirs.txt (changed since by someone else)
--- a/theirs.txt
+++ b/theirs.txt
@@ -1 +1 @@
-t
+someone
`
	checkText(t, "the session's diff", out.String(), want)

	checkErr(t, "SessionDiff of a session with no records", w.SessionDiff("nobody", &out, workspace.DiffLimits{}), tool.CodeNotFound)
	checkErr(t, "SessionDiff of a bad session id", w.SessionDiff("../x", &out, workspace.DiffLimits{}), tool.CodeInvalidCall)
}

func second[T any](_ T, err error) error { return err }

// TestSessionDiffAfterPartialRollback: a Rollback stopped by a conflict
// puts back what it could; the diff says those old versions are gone
// from the snapshot, and shows the conflicting path.
func TestSessionDiffAfterPartialRollback(t *testing.T) {
	f := newFixture(t, nil)
	runPlain(t, f.dir, `echo a > a.txt; echo b > b.txt`)
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, `echo A > a.txt; echo B > b.txt`)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s", set); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.path("b.txt"), "theirs\n")
	if res, err := f.w.Rollback("s"); err != nil || len(res.Conflicts) != 1 {
		t.Fatalf("Rollback: %+v, %v; want b.txt in conflict", res, err)
	}
	var out bytes.Buffer
	if err := f.w.SessionDiff("s", &out, workspace.DiffLimits{}); err != nil {
		t.Fatal(err)
	}
	checkText(t, "the diff", out.String(), `diff --airlock a/a.txt b/a.txt (its old version is no longer in the snapshot: rolled back already)
diff --airlock a/b.txt b/b.txt (changed since by someone else)
--- a/b.txt
+++ b/b.txt
@@ -1 +1 @@
-b
+theirs
`)
	// Once the conflict is dealt with and the rest rolled back, the
	// session has nothing left to show.
	os.Remove(f.path("b.txt"))
	if res, err := f.w.Rollback("s"); err != nil || len(res.Conflicts) > 0 {
		t.Fatalf("second Rollback: %+v, %v", res, err)
	}
	checkErr(t, "SessionDiff after Rollback", f.w.SessionDiff("s", &out, workspace.DiffLimits{}), tool.CodeNotFound)
}

// TestSessionDiffDamaged: a record that cannot be read is an error,
// never a panic and never skipped.
func TestSessionDiffDamaged(t *testing.T) {
	batch := func(manifest string) string {
		return fmt.Sprintf(`{"version":1,"path":"","kind":"batch","existed":false,"size":%d}`+"\n%s", len(manifest), manifest)
	}
	for name, record := range map[string]string{
		"no header line":     "{",
		"bad header":         "{nope}\n",
		"short content":      `{"version":1,"path":"a","kind":"file","existed":true,"size":9,"sha256":"00"}` + "\nab",
		"bad sha":            `{"version":1,"path":"a","kind":"file","existed":true,"size":2,"sha256":"00"}` + "\nab",
		"bad version":        `{"version":7,"path":"a","kind":"dir","size":0}` + "\n",
		"unknown kind":       `{"version":1,"path":"a","kind":"mystery","size":0}` + "\n",
		"path outside":       `{"version":1,"path":"../a","kind":"dir","size":0}` + "\n",
		"manifest not json":  batch("{not json"),
		"manifest path":      batch(`{"overlay":"x","changes":[{"path":"../../etc/passwd","kind":"deleted","old":{"type":"file"}}]}`),
		"manifest state dir": batch(`{"overlay":"x","changes":[{"path":".airlock/x","kind":"added","new":{"type":"file"}}]}`),
		"manifest kind":      batch(`{"overlay":"x","changes":[{"path":"a","kind":"moved","new":{"type":"file"}}]}`),
		"manifest type":      batch(`{"overlay":"x","changes":[{"path":"a","kind":"added","new":{"type":"fifo"}}]}`),
		"manifest changes":   batch(`{"overlay":"x","changes":{"path":"a"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			dir := filepath.Join(f.dir, ".airlock", "snapshots", "s")
			writeFileAll(t, filepath.Join(dir, "00000001.snap"), record)
			var out bytes.Buffer
			err := f.w.SessionDiff("s", &out, workspace.DiffLimits{})
			if err == nil {
				t.Fatalf("no error; wrote %q", out.String())
			}
			t.Log(err)
		})
	}
	// A batch whose old versions are missing or of another type is not
	// damaged past reading: shown as what remains.
	f := newFixture(t, nil)
	dir := filepath.Join(f.dir, ".airlock", "snapshots", "s")
	writeFileAll(t, filepath.Join(dir, "00000001.snap"),
		batch(`{"overlay":"x","changes":[{"path":"a","kind":"deleted","old":{"type":"file"}},{"path":"b","kind":"deleted","old":{"type":"file"}}]}`))
	if err := os.MkdirAll(filepath.Join(dir, "00000001.old", "1"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "00000001.old", "1", "inner"), "kept\n")
	var out bytes.Buffer
	if err := f.w.SessionDiff("s", &out, workspace.DiffLimits{}); err != nil {
		t.Fatal(err)
	}
	checkText(t, "the diff", out.String(), `diff --airlock a/a b/a (its old version is no longer in the snapshot: rolled back already)
diff --airlock a/b/inner b/b/inner
deleted file mode 100644
--- a/b/inner
+++ /dev/null
@@ -1 +0,0 @@
-kept
`)
}

// TestSessionDiffApplies: a session's diff, applied by patch -p1 to a
// copy of the workspace from before the session, gives the workspace as
// it is now: random edits through the file tools before and after a
// command's batch, and edits by someone else at the end.
func TestSessionDiffApplies(t *testing.T) {
	f := newFixture(t, nil)
	rng := rand.New(rand.NewSource(3))
	var names []string
	for i := range 40 {
		name := fmt.Sprintf("d%d/f%02d.txt", i%4, i)
		names = append(names, name)
		writeFileAll(t, f.path(name), randomText(rng, 1+rng.Intn(60)))
	}
	before := copyTree(t, f.dir)
	edit := func(name string) {
		t.Helper()
		if _, err := f.w.WriteFile("s", name, editText(rng, readFile(t, f.path(name)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names[:15] {
		edit(n)
	}
	if _, err := f.w.WriteFile("s", "made/by/tool.txt", randomText(rng, 5)); err != nil {
		t.Fatal(err)
	}
	stage := t.TempDir()
	for _, n := range names[10:30] {
		writeFileAll(t, filepath.Join(stage, n), editText(rng, readFile(t, f.path(n))))
	}
	writeFileAll(t, filepath.Join(stage, "made/by/command.txt"), randomText(rng, 5))
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, "cp -r "+stage+"/. . && rm -rf d3 && rm made/by/tool.txt")
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s", set); err != nil {
		t.Fatal(err)
	}
	for _, n := range names[25:35] {
		if _, err := os.Stat(f.path(n)); err == nil {
			edit(n)
		}
	}
	for _, n := range []string{names[0], names[12], names[26]} { // someone else
		writeFile(t, f.path(n), editText(rng, readFile(t, f.path(n))))
	}
	var out bytes.Buffer
	if err := f.w.SessionDiff("s", &out, workspace.DiffLimits{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "(changed since by someone else)"); got != 3 {
		t.Errorf("%d paths said to be changed since by someone else, want 3", got)
	}
	patchFile := filepath.Join(t.TempDir(), "session.diff")
	writeFile(t, patchFile, out.String())
	cmd := exec.Command("patch", "-p1", "-s", "-i", patchFile)
	cmd.Dir = before
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch -p1: %v\n%s", err, out)
	}
	sameTree(t, "the workspace from before the session, patched", contents(t, before), contents(t, f.dir))
}

// TestOverlayDiffEveryKind: the diff of every kind of change (links,
// hard links, binary and large files, directories replaced, made and
// deleted) names exactly the paths whose entry differs between the
// tree before and the same command's result on a plain copy.
func TestOverlayDiffEveryKind(t *testing.T) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	before := unlinked(tree(t, f.dir))
	truth := copyTree(t, f.dir)
	runPlain(t, truth, everyKind)
	after := unlinked(tree(t, truth))
	got, o, _ := overlayDiff(t, f, everyKind, workspace.DiffLimits{})
	defer o.Discard()
	shown := map[string]bool{}
	for _, line := range strings.Split(got, "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --airlock a/"); ok {
			p, _, _ := strings.Cut(rest, " b/")
			shown[p] = true
		}
	}
	isDir := func(desc string) bool { return strings.HasPrefix(desc, "d") }
	for p := range union(before, after) {
		b, a := before[p], after[p]
		made, gone := b == "" && isDir(a), a == "" && isDir(b)
		if b == a || made || gone {
			continue // the same, or a directory made or deleted: shown as its entries
		}
		if !shown[p] {
			t.Errorf("%s changed (%q -> %q) but the diff does not show it", p, b, a)
		}
	}
	for p := range shown {
		if before[p] == after[p] {
			t.Errorf("the diff shows %s, which did not change (%q)", p, before[p])
		}
	}
	if !strings.Contains(got, "Files a/big.bin and b/big.bin differ (3000000 bytes -> 3000000 bytes), too large to show") ||
		!strings.Contains(got, "Binary files /dev/null and b/bin.dat differ (0 bytes -> 3 bytes)") {
		t.Errorf("the large and binary files are not one line each:\n%s", got[:min(len(got), 4000)])
	}
}
