// Package workspace gives the file tools scoped access to one directory
// tree, the workspace, and keeps snapshots so that a session's changes can
// be rolled back.
//
// Every access goes through an os.Root opened on the workspace directory,
// so no path and no symbolic link can reach outside it, even when a link is
// swapped in while a call runs. On top of that, Resolve turns a path into
// its canonical form lexically (following links inside the workspace, a
// bounded number of hops) so that the gate can judge the real target, and
// every operation then walks that canonical path one directory at a time,
// refusing any component that is, or has just become, a symbolic link.
// StateDir, airlock's own state, is out of bounds for every file tool,
// whichever way a path reaches it.
//
// Paths are slash-separated and relative to the workspace root; "." is the
// root. They are taken literally: a backslash, "%2e%2e" or a full-width
// "．．" is an ordinary file name, never decoded or normalized.
//
// Every refusal is a *tool.Error with a stable code and a hint; any other
// error is a runtime fault (I/O) whose text is not meant for a model.
//
//	w, err := workspace.Open("/srv/project", nil)
//	res, err := w.WriteFile("session-1", "notes/todo.txt", "buy milk\n")
//	paths, err := w.Rollback("session-1") // notes/todo.txt is gone again
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"airlock.dev/airlock/tool"
)

// StateDir is airlock's own state directory at the workspace root
// (snapshots, the audit log, the store). No file tool may read, list or
// write it, and it is hidden from listings, globs and greps.
const StateDir = ".airlock"

// Default limits. A zero Options field takes its default.
const (
	DefaultMaxReadBytes      = 256 << 10 // bytes of content ReadFile returns before it truncates
	DefaultMaxWriteBytes     = 1 << 20   // bytes WriteFile and EditFile may write, and the largest file they change
	DefaultMaxListEntries    = 1000      // entries ListDir returns
	DefaultMaxGlobResults    = 1000      // paths Glob returns
	DefaultMaxGrepMatches    = 500       // matching lines Grep returns
	DefaultMaxGrepFileBytes  = 4 << 20   // files larger than this are skipped by Grep
	DefaultMaxGrepTotalBytes = 64 << 20  // bytes one Grep reads in all
	DefaultMaxPathLength     = 1024      // bytes in a path argument
	DefaultMaxSymlinkHops    = 40        // symbolic links Resolve follows in one path (Linux's own limit)
	DefaultMaxWalkEntries    = 100_000   // directory entries one ListDir, Glob or Grep may read

	// The snapshot's limits, for what commands change through an overlay
	// (the file tools' snapshots are bounded by MaxWriteBytes). Past
	// either, a command's changes wait on a person instead of being
	// applied (ChangeSet.OverLimit); a session already holding
	// MaxSessionSnapshotBytes runs no more commands until it is rolled
	// back or pruned.
	DefaultMaxSessionSnapshotBytes = 4 << 30 // bytes of old versions one session's snapshot keeps
	DefaultMaxSnapshotFileBytes    = 1 << 30 // bytes of one old version kept without asking

	// A copy view's limits (NewCopyView): a sandbox that cannot mount
	// an overlay runs a command on a copy of the workspace, and copying
	// is paid on every command, so past either the copy is refused and
	// the native backend, which needs none, is named instead.
	DefaultMaxCopyViewBytes   = 256 << 20 // bytes of files one copy view copies
	DefaultMaxCopyViewEntries = 50_000    // files, directories and links one copy view copies
)

// KeepSnapshots is how long a session's snapshot is kept after its last
// change; Recover prunes older ones (their changes can no longer be
// rolled back).
const KeepSnapshots = 30 * 24 * time.Hour

// MaxPatternLength bounds a Glob or Grep pattern, in bytes.
const MaxPatternLength = 4096

// MaxGrepLineBytes is how much of a matching line Grep returns.
const MaxGrepLineBytes = 512

// BinarySniffBytes is how far into a file Grep looks for a NUL byte, the
// mark of a binary file it skips.
const BinarySniffBytes = 8 << 10

// Options bounds the work of the file operations. A nil *Options, or a zero
// field, means the default; a negative field is refused by Open.
type Options struct {
	MaxReadBytes      int // ReadFile stops and sets Truncated past this many bytes of content
	MaxWriteBytes     int // file_too_large for content, or an existing file to change, over this many bytes
	MaxListEntries    int // ListDir returns at most this many entries, then reports truncation
	MaxGlobResults    int // Glob returns at most this many paths, then reports truncation
	MaxGrepMatches    int // Grep returns at most this many matches, then reports truncation
	MaxGrepFileBytes  int // Grep skips larger files in a directory walk; a named file over it is file_too_large
	MaxGrepTotalBytes int // Grep stops and reports truncation after reading this many bytes
	MaxPathLength     int // path_outside_workspace for a longer path
	MaxSymlinkHops    int // path_outside_workspace when resolving a path follows more links
	MaxWalkEntries    int // ListDir, Glob and Grep stop and report truncation after reading this many directory entries
	// MaxSessionSnapshotBytes bounds the old versions one session's
	// snapshot keeps; MaxSnapshotFileBytes one old version.
	MaxSessionSnapshotBytes int
	MaxSnapshotFileBytes    int
	// MaxCopyViewBytes and MaxCopyViewEntries bound what NewCopyView
	// copies: the bytes of the workspace's files (a hard-linked file
	// once) and its entries.
	MaxCopyViewBytes   int
	MaxCopyViewEntries int
}

// withDefaults returns the options with every zero field set to its
// default, or an error naming a negative field.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	fields := []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxReadBytes", &c.MaxReadBytes, DefaultMaxReadBytes},
		{"MaxWriteBytes", &c.MaxWriteBytes, DefaultMaxWriteBytes},
		{"MaxListEntries", &c.MaxListEntries, DefaultMaxListEntries},
		{"MaxGlobResults", &c.MaxGlobResults, DefaultMaxGlobResults},
		{"MaxGrepMatches", &c.MaxGrepMatches, DefaultMaxGrepMatches},
		{"MaxGrepFileBytes", &c.MaxGrepFileBytes, DefaultMaxGrepFileBytes},
		{"MaxGrepTotalBytes", &c.MaxGrepTotalBytes, DefaultMaxGrepTotalBytes},
		{"MaxPathLength", &c.MaxPathLength, DefaultMaxPathLength},
		{"MaxSymlinkHops", &c.MaxSymlinkHops, DefaultMaxSymlinkHops},
		{"MaxWalkEntries", &c.MaxWalkEntries, DefaultMaxWalkEntries},
		{"MaxSessionSnapshotBytes", &c.MaxSessionSnapshotBytes, DefaultMaxSessionSnapshotBytes},
		{"MaxSnapshotFileBytes", &c.MaxSnapshotFileBytes, DefaultMaxSnapshotFileBytes},
		{"MaxCopyViewBytes", &c.MaxCopyViewBytes, DefaultMaxCopyViewBytes},
		{"MaxCopyViewEntries", &c.MaxCopyViewEntries, DefaultMaxCopyViewEntries},
	}
	for _, f := range fields {
		switch {
		case *f.v < 0:
			return c, fmt.Errorf("workspace: Options.%s is %d; want 0 (the default) or more", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return c, nil
}

// Workspace is scoped access to one directory tree. Its methods are safe
// for concurrent use; changes (WriteFile, EditFile, Rollback) run one at a
// time.
type Workspace struct {
	dir  string
	root *os.Root
	opts Options
	mu   sync.Mutex // serializes changes and their snapshots
}

// Open opens the workspace at dir, which must exist and be a directory.
// A nil opts means the default limits.
func Open(dir string, opts *Options) (*Workspace, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", abs)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Workspace{dir: abs, root: root, opts: o}, nil
}

// Dir returns the absolute path of the workspace directory; "" for a nil
// Workspace.
func (w *Workspace) Dir() string {
	if w == nil {
		return ""
	}
	return w.dir
}

// Close releases the workspace. Every method fails afterwards.
func (w *Workspace) Close() error { return w.root.Close() }

// ready refuses a nil or zero Workspace, so that it fails closed instead
// of panicking.
func (w *Workspace) ready() error {
	if w == nil || w.root == nil {
		return errors.New("workspace: not opened (use workspace.Open)")
	}
	return nil
}

// isStateName reports whether a first path component names StateDir. Case
// is ignored so that a case-insensitive file system cannot open a side
// door.
func isStateName(name string) bool { return strings.EqualFold(name, StateDir) }

// inState reports whether a canonical path is StateDir or lies under it.
func inState(canonical string) bool {
	first, _, _ := strings.Cut(canonical, "/")
	return isStateName(first)
}

// The hints shared by the refusals.
const (
	hintOutside  = "Use a path relative to the workspace root that stays inside it, such as \"src/main.go\""
	hintState    = "The .airlock directory holds airlock's own state; use another path"
	hintNotFound = "Check the path with list_dir or glob"
	hintNotFile  = "Give the path of a regular file; use list_dir for a directory"
	hintNotDir   = "Give the path of a directory; use read_file for a file"
	hintChanged  = "The path changed while the call ran; retry, and do not swap directories for links meanwhile"
	hintSession  = "Use a session id of 1 to 64 letters, digits, '_' or '-'"
)

// Resolve turns a relative path into the canonical slash path, inside the
// workspace, that it names: "." components and doubled slashes dropped,
// ".." applied, and symbolic links inside the workspace followed (at most
// MaxSymlinkHops of them), each by reading the link, never by letting the
// operating system follow it. "" and "." are the root. A path that does not exist yet resolves as
// long as the part of it that exists stays inside, so that writes can
// create it.
//
// It refuses with path_outside_workspace an absolute path, a path with a
// NUL byte or longer than MaxPathLength, a path or link that leaves the
// workspace (".." above the root, a link with an absolute target or one
// leading outside), too many links, and anything under StateDir, however
// it is reached.
func (w *Workspace) Resolve(p string) (string, error) {
	if err := w.ready(); err != nil {
		return "", err
	}
	if err := w.checkPath(p); err != nil {
		return "", err
	}
	var out []string // canonical components so far
	missing := -1    // index in out of a component known not to exist
	todo := strings.Split(p, "/")
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(out) == 0 {
				return "", tool.Errorf(tool.CodePathOutside, hintOutside, "the path %q leads above the workspace root", p)
			}
			out = out[:len(out)-1]
			if missing >= len(out) {
				missing = -1
			}
			continue
		}
		if len(out) == 0 && isStateName(c) {
			return "", tool.Errorf(tool.CodePathOutside, hintState, "the path %q reaches %s, airlock's own state", p, StateDir)
		}
		out = append(out, c)
		if missing >= 0 {
			continue // under a missing component nothing exists
		}
		cand := strings.Join(out, "/")
		fi, err := w.root.Lstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || isErrno(err, errNotDir) {
				missing = len(out) - 1
				continue
			}
			return "", w.fsError(cand, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		hops++
		if hops > w.opts.MaxSymlinkHops {
			return "", tool.Errorf(tool.CodePathOutside, "Use the path the links point to, or fewer links (a loop never ends)",
				"the path %q follows more than %d symbolic links (MaxSymlinkHops)", p, w.opts.MaxSymlinkHops)
		}
		target, err := w.root.Readlink(cand)
		if err != nil {
			if isErrno(err, errInval) {
				return "", errChanged(cand) // no longer a link
			}
			return "", w.fsError(cand, err)
		}
		if target == "" || strings.HasPrefix(target, "/") || filepath.IsAbs(target) {
			return "", tool.Errorf(tool.CodePathOutside, hintOutside,
				"%q is a symbolic link with an absolute target; only relative links inside the workspace are followed", cand)
		}
		out = out[:len(out)-1]
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(out) == 0 {
		return ".", nil
	}
	return strings.Join(out, "/"), nil
}

// checkPath refuses what no path argument may be, before any lookup.
func (w *Workspace) checkPath(p string) error {
	switch {
	case len(p) > w.opts.MaxPathLength:
		return tool.Errorf(tool.CodePathOutside, "Use a shorter path",
			"the path is %d bytes long, more than %d (MaxPathLength)", len(p), w.opts.MaxPathLength)
	case strings.IndexByte(p, 0) >= 0:
		return tool.Errorf(tool.CodePathOutside, hintOutside, "the path contains a NUL byte")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return tool.Errorf(tool.CodePathOutside, hintOutside, "the path %q is absolute", p)
	}
	return nil
}
