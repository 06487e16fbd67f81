package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/tool"
)

// EntryType is what a path names: a regular file, a directory, a
// symbolic link, or nothing ("").
type EntryType string

const (
	TypeNone    EntryType = ""
	TypeFile    EntryType = "file"
	TypeDir     EntryType = "dir"
	TypeSymlink EntryType = "symlink"
)

// The kinds of Change.
const (
	ChangeAdded    = "added"    // nothing was there
	ChangeModified = "modified" // content, mode, link target or type changed
	ChangeDeleted  = "deleted"  // gone, with everything under it for a directory
)

// State is one path's state: its type, permission bits, size and link
// target, and the inode's number and modification time, by which
// Rollback tells the entry a change left from one someone made since.
type State struct {
	Type    EntryType `json:"type,omitempty"`
	Mode    uint32    `json:"mode,omitempty"` // permission bits, setuid, setgid and sticky
	Size    int64     `json:"size,omitempty"`
	Target  string    `json:"target,omitempty"` // a symbolic link's
	Ino     uint64    `json:"ino,omitempty"`
	MtimeNs int64     `json:"mtime_ns,omitempty"`
}

func stateOf(st *unix.Stat_t, target string) State {
	return State{Type: typeOf(st.Mode), Mode: st.Mode & 0o7777, Size: st.Size, Target: target,
		Ino: st.Ino, MtimeNs: st.Mtim.Nano()}
}

// Change is one path a command changed.
type Change struct {
	Path string `json:"path"` // canonical
	Kind string `json:"kind"` // ChangeAdded, ChangeModified or ChangeDeleted
	Old  State  `json:"old"`  // before; TypeNone when added
	New  State  `json:"new"`  // after; TypeNone when deleted
	// WithParent: the path lies in a directory that is new as a whole
	// (added, or put where something else was), which is moved into
	// place in one step and takes it along.
	WithParent bool `json:"with_parent,omitempty"`
}

// MaxChanges bounds the paths one command's changes may list; a command
// that changes more is refused with its changes discarded, the workspace
// as it was (the overlay keeps them apart until then).
const MaxChanges = 200_000

// ChangeSet is what a command changed on its copy-on-write view of the
// workspace, read from the overlay's upper layer against the workspace.
type ChangeSet struct {
	Changes []Change
	// Skipped are paths of what the command made that is neither a file,
	// a directory nor a link (a pipe, a socket, a device): never applied.
	Skipped []string
	// OldBytes is the size of what the changes replace or delete (whole
	// trees for deleted directories): what the session's snapshot keeps.
	OldBytes int64
	// NewBytes is the size of the files the changes add or rewrite.
	NewBytes int64
	// LargestOld is the size of the largest single old version kept.
	LargestOld int64
}

// keep counts one old version of size bytes that the snapshot keeps.
func (s *ChangeSet) keep(size int64) {
	s.OldBytes += size
	s.LargestOld = max(s.LargestOld, size)
}

// Destroys reports whether the changes delete or replace something that
// was in the workspace, beyond rewriting a file's content or mode: the
// changes a mode's destroy decision governs.
func (s *ChangeSet) Destroys() bool {
	for _, c := range s.Changes {
		if c.Kind == ChangeDeleted || c.Kind == ChangeModified && c.Old.Type != c.New.Type {
			return true
		}
		if c.Kind == ChangeModified && c.Old.Type == TypeFile && c.New.Size == 0 && c.Old.Size > 0 {
			return true // truncated to nothing
		}
	}
	return false
}

// Counts returns how many paths were added, modified and deleted.
func (s *ChangeSet) Counts() (added, modified, deleted int) {
	for _, c := range s.Changes {
		switch c.Kind {
		case ChangeAdded:
			added++
		case ChangeModified:
			modified++
		case ChangeDeleted:
			deleted++
		}
	}
	return added, modified, deleted
}

// readChanges compares the overlay upper layer at the directory upper
// with the workspace at ws (both open directory descriptors) and lists
// what changed, parents before children. An upper layer made by a
// redirecting or metadata-only overlay, or one that reaches StateDir, is
// refused: it cannot be read as plain files.
func readChanges(ws, upper int) (*ChangeSet, error) {
	r := &changeReader{set: &ChangeSet{}}
	if err := r.walk("", upper, ws, false, false); err != nil {
		return nil, err
	}
	return r.set, nil
}

type changeReader struct {
	set *ChangeSet
}

func (r *changeReader) add(c Change) error {
	if !utf8.ValidString(c.Path) || !utf8.ValidString(c.New.Target) {
		// The batch record is JSON, which cannot hold such a name: the
		// change could be neither applied nor undone as recorded.
		return tool.Errorf(tool.CodeChangesRefused, "Give files names in UTF-8, then run the command again",
			"the command made a path whose name or link target is not UTF-8 (%q); none of its changes were applied", c.Path)
	}
	if len(r.set.Changes) >= MaxChanges {
		return tool.Errorf(tool.CodeChangesTooLarge, "Change fewer files in one command, or split the work into several commands",
			"the command changed more than %d paths (workspace.MaxChanges); none of its changes were applied", MaxChanges)
	}
	r.set.Changes = append(r.set.Changes, c)
	switch c.Kind {
	case ChangeAdded, ChangeModified:
		if c.New.Type == TypeFile {
			r.set.NewBytes += c.New.Size
		}
	}
	return nil
}

// walk reads the upper directory dir (at the canonical path rel, "" for
// the root) against the lower directory lower (-1 when there is none).
// opaque: the upper directory hides the lower one, so that whatever the
// lower one holds and the upper one does not is deleted. fresh: the
// directory is new as a whole, so everything in it is added with it.
func (r *changeReader) walk(rel string, dir, lower int, opaque, fresh bool) error {
	names, err := readNames(dir)
	if err != nil {
		return fmt.Errorf("workspace: reading the overlay at %q: %w", rel, err)
	}
	inUpper := make(map[string]bool, len(names))
	for _, name := range names {
		inUpper[name] = true
		p := path.Join(rel, name)
		if rel == "" && isStateName(name) {
			return fmt.Errorf("workspace: the overlay's upper layer holds %s, airlock's own state; it is not applied", name)
		}
		st, ok, err := lstatAt(dir, name)
		if err != nil || !ok {
			return fmt.Errorf("workspace: the overlay at %q: %v", p, err)
		}
		var old State
		var lst unix.Stat_t
		if lower >= 0 && !fresh {
			var found bool
			lst, found, err = lstatAt(lower, name)
			if err != nil {
				return fmt.Errorf("workspace: %q: %w", p, err)
			}
			if found {
				old, err = r.lowerState(lower, name, &lst)
				if err != nil {
					return err
				}
			}
		}
		if isWhiteout(&st) {
			if old.Type != TypeNone {
				if err := r.deleted(p, lower, name, old); err != nil {
					return err
				}
			}
			continue
		}
		typ := typeOf(st.Mode)
		if typ == TypeNone {
			r.set.Skipped = append(r.set.Skipped, p)
			continue
		}
		if _, ok := xattrAt(dir, name, redirectXattrs); ok {
			return fmt.Errorf("workspace: the overlay renamed the directory %q by redirect; airlock mounts overlays with redirect_dir=off and cannot apply this one", p)
		}
		if _, ok := xattrAt(dir, name, metacopyXattrs); ok {
			return fmt.Errorf("workspace: the overlay copied only the metadata of %q; airlock mounts overlays with metacopy=off and cannot apply this one", p)
		}
		target := ""
		if typ == TypeSymlink {
			if target, err = readlinkAt(dir, name); err != nil {
				return fmt.Errorf("workspace: the overlay at %q: %w", p, err)
			}
		}
		now := stateOf(&st, target)
		c := Change{Path: p, Kind: ChangeAdded, Old: old, New: now, WithParent: fresh}
		if old.Type != TypeNone {
			c.Kind = ChangeModified
		}
		switch {
		case typ == TypeDir && old.Type == TypeDir:
			// The same directory in both layers: its entries are merged,
			// unless the upper one is opaque.
			v, _ := xattrAt(dir, name, opaqueXattrs)
			if old.Mode != now.Mode {
				if err := r.add(c); err != nil {
					return err
				}
			}
			if err := r.descend(p, dir, lower, name, opaque || v == "y", false); err != nil {
				return err
			}
		case typ == TypeDir:
			// A new directory, or one put where a file was: all of it is
			// new.
			if old.Type != TypeNone {
				r.set.keep(old.Size)
			}
			if err := r.add(c); err != nil {
				return err
			}
			if err := r.descend(p, dir, -1, name, false, true); err != nil {
				return err
			}
		default:
			if old.Type == typ {
				same, err := r.same(dir, lower, name, &old, &now)
				if err != nil {
					return fmt.Errorf("workspace: comparing %q: %w", p, err)
				}
				if same && !(typ == TypeFile && st.Nlink > 1) {
					continue // copied up and left as it was
				}
				// The same bytes, but the command linked the file to
				// another name (overlayfs copied it up to do so): it is
				// replaced by the upper layer's inode, so that both names
				// are one file in the workspace too.
			}
			if err := r.replace(c, lower, name); err != nil {
				return err
			}
		}
	}
	if opaque && lower >= 0 {
		lowerNames, err := readNames(lower)
		if err != nil {
			return fmt.Errorf("workspace: reading %q: %w", rel, err)
		}
		for _, name := range lowerNames {
			if inUpper[name] || rel == "" && isStateName(name) {
				continue
			}
			lst, ok, err := lstatAt(lower, name)
			if err != nil || !ok {
				continue // gone meanwhile: nothing to delete
			}
			old, err := r.lowerState(lower, name, &lst)
			if err != nil {
				return err
			}
			if err := r.deleted(path.Join(rel, name), lower, name, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowerState describes the workspace's entry name in lower.
func (r *changeReader) lowerState(lower int, name string, st *unix.Stat_t) (State, error) {
	target := ""
	if typeOf(st.Mode) == TypeSymlink {
		t, err := readlinkAt(lower, name)
		if err != nil {
			return State{}, fmt.Errorf("workspace: %q: %w", name, err)
		}
		target = t
	}
	e := stateOf(st, target)
	if e.Type == TypeNone {
		e.Type = TypeFile // a pipe or device in the workspace is kept aside like a file
	}
	return e, nil
}

// deleted records the deletion of the workspace's entry name in lower.
func (r *changeReader) deleted(p string, lower int, name string, old State) error {
	return r.replace(Change{Path: p, Kind: ChangeDeleted, Old: old}, lower, name)
}

// replace records c, which replaces or deletes the workspace's entry
// name in lower (c.Old; none when TypeNone), counting what the snapshot
// keeps of it: a file, or a directory's whole tree.
func (r *changeReader) replace(c Change, lower int, name string) error {
	switch c.Old.Type {
	case TypeNone:
	case TypeDir:
		if err := r.oldTree(c.Path, lower, name); err != nil {
			return err
		}
	default:
		r.set.keep(c.Old.Size)
	}
	return r.add(c)
}

// oldTree adds the size of the workspace's directory name in lower, all
// of it, to what the snapshot keeps.
func (r *changeReader) oldTree(p string, lower int, name string) error {
	fd, err := openDirBeneath(lower, name)
	if err != nil {
		return fmt.Errorf("workspace: %q: %w", p, err)
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return fmt.Errorf("workspace: %q: %w", p, err)
	}
	for _, n := range names {
		st, ok, err := lstatAt(fd, n)
		if err != nil || !ok {
			continue
		}
		if typeOf(st.Mode) == TypeDir {
			if err := r.oldTree(path.Join(p, n), fd, n); err != nil {
				return err
			}
			continue
		}
		r.set.keep(st.Size)
	}
	return nil
}

// descend walks the upper directory name in dir, against the lower
// directory name in lower (none when lower is -1).
func (r *changeReader) descend(p string, dir, lower int, name string, opaque, fresh bool) error {
	ud, err := openDirBeneath(dir, name)
	if err != nil {
		return fmt.Errorf("workspace: the overlay at %q: %w", p, err)
	}
	defer unix.Close(ud)
	ld := -1
	if lower >= 0 {
		if ld, err = openDirBeneath(lower, name); err != nil {
			return fmt.Errorf("workspace: %q: %w", p, err)
		}
		defer unix.Close(ld)
	}
	return r.walk(p, ud, ld, opaque, fresh)
}

// same reports whether the upper entry name equals the lower one of the
// same type: a link's target, or a file's mode and bytes.
func (r *changeReader) same(dir, lower int, name string, old, now *State) (bool, error) {
	if now.Type == TypeSymlink {
		return old.Target == now.Target, nil
	}
	if old.Mode != now.Mode || old.Size != now.Size {
		return false, nil
	}
	return sameContent(dir, lower, name)
}

// compareChunk is how much of each file sameContent reads at a time.
const compareChunk = 64 << 10

// sameContent compares the bytes of the file name in two directories.
func sameContent(a, b int, name string) (bool, error) {
	// O_NONBLOCK, then a check that both are regular files: a pipe put
	// where a file was must not stall the read of a command's changes.
	fa, err := openBeneath(a, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return false, err
	}
	ra := os.NewFile(uintptr(fa), name)
	defer ra.Close()
	fb, err := openBeneath(b, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return false, err
	}
	rb := os.NewFile(uintptr(fb), name)
	defer rb.Close()
	for _, f := range []*os.File{ra, rb} {
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return false, err
		}
	}
	ba, bb := make([]byte, compareChunk), make([]byte, compareChunk)
	for {
		na, ea := io.ReadFull(ra, ba)
		nb, eb := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		aEnd := errors.Is(ea, io.EOF) || errors.Is(ea, io.ErrUnexpectedEOF)
		bEnd := errors.Is(eb, io.EOF) || errors.Is(eb, io.ErrUnexpectedEOF)
		switch {
		case aEnd && bEnd:
			return true, nil
		case ea != nil && !aEnd:
			return false, ea
		case eb != nil && !bEnd:
			return false, eb
		case aEnd != bEnd:
			return false, nil
		}
	}
}
