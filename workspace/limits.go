package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"airlock.dev/airlock/plural"
	"airlock.dev/airlock/tool"
)

// SessionKept is the size of the old versions the session's snapshot
// keeps: the file tools' records and the commands' batches.
func (w *Workspace) SessionKept(session string) (int64, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	d, err := w.openDir(SnapshotsDir+"/"+session, false)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeNotFound {
			return 0, nil
		}
		return 0, err
	}
	defer d.Close()
	names, err := snapshotNames(d)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range names {
		h, err := readHeader(d, s.name)
		if err != nil {
			return 0, fmt.Errorf("workspace: snapshot %s of session %s: %w", s.name, session, err)
		}
		if h.Kind == kindBatch {
			n += h.Kept
		} else {
			n += int64(h.Size)
		}
	}
	return n, nil
}

// maxHeaderBytes bounds a record's header line as readHeader reads it.
const maxHeaderBytes = 64 << 10

// readHeader reads only a record's header line.
func readHeader(d *os.Root, name string) (snapshotHeader, error) {
	var h snapshotHeader
	f, err := d.Open(name)
	if err != nil {
		return h, err
	}
	defer f.Close()
	buf := make([]byte, maxHeaderBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return h, err
	}
	line, _, ok := strings.Cut(string(buf[:n]), "\n")
	if !ok {
		return h, errors.New("no header line")
	}
	return h, json.Unmarshal([]byte(line), &h)
}

// CheckSnapshotRoom refuses, before a command runs, a session whose
// snapshot already keeps MaxSessionSnapshotBytes: its changes could not
// be kept for rollback. It returns what the snapshot keeps, for OverLimit.
func (w *Workspace) CheckSnapshotRoom(session string) (int64, error) {
	kept, err := w.SessionKept(session)
	if err != nil {
		return 0, err
	}
	if kept >= int64(w.opts.MaxSessionSnapshotBytes) {
		return kept, tool.Errorf(tool.CodeChangesTooLarge,
			"A person rolls the session back (airlock rollback --session ID) or starts a new session; nothing ran",
			"the session's snapshot already keeps %s of old versions, the most it may (MaxSessionSnapshotBytes, %s)",
			plural.Bytes(kept), plural.Bytes(int64(w.opts.MaxSessionSnapshotBytes)))
	}
	return kept, nil
}

// OverLimit says why set cannot be applied without a person's say, for a
// session whose snapshot keeps kept bytes (SessionKept): the old versions
// it would keep are past a snapshot limit. It is "" within the limits.
func (w *Workspace) OverLimit(set *ChangeSet, kept int64) string {
	if set.LargestOld > int64(w.opts.MaxSnapshotFileBytes) {
		return fmt.Sprintf("it replaces or deletes a file of %s, over the %s one old version may take in the snapshot (MaxSnapshotFileBytes)",
			plural.Bytes(set.LargestOld), plural.Bytes(int64(w.opts.MaxSnapshotFileBytes)))
	}
	if kept+set.OldBytes > int64(w.opts.MaxSessionSnapshotBytes) {
		return fmt.Sprintf("keeping its old versions (%s) would take the session's snapshot past %s (MaxSessionSnapshotBytes)",
			plural.Bytes(set.OldBytes), plural.Bytes(int64(w.opts.MaxSessionSnapshotBytes)))
	}
	return ""
}

// pruneSnapshots forgets the snapshots of sessions whose last change is
// older than KeepSnapshots.
func (w *Workspace) pruneSnapshots(now time.Time) error {
	d, err := w.openDir(SnapshotsDir, false)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeNotFound {
			return nil
		}
		return err
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	sessions, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range sessions {
		fi, err := d.Lstat(s)
		if err != nil || !fi.IsDir() {
			continue
		}
		if now.Sub(fi.ModTime()) < KeepSnapshots { // a session directory's time moves with each record claimed in it
			errs = append(errs, prunePartials(d, s, now))
			continue
		}
		if err := d.RemoveAll(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KeepPartial is how old a record left half written by a crash must be
// before pruneSnapshots removes it: older than any write of a record in
// progress.
const KeepPartial = time.Hour

// prunePartials removes the session's records left half written.
func prunePartials(d *os.Root, session string, now time.Time) error {
	f, err := d.Open(session)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if !strings.HasSuffix(n, partialSuffix) {
			continue
		}
		if fi, err := d.Lstat(session + "/" + n); err == nil && now.Sub(fi.ModTime()) > KeepPartial {
			errs = append(errs, d.Remove(session+"/"+n))
		}
	}
	return errors.Join(errs...)
}
