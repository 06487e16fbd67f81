package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/tool"
)

// Conflict is a change Rollback left alone, and why: the path was changed
// since by someone else, and putting the old version back would lose
// that.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// RollbackResult is what Rollback did.
type RollbackResult struct {
	Restored  []string   `json:"restored"`  // paths put back as they were, newest change first
	Conflicts []Conflict `json:"conflicts"` // changes not undone
}

// Rollback undoes every change the session made, through the file tools
// and through commands' overlays, newest first, so that each path ends as
// it was before the session's first change to it: content, permissions
// and type restored, or removed again if the session made it. A path that
// was changed since by someone else is never overwritten: it is reported
// as a Conflict and its record kept, so that Rollback can be run again
// once the path is dealt with. Records fully undone are forgotten, so a
// second Rollback does nothing more. If a record cannot be read or
// applied, Rollback stops with an error and keeps it and the older ones:
// fixing the cause and calling it again is safe.
func (w *Workspace) Rollback(session string) (RollbackResult, error) {
	res := RollbackResult{Restored: []string{}, Conflicts: []Conflict{}}
	if err := w.ready(); err != nil {
		return res, err
	}
	if err := checkSession(session); err != nil {
		return res, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	d, err := w.openDir(SnapshotsDir+"/"+session, false)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeNotFound {
			return res, nil // nothing to undo
		}
		return res, fmt.Errorf("workspace: rollback of session %s: %v", session, err)
	}
	defer d.Close()
	names, err := snapshotNames(d)
	if err != nil {
		return res, fmt.Errorf("workspace: rollback of session %s: %w", session, err)
	}
	seen := map[string]bool{}   // paths restored by this Rollback
	byFile := map[string]bool{} // of those, paths a file-tool record rewrote
	restored := func(p string) {
		if !seen[p] {
			seen[p] = true
			res.Restored = append(res.Restored, p)
		}
	}
	for _, s := range slices.Backward(names) {
		h, content, err := readSnapshot(d, s.name)
		if err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: snapshot %s: %w", session, s.name, err)
		}
		var conflicts []Conflict
		if h.Kind == kindBatch {
			conflicts, err = w.undoBatch(session, s.name, content, restored, byFile)
		} else {
			var did bool
			var c *Conflict
			did, c, err = w.restore(h, content)
			if did {
				restored(h.Path)
				byFile[h.Path] = h.Kind == kindFile
			}
			if c != nil {
				conflicts = append(conflicts, *c)
			}
		}
		if err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: %s: %w", session, s.name, err)
		}
		res.Conflicts = append(res.Conflicts, conflicts...)
		if len(conflicts) > 0 {
			continue // kept, for a later Rollback
		}
		if err := d.RemoveAll(strings.TrimSuffix(s.name, snapshotSuffix) + oldSuffix); err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: forgetting %s: %w", session, s.name, err)
		}
		if err := d.Remove(s.name); err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: forgetting %s: %w", session, s.name, err)
		}
	}
	if len(res.Conflicts) == 0 {
		parent, err := w.openDir(SnapshotsDir, false)
		if err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: %v", session, err)
		}
		defer parent.Close()
		if err := parent.RemoveAll(session); err != nil {
			return res, fmt.Errorf("workspace: rollback of session %s: forgetting its snapshots: %w", session, err)
		}
	}
	return res, nil
}

// restore applies one record of the file tools. It reports whether the
// path is now as recorded because of it, or why it was left alone.
func (w *Workspace) restore(h snapshotHeader, content []byte) (bool, *Conflict, error) {
	if h.Kind == kindFile && h.After != "" {
		if c, err := w.changedSince(h); c != nil || err != nil {
			return false, c, err
		}
	}
	did, err := w.restoreRecord(h, content)
	if err == nil && !did && h.Kind == kindDir {
		if _, serr := w.root.Lstat(h.Path); serr == nil {
			return false, &Conflict{Path: h.Path, Reason: "the directory the session made holds what it did not make; it was kept"}, nil
		}
	}
	return did, nil, err
}

// changedSince compares the file a record of kind file left with the file
// there now.
func (w *Workspace) changedSince(h snapshotHeader) (*Conflict, error) {
	f, _, err := w.openFile(h.Path)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeNotFound {
			return nil, nil // removed since: putting the old version back overwrites nothing
		}
		return &Conflict{Path: h.Path, Reason: "no longer the file the session wrote: " + err.Error()}, nil
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, io.LimitReader(f, int64(w.opts.MaxWriteBytes)+1)); err != nil {
		return nil, w.fsError(h.Path, err)
	}
	if hex.EncodeToString(sum.Sum(nil)) != h.After {
		return &Conflict{Path: h.Path, Reason: "changed since the session wrote it"}, nil
	}
	return nil, nil
}

// undoBatch undoes a batch record's changes, last first. A change already
// undone (by an earlier Rollback that stopped at a conflict) is skipped.
//
// rewritten names the paths a file-tool record of the session, later than
// the batch, has just put back: such a file holds what the command left,
// written anew, so its inode differs from the one the batch recorded.
func (w *Workspace) undoBatch(session, rec string, manifest []byte, restored func(string), rewritten map[string]bool) ([]Conflict, error) {
	var m batchManifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("the manifest: %w", err)
	}
	ws, err := w.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	wsfd := int(ws.Fd())
	oldfd, err := openDirBeneath(wsfd, SnapshotsDir+"/"+session+"/"+strings.TrimSuffix(rec, snapshotSuffix)+oldSuffix)
	if err != nil {
		return nil, err
	}
	defer unix.Close(oldfd)
	var conflicts []Conflict
	for i, c := range slices.Backward(m.Changes) {
		if !validCanonical(c.Path) {
			return conflicts, fmt.Errorf("the manifest names %q, not a canonical workspace path", c.Path)
		}
		did, why, err := undoOne(wsfd, oldfd, strconv.Itoa(i), &c, rewritten[c.Path])
		if err != nil {
			return conflicts, fmt.Errorf("%q: %w", c.Path, err)
		}
		if why != "" {
			conflicts = append(conflicts, Conflict{Path: c.Path, Reason: why})
		}
		if did {
			restored(c.Path)
		}
	}
	if err := unix.Syncfs(wsfd); err != nil {
		return conflicts, err
	}
	return conflicts, nil
}

// undoOne undoes one change of a batch: the entry the change left is
// checked to be the same inode, size and time (else someone changed it
// since: a conflict), then the old version kept aside is renamed back
// over it, or it is removed when there was none.
func undoOne(ws, oldDir int, old string, c *Change, rewritten bool) (bool, string, error) {
	_, kept, err := lstatAt(oldDir, old)
	if err != nil {
		return false, "", err
	}
	wd, err := openDirBeneath(ws, dirOf(c.Path))
	if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		return false, "", err
	}
	if wd < 0 {
		if kept {
			return false, "its directory was removed or replaced since; the old version is kept in the snapshot", nil
		}
		return false, "", nil // gone with its directory: nothing of the session's is left
	}
	defer unix.Close(wd)
	name := baseOf(c.Path)
	cur, exists, err := lstatAt(wd, name)
	if err != nil {
		return false, "", err
	}
	if c.Kind == ChangeModified && c.Old.Type == TypeDir && c.New.Type == TypeDir {
		if !exists || typeOf(cur.Mode) != TypeDir {
			return false, "no longer the directory the command left", nil
		}
		return true, "", unix.Fchmodat(wd, name, c.Old.Mode, 0)
	}
	if c.Kind == ChangeDeleted {
		switch {
		case !kept:
			return false, "", nil // undone already
		case exists:
			return false, "something was made there since the command deleted it", nil
		}
		return true, "", unix.Renameat(oldDir, old, wd, name)
	}
	if c.Old.Type != TypeNone && !kept {
		return false, "", nil // the old version is back already
	}
	if !exists {
		if !kept {
			return false, "", nil // removed since, or undone already
		}
		return true, "", unix.Renameat(oldDir, old, wd, name) // nothing to overwrite
	}
	if why := changedFrom(wd, name, &cur, &c.New); why != "" && !(rewritten && typeOf(cur.Mode) == c.New.Type) {
		return false, why, nil
	}
	if typeOf(cur.Mode) == TypeDir {
		// What the session put there first goes (its entries were undone
		// before it); if it is not empty, someone else's files are in it.
		if err := unix.Unlinkat(wd, name, unix.AT_REMOVEDIR); err != nil {
			if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
				return false, "the directory the command made holds files it did not make", nil
			}
			return false, "", err
		}
	}
	if kept {
		return true, "", unix.Renameat(oldDir, old, wd, name)
	}
	if typeOf(cur.Mode) != TypeDir {
		if err := unix.Unlinkat(wd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return false, "", err
		}
	}
	return true, "", nil
}

// changedFrom says how the entry name in dir (stat cur) differs from the
// state a change left, or "" when it is that entry still.
func changedFrom(dir int, name string, cur *unix.Stat_t, want *State) string {
	t := typeOf(cur.Mode)
	switch {
	case t != want.Type:
		return fmt.Sprintf("replaced since by a %s", orNone(t))
	case t == TypeDir:
		return ""
	case cur.Ino != want.Ino || cur.Size != want.Size || cur.Mtim.Nano() != want.MtimeNs:
		return "changed since the command wrote it"
	case t == TypeSymlink:
		if target, err := readlinkAt(dir, name); err != nil || target != want.Target {
			return "the link was changed since the command made it"
		}
	}
	return ""
}

func orNone(t EntryType) string {
	if t == TypeNone {
		return "special file"
	}
	return string(t)
}
