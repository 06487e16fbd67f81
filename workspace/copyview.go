package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/plural"
	"airlock.dev/airlock/tool"
)

// A copy view is the overlay of a sandbox that cannot mount one (bwrap
// before 0.9, the container backend): the command runs on a copy of the
// workspace, made under OverlaysDir, and afterwards its changes are read
// by comparing the copy with the workspace and applied exactly as an
// overlay's are, renamed from the copy into place with every old version
// kept for Rollback. Nothing reaches the workspace before Apply.
//
// The copy is made with the same directory-descriptor walk the overlay
// code uses (fsat.go): no symbolic link is ever followed, so a link
// pointing out of the workspace is copied as a link.
//
// Alongside the copy, NewCopyView keeps a record of what it copied: each
// path with the inode, size and modification time of its copy. The
// record is written once the filesystem's clock has moved past the last
// change NewCopyView made to the copy, so that every change the command
// makes afterwards carries a ctime (which no command can set) no earlier
// than the record's time. An entry of the copy that still has what the
// record says, and whose ctime is before the record's time, is as
// NewCopyView left it: the command did not touch it, so it is no change
// whatever the workspace holds now. And a workspace entry missing from
// the copy is a deletion only when it was copied. Without this, someone's
// edit to the workspace while the command ran, or while its changes were
// held for approval, would be read as the command's change and reverted
// on Apply.

// MaxCopyViewDepth bounds how deep directories nest in a copy view: in
// the workspace when it is copied, and in the copy when its changes are
// read. Each level holds a directory open.
const MaxCopyViewDepth = 256

// MaxCopyClockWait bounds how long NewCopyView waits for the
// filesystem's clock to move past its last change to the copy (a clock
// tick, a few milliseconds).
const MaxCopyClockWait = time.Second

// hintCopyView is the repair for a workspace too large to copy.
const hintCopyView = "Use the native sandbox backend (sandbox: native, or AIRLOCK_SANDBOX=native): it runs commands on an overlay and needs no copy; or make the workspace smaller"

// NewCopyView makes an overlay for one run on a sandbox that cannot mount
// one: Copy is a copy of the workspace (every entry but StateDir: files
// with their bytes, permission bits, owner and modification time,
// directories, symbolic links as links, hard-linked files as hard links;
// a pipe, socket or device is not copied). The command runs with Copy as
// its writable workspace; then Changes, Apply, Hold and Discard work as
// for NewOverlay's. A workspace past MaxCopyViewBytes or
// MaxCopyViewEntries (Options), or nested deeper than MaxCopyViewDepth,
// is refused with sandbox_unavailable before anything is copied.
func (w *Workspace) NewCopyView() (*Overlay, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	ws, err := w.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	wsfd := int(ws.Fd())
	// Counted first, so that a workspace too large costs a walk, not a
	// copy.
	if err := w.newCopier(-1).dir("", wsfd, -1, 0); err != nil {
		return nil, err
	}
	o, err := w.makeOverlay(overlayCopy)
	if err != nil {
		return nil, err
	}
	o.setPaths(true)
	if err := o.fillCopy(wsfd); err != nil {
		if derr := o.Discard(); derr != nil {
			return nil, errors.Join(err, derr)
		}
		return nil, err
	}
	return o, nil
}

// fillCopy copies the workspace at ws into the overlay's copy directory
// and writes the record of what it copied.
func (o *Overlay) fillCopy(ws int) error {
	dst, err := openDirBeneath(ws, o.rel()+"/"+overlayCopy)
	if err != nil {
		return fmt.Errorf("workspace: the copy view: %w", err)
	}
	defer unix.Close(dst)
	c := o.w.newCopier(dst)
	if err := c.dir("", ws, dst, 0); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(ws, &st); err != nil {
		return fmt.Errorf("workspace: the copy view: %w", err)
	}
	if err := c.setMeta(dst, ".", &st); err != nil {
		return fmt.Errorf("workspace: the copy view's root: %w", err)
	}
	if err := unix.Fstat(dst, &st); err != nil {
		return fmt.Errorf("workspace: the copy view: %w", err)
	}
	c.lastCtime = max(c.lastCtime, st.Ctim.Nano())
	// Written last, and again until its time is past every change made
	// to the copy (the comment at the top).
	rel := o.rel() + "/" + copyRecord
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if err := o.w.root.WriteFile(rel, c.record, 0o600); err != nil {
			return fmt.Errorf("workspace: the copy view's record: %w", err)
		}
		fi, err := o.w.root.Lstat(rel)
		if err != nil {
			return fmt.Errorf("workspace: the copy view's record: %w", err)
		}
		if fi.ModTime().UnixNano() > c.lastCtime {
			return nil
		}
		if time.Since(start) > MaxCopyClockWait {
			return fmt.Errorf("workspace: the filesystem's clock did not move past the copy view's last change in %v (MaxCopyClockWait)", MaxCopyClockWait)
		}
	}
}

// copier walks the workspace for a copy view: with dstRoot -1 it only
// counts, else it copies into dstRoot and records each entry copied.
type copier struct {
	maxBytes, maxEntries int64
	bytes, entries       int64
	// links maps a hard-linked file, met once, to the path of its copy,
	// so that its other names are linked to that copy (and counted once).
	links     map[fileID]string
	dstRoot   int
	record    []byte
	lastCtime int64 // the latest ctime of the copy's entries
}

type fileID struct{ dev, ino uint64 }

func (w *Workspace) newCopier(dstRoot int) *copier {
	return &copier{maxBytes: int64(w.opts.MaxCopyViewBytes), maxEntries: int64(w.opts.MaxCopyViewEntries),
		links: map[fileID]string{}, dstRoot: dstRoot}
}

// dir copies the entries of the workspace's directory from (at the
// canonical path rel, "" for the root) into to (-1 when counting).
func (c *copier) dir(rel string, from, to, depth int) error {
	if depth >= MaxCopyViewDepth {
		return tool.Errorf(tool.CodeSandboxUnavailable, hintCopyView,
			"this sandbox cannot mount an overlay, and the workspace's directories nest deeper than %d levels (workspace.MaxCopyViewDepth), more than it copies instead; nothing ran",
			MaxCopyViewDepth)
	}
	names, err := readNames(from)
	if err != nil {
		return fmt.Errorf("workspace: reading %q: %w", orRoot(rel), err)
	}
	for _, name := range names {
		if rel == "" && isStateName(name) {
			continue
		}
		p := path.Join(rel, name)
		st, ok, err := lstatAt(from, name)
		if err != nil {
			return fmt.Errorf("workspace: %q: %w", p, err)
		}
		typ := typeOf(st.Mode)
		if !ok || typ == TypeNone {
			continue // gone meanwhile, or a pipe, socket or device: not copied
		}
		if c.entries++; c.entries > c.maxEntries {
			return tool.Errorf(tool.CodeSandboxUnavailable, hintCopyView,
				"this sandbox cannot mount an overlay, and the workspace holds more than %s, the most it copies instead (MaxCopyViewEntries); nothing ran",
				plural.Count(int(c.maxEntries), "entry", "entries"))
		}
		switch typ {
		case TypeDir:
			err = c.copyDir(p, from, to, name, depth)
		case TypeFile:
			err = c.copyFile(p, from, to, name, &st)
		case TypeSymlink:
			err = c.copyLink(p, from, to, name, &st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func orRoot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func (c *copier) copyDir(p string, from, to int, name string, depth int) error {
	src, err := openDirBeneath(from, name)
	if err != nil {
		return fmt.Errorf("workspace: %q: %w", p, err)
	}
	defer unix.Close(src)
	dst := -1
	if to >= 0 {
		// Made private until it is filled, then given its own mode.
		if err := unix.Mkdirat(to, name, 0o700); err != nil {
			return fmt.Errorf("workspace: copying %q: %w", p, err)
		}
		if dst, err = openDirBeneath(to, name); err != nil {
			return fmt.Errorf("workspace: copying %q: %w", p, err)
		}
		defer unix.Close(dst)
	}
	if err := c.dir(p, src, dst, depth+1); err != nil {
		return err
	}
	if to < 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("workspace: %q: %w", p, err)
	}
	if err := c.setMeta(to, name, &st); err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	return c.recordEntry(p, to, name)
}

func (c *copier) copyFile(p string, from, to int, name string, st *unix.Stat_t) error {
	id := fileID{st.Dev, st.Ino}
	if first, ok := c.links[id]; ok && st.Nlink > 1 {
		if to < 0 {
			return nil
		}
		if err := unix.Linkat(c.dstRoot, first, to, name, 0); err != nil {
			return fmt.Errorf("workspace: copying %q as a link of %q: %w", p, first, err)
		}
		return c.recordEntry(p, to, name)
	}
	if c.bytes += st.Size; c.bytes > c.maxBytes {
		return tool.Errorf(tool.CodeSandboxUnavailable, hintCopyView,
			"this sandbox cannot mount an overlay, and the workspace's files hold more than %s, the most it copies instead (MaxCopyViewBytes); nothing ran",
			plural.Bytes(c.maxBytes))
	}
	if st.Nlink > 1 {
		c.links[id] = p
	}
	if to < 0 {
		return nil
	}
	// O_NONBLOCK: if a pipe was swapped in since the lstat, opening it
	// must not wait for a writer; it is then refused below.
	sfd, err := openBeneath(from, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	src := os.NewFile(uintptr(sfd), p)
	defer src.Close()
	var now unix.Stat_t
	if err := unix.Fstat(sfd, &now); err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	if typeOf(now.Mode) != TypeFile || now.Ino != st.Ino {
		return fmt.Errorf("workspace: copying %q: it was replaced while the workspace was copied", p)
	}
	dfd, err := unix.Openat(to, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	dst := os.NewFile(uintptr(dfd), p)
	defer dst.Close()
	// At most the size counted: a file growing meanwhile cannot take
	// the copy past MaxCopyViewBytes. (copy_file_range underneath.)
	if _, err := io.CopyN(dst, src, st.Size); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	if err := c.setMeta(to, name, &now); err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	return c.recordEntry(p, to, name)
}

func (c *copier) copyLink(p string, from, to int, name string, st *unix.Stat_t) error {
	if to < 0 {
		return nil
	}
	target, err := readlinkAt(from, name)
	if err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	if err := unix.Symlinkat(target, to, name); err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	if err := c.setMeta(to, name, st); err != nil {
		return fmt.Errorf("workspace: copying %q: %w", p, err)
	}
	return c.recordEntry(p, to, name)
}

// setMeta gives the copy name in dir the owner (where this process may
// give it), permission bits and times of st. The owner goes first: a
// change of owner clears setuid and setgid.
func (c *copier) setMeta(dir int, name string, st *unix.Stat_t) error {
	err := unix.Fchownat(dir, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.EPERM) {
		return err
	}
	if typeOf(st.Mode) != TypeSymlink {
		if err := unix.Fchmodat(dir, name, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	return unix.UtimesNanoAt(dir, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// recordEntry adds the copy name in dir, at the canonical path p, to the
// record: "ino size mtime_ns path" and a NUL (no path holds one).
func (c *copier) recordEntry(p string, dir int, name string) error {
	st, ok, err := lstatAt(dir, name)
	if err != nil || !ok {
		return fmt.Errorf("workspace: the copy of %q: %v", p, err)
	}
	c.lastCtime = max(c.lastCtime, st.Ctim.Nano())
	c.record = strconv.AppendUint(c.record, st.Ino, 10)
	c.record = append(c.record, ' ')
	c.record = strconv.AppendInt(c.record, st.Size, 10)
	c.record = append(c.record, ' ')
	c.record = strconv.AppendInt(c.record, st.Mtim.Nano(), 10)
	c.record = append(c.record, ' ')
	c.record = append(c.record, p...)
	c.record = append(c.record, 0)
	return nil
}

// copied is the state of one entry of the copy as NewCopyView left it.
type copied struct {
	ino          uint64
	size, mtimNs int64
}

// readCopyRecord reads a copy view's record, and the time it was written
// (its modification time, in the filesystem's clock).
func (o *Overlay) readCopyRecord() (map[string]copied, int64, error) {
	rel := o.rel() + "/" + copyRecord
	data, err := o.w.root.ReadFile(rel)
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: the copy view's record: %w", err)
	}
	fi, err := o.w.root.Lstat(rel)
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: the copy view's record: %w", err)
	}
	m := make(map[string]copied, strings.Count(string(data), "\x00"))
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 {
			return nil, 0, fmt.Errorf("workspace: the copy view's record is damaged at %q", line)
		}
		ino, err1 := strconv.ParseUint(f[0], 10, 64)
		size, err2 := strconv.ParseInt(f[1], 10, 64)
		mtim, err3 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, 0, fmt.Errorf("workspace: the copy view's record is damaged at %q: %w", line, err)
		}
		m[f[3]] = copied{ino: ino, size: size, mtimNs: mtim}
	}
	return m, fi.ModTime().UnixNano(), nil
}

// copyChanges compares a copy view's copy with the workspace at ws.
func (o *Overlay) copyChanges(ws int) (*ChangeSet, error) {
	rec, since, err := o.readCopyRecord()
	if err != nil {
		return nil, err
	}
	cp, err := openDirBeneath(ws, o.rel()+"/"+overlayCopy)
	if err != nil {
		return nil, fmt.Errorf("workspace: the copy view: %w", err)
	}
	defer unix.Close(cp)
	r := &copyReader{changeReader: &changeReader{set: &ChangeSet{}}, copied: rec, since: since}
	if err := r.walk("", cp, ws, false, 0); err != nil {
		return nil, err
	}
	// A file left as it was but linked meanwhile to a name the changes
	// add or rewrite is applied too, so that both names stay one file.
	changed := map[uint64]bool{}
	for _, c := range r.set.Changes {
		if c.Kind != ChangeDeleted && c.New.Type == TypeFile {
			changed[c.New.Ino] = true
		}
	}
	for _, c := range r.linked {
		if changed[c.New.Ino] {
			r.set.keep(c.Old.Size)
			if err := r.add(c); err != nil {
				return nil, err
			}
		}
	}
	return r.set, nil
}

// copyReader reads a copy view's changes. It shares changeReader's
// bookkeeping (add, deleted, oldTree, lowerState).
type copyReader struct {
	*changeReader
	copied map[string]copied
	since  int64 // the record's time: an entry of the copy changed before it is NewCopyView's
	// linked are the files the same as the workspace's but with other
	// names in the copy, as changes should those names be changed.
	linked []Change
}

// untouched reports whether the copy's entry at p is as NewCopyView left
// it: the same inode, size and modification time, and no change to the
// inode since (ctime, which no command can set back).
func (r *copyReader) untouched(p string, st *unix.Stat_t) bool {
	e, ok := r.copied[p]
	return ok && st.Ino == e.ino && st.Size == e.size && st.Mtim.Nano() == e.mtimNs && st.Ctim.Nano() < r.since
}

// walk compares the copy's directory cp (at the canonical path rel) with
// the workspace's directory ws. fresh: the directory is new as a whole
// (ws is -1), so everything in it is added with it.
func (r *copyReader) walk(rel string, cp, ws int, fresh bool, depth int) error {
	if depth >= MaxCopyViewDepth {
		return tool.Errorf(tool.CodeChangesTooLarge, "Nest directories less deeply",
			"the command made directories nested deeper than %d levels (workspace.MaxCopyViewDepth); none of its changes were applied", MaxCopyViewDepth)
	}
	names, err := readNames(cp)
	if err != nil {
		return fmt.Errorf("workspace: reading the copy at %q: %w", orRoot(rel), err)
	}
	if !fresh {
		wsNames, err := readNames(ws)
		if err != nil {
			return fmt.Errorf("workspace: reading %q: %w", orRoot(rel), err)
		}
		names = mergeSorted(names, wsNames)
	}
	for _, name := range names {
		if rel == "" && isStateName(name) {
			continue // the workspace's own state, or where the sandbox masked it in the copy
		}
		if err := r.entry(rel, name, cp, ws, fresh, depth); err != nil {
			return err
		}
	}
	return nil
}

// entry compares the entry name of the copy's directory cp with the
// workspace's directory ws.
func (r *copyReader) entry(rel, name string, cp, ws int, fresh bool, depth int) error {
	p := path.Join(rel, name)
	cst, inCopy, err := lstatAt(cp, name)
	if err != nil {
		return fmt.Errorf("workspace: the copy at %q: %w", p, err)
	}
	var wst unix.Stat_t
	inWs := false
	if !fresh {
		if wst, inWs, err = lstatAt(ws, name); err != nil {
			return fmt.Errorf("workspace: %q: %w", p, err)
		}
	}
	typ := typeOf(cst.Mode)
	switch {
	case !inCopy:
		if _, ok := r.copied[p]; !inWs || !ok {
			return nil // not copied: made in the workspace since, or a special file
		}
	case typ == TypeNone:
		r.set.Skipped = append(r.set.Skipped, p)
		return nil
	case !fresh && r.untouched(p, &cst):
		// No change of the command's, whatever the workspace holds now;
		// a directory's entries may be.
		if inWs && typ == TypeDir && typeOf(wst.Mode) == TypeDir {
			return r.descend(p, cp, ws, name, false, depth)
		}
		return nil
	}
	var old State
	if inWs {
		if old, err = r.lowerState(ws, name, &wst); err != nil {
			return err
		}
	}
	if !inCopy {
		return r.deleted(p, ws, name, old)
	}
	target := ""
	if typ == TypeSymlink {
		if target, err = readlinkAt(cp, name); err != nil {
			return fmt.Errorf("workspace: the copy at %q: %w", p, err)
		}
	}
	now := stateOf(&cst, target)
	c := Change{Path: p, Kind: ChangeAdded, Old: old, New: now, WithParent: fresh}
	if old.Type != TypeNone {
		c.Kind = ChangeModified
	}
	switch {
	case typ == TypeDir && old.Type == TypeDir:
		if old.Mode != now.Mode {
			if err := r.add(c); err != nil {
				return err
			}
		}
		return r.descend(p, cp, ws, name, false, depth)
	case typ == TypeDir:
		if old.Type != TypeNone {
			r.set.keep(old.Size)
		}
		if err := r.add(c); err != nil {
			return err
		}
		return r.descend(p, cp, -1, name, true, depth)
	}
	if old.Type == typ {
		same, err := r.same(cp, ws, name, &old, &now, &wst)
		if err != nil {
			return fmt.Errorf("workspace: comparing %q: %w", p, err)
		}
		if same {
			if typ == TypeFile && cst.Nlink > 1 {
				r.linked = append(r.linked, c)
			}
			return nil
		}
	}
	return r.replace(c, ws, name)
}

// same reports whether the copy's entry name equals the workspace's of
// the same type: a link's target; a file's mode, size, and modification
// time or else bytes. A workspace entry that is not a regular file (a
// pipe, counted as a file) is never read.
func (r *copyReader) same(cp, ws int, name string, old, now *State, wst *unix.Stat_t) (bool, error) {
	switch {
	case now.Type == TypeSymlink:
		return old.Target == now.Target, nil
	case typeOf(wst.Mode) != TypeFile, old.Mode != now.Mode, old.Size != now.Size:
		return false, nil
	case old.MtimeNs == now.MtimeNs:
		return true, nil
	}
	return sameContent(cp, ws, name)
}

// descend compares the copy's directory name in cp with the workspace's
// in ws (none when ws is -1).
func (r *copyReader) descend(p string, cp, ws int, name string, fresh bool, depth int) error {
	cd, err := openDirBeneath(cp, name)
	if err != nil {
		return fmt.Errorf("workspace: the copy at %q: %w", p, err)
	}
	defer unix.Close(cd)
	wd := -1
	if ws >= 0 {
		if wd, err = openDirBeneath(ws, name); err != nil {
			return fmt.Errorf("workspace: %q: %w", p, err)
		}
		defer unix.Close(wd)
	}
	return r.walk(p, cd, wd, fresh, depth+1)
}

// mergeSorted is the sorted union of two sorted lists of names.
func mergeSorted(a, b []string) []string {
	out := make([]string, 0, max(len(a), len(b)))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}
