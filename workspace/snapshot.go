package workspace

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"airlock.dev/airlock/tool"
)

// SnapshotsDir holds one directory of snapshots per session.
const SnapshotsDir = StateDir + "/snapshots"

// MaxSessionLength bounds a session id; a session id is 1 to
// MaxSessionLength letters, digits, '_' or '-'.
const MaxSessionLength = 64

// checkSession refuses a session id that could not name a directory
// safely.
func checkSession(s string) error {
	ok := len(s) >= 1 && len(s) <= MaxSessionLength
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return tool.Errorf(tool.CodeInvalidCall, hintSession, "the session id %q is not 1 to %d letters, digits, '_' or '-'", s, MaxSessionLength)
	}
	return nil
}

// A snapshot is one file per change under SnapshotsDir/<session>/, named
// by a sequence number (00000001.snap, ...): a JSON header line, then the
// previous content, raw (it may be binary). Kind "dir" records a directory
// a write created; kind "file" a file's previous state, which is its
// content and permissions, or its absence.
//
// Kind "batch" records the changes one command made through an overlay
// (Overlay.Apply): its content is the manifest, and the old versions it
// moved aside are in a directory beside it, NNNNNNNN.old, one entry per
// change by its index.
const (
	kindFile  = "file"
	kindDir   = "dir"
	kindBatch = "batch"

	snapshotVersion = 1
	snapshotSuffix  = ".snap"
	// partialSuffix marks a record being written; a crash can leave one,
	// which pruneSnapshots removes once it is KeepPartial old.
	partialSuffix = ".partial"

	// maxClaimAttempts bounds the tries for a free sequence number when
	// another writer takes them first.
	maxClaimAttempts = 100
)

type snapshotHeader struct {
	Version int    `json:"version"`
	Path    string `json:"path"` // canonical
	Kind    string `json:"kind"` // kindFile or kindDir
	Existed bool   `json:"existed"`
	Mode    uint32 `json:"mode,omitempty"` // permission bits of a file that existed
	Size    int    `json:"size"`           // bytes of content after the header line
	SHA256  string `json:"sha256,omitempty"`
	// After is the SHA-256 of what a file change left (kind file), by
	// which Rollback tells a file someone changed since; empty in records
	// written before it was kept.
	After string `json:"after,omitempty"`
	// Kept is the size of the old versions a batch moved aside.
	Kept int64 `json:"kept,omitempty"`
}

// snapshot records h and content as the session's next snapshot, durably,
// before the change it describes is made, and returns the record's name.
// A failure is a runtime fault: the change must then not be made.
func (w *Workspace) snapshot(session string, h snapshotHeader, content []byte) (string, error) {
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("workspace: cannot snapshot %s for session %s: %v", h.Path, session, err)
	}
	d, err := w.openDir(SnapshotsDir+"/"+session, true)
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	names, err := snapshotNames(d)
	if err != nil {
		return fail(err)
	}
	n := 1
	if len(names) > 0 {
		n = names[len(names)-1].seq + 1
	}
	h.Version, h.Size = snapshotVersion, len(content)
	if h.Kind == kindFile && h.Existed {
		sum := sha256.Sum256(content)
		h.SHA256 = hex.EncodeToString(sum[:])
	}
	head, err := json.Marshal(h)
	if err != nil {
		return fail(err)
	}
	data := slices.Concat(head, []byte{'\n'}, content)
	// The record is written whole under a name of its own, then linked
	// to its sequence number: a crash (or SIGKILL) while writing leaves a
	// partial file Rollback never reads, not a damaged record. The link
	// also claims the number: it fails if another writer took it.
	var rnd [8]byte
	rand.Read(rnd[:])
	partial := hex.EncodeToString(rnd[:]) + partialSuffix
	f, err := d.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(err)
	}
	defer d.Remove(partial)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	for range maxClaimAttempts {
		name := fmt.Sprintf("%08d%s", n, snapshotSuffix)
		err := d.Link(partial, name)
		if errors.Is(err, fs.ErrExist) {
			n++
			continue
		}
		if err == nil {
			err = syncDir(d)
		}
		if err != nil {
			d.Remove(name)
			return fail(err)
		}
		return name, nil
	}
	return fail(fmt.Errorf("no free sequence number after %d tries", maxClaimAttempts))
}

type snapshotName struct {
	name string
	seq  int
}

// snapshotNames lists the snapshots in a session's directory, oldest
// first; other names are ignored.
func snapshotNames(d *os.Root) ([]snapshotName, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []snapshotName
	for _, name := range all {
		num, ok := strings.CutSuffix(name, snapshotSuffix)
		if !ok {
			continue
		}
		seq, err := strconv.Atoi(num)
		if err != nil || seq < 1 {
			continue
		}
		out = append(out, snapshotName{name, seq})
	}
	slices.SortFunc(out, func(a, b snapshotName) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

// readSnapshot reads and checks one snapshot.
func readSnapshot(d *os.Root, name string) (snapshotHeader, []byte, error) {
	var h snapshotHeader
	f, fi, err := openRegular(d, name)
	if err != nil {
		return h, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()))
	if err != nil {
		return h, nil, err
	}
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return h, nil, errors.New("no header line")
	}
	if err := json.Unmarshal(data[:i], &h); err != nil {
		return h, nil, fmt.Errorf("header: %v", err)
	}
	content := data[i+1:]
	switch {
	case h.Version != snapshotVersion:
		return h, nil, fmt.Errorf("version %d, want %d", h.Version, snapshotVersion)
	case h.Kind != kindFile && h.Kind != kindDir && h.Kind != kindBatch:
		return h, nil, fmt.Errorf("unknown kind %q", h.Kind)
	case h.Kind == kindBatch && h.Path != "":
		return h, nil, fmt.Errorf("a batch names the path %q", h.Path)
	case h.Kind != kindBatch && !validCanonical(h.Path):
		return h, nil, fmt.Errorf("path %q is not a canonical workspace path", h.Path)
	case len(content) != h.Size:
		return h, nil, fmt.Errorf("%d bytes of content, header says %d (damaged)", len(content), h.Size)
	}
	if h.Kind == kindFile && h.Existed {
		if sum := sha256.Sum256(content); hex.EncodeToString(sum[:]) != h.SHA256 {
			return h, nil, errors.New("content does not match its SHA-256 (damaged)")
		}
	}
	return h, content, nil
}

// validCanonical reports whether p has the form Resolve gives a path
// other than the root, outside StateDir.
func validCanonical(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 || inState(p) {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// restoreRecord applies one record of the file tools. It reports whether
// the path is now as recorded because of it (a directory kept because it
// is not empty is not).
func (w *Workspace) restoreRecord(h snapshotHeader, content []byte) (bool, error) {
	name := baseOf(h.Path)
	if h.Kind == kindFile && h.Existed {
		d, err := w.openDir(dirOf(h.Path), true)
		if err != nil {
			return false, err
		}
		defer d.Close()
		if err := replaceFile(d, name, content, fs.FileMode(h.Mode), true); err != nil {
			return false, w.fsError(h.Path, err)
		}
		return true, nil
	}
	d, err := w.openDir(dirOf(h.Path), false)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && (te.Code == tool.CodeNotFound || te.Code == tool.CodeNotADirectory) {
			return h.Kind == kindFile, nil // its parent is gone: so is it
		}
		return false, err
	}
	defer d.Close()
	fi, err := d.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return h.Kind == kindFile, nil
	case err != nil:
		return false, w.fsError(h.Path, err)
	}
	if h.Kind == kindDir {
		if !fi.IsDir() {
			return false, nil // something else took its place since
		}
		err := d.Remove(name)
		switch {
		case err == nil:
			return true, nil
		case isErrno(err, errNotEmpty) || errors.Is(err, fs.ErrExist):
			return false, nil // it holds what the session did not create
		}
		return false, w.fsError(h.Path, err)
	}
	if fi.IsDir() {
		return false, tool.Errorf(tool.CodeNotAFile, "Move the directory away, then roll back again",
			"%q, which the session created as a file, is now a directory", h.Path)
	}
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, w.fsError(h.Path, err)
	}
	return true, nil
}
