package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/tool"
)

// OverlaysDir holds the copy-on-write layers commands run on: one
// directory per run, with the overlay's upper and work directories. A
// command writes only there; its changes reach the workspace when they
// are applied (Overlay.Apply), each old version first moved aside into
// the session's snapshot, so that Rollback can put it back.
const OverlaysDir = StateDir + "/overlay"

// The names inside one overlay's directory.
const (
	overlayUpper = "upper"
	overlayWork  = "work"
	overlayCopy  = "copy"     // a copy view's copy of the workspace (NewCopyView)
	copyRecord   = "copied"   // a copy view's record of what it copied
	overlayLock  = "lock"     // flocked by the process that owns the overlay
	markApplying = "applying" // holds the session whose snapshot the changes are being applied under
	heldResult   = "result"   // a held overlay's result, given back when it is applied
	heldPrefix   = "held-"    // a held overlay's directory is heldPrefix + the approval's id
)

// Overlay is one run's copy-on-write layer: the sandbox mounts it over
// the workspace (Upper and Work), or, for a copy view, runs the command
// on a copy of the workspace (Copy); afterwards its changes are applied,
// held for a person's approval, or discarded. Exactly one of Apply, Hold
// and Discard ends it; until then a lock marks it as in use, so that
// Recover in another process leaves it alone.
type Overlay struct {
	w    *Workspace
	name string   // its directory under OverlaysDir
	lock *os.File // the flock
	// Upper and Work are the host paths of overlayfs's upperdir and
	// workdir, for sandbox.Overlay; empty for a copy view.
	Upper, Work string
	// Copy is a copy view's copy of the workspace (NewCopyView), the
	// directory the sandbox mounts writable as the workspace; empty for
	// an overlay.
	Copy string
}

// NewOverlay makes an empty overlay for one run.
func (w *Workspace) NewOverlay() (*Overlay, error) {
	o, err := w.makeOverlay(overlayUpper, overlayWork)
	if err != nil {
		return nil, err
	}
	o.setPaths(false)
	return o, nil
}

// makeOverlay makes a new, locked overlay directory holding the empty
// directories dirs.
func (w *Workspace) makeOverlay(dirs ...string) (*Overlay, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := hex.EncodeToString(rnd[:])
	rel := OverlaysDir + "/" + name
	mk := []string{StateDir, OverlaysDir, rel}
	for _, d := range dirs {
		mk = append(mk, rel+"/"+d)
	}
	for _, d := range mk {
		if err := w.root.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("workspace: making the overlay %s: %w", d, err)
		}
	}
	o := &Overlay{w: w, name: name}
	if err := o.takeLock(); err != nil {
		w.root.RemoveAll(rel)
		return nil, err
	}
	return o, nil
}

// setPaths fills in the host paths of an overlay's layers, or of a copy
// view's copy.
func (o *Overlay) setPaths(copyView bool) {
	dir := filepath.Join(o.w.dir, o.rel())
	if copyView {
		o.Copy = filepath.Join(dir, overlayCopy)
		return
	}
	o.Upper, o.Work = filepath.Join(dir, overlayUpper), filepath.Join(dir, overlayWork)
}

func (o *Overlay) rel() string { return OverlaysDir + "/" + o.name }

// takeLock opens the overlay's lock file and locks it without waiting.
func (o *Overlay) takeLock() error {
	f, err := o.w.root.OpenFile(o.rel()+"/"+overlayLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("workspace: the overlay's lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errOverlayBusy
		}
		return fmt.Errorf("workspace: locking the overlay: %w", err)
	}
	o.lock = f
	return nil
}

var errOverlayBusy = errors.New("workspace: the overlay is in use by another process")

func (o *Overlay) release() {
	if o.lock != nil {
		o.lock.Close() // drops the flock
		o.lock = nil
	}
}

// Changes reads what the run changed, compared with the workspace now.
func (o *Overlay) Changes() (*ChangeSet, error) {
	ws, err := o.w.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	if o.Copy != "" {
		return o.copyChanges(int(ws.Fd()))
	}
	up, err := openDirBeneath(int(ws.Fd()), o.rel()+"/"+overlayUpper)
	if err != nil {
		return nil, fmt.Errorf("workspace: the overlay's upper layer: %w", err)
	}
	defer unix.Close(up)
	return readChanges(int(ws.Fd()), up)
}

// Discard forgets the run's changes; the workspace stays as it was.
func (o *Overlay) Discard() error {
	defer o.release()
	if err := o.w.root.RemoveAll(o.rel()); err != nil {
		return fmt.Errorf("workspace: discarding the overlay: %w", err)
	}
	return nil
}

// Hold keeps the run's changes for a person's decision, under the
// approval id, with the result the call gives once they are applied
// (HeldOverlay finds it again). The workspace stays as it was.
func (o *Overlay) Hold(id string, result []byte) error {
	defer o.release()
	if err := checkSession(id); err != nil {
		return err
	}
	if err := o.w.root.WriteFile(o.rel()+"/"+heldResult, result, 0o600); err != nil {
		return fmt.Errorf("workspace: holding the overlay: %w", err)
	}
	held := heldPrefix + id
	if err := o.w.root.Rename(o.rel(), OverlaysDir+"/"+held); err != nil {
		return fmt.Errorf("workspace: holding the overlay: %w", err)
	}
	o.name = held
	return nil
}

// HeldOverlay reopens the changes held under the approval id, with the
// result to give back once they are applied. It is not_found when there
// are none (already applied, discarded or pruned).
func (w *Workspace) HeldOverlay(id string) (*Overlay, []byte, error) {
	if err := w.ready(); err != nil {
		return nil, nil, err
	}
	if err := checkSession(id); err != nil {
		return nil, nil, err
	}
	o := &Overlay{w: w, name: heldPrefix + id}
	if _, err := w.root.Lstat(o.rel()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, tool.Errorf(tool.CodeNotFound, "The changes were applied, discarded or pruned already; run the command again",
			"no changes are held under approval %s", id)
	}
	if err := o.takeLock(); err != nil {
		return nil, nil, err
	}
	_, err := w.root.Lstat(o.rel() + "/" + overlayCopy)
	o.setPaths(err == nil)
	result, err := w.root.ReadFile(o.rel() + "/" + heldResult)
	if err != nil {
		o.release()
		return nil, nil, fmt.Errorf("workspace: the held overlay's result: %w", err)
	}
	return o, result, nil
}

// Applied is what Apply did.
type Applied struct {
	Added, Modified, Deleted int
	Record                   string // the snapshot record that can undo it
}

// Apply applies set, as Changes read it, to the workspace for session:
// first the record of every change goes into the session's snapshot
// (durably), then each old version is moved aside into it and each new
// one moved into place, by rename, so that each path is at every moment
// either as it was or as the command left it. A crash part way is
// finished by Recover. An empty set applies nothing.
func (o *Overlay) Apply(session string, set *ChangeSet) (Applied, error) {
	defer o.release()
	var a Applied
	if err := checkSession(session); err != nil {
		return a, err
	}
	if len(set.Changes) == 0 {
		return a, o.w.root.RemoveAll(o.rel())
	}
	w := o.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.root.WriteFile(o.rel()+"/"+markApplying, []byte(session), 0o600); err != nil {
		return a, fmt.Errorf("workspace: marking the overlay: %w", err)
	}
	if err := syncPath(w.root, o.rel()); err != nil {
		return a, err
	}
	m := batchManifest{Overlay: o.name, Source: sourceUpper, Changes: set.Changes}
	if o.Copy != "" {
		m.Source = sourceCopy
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return a, err
	}
	rec, err := w.snapshot(session, snapshotHeader{Kind: kindBatch, Kept: set.OldBytes}, manifest)
	if err != nil {
		return a, err
	}
	if err := w.applyBatch(session, rec, &m); err != nil {
		return a, err
	}
	a.Added, a.Modified, a.Deleted = set.Counts()
	a.Record = rec
	return a, nil
}

// batchManifest is the content of a snapshot record of kind batch: the
// changes one command made, in the order they are applied. The old
// version of change i, when one was kept, is the entry named i in the
// record's directory (the record's name with oldSuffix).
type batchManifest struct {
	Overlay string `json:"overlay"`
	// Source is the directory of the overlay the new versions are
	// renamed from: sourceUpper (or "", as records made before copy
	// views read) or sourceCopy.
	Source  string   `json:"source,omitempty"`
	Changes []Change `json:"changes"`
}

// The sources of a batch's new versions.
const (
	sourceUpper = "upper" // an overlay's upper layer
	sourceCopy  = "copy"  // a copy view's copy
)

// sourceDir is the directory, under the overlay's, that the new versions
// are renamed from.
func (m *batchManifest) sourceDir() (string, error) {
	switch m.Source {
	case "", sourceUpper:
		return overlayUpper, nil
	case sourceCopy:
		return overlayCopy, nil
	}
	return "", fmt.Errorf("workspace: the batch record names the source %q, neither %q nor %q", m.Source, sourceUpper, sourceCopy)
}

const oldSuffix = ".old"

// applyHook, when set (by tests only), is called before each change is
// applied.
var applyHook func(i int)

// applyBatch carries out a batch record's changes from its overlay. Each
// step looks first whether it was done (by a run that crashed), so that
// it can be run again from the start. The caller holds w.mu.
func (w *Workspace) applyBatch(session, rec string, m *batchManifest) error {
	ws, err := w.root.Open(".")
	if err != nil {
		return err
	}
	defer ws.Close()
	wsfd := int(ws.Fd())
	snaps := SnapshotsDir + "/" + session + "/"
	oldRel := snaps + strings.TrimSuffix(rec, snapshotSuffix) + oldSuffix
	if err := w.root.Mkdir(oldRel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	oldfd, err := openDirBeneath(wsfd, oldRel)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer unix.Close(oldfd)
	src, err := m.sourceDir()
	if err != nil {
		return err
	}
	srcRel := OverlaysDir + "/" + m.Overlay + "/" + src
	for i, c := range m.Changes {
		if applyHook != nil {
			applyHook(i)
		}
		if c.WithParent {
			continue // moved into place with its directory
		}
		if err := applyOne(wsfd, srcRel, oldfd, fmt.Sprint(i), &c); err != nil {
			return fmt.Errorf("workspace: applying the change to %q: %w", c.Path, err)
		}
	}
	if err := unix.Syncfs(wsfd); err != nil {
		return fmt.Errorf("workspace: syncing the applied changes: %w", err)
	}
	// Done: the overlay goes, its marker first, so that Recover never
	// applies it again.
	ovRel := OverlaysDir + "/" + m.Overlay
	if err := w.root.Remove(ovRel + "/" + markApplying); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return w.root.RemoveAll(ovRel)
}

// applyOne carries out one change: the workspace's entry (if any) is
// kept aside as old (a hard link for a file or link, so that the path is
// never empty; a rename for a directory), then the new version, the
// entry at the same path in srcRel (an upper layer or a copy view's
// copy), is renamed into place. A new version no longer in srcRel was
// moved into place already.
func applyOne(ws int, srcRel string, oldDir int, old string, c *Change) error {
	parent := dirOf(c.Path)
	name := baseOf(c.Path)
	wd, err := openDirBeneath(ws, parent)
	if err != nil {
		return err
	}
	defer unix.Close(wd)
	_, kept, err := lstatAt(oldDir, old)
	if err != nil {
		return err
	}
	cur, exists, err := lstatAt(wd, name)
	if err != nil {
		return err
	}
	if c.Kind == ChangeDeleted {
		if kept || !exists {
			return nil
		}
		return unix.Renameat(wd, name, oldDir, old)
	}
	if c.Kind == ChangeModified && c.Old.Type == TypeDir && c.New.Type == TypeDir {
		// Only the directory's mode changed; its entries are changes of
		// their own.
		return unix.Fchmodat(wd, name, c.New.Mode, 0)
	}
	ud, err := openDirBeneath(ws, under(srcRel, parent))
	if errors.Is(err, unix.ENOENT) {
		return nil // its directory was moved into place already
	}
	if err != nil {
		return err
	}
	defer unix.Close(ud)
	_, pending, err := lstatAt(ud, name)
	if err != nil || !pending {
		return err // moved into place already
	}
	if exists && !kept {
		dirs := typeOf(cur.Mode) == TypeDir || c.New.Type == TypeDir
		if dirs {
			err = unix.Renameat(wd, name, oldDir, old)
		} else if err = unix.Linkat(wd, name, oldDir, old, 0); errors.Is(err, unix.EPERM) {
			// protected_hardlinks: another user's file cannot be linked;
			// it is moved aside instead (the path is empty a moment).
			err = unix.Renameat(wd, name, oldDir, old)
		}
		if err != nil {
			return err
		}
	}
	return unix.Renameat(ud, name, wd, name)
}

// under joins a directory and a canonical path ("." for the root).
func under(dir, canon string) string {
	if canon == "." {
		return dir
	}
	return dir + "/" + canon
}

// syncPath flushes the directory rel's entries.
func syncPath(root *os.Root, rel string) error {
	f, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// KeepHeld is how long changes held for a person's decision are kept
// before Recover discards them: a little longer than an approval lives
// (store.DefaultApprovalTTL, a day).
const KeepHeld = 48 * time.Hour

// Recover finishes what a crash interrupted and tidies OverlaysDir: an
// overlay whose changes were being applied is applied to the end; one no
// process holds and nobody waits on (a run that crashed) is discarded;
// held changes older than KeepHeld are discarded. Overlays in use by a
// running process are left alone. Then the snapshots of sessions idle
// for KeepSnapshots are pruned. It returns the overlays it finished
// applying. Every door calls it when it opens the workspace.
func (w *Workspace) Recover() ([]string, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	finished, err := w.recoverOverlays()
	return finished, errors.Join(err, w.pruneSnapshots(time.Now()))
}

func (w *Workspace) recoverOverlays() ([]string, error) {
	f, err := w.root.Open(OverlaysDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var finished []string
	var errs []error
	for _, name := range names {
		o := &Overlay{w: w, name: name}
		if err := o.takeLock(); err != nil {
			if !errors.Is(err, errOverlayBusy) {
				errs = append(errs, err)
			}
			continue
		}
		done, err := w.recoverOne(o)
		o.release()
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace: recovering the overlay %s: %w", name, err))
		}
		if done {
			finished = append(finished, name)
		}
	}
	return finished, errors.Join(errs...)
}

// recoverOne looks at one overlay no process holds (o's lock is taken).
func (w *Workspace) recoverOne(o *Overlay) (bool, error) {
	rel := o.rel()
	session, err := w.root.ReadFile(rel + "/" + markApplying)
	switch {
	case err == nil:
		return w.resumeApply(string(session), o.name)
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if strings.HasPrefix(o.name, heldPrefix) {
		fi, err := w.root.Lstat(rel + "/" + heldResult)
		if err == nil && time.Since(fi.ModTime()) < KeepHeld {
			return false, nil
		}
	}
	return false, w.root.RemoveAll(rel)
}

// resumeApplyDepth is how many of a session's newest records Recover
// looks through for the batch an interrupted Apply was making: the
// interrupted one is the newest but for records other calls of the
// session made meanwhile.
const resumeApplyDepth = 64

// resumeApply finishes applying the overlay named overlay for session: it
// finds the batch record naming it and carries it out again (each step
// skips what was done). With no such record the crash came before the
// record was written, so nothing was applied: the overlay is discarded.
func (w *Workspace) resumeApply(session, overlay string) (bool, error) {
	if err := checkSession(session); err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	d, err := w.openDir(SnapshotsDir+"/"+session, false)
	if err == nil {
		defer d.Close()
		names, err := snapshotNames(d)
		if err != nil {
			return false, err
		}
		for i := len(names) - 1; i >= 0 && i >= len(names)-resumeApplyDepth; i-- {
			h, content, err := readSnapshot(d, names[i].name)
			if err != nil || h.Kind != kindBatch {
				continue
			}
			var m batchManifest
			if json.Unmarshal(content, &m) != nil || m.Overlay != overlay {
				continue
			}
			return true, w.applyBatch(session, names[i].name, &m)
		}
	}
	return false, w.root.RemoveAll(OverlaysDir + "/" + overlay)
}

// Close lets go of an overlay reopened only to be read (HeldOverlay for a
// diff): it stays as it is, held.
func (o *Overlay) Close() { o.release() }
