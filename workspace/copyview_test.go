package workspace_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// The copy view's tests run the scripts the overlay tests run, with plain
// bash in the view's copy (a sandbox would mount it as the workspace),
// and check Apply and Rollback against the same ground truth: the script
// run on a plain copy of the workspace.

// newCopyView makes a copy view of f's workspace and checks that the copy
// is the workspace, entry for entry, with each file's modification time.
func newCopyView(t *testing.T, f *fixture) *workspace.Overlay {
	t.Helper()
	o, err := f.w.NewCopyView()
	if err != nil {
		t.Fatal(err)
	}
	if o.Copy == "" || o.Upper != "" || o.Work != "" {
		t.Fatalf("copy view: Copy %q, Upper %q, Work %q; want Copy alone", o.Copy, o.Upper, o.Work)
	}
	sameTree(t, "the copy", tree(t, o.Copy), copiable(tree(t, f.dir)))
	if _, err := os.Lstat(filepath.Join(o.Copy, workspace.StateDir)); err == nil {
		t.Errorf("the copy holds %s", workspace.StateDir)
	}
	for p := range tree(t, f.dir) {
		a, errA := os.Lstat(filepath.Join(f.dir, p))
		b, errB := os.Lstat(filepath.Join(o.Copy, p))
		if errA != nil || errB != nil {
			continue // reported by sameTree
		}
		if a.Mode().IsRegular() && !a.ModTime().Equal(b.ModTime()) {
			t.Errorf("the copy of %s has the time %v, the workspace's %v", p, b.ModTime(), a.ModTime())
		}
	}
	return o
}

// copiable drops from a tree what a copy view does not copy: pipes,
// sockets and devices.
func copiable(m map[string]string) map[string]string {
	out := map[string]string{}
	for p, d := range m {
		if d[0] == '-' || d[0] == 'd' || d[0] == 'L' {
			out[p] = d
		}
	}
	return out
}

// treeSize counts the entries under dir but .airlock and the bytes of
// its regular files, a hard-linked file once: what a copy view copies.
func treeSize(t *testing.T, dir string) (entries, bytes int) {
	t.Helper()
	seen := map[uint64]bool{}
	for p := range tree(t, dir) {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, p), &st); err != nil {
			t.Fatal(err)
		}
		entries++
		if st.Mode&syscall.S_IFMT == syscall.S_IFREG && !seen[st.Ino] {
			seen[st.Ino] = true
			bytes += int(st.Size)
		}
	}
	return entries, bytes
}

func TestCopyViewLimits(t *testing.T) {
	probe := newFixture(t, nil)
	populate(t, probe.dir)
	entries, bytes := treeSize(t, probe.dir)
	for _, tc := range []struct {
		name  string
		opts  workspace.Options
		limit string // named in the message, with its size
	}{
		{"entries", workspace.Options{MaxCopyViewEntries: 5}, "more than 5 entries, the most it copies instead (MaxCopyViewEntries)"},
		{"one entry over", workspace.Options{MaxCopyViewEntries: entries - 1}, "(MaxCopyViewEntries)"},
		{"bytes", workspace.Options{MaxCopyViewBytes: 1 << 20}, "more than 1MiB, the most it copies instead (MaxCopyViewBytes)"},
		{"one byte over", workspace.Options{MaxCopyViewBytes: bytes - 1}, "(MaxCopyViewBytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &tc.opts)
			populate(t, f.dir)
			_, err := f.w.NewCopyView()
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.CodeSandboxUnavailable {
				t.Fatalf("NewCopyView = %v; want sandbox_unavailable", err)
			}
			if !strings.Contains(te.Message, tc.limit) || !strings.Contains(te.Hint, "native") {
				t.Errorf("message %q, hint %q; want the message to say %q and the hint to name the native backend", te.Message, te.Hint, tc.limit)
			}
			// Refused before anything was copied: no overlay was made.
			if _, err := os.Lstat(filepath.Join(f.dir, workspace.OverlaysDir)); err == nil {
				t.Errorf("%s was made for a refused copy view", workspace.OverlaysDir)
			}
		})
	}
	// Exactly at the limits the copy is made.
	f := newFixture(t, &workspace.Options{MaxCopyViewEntries: entries, MaxCopyViewBytes: bytes})
	populate(t, f.dir)
	o := newCopyView(t, f)
	if err := o.Discard(); err != nil {
		t.Fatal(err)
	}
	if got := workspace.DefaultMaxCopyViewBytes; got != 256<<20 {
		t.Errorf("DefaultMaxCopyViewBytes = %d, want 256MiB", got)
	}
	if got := workspace.DefaultMaxCopyViewEntries; got != 50_000 {
		t.Errorf("DefaultMaxCopyViewEntries = %d, want 50,000", got)
	}
}

func TestCopyViewHardLinks(t *testing.T) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	before := tree(t, f.dir)
	const script = `echo more >> h1; echo n > n1; ln n1 n2; ln h2 d/h3; mkdir g; ln a.txt g/a`
	truth := copyTree(t, f.dir)
	runPlain(t, truth, script)
	want := tree(t, truth)

	o := newCopyView(t, f)
	var s1, s2 syscall.Stat_t
	if err := errors.Join(syscall.Lstat(filepath.Join(o.Copy, "h1"), &s1), syscall.Lstat(filepath.Join(o.Copy, "h2"), &s2)); err != nil {
		t.Fatal(err)
	}
	if s1.Ino != s2.Ino {
		t.Error("h1 and h2, hard links in the workspace, are two files in the copy")
	}
	runPlain(t, o.Copy, script)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply("s5", set); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Apply", tree(t, f.dir), want)
	if _, err := f.w.Rollback("s5"); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Rollback", tree(t, f.dir), before)
}

func TestCopyViewLinksAndSpecialFiles(t *testing.T) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	runPlain(t, f.dir, fmt.Sprintf(`ln -s %s out; ln -s %s/secret.txt sec; ln -s ../outside rel; mkfifo pipe`, f.outside, f.outside))
	o := newCopyView(t, f)
	for link, target := range map[string]string{"out": f.outside, "sec": f.outside + "/secret.txt", "rel": "../outside"} {
		fi, err := os.Lstat(filepath.Join(o.Copy, link))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s in the copy: %v, %v; want a link", link, fi, err)
			continue
		}
		if got, _ := os.Readlink(filepath.Join(o.Copy, link)); got != target {
			t.Errorf("%s in the copy -> %s, want -> %s", link, got, target)
		}
	}
	// Nothing outside was copied: no file of the copy holds the secret.
	err := filepath.WalkDir(o.Copy, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), secret) {
			t.Errorf("%s in the copy holds the secret from outside", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(o.Copy, "pipe")); err == nil {
		t.Error("the workspace's pipe was copied")
	}
	runPlain(t, o.Copy, `echo c > c.txt; mkfifo made; rm sec; ln -s /etc/passwd pw`)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(set.Skipped, []string{"made"}) {
		t.Errorf("skipped %v, want [made]", set.Skipped)
	}
	var paths []string
	for _, c := range set.Changes {
		paths = append(paths, c.Kind+" "+c.Path)
	}
	if want := []string{"added c.txt", "added pw", "deleted sec"}; !slices.Equal(paths, want) {
		t.Errorf("changes %v, want %v (the workspace's pipe, never copied, is not deleted)", paths, want)
	}
	if _, err := o.Apply("s6", set); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(f.path("pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the workspace's pipe after Apply: %v, %v", fi, err)
	}
	if _, err := os.Lstat(f.path("made")); err == nil {
		t.Error("the pipe the command made was applied")
	}
	f.checkOutside(t)
}

// TestCopyViewConcurrentEdits changes the workspace after the copy was
// made (a person editing while the command runs, or while its changes
// wait for approval): only what the command changed is applied, so the
// person's edits stay.
func TestCopyViewConcurrentEdits(t *testing.T) {
	f := newFixture(t, nil)
	populate(t, f.dir)
	o := newCopyView(t, f)
	runPlain(t, f.dir, `echo theirs > a.txt; echo added > theirs.txt; rm keep/k; chmod 600 b.txt; mkdir theirs; echo t > theirs/t; rm -r d/sub`)
	edited := tree(t, f.dir)
	const script = `echo cmd > c.txt; echo more >> d/x; rm h2`
	truth := copyTree(t, f.dir)
	runPlain(t, truth, script)
	want := tree(t, truth)

	runPlain(t, o.Copy, script)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range set.Changes {
		paths = append(paths, c.Kind+" "+c.Path)
	}
	if want := []string{"added c.txt", "modified d/x", "deleted h2"}; !slices.Equal(paths, want) {
		t.Errorf("changes %v, want %v", paths, want)
	}
	if _, err := o.Apply("s7", set); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Apply", tree(t, f.dir), want)
	if _, err := f.w.Rollback("s7"); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after Rollback", tree(t, f.dir), edited)
}

func TestCopyViewHoldAndRecover(t *testing.T) {
	f := newFixture(t, nil)
	_, want := everyKindTruth(t, f)

	o := newCopyView(t, f)
	runPlain(t, o.Copy, everyKind)
	if err := o.Hold("appr-1", []byte("the result")); err != nil {
		t.Fatal(err)
	}
	// An abandoned copy view, which no process holds: Recover discards
	// it and leaves the held one.
	gone := newCopyView(t, f)
	gone.Close()
	if _, err := f.w.Recover(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(gone.Copy); err == nil {
		t.Error("Recover left an abandoned copy view")
	}
	h, result, err := f.w.HeldOverlay("appr-1")
	if err != nil {
		t.Fatal(err)
	}
	if string(result) != "the result" || h.Copy == "" || h.Upper != "" {
		t.Errorf("HeldOverlay = Copy %q, Upper %q, result %q", h.Copy, h.Upper, result)
	}
	set, err := h.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Apply("s8", set); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after applying the held changes", tree(t, f.dir), want)
	if ents, _ := os.ReadDir(filepath.Join(f.dir, workspace.OverlaysDir)); len(ents) > 0 {
		t.Errorf("left in %s: %v", workspace.OverlaysDir, ents)
	}
}

// BenchmarkCopyView makes a copy view of a workspace of 1,000 files,
// 20MiB in all, edits one file in it and reads the changes.
func BenchmarkCopyView(b *testing.B) {
	dir := b.TempDir()
	w, err := workspace.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	chunk := strings.Repeat("x", 20<<20/1000)
	for i := range 1000 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i/50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", i)), []byte(chunk), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(20 << 20)
	var copying, reading, discarding time.Duration
	for b.Loop() {
		start := time.Now()
		o, err := w.NewCopyView()
		if err != nil {
			b.Fatal(err)
		}
		copied := time.Now()
		if err := os.WriteFile(filepath.Join(o.Copy, "d07", "f350.txt"), []byte("edited\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		edited := time.Now()
		set, err := o.Changes()
		if err != nil {
			b.Fatal(err)
		}
		read := time.Now()
		if len(set.Changes) != 1 {
			b.Fatalf("%d changes, want 1", len(set.Changes))
		}
		if err := o.Discard(); err != nil {
			b.Fatal(err)
		}
		copying += copied.Sub(start)
		reading += read.Sub(edited)
		discarding += time.Since(read)
	}
	b.ReportMetric(float64(copying.Milliseconds())/float64(b.N), "copy-ms/op")
	b.ReportMetric(float64(reading.Microseconds())/1000/float64(b.N), "changes-ms/op")
	b.ReportMetric(float64(discarding.Milliseconds())/float64(b.N), "discard-ms/op")
}
