package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// overlayDir is where, under the workspace's .airlock, the suite puts the
// overlay's upper and work directories, as airlock does: out of the
// command's sight, and left out of the workspace's hash.
const overlayDir = ".airlock/overlay"

// bigFile is the size of the binary file the overlay tests copy.
const bigFile = 10 << 20

// overlaySpec makes the empty upper and work directories in ws and
// returns a Spec running script on the overlay, and the upper directory.
func (s *suite) overlaySpec(t *testing.T, ws, script string) (sandbox.Spec, string) {
	t.Helper()
	upper, work := filepath.Join(ws, overlayDir, "upper"), filepath.Join(ws, overlayDir, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := s.sh(ws, script)
	spec.WorkspaceWritable = true
	spec.Overlay = &sandbox.Overlay{Upper: upper, Work: work}
	return spec, upper
}

// runOverlay runs spec, which has an Overlay on workspace ws, and checks
// the outcome the backend must give: the overlay, or (Options.NoOverlay)
// a refusal naming it; either way the workspace as it was, by the hash of
// its every entry. It reports whether the command ran.
func (s *suite) runOverlay(t *testing.T, ws string, spec sandbox.Spec) (sandbox.Result, bool) {
	t.Helper()
	before := hashTree(t, ws)
	defer func() {
		if after := hashTree(t, ws); !slices.Equal(before, after) {
			t.Fatalf("the workspace changed under the overlay:\n%s", diffLines(before, after))
		}
	}()
	if s.opts.NoOverlay {
		for _, degraded := range []bool{false, true} {
			spec.AllowDegraded = degraded
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
			_, err := s.newSandbox(t).Run(ctx, spec)
			cancel()
			if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), string(sandbox.LayerOverlay)) {
				t.Fatalf("a backend without the overlay (Options.NoOverlay), AllowDegraded %v: got %v, want ErrUnavailable naming layer %q", degraded, err, sandbox.LayerOverlay)
			}
		}
		return sandbox.Result{}, false
	}
	r := s.run(t, spec)
	if !r.Has(sandbox.LayerOverlay) {
		t.Errorf("layer %q missing from Enforced %q", sandbox.LayerOverlay, r.Enforced)
	}
	return r, true
}

// testOverlayChanges: every kind of change a command makes lands in the
// upper directory, in the form the Overlay's doc promises, and the
// workspace stays byte for byte, mode for mode and time for time as it was.
func (s *suite) testOverlayChanges(t *testing.T) {
	ws := s.workspace(t)
	seed := make([]byte, bigFile)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"inplace.txt":          "first line\n",
		"replace.txt":          "old content\n",
		"delete.txt":           "to delete\n",
		"gone/a.txt":           "a\n",
		"gone/sub/b.txt":       "b\n",
		"again/old.txt":        "old\n",
		"again/sub/older.txt":  "older\n",
		"rename-me.txt":        "renamed content\n",
		"dir-to-move/one.txt":  "one\n",
		"dir-to-move/in/2.txt": "two\n",
		"mode.txt":             "mode content\n",
		"hard-src.txt":         "hard\n",
		"seed.bin":             string(seed),
	}
	writeTree(t, ws, files)
	spec, upper := s.overlaySpec(t, ws, `set -e
cd /workspace
echo new > created.txt
echo more >> inplace.txt
printf 'replaced\n' > replace.tmp
mv replace.tmp replace.txt
rm delete.txt
rm -rf gone
rm -rf again
mkdir again
echo other > again/new.txt
mv rename-me.txt renamed.txt
mv dir-to-move moved-dir
chmod 600 mode.txt
ln -s created.txt link
ln hard-src.txt hard-dst.txt
cat seed.bin > big.bin
ls -A again
echo done`)
	r, ran := s.runOverlay(t, ws, spec)
	if !ran {
		return
	}
	if r.ExitCode != 0 || !strings.HasSuffix(string(r.Stdout), "new.txt\ndone\n") {
		t.Fatalf("the changes did not all go through the overlay (the merged directory again/ must hold only new.txt): %s", describe(r))
	}
	for _, c := range []struct {
		path    string
		content string // for a regular file
		mode    os.FileMode
	}{
		{"created.txt", "new\n", 0},
		{"inplace.txt", "first line\nmore\n", 0},
		{"replace.txt", "replaced\n", 0},
		{"again/new.txt", "other\n", 0},
		{"renamed.txt", "renamed content\n", 0},
		{"moved-dir/one.txt", "one\n", 0},
		{"moved-dir/in/2.txt", "two\n", 0},
		// A chmod copies the data up too: no metacopy.
		{"mode.txt", "mode content\n", 0o600},
		{"hard-src.txt", "hard\n", 0},
		{"big.bin", string(seed), 0},
	} {
		p := filepath.Join(upper, c.path)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("upper %s: want a regular file (%v)", c.path, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != c.content {
			t.Errorf("upper %s holds %d bytes, not the %d the command wrote", c.path, len(b), len(c.content))
		}
		if c.mode != 0 && fi.Mode().Perm() != c.mode {
			t.Errorf("upper %s has mode %v, want %v", c.path, fi.Mode().Perm(), c.mode)
		}
	}
	for _, p := range []string{"delete.txt", "gone", "rename-me.txt", "dir-to-move", "replace.tmp"} {
		if p == "replace.tmp" {
			// Made and renamed by the command: never in the workspace,
			// so no whiteout is needed, and none may be.
			if exists(filepath.Join(upper, p)) {
				t.Errorf("upper has %s, a name that never was in the workspace", p)
			}
			continue
		}
		if !isWhiteout(filepath.Join(upper, p)) {
			t.Errorf("upper %s: want a whiteout (a character device 0/0) for the deleted name", p)
		}
	}
	if !isOpaque(filepath.Join(upper, "again")) {
		t.Errorf("upper again/: the directory deleted and made again must be opaque (overlay.opaque = y)")
	}
	if got, err := os.Readlink(filepath.Join(upper, "link")); err != nil || got != "created.txt" {
		t.Errorf("upper link: want a symbolic link to created.txt, got %q (%v)", got, err)
	}
	a, errA := os.Lstat(filepath.Join(upper, "hard-src.txt"))
	b, errB := os.Lstat(filepath.Join(upper, "hard-dst.txt"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Errorf("upper hard-src.txt and hard-dst.txt: want two names of one inode (%v, %v)", errA, errB)
	}
	for _, p := range []string{"seed.bin", "again/old.txt", "gone/a.txt"} {
		if exists(filepath.Join(upper, p)) {
			t.Errorf("upper holds %s, which the command did not change", p)
		}
	}
	checkNoRedirects(t, upper)
}

// testOverlayDeleteAll: a command deleting the whole workspace deletes it
// only in the overlay.
func (s *suite) testOverlayDeleteAll(t *testing.T) {
	ws := s.workspace(t)
	writeTree(t, ws, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n", "dir/deep/c.txt": "c\n", ".hidden": "h\n", ".git/config": "[core]\n"})
	spec, upper := s.overlaySpec(t, ws, "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; ls -A /workspace; exit 0")
	r, ran := s.runOverlay(t, ws, spec)
	if !ran {
		return
	}
	// What the command still sees: the masked state and the read-only
	// repository, which no command may remove.
	if got := strings.Fields(string(r.Stdout)); !slices.Equal(got, []string{".airlock", ".git"}) {
		t.Errorf("after rm -rf the command sees %q, want only .airlock and .git: %s", got, describe(r))
	}
	for _, p := range []string{"a.txt", "dir", ".hidden", "probe"} {
		if !isWhiteout(filepath.Join(upper, p)) {
			t.Errorf("upper %s: want a whiteout", p)
		}
	}
	for _, p := range []string{".git", ".airlock"} {
		if exists(filepath.Join(upper, p)) {
			t.Errorf("upper holds %s: the command changed what it may not", p)
		}
	}
}

// testOverlayEscape: the command can neither see nor write the upper and
// work directories (under the masked .airlock), nor write .git, and every
// layer of a default run still holds with the overlay.
func (s *suite) testOverlayEscape(t *testing.T) {
	ws := s.workspace(t)
	writeTree(t, ws, map[string]string{".git/config": "[core]\n", "x.txt": "x\n"})
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o777)
	spec, upper := s.overlaySpec(t, ws, `cd /workspace
ls -A .airlock
ls -A `+overlayDir+` `+overlayDir+`/upper `+overlayDir+`/work
echo planted > `+overlayDir+`/upper/planted
echo planted > `+overlayDir+`/work/planted
mkdir -p `+overlayDir+`/upper/d
echo 'echo pwned' > .git/hooks/pre-commit
echo '[core] fsmonitor = x' >> .git/config
mv .git moved
rm -rf .git .airlock
echo control > control.txt
exit 0`)
	work := spec.Overlay.Work
	r, ran := s.runOverlay(t, ws, spec)
	if !ran {
		return
	}
	if b, err := os.ReadFile(filepath.Join(upper, "control.txt")); err != nil || string(b) != "control\n" {
		t.Fatalf("control: the write to control.txt did not land in the upper layer (%v): %s", err, describe(r))
	}
	if strings.Contains(string(r.Stdout), "upper") || strings.Contains(string(r.Stdout), "work") {
		t.Errorf("escape: the command listed the overlay's directories: %s", describe(r))
	}
	for _, d := range []string{upper, work} {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && (e.Name() == "planted" || e.Name() == "d") {
				t.Errorf("escape: the command wrote %s", p)
			}
			return nil
		})
	}
	for _, p := range []string{".git", "moved", ".airlock"} {
		if exists(filepath.Join(upper, p)) {
			t.Errorf("escape: upper holds %s: the command changed .git or .airlock", p)
		}
	}
	plain := s.run(t, s.sh(ws, "true"))
	for _, l := range plain.Enforced {
		if !r.Has(l) {
			t.Errorf("layer %q of a plain run is missing with the overlay: Enforced %q", l, r.Enforced)
		}
	}
}

// testOverlayWall: a command killed at the wall limit leaves the workspace
// as it was, and what it wrote before in the upper layer.
func (s *suite) testOverlayWall(t *testing.T) {
	ws := s.workspace(t)
	writeTree(t, ws, map[string]string{"keep.txt": "keep\n", "dir/f.txt": "f\n"})
	spec, upper := s.overlaySpec(t, ws, "echo changed > /workspace/keep.txt; rm -rf /workspace/dir; echo written > /workspace/before-kill; sleep 600")
	spec.Limits.Wall = 3 * time.Second
	r, ran := s.runOverlay(t, ws, spec)
	if !ran {
		return
	}
	if r.Killed != sandbox.KilledWall {
		t.Errorf("want Killed wall: %s", describe(r))
	}
	if b, err := os.ReadFile(filepath.Join(upper, "before-kill")); err != nil || string(b) != "written\n" {
		t.Errorf("control: the write before the kill is not in the upper layer (%v)", err)
	}
}

// writeTree writes files (path: content) under dir, the directories
// world-writable and the files world-readable, as the sandbox's user may
// be another than the test's.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		for d := filepath.Dir(full); d != dir; d = filepath.Dir(d) {
			if err := os.MkdirAll(d, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(d, 0o777)
		}
		if err := os.WriteFile(full, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(full, 0o666)
	}
}

// hashTree describes every entry of the tree at root, one line each
// (path, type and mode, owner, size, modification time, and the SHA-256
// of a file's content or a link's target), sorted; overlayDir is left
// out, since the overlay writes there.
func hashTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == filepath.FromSlash(overlayDir) {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		h := sha256.New()
		switch {
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			io.WriteString(h, l)
		}
		out = append(out, fmt.Sprintf("%s %v %d:%d %d %d %s", rel, fi.Mode(), st.Uid, st.Gid, fi.Size(), fi.ModTime().UnixNano(), hex.EncodeToString(h.Sum(nil))))
		return nil
	})
	if err != nil {
		t.Fatalf("hashing the workspace: %v", err)
	}
	slices.Sort(out)
	return out
}

// diffLines lists the lines only in a or only in b.
func diffLines(a, b []string) string {
	var buf bytes.Buffer
	for _, l := range a {
		if !slices.Contains(b, l) {
			fmt.Fprintf(&buf, "- %s\n", l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			fmt.Fprintf(&buf, "+ %s\n", l)
		}
	}
	return buf.String()
}

// isWhiteout reports whether p is overlayfs's whiteout: a character
// device 0/0.
func isWhiteout(p string) bool {
	var st syscall.Stat_t
	return syscall.Lstat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFCHR && st.Rdev == 0
}

// opaqueXattrs are the names overlayfs marks an opaque directory with:
// trusted.* in the initial user namespace, user.* with userxattr.
var opaqueXattrs = []string{"trusted.overlay.opaque", "user.overlay.opaque"}

func isOpaque(p string) bool {
	for _, name := range opaqueXattrs {
		buf := make([]byte, 8)
		n, err := syscall.Getxattr(p, name, buf)
		if err == nil && string(buf[:n]) == "y" {
			return true
		}
	}
	return false
}

// checkNoRedirects fails if any entry of the upper layer carries the
// xattrs of redirect_dir or metacopy, which a plain reader would misread.
func checkNoRedirects(t *testing.T, upper string) {
	t.Helper()
	filepath.WalkDir(upper, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		buf := make([]byte, 4096)
		n, err := syscall.Listxattr(p, buf)
		if err != nil {
			return nil
		}
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if strings.HasSuffix(name, "overlay.redirect") || strings.HasSuffix(name, "overlay.metacopy") {
				t.Errorf("upper %s carries %s: the overlay was mounted with redirect_dir or metacopy", p, name)
			}
		}
		return nil
	})
}
