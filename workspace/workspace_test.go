package workspace_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

const secret = "SECRET outside the workspace"

// fixture is a workspace directory next to an "outside" directory that
// holds a secret no call may read and a canary no call may change.
type fixture struct {
	w       *workspace.Workspace
	dir     string // the workspace
	outside string
}

func newFixture(t *testing.T, opts *workspace.Options) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.dir, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(f.outside, "secret.txt"), secret)
	writeFile(t, filepath.Join(f.outside, "canary.txt"), "canary")
	w, err := workspace.Open(f.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	f.w = w
	return f
}

// checkOutside fails if anything outside the workspace changed.
func (f *fixture) checkOutside(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"canary.txt", "secret.txt"}; !slices.Equal(names, want) {
		t.Errorf("outside holds %v, want %v", names, want)
	}
	for name, want := range map[string]string{"canary.txt": "canary", "secret.txt": secret} {
		if got := readFile(t, filepath.Join(f.outside, name)); got != want {
			t.Errorf("outside/%s = %q, want %q", name, got, want)
		}
	}
}

// path returns the absolute path of a workspace path.
func (f *fixture) path(p string) string { return filepath.Join(f.dir, filepath.FromSlash(p)) }

func (f *fixture) write(t *testing.T, p, content string) {
	t.Helper()
	full := f.path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, full, content)
}

func (f *fixture) symlink(t *testing.T, target, p string) {
	t.Helper()
	full := f.path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeOf returns the tool code of err, "" for nil, or "go error" for an
// error that is not a *tool.Error.
func codeOf(err error) tool.Code {
	if err == nil {
		return ""
	}
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return "go error: " + tool.Code(err.Error())
}

// checkErr checks that err carries code (none when code is "") and a hint.
func checkErr(t *testing.T, what string, err error, code tool.Code) {
	t.Helper()
	if got := codeOf(err); got != code {
		t.Errorf("%s: error %v, want code %q", what, err, code)
		return
	}
	var te *tool.Error
	if errors.As(err, &te) && (te.Hint == "" || te.Message == "") {
		t.Errorf("%s: error %+v lacks a message or hint", what, te)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeFile(t, file, "x")
	for _, c := range []struct {
		name string
		dir  string
		opts *workspace.Options
	}{
		{"missing", filepath.Join(dir, "missing"), nil},
		{"file", file, nil},
		{"negative option", dir, &workspace.Options{MaxReadBytes: -1}},
	} {
		if w, err := workspace.Open(c.dir, c.opts); err == nil {
			w.Close()
			t.Errorf("%s: Open succeeded, want an error", c.name)
		}
	}
	w, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.Dir(); got != dir {
		t.Errorf("Dir() = %q, want %q", got, dir)
	}
	var zero workspace.Workspace
	if _, err := zero.Resolve("x"); err == nil {
		t.Error("a zero Workspace resolved a path")
	}
}

func TestResolve(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "top.txt", "top")
	f.write(t, "a/b/c.txt", "c")
	f.write(t, ".airlock/snapshots/s/00000001.snap", "state")
	f.symlink(t, "top.txt", "lnk_file")
	f.symlink(t, "a/b", "lnk_dir")
	f.symlink(t, "../top.txt", "a/up")
	f.symlink(t, "../outside/secret.txt", "esc_rel_file")
	f.symlink(t, "../outside", "esc_rel_dir")
	f.symlink(t, "../../../outside", "a/b/esc_deep")
	f.symlink(t, filepath.Join(f.outside, "secret.txt"), "esc_abs_file")
	f.symlink(t, f.outside, "esc_abs_dir")
	f.symlink(t, filepath.Join(f.dir, "top.txt"), "abs_inside")
	f.symlink(t, "c2", "c1")
	f.symlink(t, "c3", "c2")
	f.symlink(t, "lnk_dir/c.txt", "c3")
	f.symlink(t, "e2", "e1")
	f.symlink(t, "esc_rel_dir", "e2")
	f.symlink(t, "loop2", "loop1")
	f.symlink(t, "loop1", "loop2")
	f.symlink(t, "self", "self")
	f.symlink(t, ".airlock", "st")
	f.symlink(t, "a/../.airlock/snapshots", "st2")
	f.symlink(t, "../.AIRLOCK", "a/st3")
	f.symlink(t, "new/file.txt", "dangle")
	long := strings.Repeat("d/", workspace.DefaultMaxPathLength/2+1)

	for _, c := range []struct {
		in   string
		want string    // canonical path, when code is ""
		code tool.Code // refusal
	}{
		{in: ".", want: "."},
		{in: "", want: "."},
		{in: "./", want: "."},
		{in: "top.txt", want: "top.txt"},
		{in: "./a//b/", want: "a/b"},
		{in: "a/b/../b/c.txt", want: "a/b/c.txt"},
		{in: "a/..", want: "."},
		{in: "lnk_file", want: "top.txt"},
		{in: "lnk_dir/c.txt", want: "a/b/c.txt"},
		{in: "lnk_dir/../up", want: "top.txt"}, // .. after a link applies to its target: a/up
		{in: "a/up", want: "top.txt"},
		{in: "c1", want: "a/b/c.txt"},
		{in: "dangle", want: "new/file.txt"},
		{in: "new/dir/file.txt", want: "new/dir/file.txt"},
		{in: "new/../top.txt", want: "top.txt"},
		{in: "new/../lnk_file", want: "top.txt"},
		{in: "top.txt/x", want: "top.txt/x"}, // resolves; using it fails
		// Taken literally: these name files inside the workspace.
		{in: `a\b`, want: `a\b`},
		{in: `..\x`, want: `..\x`},
		{in: "%2e%2e/x", want: "%2e%2e/x"},
		{in: "%2e%2e%2fx", want: "%2e%2e%2fx"},
		{in: "．．/x", want: "．．/x"},
		{in: "a/b/%2e%2e", want: "a/b/%2e%2e"},
		{in: "..x/y", want: "..x/y"},
		{in: "...", want: "..."},
		{in: ".airlockx", want: ".airlockx"},
		{in: "a/.airlock", want: "a/.airlock"}, // only the root's StateDir is state

		{in: "..", code: tool.CodePathOutside},
		{in: "../x", code: tool.CodePathOutside},
		{in: "a/../../x", code: tool.CodePathOutside},
		{in: "a/b/../../..", code: tool.CodePathOutside},
		{in: "new/../../x", code: tool.CodePathOutside},
		{in: "/etc/passwd", code: tool.CodePathOutside},
		{in: "/", code: tool.CodePathOutside},
		{in: f.path("top.txt"), code: tool.CodePathOutside},
		{in: "a/\x00b", code: tool.CodePathOutside},
		{in: "top.txt\x00", code: tool.CodePathOutside},
		{in: long, code: tool.CodePathOutside},
		{in: "esc_rel_file", code: tool.CodePathOutside},
		{in: "esc_rel_dir", code: tool.CodePathOutside},
		{in: "esc_rel_dir/secret.txt", code: tool.CodePathOutside},
		{in: "a/b/esc_deep/secret.txt", code: tool.CodePathOutside},
		{in: "lnk_dir/esc_deep/canary.txt", code: tool.CodePathOutside},
		{in: "esc_abs_file", code: tool.CodePathOutside},
		{in: "esc_abs_dir/secret.txt", code: tool.CodePathOutside},
		{in: "abs_inside", code: tool.CodePathOutside}, // absolute targets are refused even inside
		{in: "e1/secret.txt", code: tool.CodePathOutside},
		{in: "loop1", code: tool.CodePathOutside},
		{in: "self/x", code: tool.CodePathOutside},
		{in: ".airlock", code: tool.CodePathOutside},
		{in: ".airlock/snapshots/s/00000001.snap", code: tool.CodePathOutside},
		{in: "./.airlock", code: tool.CodePathOutside},
		{in: "a/../.airlock/x", code: tool.CodePathOutside},
		{in: ".AIRLOCK/x", code: tool.CodePathOutside},
		{in: "st", code: tool.CodePathOutside},
		{in: "st/snapshots", code: tool.CodePathOutside},
		{in: "st2/s", code: tool.CodePathOutside},
		{in: "a/st3", code: tool.CodePathOutside},
	} {
		got, err := f.w.Resolve(c.in)
		if c.code != "" {
			checkErr(t, fmt.Sprintf("Resolve(%q)", c.in), err, c.code)
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestLongPaths(t *testing.T) {
	// Past MaxPathLength, and past PATH_MAX (4096), refused before any
	// lookup by default.
	f := newFixture(t, nil)
	for _, n := range []int{workspace.DefaultMaxPathLength + 1, 5000, 1 << 20} {
		p := strings.Repeat("x", n)
		_, err := f.w.Resolve(p)
		checkErr(t, fmt.Sprintf("Resolve of %d bytes", n), err, tool.CodePathOutside)
		_, err = f.w.WriteFile("s", p, "x")
		checkErr(t, fmt.Sprintf("WriteFile of %d bytes", n), err, tool.CodePathOutside)
	}

	// A workspace that allows longer paths handles one over PATH_MAX one
	// directory at a time, inside the workspace.
	g := newFixture(t, &workspace.Options{MaxPathLength: 8192})
	comp := strings.Repeat("n", 200)
	var parts []string
	for range 25 {
		parts = append(parts, comp)
	}
	deep := strings.Join(parts, "/") + "/f.txt"
	if len(deep) <= 4096 {
		t.Fatalf("test path is only %d bytes", len(deep))
	}
	if _, err := g.w.WriteFile("s", deep, "deep"); err != nil {
		t.Fatalf("WriteFile of a %d-byte path: %v", len(deep), err)
	}
	res, err := g.w.ReadFile(deep, 0, 0)
	if err != nil || res.Content != "deep" {
		t.Errorf("ReadFile of a %d-byte path = %q, %v", len(deep), res.Content, err)
	}
	if _, err := g.w.Rollback("s"); err != nil {
		t.Errorf("Rollback: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.dir, comp)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Rollback the created directories remain: %v", err)
	}
	// One name longer than the file system allows (NAME_MAX, 255).
	_, err = g.w.WriteFile("s", strings.Repeat("y", 300), "x")
	checkErr(t, "WriteFile of a 300-byte name", err, tool.CodePathOutside)
	_, err = g.w.ReadFile(strings.Repeat("y", 300), 0, 0)
	checkErr(t, "ReadFile of a 300-byte name", err, tool.CodePathOutside)
	g.checkOutside(t)
}

func TestLiteralNames(t *testing.T) {
	f := newFixture(t, nil)
	for _, name := range []string{`a\b`, `..\..\x`, "%2e%2e/x", "%2e%2e%2fy", "．．/x", "．．／x", "e\u0301", "\u00e9"} {
		res, err := f.w.WriteFile("s", name, "content of "+name)
		if err != nil {
			t.Errorf("WriteFile(%q): %v", name, err)
			continue
		}
		if res.Path != name {
			t.Errorf("WriteFile(%q) wrote %q", name, res.Path)
		}
		// The file is at exactly that name inside the workspace.
		if got := readFile(t, f.path(name)); got != "content of "+name {
			t.Errorf("file %q holds %q", name, got)
		}
		r, err := f.w.ReadFile(name, 0, 0)
		if err != nil || r.Content != "content of "+name {
			t.Errorf("ReadFile(%q) = %q, %v", name, r.Content, err)
		}
	}
	// Two spellings of é are two files: nothing is normalized.
	if a, b := readFile(t, f.path("e\u0301")), readFile(t, f.path("\u00e9")); a == b {
		t.Error("the decomposed and composed é name the same file")
	}
	f.checkOutside(t)
}

func TestStateDirOutOfBounds(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, ".airlock/audit.jsonl", "state")
	f.write(t, "ok.txt", "state? no")
	f.symlink(t, ".airlock", "st")
	f.symlink(t, ".airlock/audit.jsonl", "st_file")
	for _, p := range []string{".airlock/audit.jsonl", "st/audit.jsonl", "st_file", ".Airlock/audit.jsonl"} {
		_, err := f.w.ReadFile(p, 0, 0)
		checkErr(t, "ReadFile("+p+")", err, tool.CodePathOutside)
		_, err = f.w.WriteFile("s", p, "overwritten")
		checkErr(t, "WriteFile("+p+")", err, tool.CodePathOutside)
		_, err = f.w.EditFile("s", p, "state", "x", false)
		checkErr(t, "EditFile("+p+")", err, tool.CodePathOutside)
		_, _, err = f.w.Grep("state", p)
		checkErr(t, "Grep(..., "+p+")", err, tool.CodePathOutside)
	}
	for _, p := range []string{".airlock", "st"} {
		_, _, err := f.w.ListDir(p)
		checkErr(t, "ListDir("+p+")", err, tool.CodePathOutside)
	}
	_, err := f.w.WriteFile("s", ".airlock/new.txt", "x")
	checkErr(t, "WriteFile(.airlock/new.txt)", err, tool.CodePathOutside)
	if got := readFile(t, f.path(".airlock/audit.jsonl")); got != "state" {
		t.Errorf("the state file was changed to %q", got)
	}
	if _, err := os.Stat(f.path(".airlock/new.txt")); err == nil {
		t.Error("a file was created in .airlock")
	}

	// Hidden from listings, globs and greps.
	ents, _, err := f.w.ListDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name == ".airlock" {
			t.Error("ListDir(.) shows .airlock")
		}
	}
	for _, pattern := range []string{"**", "*", ".*", "**/*.jsonl", "st/*", "{.airlock,st}/*", "*/audit.jsonl"} {
		got, _, err := f.w.Glob(pattern)
		if err != nil {
			t.Errorf("Glob(%q): %v", pattern, err)
		}
		for _, p := range got {
			if strings.Contains(p, "audit") {
				t.Errorf("Glob(%q) returned %q", pattern, p)
			}
		}
	}
	_, _, err = f.w.Glob(".airlock/**")
	checkErr(t, "Glob(.airlock/**)", err, tool.CodePathOutside)
	ms, _, err := f.w.Grep("state", ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Path != "ok.txt" {
		t.Errorf("Grep(state, .) = %v, want only ok.txt", ms)
	}
}

func TestSymlinkEscapesRefusedAtUse(t *testing.T) {
	f := newFixture(t, nil)
	f.symlink(t, "../outside/secret.txt", "esc_file")
	f.symlink(t, "../outside", "esc_dir")
	f.symlink(t, f.outside, "esc_abs")
	f.symlink(t, "l2", "l1")
	f.symlink(t, "l1", "l2")
	for _, p := range []string{"esc_file", "esc_dir/secret.txt", "esc_abs/secret.txt", "esc_dir/canary.txt", "l1", "esc_dir/new.txt"} {
		r, err := f.w.ReadFile(p, 0, 0)
		checkErr(t, "ReadFile("+p+")", err, tool.CodePathOutside)
		if strings.Contains(r.Content, "SECRET") {
			t.Errorf("ReadFile(%q) read the secret", p)
		}
		_, err = f.w.WriteFile("s", p, "pwned")
		checkErr(t, "WriteFile("+p+")", err, tool.CodePathOutside)
		_, err = f.w.EditFile("s", p, "canary", "pwned", false)
		checkErr(t, "EditFile("+p+")", err, tool.CodePathOutside)
		_, _, err = f.w.Grep("SECRET", p)
		checkErr(t, "Grep("+p+")", err, tool.CodePathOutside)
	}
	for _, p := range []string{"esc_dir", "esc_abs"} {
		_, _, err := f.w.ListDir(p)
		checkErr(t, "ListDir("+p+")", err, tool.CodePathOutside)
	}
	// A walk does not follow links; a glob does not reach through them.
	ms, _, err := f.w.Grep("SECRET|canary", ".")
	if err != nil || len(ms) != 0 {
		t.Errorf("Grep over the workspace = %v, %v; want no matches", ms, err)
	}
	got, _, err := f.w.Glob("**/*.txt")
	if err != nil || len(got) != 0 {
		t.Errorf("Glob(**/*.txt) = %v, %v; want nothing", got, err)
	}
	got, _, err = f.w.Glob("esc_dir/*")
	if err != nil || len(got) != 0 {
		t.Errorf("Glob(esc_dir/*) = %v, %v; want nothing", got, err)
	}
	if _, err := f.w.Rollback("s"); err != nil {
		t.Error(err)
	}
	f.checkOutside(t)
}

// TestSymlinkSwap races a goroutine that keeps replacing a directory with
// a link to outside (or into .airlock) against reads and writes through
// that directory. Whatever interleaving happens, nothing outside the
// workspace and nothing in .airlock may be read or written.
func TestSymlinkSwap(t *testing.T) {
	const iterations = 1000
	for _, target := range []string{"outside-abs", "outside-rel", "state"} {
		t.Run(target, func(t *testing.T) {
			f := newFixture(t, nil)
			f.write(t, ".airlock/secret.txt", secret)
			link := map[string]string{
				"outside-abs": f.outside,
				"outside-rel": "../outside",
				"state":       ".airlock",
			}[target]
			d := f.path("d")
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					os.RemoveAll(d)
					if i%2 == 0 {
						os.Mkdir(d, 0o755)
						os.WriteFile(filepath.Join(d, "secret.txt"), []byte("inside"), 0o644)
						os.WriteFile(filepath.Join(d, "canary.txt"), []byte("inside canary"), 0o644)
					} else {
						os.Symlink(link, d)
					}
				}
			}()
			var leaks []string
			for i := range iterations {
				r, err := f.w.ReadFile("d/secret.txt", 0, 0)
				if strings.Contains(r.Content, "SECRET") {
					leaks = append(leaks, fmt.Sprintf("read %q", r.Content))
				}
				if err := codeOf(err); strings.HasPrefix(string(err), "go error") {
					t.Errorf("ReadFile: unexpected fault %s", err)
				}
				ms, _, _ := f.w.Grep("SECRET", "d")
				if len(ms) > 0 {
					leaks = append(leaks, fmt.Sprintf("grep found %v", ms))
				}
				ents, _, _ := f.w.ListDir("d")
				for _, e := range ents {
					if e.Name == "audit" {
						leaks = append(leaks, "listed state")
					}
				}
				f.w.WriteFile("s", "d/canary.txt", fmt.Sprintf("written %d", i))
				f.w.WriteFile("s", fmt.Sprintf("d/new%d.txt", i), "new")
				f.w.EditFile("s", "d/secret.txt", "SECRET", "pwned", false)
			}
			close(stop)
			wg.Wait()
			if len(leaks) > 0 {
				t.Errorf("%d leaks, first: %s", len(leaks), leaks[0])
			}
			f.checkOutside(t)
			if got := readFile(t, f.path(".airlock/secret.txt")); got != secret {
				t.Errorf(".airlock/secret.txt = %q", got)
			}
			ents, err := os.ReadDir(f.path(".airlock"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != "secret.txt" && e.Name() != "snapshots" {
					t.Errorf(".airlock gained %q", e.Name())
				}
			}
			// Rolling back never writes outside either.
			os.RemoveAll(d)
			if _, err := f.w.Rollback("s"); err != nil {
				t.Errorf("Rollback: %v", err)
			}
			f.checkOutside(t)
		})
	}
}

func TestReadFile(t *testing.T) {
	f := newFixture(t, &workspace.Options{MaxReadBytes: 20})
	ten := "l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n" // 30 bytes
	f.write(t, "ten.txt", ten)
	f.write(t, "short.txt", "a\nb\nc") // no final newline
	f.write(t, "crlf.txt", "a\r\nb\r\n")
	f.write(t, "long.txt", strings.Repeat("é", 15)+"\nnext\n") // a 30-byte first line
	f.write(t, "empty.txt", "")
	for _, c := range []struct {
		p             string
		offset, limit int
		content       string
		lines, total  int
		truncated     bool
	}{
		{"short.txt", 0, 0, "a\nb\nc", 3, 3, false},
		{"short.txt", 2, 0, "c", 1, 3, false},
		{"short.txt", 1, 1, "b\n", 1, 3, false},
		{"short.txt", 3, 0, "", 0, 3, false},
		{"short.txt", 100, 5, "", 0, 3, false},
		{"ten.txt", 0, 0, "l0\nl1\nl2\nl3\nl4\nl5\n", 6, 10, true}, // 18 of 20 bytes: whole lines only
		{"ten.txt", 2, 3, "l2\nl3\nl4\n", 3, 10, false},
		{"ten.txt", 8, 0, "l8\nl9\n", 2, 10, false},
		{"ten.txt", 4, 6, "l4\nl5\nl6\nl7\nl8\nl9\n", 6, 10, false}, // exactly 18 bytes
		{"crlf.txt", 1, 1, "b\r\n", 1, 2, false},
		{"long.txt", 0, 0, strings.Repeat("é", 10), 1, 2, true}, // cut at 20 bytes, on a character boundary
		{"long.txt", 1, 0, "next\n", 1, 2, false},
		{"empty.txt", 0, 0, "", 0, 0, false},
	} {
		r, err := f.w.ReadFile(c.p, c.offset, c.limit)
		if err != nil {
			t.Errorf("ReadFile(%s, %d, %d): %v", c.p, c.offset, c.limit, err)
			continue
		}
		whole := readFile(t, f.path(c.p))
		want := workspace.ReadResult{Path: c.p, Content: c.content, Lines: c.lines, TotalLines: c.total,
			TotalBytes: len(whole), Truncated: c.truncated, SHA256: sha(whole)}
		if r != want {
			t.Errorf("ReadFile(%s, %d, %d) =\n %+v\nwant\n %+v", c.p, c.offset, c.limit, r, want)
		}
	}
	// A middle cut: 4 whole lines of 6 bytes fit 20, the fifth does not.
	g := newFixture(t, &workspace.Options{MaxReadBytes: 20})
	g.write(t, "six.txt", "aaaaa\nbbbbb\nccccc\nddddd\n")
	r, err := g.w.ReadFile("six.txt", 0, 0)
	if err != nil || r.Content != "aaaaa\nbbbbb\nccccc\n" || r.Lines != 3 || !r.Truncated {
		t.Errorf("ReadFile(six.txt) = %+v, %v", r, err)
	}

	f.write(t, "dir/x", "x")
	if err := syscall.Mkfifo(f.path("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p             string
		offset, limit int
		code          tool.Code
	}{
		{"missing.txt", 0, 0, tool.CodeNotFound},
		{"missing/x.txt", 0, 0, tool.CodeNotFound},
		{"dir", 0, 0, tool.CodeNotAFile},
		{".", 0, 0, tool.CodeNotAFile},
		{"fifo", 0, 0, tool.CodeNotAFile},
		{"ten.txt/x", 0, 0, tool.CodeNotADirectory},
		{"ten.txt", -1, 0, tool.CodeInvalidCall},
		{"ten.txt", 0, -1, tool.CodeInvalidCall},
	} {
		_, err := f.w.ReadFile(c.p, c.offset, c.limit)
		checkErr(t, fmt.Sprintf("ReadFile(%s, %d, %d)", c.p, c.offset, c.limit), err, c.code)
	}
}

func TestListDir(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "b.txt", "bbb")
	f.write(t, "a/x.txt", "x")
	f.write(t, ".airlock/audit.jsonl", "state")
	f.write(t, ".hidden", "h")
	f.symlink(t, "a", "link_dir")
	f.symlink(t, "b.txt", "link_file")
	f.symlink(t, "../outside", "link_out")
	got, truncated, err := f.w.ListDir(".")
	if err != nil {
		t.Fatal(err)
	}
	want := []workspace.Entry{
		{Name: ".hidden", Size: 1},
		{Name: "a", Dir: true},
		{Name: "b.txt", Size: 3},
		{Name: "link_dir", Dir: true, Symlink: true},
		{Name: "link_file", Size: 3, Symlink: true},
		{Name: "link_out", Symlink: true},
	}
	if !slices.Equal(got, want) || truncated {
		t.Errorf("ListDir(.) = %+v, %v\nwant %+v", got, truncated, want)
	}
	got, _, err = f.w.ListDir("link_dir")
	if err != nil || !slices.Equal(got, []workspace.Entry{{Name: "x.txt", Size: 1}}) {
		t.Errorf("ListDir(link_dir) = %+v, %v", got, err)
	}

	g := newFixture(t, &workspace.Options{MaxListEntries: 2})
	for _, n := range []string{"d", "c", "b", "a"} {
		g.write(t, n, n)
	}
	got, truncated, err = g.w.ListDir(".")
	if err != nil || !truncated || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("ListDir over MaxListEntries = %+v, %v, %v", got, truncated, err)
	}
	h := newFixture(t, &workspace.Options{MaxWalkEntries: 3})
	for _, n := range []string{"d", "c", "b", "a"} {
		h.write(t, n, n)
	}
	if got, truncated, err := h.w.ListDir("."); err != nil || !truncated || len(got) != 3 {
		t.Errorf("ListDir over MaxWalkEntries = %+v, %v, %v", got, truncated, err)
	}

	for _, c := range []struct {
		p    string
		code tool.Code
	}{
		{"b.txt", tool.CodeNotADirectory},
		{"missing", tool.CodeNotFound},
		{"link_out", tool.CodePathOutside},
		{"..", tool.CodePathOutside},
	} {
		_, _, err := f.w.ListDir(c.p)
		checkErr(t, "ListDir("+c.p+")", err, c.code)
	}
}

func TestGlob(t *testing.T) {
	f := newFixture(t, nil)
	for _, p := range []string{"main.go", "a/a.go", "a/b/b.go", "a/b/c/c.go", "a/readme.md", "x/y.txt", "[lit].txt"} {
		f.write(t, p, "package x")
	}
	f.symlink(t, "a", "link_a")
	f.symlink(t, ".", "loop")
	f.symlink(t, "../outside", "out")
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"*.go", []string{"main.go"}},
		{"**/*.go", []string{"a/a.go", "a/b/b.go", "a/b/c/c.go", "main.go"}},
		{"a/**/*.go", []string{"a/a.go", "a/b/b.go", "a/b/c/c.go"}},
		{"./a/*.md", []string{"a/readme.md"}},
		{"{a,x}/*.{md,txt}", []string{"a/readme.md", "x/y.txt"}},
		{`\[lit\].txt`, []string{"[lit].txt"}},
		{"link_a/*.go", []string{"link_a/a.go"}}, // a named link inside is followed
		{"out/*", nil},
		{"loop/loop/*.go", []string{"loop/loop/main.go"}},
		{"nothing/**", nil},
		{"{..,a}/*.go", []string{"a/a.go"}},            // the ".." alternative names nothing
		{"{/etc,x}/*", []string{"x/y.txt"}},            // nor does the absolute one
		{"{out,link_a}/*.go", []string{"link_a/a.go"}}, // nor the link leading outside
	} {
		got, truncated, err := f.w.Glob(c.pattern)
		if err != nil || truncated || !slices.Equal(got, c.want) {
			t.Errorf("Glob(%q) = %q, %v, %v; want %q", c.pattern, got, truncated, err, c.want)
		}
	}
	for _, c := range []struct {
		pattern string
		code    tool.Code
	}{
		{"/etc/*", tool.CodePathOutside},
		{"../*", tool.CodePathOutside},
		{"a/../../*", tool.CodePathOutside},
		{"**/../*", tool.CodePathOutside},
		{".airlock/*", tool.CodePathOutside},
		{"[", tool.CodeInvalidPattern},
		{"a/{b", tool.CodeInvalidPattern},
		{"", tool.CodeInvalidPattern},
		{"a\x00", tool.CodeInvalidPattern},
		{strings.Repeat("*", workspace.MaxPatternLength+1), tool.CodeInvalidPattern},
	} {
		_, _, err := f.w.Glob(c.pattern)
		checkErr(t, fmt.Sprintf("Glob(%q)", c.pattern), err, c.code)
	}

	g := newFixture(t, &workspace.Options{MaxGlobResults: 3})
	for i := range 10 {
		g.write(t, fmt.Sprintf("f%d.txt", i), "x")
	}
	got, truncated, err := g.w.Glob("*.txt")
	if err != nil || !truncated || !slices.Equal(got, []string{"f0.txt", "f1.txt", "f2.txt"}) {
		t.Errorf("Glob over MaxGlobResults = %q, %v, %v", got, truncated, err)
	}
	h := newFixture(t, &workspace.Options{MaxWalkEntries: 5})
	for i := range 4 {
		h.write(t, fmt.Sprintf("d%d/f.txt", i), "x")
	}
	got, truncated, err = h.w.Glob("**/*.txt")
	if err != nil || !truncated || len(got) >= 4 {
		t.Errorf("Glob over MaxWalkEntries = %q, %v, %v", got, truncated, err)
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t, &workspace.Options{MaxGrepFileBytes: 1000})
	f.write(t, "a.txt", "one needle\ntwo\nthree needle\r\n")
	f.write(t, "sub/b.txt", "needle in b\n")
	f.write(t, "sub/deeper/c.txt", "no\nno\nneedle")
	f.write(t, "bin.dat", "needle\x00binary")
	f.write(t, "big.txt", "needle\n"+strings.Repeat("x", 1000))
	f.write(t, "wide.txt", "needle"+strings.Repeat("é", 400)+"\n")
	f.symlink(t, "sub", "link_sub")
	got, truncated, err := f.w.Grep("needle", ".")
	if err != nil {
		t.Fatal(err)
	}
	wide := "needle" + strings.Repeat("é", (workspace.MaxGrepLineBytes-6)/2)
	want := []workspace.Match{
		{Path: "a.txt", Line: 1, Text: "one needle"},
		{Path: "a.txt", Line: 3, Text: "three needle"},
		{Path: "sub/b.txt", Line: 1, Text: "needle in b"},
		{Path: "sub/deeper/c.txt", Line: 3, Text: "needle"},
		{Path: "wide.txt", Line: 1, Text: wide},
	}
	if !slices.Equal(got, want) || truncated {
		t.Errorf("Grep(needle, .) = %+v, %v\nwant %+v", got, truncated, want)
	}
	got, _, err = f.w.Grep("^needle", "link_sub")
	if err != nil || !slices.Equal(got, []workspace.Match{{Path: "sub/b.txt", Line: 1, Text: "needle in b"}, {Path: "sub/deeper/c.txt", Line: 3, Text: "needle"}}) {
		t.Errorf("Grep(^needle, link_sub) = %+v, %v", got, err)
	}
	got, _, err = f.w.Grep("t(wo|hree)", "a.txt")
	if err != nil || len(got) != 2 {
		t.Errorf("Grep on one file = %+v, %v", got, err)
	}
	got, _, err = f.w.Grep("needle", "bin.dat")
	if err != nil || len(got) != 0 {
		t.Errorf("Grep on a binary file = %+v, %v; want no matches", got, err)
	}
	for _, c := range []struct {
		pattern, p string
		code       tool.Code
	}{
		{"(", ".", tool.CodeInvalidPattern},
		{"a{1001}", ".", tool.CodeInvalidPattern},
		{"", ".", tool.CodeInvalidPattern},
		{"x", "big.txt", tool.CodeFileTooLarge},
		{"x", "missing", tool.CodeNotFound},
		{"x", "..", tool.CodePathOutside},
	} {
		_, _, err := f.w.Grep(c.pattern, c.p)
		checkErr(t, fmt.Sprintf("Grep(%q, %q)", c.pattern, c.p), err, c.code)
	}

	g := newFixture(t, &workspace.Options{MaxGrepMatches: 3})
	g.write(t, "many.txt", strings.Repeat("hit\n", 10))
	got, truncated, err = g.w.Grep("hit", ".")
	if err != nil || !truncated || len(got) != 3 {
		t.Errorf("Grep over MaxGrepMatches = %d matches, %v, %v", len(got), truncated, err)
	}
	h := newFixture(t, &workspace.Options{MaxGrepTotalBytes: 10})
	h.write(t, "a.txt", "hit\n")
	h.write(t, "b.txt", "hit hit hit\n")
	got, truncated, err = h.w.Grep("hit", ".")
	if err != nil || !truncated || len(got) != 1 {
		t.Errorf("Grep over MaxGrepTotalBytes = %+v, %v, %v", got, truncated, err)
	}
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t, &workspace.Options{MaxWriteBytes: 100})
	res, err := f.w.WriteFile("s", "new/dir/f.txt", "hello")
	want := workspace.WriteResult{Path: "new/dir/f.txt", Bytes: 5, SHA256: sha("hello"), Created: true}
	if err != nil || res != want {
		t.Errorf("WriteFile(new) = %+v, %v; want %+v", res, err, want)
	}
	if got := readFile(t, f.path("new/dir/f.txt")); got != "hello" {
		t.Errorf("file holds %q", got)
	}
	f.write(t, "exec.sh", "#!/bin/sh\n")
	if err := os.Chmod(f.path("exec.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	res, err = f.w.WriteFile("s", "exec.sh", "#!/bin/sh\necho hi\n")
	if err != nil || res.Created {
		t.Errorf("WriteFile(exec.sh) = %+v, %v", res, err)
	}
	if fi, err := os.Stat(f.path("exec.sh")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("exec.sh mode after a write = %v, %v; want 0750", fi.Mode(), err)
	}
	f.symlink(t, "exec.sh", "link")
	if res, err := f.w.WriteFile("s", "link", "via link"); err != nil || res.Path != "exec.sh" {
		t.Errorf("WriteFile through a link = %+v, %v", res, err)
	}
	if fi, err := os.Lstat(f.path("link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("writing through a link replaced the link")
	}
	if res, err := f.w.WriteFile("s", "empty.txt", ""); err != nil || !res.Created || res.Bytes != 0 {
		t.Errorf("WriteFile(empty) = %+v, %v", res, err)
	}
	if _, err := f.w.WriteFile("s", "max.txt", strings.Repeat("m", 100)); err != nil {
		t.Errorf("WriteFile of MaxWriteBytes: %v", err)
	}
	f.write(t, "huge.txt", strings.Repeat("h", 101))
	for _, c := range []struct {
		session, p, content string
		code                tool.Code
	}{
		{"s", "over.txt", strings.Repeat("o", 101), tool.CodeFileTooLarge},
		{"s", "huge.txt", "small", tool.CodeFileTooLarge}, // cannot be snapshotted
		{"s", "new", "x", tool.CodeNotAFile},
		{"s", ".", "x", tool.CodeNotAFile},
		{"s", "exec.sh/x", "x", tool.CodeNotADirectory},
		{"", "a.txt", "x", tool.CodeInvalidCall},
		{"../s", "a.txt", "x", tool.CodeInvalidCall},
		{"s/t", "a.txt", "x", tool.CodeInvalidCall},
		{strings.Repeat("s", workspace.MaxSessionLength+1), "a.txt", "x", tool.CodeInvalidCall},
	} {
		_, err := f.w.WriteFile(c.session, c.p, c.content)
		checkErr(t, fmt.Sprintf("WriteFile(%q, %q)", c.session, c.p), err, c.code)
	}
	if _, err := os.Stat(f.path("over.txt")); err == nil {
		t.Error("over.txt was written")
	}
	// No temporary files are left behind.
	filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".airlock-tmp-") {
			t.Errorf("left a temporary file %s", p)
		}
		return nil
	})
}

func TestEditFile(t *testing.T) {
	f := newFixture(t, &workspace.Options{MaxWriteBytes: 50})
	f.write(t, "a.txt", "one two two three")
	res, err := f.w.EditFile("s", "a.txt", "one", "ONE", false)
	want := workspace.WriteResult{Path: "a.txt", Bytes: 17, Replacements: 1, SHA256: sha("ONE two two three")}
	if err != nil || res != want {
		t.Errorf("EditFile = %+v, %v; want %+v", res, err, want)
	}
	res, err = f.w.EditFile("s", "a.txt", "two", "2", true)
	if err != nil || res.Replacements != 2 || readFile(t, f.path("a.txt")) != "ONE 2 2 three" {
		t.Errorf("EditFile(replace all) = %+v, %v; file %q", res, err, readFile(t, f.path("a.txt")))
	}
	for _, c := range []struct {
		p, old, new string
		all         bool
		code        tool.Code
		msg         string
	}{
		{"a.txt", "four", "4", false, tool.CodeEditNoMatch, ""},
		{"a.txt", "one", "x", false, tool.CodeEditNoMatch, ""}, // exact: case matters
		{"a.txt", "four", "4", true, tool.CodeEditNoMatch, ""},
		{"a.txt", "2", "two", false, tool.CodeEditAmbiguous, "2 times"},
		{"a.txt", " ", "_", false, tool.CodeEditAmbiguous, "3 times"},
		{"a.txt", "", "x", false, tool.CodeInvalidCall, ""},
		{"a.txt", "ONE", strings.Repeat("x", 50), false, tool.CodeFileTooLarge, ""},
		{"a.txt", "2", strings.Repeat("x", 20), true, tool.CodeFileTooLarge, ""},
		{"missing.txt", "x", "y", false, tool.CodeNotFound, ""},
		{".", "x", "y", false, tool.CodeNotAFile, ""},
	} {
		_, err := f.w.EditFile("s", c.p, c.old, c.new, c.all)
		what := fmt.Sprintf("EditFile(%q, %q, %q, %v)", c.p, c.old, c.new, c.all)
		checkErr(t, what, err, c.code)
		if c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("%s: error %v does not say %q", what, err, c.msg)
		}
	}
	if got := readFile(t, f.path("a.txt")); got != "ONE 2 2 three" {
		t.Errorf("refused edits changed the file to %q", got)
	}
}

func TestRollback(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "mod.txt", "original")
	f.write(t, "twice.txt", "first")
	f.write(t, "gone.txt", "before the session")
	f.write(t, "bin.dat", "\x00\x01\xff binary\n")
	f.write(t, "other.txt", "other session")
	if err := os.Chmod(f.path("mod.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { _, err := f.w.WriteFile("s1", "mod.txt", "modified"); return err },
		func() error { _, err := f.w.WriteFile("s1", "twice.txt", "second"); return err },
		func() error { _, err := f.w.EditFile("s1", "twice.txt", "second", "third", false); return err },
		func() error { _, err := f.w.WriteFile("s1", "created.txt", "new"); return err },
		func() error { _, err := f.w.WriteFile("s1", "newdir/sub/deep.txt", "new"); return err },
		func() error { _, err := f.w.WriteFile("s1", "gone.txt", "changed"); return err },
		func() error { return os.Remove(f.path("gone.txt")) }, // deleted by something else after
		func() error { _, err := f.w.WriteFile("s1", "created-then-deleted.txt", "x"); return err },
		func() error { return os.Remove(f.path("created-then-deleted.txt")) },
		func() error { _, err := f.w.WriteFile("s1", "bin.dat", "text now"); return err },
		func() error { _, err := f.w.WriteFile("s2", "other.txt", "changed by s2"); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// A directory the session created that now holds a file it did not
	// create stays.
	f.write(t, "newdir/keep.txt", "not the session's")

	res, err := f.w.Rollback("s1")
	if err != nil {
		t.Fatal(err)
	}
	restored := res.Restored
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "newdir" {
		t.Errorf("Rollback conflicts = %+v, want newdir (it holds a file the session did not make)", res.Conflicts)
	}
	wantRestored := []string{"bin.dat", "created-then-deleted.txt", "gone.txt", "newdir/sub/deep.txt", "newdir/sub", "created.txt", "twice.txt", "mod.txt"}
	if !slices.Equal(restored, wantRestored) {
		t.Errorf("Rollback restored %q, want %q", restored, wantRestored)
	}
	for p, want := range map[string]string{
		"mod.txt":         "original",
		"twice.txt":       "first",
		"gone.txt":        "before the session",
		"bin.dat":         "\x00\x01\xff binary\n",
		"other.txt":       "changed by s2",
		"newdir/keep.txt": "not the session's",
	} {
		if got := readFile(t, f.path(p)); got != want {
			t.Errorf("after Rollback %s = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"created.txt", "newdir/sub", "created-then-deleted.txt"} {
		if _, err := os.Lstat(f.path(p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Rollback %s exists (%v)", p, err)
		}
	}
	if fi, err := os.Stat(f.path("mod.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mod.txt mode after Rollback = %v, %v; want 0600", fi.Mode(), err)
	}

	// A second Rollback is a no-op; so is one of an unknown session.
	for _, s := range []string{"s1", "never"} {
		if res, err := f.w.Rollback(s); err != nil || len(res.Restored) != 0 {
			t.Errorf("Rollback(%s) again = %+v, %v; want nothing", s, res, err)
		}
	}
	if got := readFile(t, f.path("mod.txt")); got != "original" {
		t.Errorf("second Rollback changed mod.txt to %q", got)
	}
	// The other session is untouched, and rolls back on its own.
	if res, err := f.w.Rollback("s2"); err != nil || !slices.Equal(res.Restored, []string{"other.txt"}) {
		t.Errorf("Rollback(s2) = %+v, %v", res, err)
	}
	if got := readFile(t, f.path("other.txt")); got != "other session" {
		t.Errorf("other.txt = %q", got)
	}
	for _, s := range []string{"", "a/b", "..", strings.Repeat("x", 65), "é"} {
		_, err := f.w.Rollback(s)
		checkErr(t, fmt.Sprintf("Rollback(%q)", s), err, tool.CodeInvalidCall)
	}

	// A session that changes nothing successfully leaves no snapshots.
	if _, err := f.w.EditFile("s3", "mod.txt", "absent", "x", false); err == nil {
		t.Fatal("edit of an absent string succeeded")
	}
	if res, err := f.w.Rollback("s3"); err != nil || len(res.Restored) != 0 {
		t.Errorf("Rollback(s3) = %+v, %v", res, err)
	}
}

func TestRollbackDamagedSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "a.txt", "original")
	if _, err := f.w.WriteFile("s", "a.txt", "changed"); err != nil {
		t.Fatal(err)
	}
	snaps, err := filepath.Glob(filepath.Join(f.dir, ".airlock", "snapshots", "s", "*.snap"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %v, %v", snaps, err)
	}
	b, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snaps[0], b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.Rollback("s"); err == nil {
		t.Error("Rollback applied a damaged snapshot")
	}
	if got := readFile(t, f.path("a.txt")); got != "changed" {
		t.Errorf("a.txt = %q after a refused Rollback", got)
	}
	// Snapshots naming a path outside are refused too.
	hdr := `{"version":1,"path":"../outside/canary.txt","kind":"file","existed":true,"size":0,"sha256":"` + sha("") + "\"}\n"
	if err := os.WriteFile(snaps[0], []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.Rollback("s"); err == nil {
		t.Error("Rollback applied a snapshot for a path outside")
	}
	f.checkOutside(t)
}

// TestExists: what a guard asks before a command writes over a path.
func TestExists(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("x"), 0o644)
	os.Symlink("nowhere", filepath.Join(dir, "dangling"))
	w, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for p, want := range map[string]bool{
		"src/a.go": true, "src": true, "./src/../src/a.go": true, ".": true,
		"dangling": false, // a write through it creates its target: nothing is lost
		"src/b.go": false, "new/dir/f": false,
		"../outside": true, "/etc/passwd": true, // not resolvable: taken as existing
	} {
		if got := w.Exists(p); got != want {
			t.Errorf("Exists(%q) = %v, want %v", p, got, want)
		}
	}
}
