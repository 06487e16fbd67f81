package workspace

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"airlock.dev/airlock/tool"
)

// ReadResult is a range of lines of a file.
type ReadResult struct {
	Path       string // canonical path
	Content    string // the lines, each with its own line ending, exactly as in the file
	Lines      int    // lines in Content (a line cut by MaxReadBytes counts)
	TotalLines int    // lines in the whole file (a last line without a newline counts)
	TotalBytes int    // size of the whole file
	Truncated  bool   // Content stopped at MaxReadBytes before the range ended
	SHA256     string // hex SHA-256 of the whole file
}

// readBufSize is the buffer ReadFile streams a file through.
const readBufSize = 64 << 10

// ReadFile reads the lines of a regular file from line offset (0-based),
// at most limit of them (0 means to the end), and at most MaxReadBytes of
// content. A range that would pass MaxReadBytes ends at the last whole line
// that fits, and sets Truncated; a first line longer than MaxReadBytes is
// cut (at a UTF-8 boundary). The whole file is read once, to hash and count
// it, up to the size it had when opened.
func (w *Workspace) ReadFile(p string, offset, limit int) (ReadResult, error) {
	if offset < 0 || limit < 0 {
		return ReadResult{}, tool.Errorf(tool.CodeInvalidCall, "Give offset and limit as 0 or more",
			"offset %d and limit %d: neither may be negative", offset, limit)
	}
	canon, err := w.Resolve(p)
	if err != nil {
		return ReadResult{}, err
	}
	f, fi, err := w.openFile(canon)
	if err != nil {
		return ReadResult{}, err
	}
	defer f.Close()

	capBytes := w.opts.MaxReadBytes
	h := sha256.New()
	r := bufio.NewReaderSize(io.TeeReader(io.LimitReader(f, fi.Size()), h), readBufSize)
	var (
		buf       []byte
		line      int  // index of the line being read
		inLine    bool // some bytes of line have been read
		collect   bool // line is part of the answer
		got       int  // lines in buf
		done      bool // the answer is complete; read on only to hash and count
		truncated bool
	)
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if !inLine {
				inLine = true
				collect = !done && line >= offset && (limit == 0 || got < limit)
				if !done && line >= offset && !collect {
					done = true // limit reached
				}
				if collect {
					got++
				}
			}
			if collect && !done {
				if len(buf)+len(chunk) <= capBytes {
					buf = append(buf, chunk...)
				} else {
					truncated, done = true, true
					if got == 1 {
						// The first line alone is over the cap: cut it.
						buf = trimPartialRune(append(buf, chunk[:capBytes-len(buf)]...))
					} else {
						// Drop the line that does not fit.
						buf = buf[:len(buf)-lineBytes(buf)]
						got--
					}
				}
			}
			if chunk[len(chunk)-1] == '\n' {
				line++
				inLine = false
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return ReadResult{}, w.fsError(canon, err)
		}
	}
	if inLine {
		line++ // a last line without a newline
	}
	return ReadResult{
		Path:       canon,
		Content:    string(buf),
		Lines:      got,
		TotalLines: line,
		TotalBytes: int(fi.Size()),
		Truncated:  truncated,
		SHA256:     hex.EncodeToString(h.Sum(nil)),
	}, nil
}

// lineBytes returns the length of the last, unfinished line in buf: the
// bytes after its last newline.
func lineBytes(buf []byte) int {
	return len(buf) - (bytes.LastIndexByte(buf, '\n') + 1)
}

// trimPartialRune drops an incomplete UTF-8 sequence from the end of b, so
// that a cut never splits a character.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// Entry is one entry of a directory listing.
type Entry struct {
	Name    string
	Dir     bool  // a directory, or a link to one inside the workspace
	Size    int64 // bytes of a file (or of the file a link points to); 0 when unknown
	Symlink bool
}

// ListDir lists a directory, sorted by name, with StateDir hidden. It
// returns at most MaxListEntries entries and reports whether it left some
// out; a directory of more than MaxWalkEntries entries is listed from the
// first MaxWalkEntries read.
func (w *Workspace) ListDir(p string) ([]Entry, bool, error) {
	canon, err := w.Resolve(p)
	if err != nil {
		return nil, false, err
	}
	d, err := w.openDir(canon, false)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	budget := walkBudget{left: w.opts.MaxWalkEntries}
	ents, err := budget.readDir(d)
	if err != nil {
		return nil, false, w.fsError(canon, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if canon == "." && isStateName(e.Name()) {
			continue
		}
		names = append(names, e.Name())
	}
	slices.Sort(names)
	truncated := budget.truncated
	if len(names) > w.opts.MaxListEntries {
		names, truncated = names[:w.opts.MaxListEntries], true
	}
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		fi, err := d.Lstat(name)
		if err != nil {
			continue // gone since it was read
		}
		e := Entry{Name: name, Dir: fi.IsDir(), Size: fi.Size()}
		if fi.Mode()&fs.ModeSymlink != 0 {
			e.Symlink, e.Dir, e.Size = true, false, 0
			if st, err := d.Stat(name); err == nil { // the root keeps this inside
				e.Dir = st.IsDir()
				if st.Mode().IsRegular() {
					e.Size = st.Size()
				}
			}
		}
		if e.Dir {
			e.Size = 0
		}
		out = append(out, e)
	}
	return out, truncated, nil
}

// errStop ends a walk early once a result limit is reached.
var errStop = errors.New("stop")

// Glob returns the paths that match a doublestar pattern ("**" matches any
// number of directories), sorted, at most MaxGlobResults of them, and
// whether it left some out. The pattern is judged by CheckGlob first. Links
// are not followed while matching, and nothing under StateDir is ever
// returned.
func (w *Workspace) Glob(pattern string) ([]string, bool, error) {
	if err := w.ready(); err != nil {
		return nil, false, err
	}
	pattern, err := w.CheckGlob(pattern)
	if err != nil {
		return nil, false, err
	}
	gfs := &globFS{w: w, budget: walkBudget{left: w.opts.MaxWalkEntries}}
	var out []string
	truncated := false
	err = doublestar.GlobWalk(gfs, pattern, func(p string, _ fs.DirEntry) error {
		if p == "." || inState(p) {
			return nil
		}
		if len(out) == w.opts.MaxGlobResults {
			truncated = true
			return errStop
		}
		out = append(out, p)
		return nil
	}, doublestar.WithNoFollow())
	switch {
	case err == nil, errors.Is(err, errStop):
	case errors.Is(err, doublestar.ErrBadPattern):
		return nil, false, tool.Errorf(tool.CodeInvalidPattern, "Check the pattern's brackets and braces", "the pattern %q is malformed", pattern)
	default:
		return nil, false, err
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out, truncated || gfs.budget.truncated, nil
}

// CheckGlob judges a Glob pattern as written, touching nothing, and
// returns it as Glob walks it (leading "./" removed). Patterns are
// relative: an absolute one, or one with a ".." component, is
// path_outside_workspace, and so is one that starts at StateDir; an empty,
// overlong or malformed one is invalid_pattern. The gate runs it before a
// glob call may run, so that airlock check answers what the call would.
func (w *Workspace) CheckGlob(pattern string) (string, error) {
	if err := checkPattern(pattern); err != nil {
		return "", err
	}
	if strings.HasPrefix(pattern, "/") {
		return "", tool.Errorf(tool.CodePathOutside, "Give a pattern relative to the workspace root, such as \"src/**/*.go\"",
			"the pattern %q is absolute", pattern)
	}
	for pattern != "./" && strings.HasPrefix(pattern, "./") {
		pattern = pattern[2:]
	}
	for i, c := range strings.Split(pattern, "/") {
		if c == ".." {
			return "", tool.Errorf(tool.CodePathOutside, "Give a pattern relative to the workspace root, without ..",
				"the pattern %q leads out of the workspace (..)", pattern)
		}
		if i == 0 && isStateName(c) {
			return "", tool.Errorf(tool.CodePathOutside, hintState, "the pattern %q reaches %s, airlock's own state", pattern, StateDir)
		}
	}
	if !doublestar.ValidatePattern(pattern) {
		return "", tool.Errorf(tool.CodeInvalidPattern, "Check the pattern's brackets and braces; escape a literal *, ?, [ or { with \\",
			"the pattern %q is malformed", pattern)
	}
	return pattern, nil
}

// checkPattern refuses a Glob or Grep pattern that is empty, too long or
// has a NUL byte.
func checkPattern(pattern string) error {
	switch {
	case pattern == "":
		return tool.Errorf(tool.CodeInvalidPattern, "Give a non-empty pattern", "the pattern is empty")
	case len(pattern) > MaxPatternLength:
		return tool.Errorf(tool.CodeInvalidPattern, "Use a shorter pattern",
			"the pattern is %d bytes long, more than %d (MaxPatternLength)", len(pattern), MaxPatternLength)
	case strings.IndexByte(pattern, 0) >= 0:
		return tool.Errorf(tool.CodeInvalidPattern, "Remove the NUL byte from the pattern", "the pattern contains a NUL byte")
	}
	return nil
}

// globFS is the workspace as an fs.FS for doublestar: every name goes
// through Resolve (so a link to outside or into StateDir does not exist
// for it), every directory is opened component by component, StateDir is
// left out of the root's listing, and directory reads count against
// MaxWalkEntries.
type globFS struct {
	w      *Workspace
	budget walkBudget
}

// notExist is how globFS reports a name it refuses: as absent.
func notExist(op, name string, err error) error {
	var te *tool.Error
	if errors.As(err, &te) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (g *globFS) Open(name string) (fs.File, error) {
	canon, err := g.w.Resolve(name)
	if err != nil {
		return nil, notExist("open", name, err)
	}
	fi, err := g.Stat(canon)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		f, _, err := g.w.openFile(canon)
		if err != nil {
			return nil, notExist("open", name, err)
		}
		return f, nil
	}
	d, err := g.w.openDir(canon, false)
	if err != nil {
		return nil, notExist("open", name, err)
	}
	defer d.Close()
	return d.Open(".")
}

func (g *globFS) Stat(name string) (fs.FileInfo, error) {
	canon, err := g.w.Resolve(name)
	if err != nil {
		return nil, notExist("stat", name, err)
	}
	if canon == "." {
		return g.w.root.Stat(".")
	}
	d, err := g.w.openDir(dirOf(canon), false)
	if err != nil {
		return nil, notExist("stat", name, err)
	}
	defer d.Close()
	fi, err := d.Lstat(baseOf(canon))
	if err != nil {
		return nil, notExist("stat", name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fi, nil
}

func (g *globFS) ReadDir(name string) ([]fs.DirEntry, error) {
	canon, err := g.w.Resolve(name)
	if err != nil {
		return nil, notExist("readdir", name, err)
	}
	d, err := g.w.openDir(canon, false)
	if err != nil {
		return nil, notExist("readdir", name, err)
	}
	defer d.Close()
	ents, err := g.budget.readDir(d)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	if canon == "." {
		ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return isStateName(e.Name()) })
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// Match is one matching line.
type Match struct {
	Path string // canonical path of the file
	Line int    // 1-based line number
	Text string // the line without its line ending, cut to MaxGrepLineBytes
}

// Grep searches for an RE2 regular expression (Go's regexp syntax), line by
// line, in a file, or in every regular file under a directory. A directory
// walk skips StateDir, links, files over MaxGrepFileBytes and binary files
// (a NUL byte in the first BinarySniffBytes). It returns the matches sorted
// by path and line, at most MaxGrepMatches, and whether it stopped early
// (at MaxGrepMatches, MaxGrepTotalBytes or MaxWalkEntries). A named file
// over MaxGrepFileBytes is file_too_large; a bad expression is
// invalid_pattern.
func (w *Workspace) Grep(pattern, p string) ([]Match, bool, error) {
	if err := w.ready(); err != nil {
		return nil, false, err
	}
	if err := checkPattern(pattern); err != nil {
		return nil, false, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, false, tool.Errorf(tool.CodeInvalidPattern, "Use Go (RE2) regular expression syntax; escape literal metacharacters with \\",
			"the regular expression does not compile: %v", err)
	}
	canon, err := w.Resolve(p)
	if err != nil {
		return nil, false, err
	}
	g := &grepper{w: w, re: re, budget: walkBudget{left: w.opts.MaxWalkEntries}, bytesLeft: w.opts.MaxGrepTotalBytes}
	d, err := w.openDir(canon, false)
	var te *tool.Error
	switch {
	case err == nil:
		d.Close()
		if err := g.walk(canon); err != nil {
			return nil, false, err
		}
	case errors.As(err, &te) && te.Code == tool.CodeNotADirectory:
		// A file: search it alone, with its refusals.
		parent, err := w.openDir(dirOf(canon), false)
		if err != nil {
			return nil, false, err
		}
		defer parent.Close()
		if err := g.file(parent, baseOf(canon), canon, true); err != nil {
			return nil, false, err
		}
	default:
		return nil, false, err
	}
	slices.SortStableFunc(g.out, func(a, b Match) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	return g.out, g.truncated || g.budget.truncated, nil
}

// grepper is the state of one Grep.
type grepper struct {
	w         *Workspace
	re        *regexp.Regexp
	budget    walkBudget
	bytesLeft int
	out       []Match
	truncated bool // stopped at MaxGrepMatches or MaxGrepTotalBytes
}

func (g *grepper) stopped() bool { return g.truncated || g.budget.truncated }

// walk searches every regular file under the directory canon, depth
// first, each directory opened afresh from the root so that no chain of
// open directories grows with the depth.
func (g *grepper) walk(canon string) error {
	stack := []string{canon}
	for len(stack) > 0 && !g.stopped() {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d, err := g.w.openDir(dir, false)
		if err != nil {
			var te *tool.Error
			if errors.As(err, &te) {
				continue // gone or changed since it was listed
			}
			return err
		}
		ents, err := g.budget.readDir(d)
		if err != nil {
			d.Close()
			continue // unreadable: skipped like a binary file
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		var subdirs []string
		for _, e := range ents {
			name := e.Name()
			if dir == "." && isStateName(name) {
				continue
			}
			child := name
			if dir != "." {
				child = dir + "/" + name
			}
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				// Links are not followed in a walk: no loops, no second
				// way into a directory.
			case t.IsDir():
				subdirs = append(subdirs, child)
			case t.IsRegular():
				if err := g.file(d, name, child, false); err != nil {
					d.Close()
					return err
				}
			}
			if g.stopped() {
				break
			}
		}
		d.Close()
		for i := len(subdirs) - 1; i >= 0; i-- {
			stack = append(stack, subdirs[i])
		}
	}
	return nil
}

// file searches the regular file name in dir, whose canonical path is
// canon. A file met in a walk that cannot be searched is skipped; a named
// one is refused.
func (g *grepper) file(dir *os.Root, name, canon string, named bool) error {
	f, fi, err := openRegular(dir, name)
	if err != nil {
		if named {
			return g.w.useError(canon, err)
		}
		return nil
	}
	defer f.Close()
	capBytes := g.w.opts.MaxGrepFileBytes
	if fi.Size() > int64(capBytes) {
		if named {
			return tool.Errorf(tool.CodeFileTooLarge, "Search a smaller file, or read this one in ranges with read_file",
				"%q is %d bytes, more than grep searches (%d, MaxGrepFileBytes)", canon, fi.Size(), capBytes)
		}
		return nil
	}
	if fi.Size() > int64(g.bytesLeft) {
		g.truncated = true // MaxGrepTotalBytes
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()))
	if err != nil {
		if named {
			return g.w.fsError(canon, err)
		}
		return nil
	}
	g.bytesLeft -= len(data)
	if bytes.IndexByte(data[:min(len(data), BinarySniffBytes)], 0) >= 0 {
		return nil // binary
	}
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !g.re.Match(line) {
			continue
		}
		if len(g.out) == g.w.opts.MaxGrepMatches {
			g.truncated = true
			return nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > MaxGrepLineBytes {
			line = trimPartialRune(line[:MaxGrepLineBytes])
		}
		g.out = append(g.out, Match{Path: canon, Line: n, Text: string(line)})
	}
	return nil
}

// Exists reports whether the workspace-relative path p names something
// (a file, a directory, a link) in the workspace, as a guard asks before
// a command writes over it. A path that cannot be resolved or checked is
// reported as existing, so that a caller judging a write over it errs
// towards asking.
func (w *Workspace) Exists(p string) bool {
	if w.ready() != nil {
		return true
	}
	canon, err := w.Resolve(p)
	if err != nil {
		return true
	}
	if canon == "." {
		return true
	}
	_, err = w.root.Lstat(canon)
	return !errors.Is(err, fs.ErrNotExist)
}
