package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/sys/unix"

	"airlock.dev/airlock/plural"
	"airlock.dev/airlock/tool"
)

// A diff shows changes the way git does, so that people and tools read
// it alike: per path a "diff --airlock a/PATH b/PATH" line, git's
// extended header lines for a new or deleted file and a mode change, then
// "--- a/PATH" and "+++ b/PATH" ("/dev/null" for a side that is absent)
// and unified hunks with DiffContextLines of context. A symbolic link's
// content is its target, as in git. A directory added or deleted as a
// whole is shown as its files, each; an empty one as a header alone. A
// text-only diff applies with patch -p1 or git apply.

// Default limits of a diff; a zero DiffLimits field takes its default.
const (
	DefaultDiffMaxFileBytes = 1 << 20 // bytes of a file shown; a larger one is a line saying so
	DefaultDiffMaxBytes     = 4 << 20 // bytes of diff written in all
	DefaultDiffMaxFiles     = 1000    // paths shown
)

// DiffContextLines is how many unchanged lines surround a hunk (git's and
// diff -u's default).
const DiffContextLines = 3

// DiffMaxTreeEntries bounds the entries a diff reads under directories
// deleted as a whole, all of them together (the same bound as the paths
// one command may change). Past it the diff ends with a line saying the
// rest was not read.
const DiffMaxTreeEntries = MaxChanges

// The comparison of two versions of a file is bounded in work, not only
// in size: difflib's matcher is quadratic on some inputs (many short
// matches), which a command could write on purpose to stall a review.
// The lines of each file are first anchored on the lines that occur once
// in each version (patience diffing), and difflib matches only the gaps
// between anchors; a gap whose line pairs (old lines × new lines) pass
// diffMaxGapPairs, or any gap once the diff has matched diffMaxPairs in
// all, is shown as replaced whole. The diff stays correct and applies;
// it is only less minimal.
const (
	diffMaxGapPairs = 1 << 20  // at most about 0.1 s of matching for one gap
	diffMaxPairs    = 64 << 20 // at most a few seconds for one diff
)

// DiffLimits bounds a diff. Past MaxFiles or MaxBytes the diff stops
// before the next path and ends with a line saying how many more paths
// were not shown; it never cuts a path's diff part way.
type DiffLimits struct {
	MaxFileBytes int64 // a file larger than this (either version) is one line: too large to show
	MaxBytes     int64 // bytes of diff written in all, but the final line
	MaxFiles     int   // paths shown
}

func (l DiffLimits) withDefaults() (DiffLimits, error) {
	switch {
	case l.MaxFileBytes < 0 || l.MaxBytes < 0 || l.MaxFiles < 0:
		return l, fmt.Errorf("workspace: a DiffLimits field is negative (%+v); want 0 (the default) or more", l)
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = DefaultDiffMaxFileBytes
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultDiffMaxBytes
	}
	if l.MaxFiles == 0 {
		l.MaxFiles = DefaultDiffMaxFiles
	}
	return l, nil
}

// Diff writes the diff a person reviews before the changes in set are
// applied: each change's path as it is in the workspace now against the
// overlay's upper layer. set is what Changes returned.
func (o *Overlay) Diff(set *ChangeSet, w io.Writer, lim DiffLimits) error {
	lim, err := lim.withDefaults()
	if err != nil {
		return err
	}
	if o == nil || set == nil {
		return errors.New("workspace: Diff needs an overlay and its change set")
	}
	if err := o.w.ready(); err != nil {
		return err
	}
	ws, err := o.w.root.Open(".")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer ws.Close()
	wsfd := int(ws.Fd())
	up, err := openDirBeneath(wsfd, o.rel()+"/"+overlayUpper)
	if err != nil {
		return fmt.Errorf("workspace: the overlay's upper layer: %w", err)
	}
	defer unix.Close(up)
	d := &differ{lim: lim, walkBudget: DiffMaxTreeEntries}
	var items []pathDiff
	for _, c := range set.Changes {
		if !validCanonical(c.Path) {
			return fmt.Errorf("workspace: the change set names %q, not a canonical workspace path", c.Path)
		}
		var old, now version
		if c.Old.Type != TypeNone {
			if old, err = versionAt(wsfd, c.Path); err != nil {
				return err
			}
		}
		if c.New.Type != TypeNone {
			if now, err = versionAt(up, c.Path); err != nil {
				return err
			}
		}
		items = append(items, pathDiff{path: c.Path, old: old, new: now})
		if old.typ == TypeDir && now.typ != TypeDir {
			// Deleted, or replaced, as a whole: its files go with it.
			err := d.walk(wsfd, c.Path, c.Path, func(p string, v version) {
				items = append(items, pathDiff{path: p, old: v})
			})
			if err != nil {
				return err
			}
		}
	}
	sortByPath(items)
	return d.write(w, items)
}

// SessionDiff writes every change the session made, through the file
// tools and through commands, as one diff: each path the session's
// snapshots name, as it was before the session's first change to it,
// against the path as it is in the workspace now. A path someone else
// changed after the session's last change to it says so in its header
// line, and is still shown from before the session to now. Paths are in
// order. A session with no records is not_found; a record that cannot be
// read is an error, never skipped.
func (w *Workspace) SessionDiff(session string, out io.Writer, lim DiffLimits) error {
	lim, err := lim.withDefaults()
	if err != nil {
		return err
	}
	if err := w.ready(); err != nil {
		return err
	}
	if err := checkSession(session); err != nil {
		return err
	}
	// The diff is made under w.mu, which Apply and Rollback hold while
	// they change the records, so that it reads one state of them; it is
	// written out after, so that a slow reader holds up no change.
	var buf bytes.Buffer
	if err := w.sessionDiff(session, &buf, lim); err != nil {
		return err
	}
	_, err = buf.WriteTo(out)
	return err
}

func (w *Workspace) sessionDiff(session string, out io.Writer, lim DiffLimits) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := SnapshotsDir + "/" + session
	snaps, err := w.openDir(dir, false)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeNotFound {
			return tool.Errorf(tool.CodeNotFound, "Check the session id; a session's changes are forgotten once it is rolled back",
				"no changes are recorded for session %s", session)
		}
		return fmt.Errorf("workspace: diff of session %s: %w", session, err)
	}
	defer snaps.Close()
	names, err := snapshotNames(snaps)
	if err != nil {
		return fmt.Errorf("workspace: diff of session %s: %w", session, err)
	}
	ws, err := w.root.Open(".")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer ws.Close()
	wsfd := int(ws.Fd())
	sfd, err := openDirBeneath(wsfd, dir)
	if err != nil {
		return fmt.Errorf("workspace: diff of session %s: %w", session, err)
	}
	defer unix.Close(sfd)

	h := &history{w: w, snaps: snaps, sessfd: sfd, paths: map[string]*touched{},
		d: &differ{lim: lim, walkBudget: DiffMaxTreeEntries}}
	for _, n := range names {
		if err := h.read(n.name); err != nil {
			return fmt.Errorf("workspace: diff of session %s: snapshot %s: %w", session, n.name, err)
		}
	}
	items := make([]pathDiff, 0, len(h.paths))
	for p, t := range h.paths {
		now, note, err := h.now(wsfd, p, t)
		if err != nil {
			return err
		}
		items = append(items, pathDiff{path: p, old: t.before, new: now, note: note})
	}
	sortByPath(items)
	return h.d.write(out, items)
}

// history is what a session's records say about each path they touch.
type history struct {
	w      *Workspace
	snaps  *os.Root // the session's snapshot directory
	sessfd int      // the same, as a descriptor
	paths  map[string]*touched
	d      *differ
}

// touched is one path's story in a session: its version before the
// session's first change, and what the session's last change left.
type touched struct {
	before version
	left   left
}

// left is what a change left at a path, by which a change someone made
// since is told apart.
type left struct {
	sha   string // a file the file tools wrote: its SHA-256 ("" unknown)
	state *State // an entry a command left, as its batch records it
	dir   bool   // a directory the file tools made
}

// touch records a change to p: before is kept only from the first.
func (h *history) touch(p string, before version, l left) {
	if t, ok := h.paths[p]; ok {
		t.left = l
		return
	}
	h.paths[p] = &touched{before: before, left: l}
}

// read takes in one record.
func (h *history) read(name string) error {
	hd, content, err := readSnapshot(h.snaps, name)
	if err != nil {
		return err
	}
	switch hd.Kind {
	case kindDir:
		h.touch(hd.Path, version{}, left{dir: true})
	case kindFile:
		var before version
		if hd.Existed {
			before = version{typ: TypeFile, mode: hd.Mode & 0o7777, size: int64(len(content)), open: h.inline(name)}
		}
		h.touch(hd.Path, before, left{sha: hd.After})
	case kindBatch:
		var m batchManifest
		if err := json.Unmarshal(content, &m); err != nil {
			return fmt.Errorf("the manifest: %w", err)
		}
		old := strings.TrimSuffix(name, snapshotSuffix) + oldSuffix
		for i, c := range m.Changes {
			if err := h.change(old, i, &c); err != nil {
				return err
			}
		}
	}
	return nil
}

// change takes in change i of a batch whose old versions are in the
// directory old of the session's snapshots.
func (h *history) change(old string, i int, c *Change) error {
	if !validCanonical(c.Path) {
		return fmt.Errorf("the manifest names %q, not a canonical workspace path", c.Path)
	}
	switch c.Kind {
	case ChangeAdded, ChangeModified, ChangeDeleted:
	default:
		return fmt.Errorf("the manifest's change to %q is of the unknown kind %q", c.Path, c.Kind)
	}
	for _, t := range []EntryType{c.Old.Type, c.New.Type} {
		switch t {
		case TypeNone, TypeFile, TypeDir, TypeSymlink:
		default:
			return fmt.Errorf("the manifest's change to %q names the unknown type %q", c.Path, t)
		}
	}
	l := left{state: &c.New}
	if c.Old.Type == TypeNone {
		h.touch(c.Path, version{}, l)
		return nil
	}
	if c.Old.Type == TypeDir && c.New.Type == TypeDir {
		// A mode change alone: nothing was kept aside.
		h.touch(c.Path, version{typ: TypeDir, mode: c.Old.Mode & 0o7777}, l)
		return nil
	}
	rel := old + "/" + strconv.Itoa(i)
	before, err := versionAt(h.sessfd, rel)
	if err != nil {
		return err
	}
	if before.typ == TypeNone {
		// Put back by a Rollback that stopped at a conflict.
		before.lost = true
	}
	h.touch(c.Path, before, l)
	if before.typ == TypeDir {
		// Its files went with it; each is shown as it was.
		gone := left{state: &State{}}
		return h.d.walk(h.sessfd, rel, c.Path, func(p string, v version) { h.touch(p, v, gone) })
	}
	return nil
}

// inline opens the content of a record of kind file, read again when it
// is shown so that the records' contents are not all held at once.
func (h *history) inline(name string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		_, content, err := readSnapshot(h.snaps, name)
		if err != nil {
			return nil, fmt.Errorf("workspace: snapshot %s: %w", name, err)
		}
		return io.NopCloser(bytes.NewReader(content)), nil
	}
}

// now reads p in the workspace, and says whether it differs from what
// the session's last change to it left.
func (h *history) now(wsfd int, p string, t *touched) (version, string, error) {
	v, err := versionAt(wsfd, p)
	if err != nil {
		return v, "", err
	}
	const since = "changed since by someone else"
	l := t.left
	switch {
	case l.dir:
		if v.typ != TypeDir {
			return v, since, nil
		}
	case l.state != nil && l.state.Type == TypeNone:
		if v.typ != TypeNone {
			return v, since, nil
		}
	case l.state != nil:
		pd, err := openDirBeneath(wsfd, dirOf(p))
		if err != nil {
			return v, since, nil // its directory is gone or replaced
		}
		defer unix.Close(pd)
		st, ok, err := lstatAt(pd, baseOf(p))
		if err != nil {
			return v, "", fmt.Errorf("workspace: %q: %w", p, err)
		}
		if !ok || changedFrom(pd, baseOf(p), &st, l.state) != "" {
			return v, since, nil
		}
	case l.sha != "":
		if v.typ != TypeFile {
			return v, since, nil
		}
		if c, err := h.w.changedSince(snapshotHeader{Path: p, After: l.sha}); err != nil {
			return v, "", err
		} else if c != nil {
			return v, since, nil
		}
	}
	return v, "", nil
}

// version is one side of a path in a diff.
type version struct {
	typ     EntryType // TypeNone: absent
	mode    uint32    // permission bits
	size    int64
	target  string                        // a symbolic link's
	open    func() (io.ReadCloser, error) // a file's content
	special bool                          // a pipe, socket or device: never read
	lost    bool                          // an old version no longer kept
}

// versionAt reads the entry at rel beneath the directory base, absent
// when it or a directory on the way is missing or is not a directory.
func versionAt(base int, rel string) (version, error) {
	pd, err := openDirBeneath(base, dirOf(rel))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return version{}, nil
	}
	if err != nil {
		return version{}, fmt.Errorf("workspace: %q: %w", rel, err)
	}
	defer unix.Close(pd)
	st, ok, err := lstatAt(pd, baseOf(rel))
	if err != nil || !ok {
		return version{}, err
	}
	return versionOf(base, rel, pd, &st)
}

func versionOf(base int, rel string, pd int, st *unix.Stat_t) (version, error) {
	v := version{typ: typeOf(st.Mode), mode: st.Mode & 0o7777, size: st.Size}
	switch v.typ {
	case TypeSymlink:
		t, err := readlinkAt(pd, baseOf(rel))
		if err != nil {
			return v, fmt.Errorf("workspace: %q: %w", rel, err)
		}
		v.target, v.size = t, int64(len(t))
	case TypeFile:
		ino := st.Ino
		v.open = func() (io.ReadCloser, error) { return openRegularAt(base, rel, ino) }
	case TypeNone:
		v.typ, v.special = TypeFile, true
	}
	return v, nil
}

// openRegularAt opens the file rel beneath base for reading, if it is
// still the regular file with inode ino (not a pipe swapped in, which
// O_NONBLOCK keeps from blocking the open).
func openRegularAt(base int, rel string, ino uint64) (io.ReadCloser, error) {
	fd, err := openBeneath(base, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("workspace: %q changed while the diff read it: %w", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || typeOf(st.Mode) != TypeFile || st.Ino != ino {
		unix.Close(fd)
		return nil, fmt.Errorf("workspace: %q changed while the diff read it", rel)
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// pathDiff is one path to show: its old and new versions.
type pathDiff struct {
	path     string
	old, new version
	note     string // for the header line
}

// sortByPath orders paths as a walk of the tree does: a directory's
// entries right after it ('/' before every other byte).
func sortByPath(items []pathDiff) {
	slices.SortStableFunc(items, func(a, b pathDiff) int { return comparePaths(a.path, b.path) })
}

func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			return -1
		}
		if y == '/' {
			return 1
		}
		return int(x) - int(y)
	}
	return len(a) - len(b)
}

// differ writes one diff within its limits.
type differ struct {
	lim        DiffLimits
	written    int64
	files      int
	pairs      int // line pairs matched so far (diffMaxPairs)
	walkBudget int // entries walk may still read
	unread     []string
}

// walk calls fn for every entry under the directory rel beneath base,
// parents first, each named under prefix instead of rel. Past
// DiffMaxTreeEntries it stops and notes the directory left unread.
func (d *differ) walk(base int, rel, prefix string, fn func(string, version)) error {
	fd, err := openDirBeneath(base, rel)
	if err != nil {
		return fmt.Errorf("workspace: %q: %w", rel, err)
	}
	names, err := readNames(fd)
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("workspace: %q: %w", rel, err)
	}
	var dirs []string
	for _, n := range names {
		if d.walkBudget <= 0 {
			unix.Close(fd)
			d.unread = append(d.unread, prefix)
			return nil
		}
		d.walkBudget--
		st, ok, err := lstatAt(fd, n)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("workspace: %q: %w", rel+"/"+n, err)
		}
		if !ok {
			continue // gone meanwhile
		}
		v, err := versionOf(base, rel+"/"+n, fd, &st)
		if err != nil {
			unix.Close(fd)
			return err
		}
		fn(prefix+"/"+n, v)
		if v.typ == TypeDir {
			dirs = append(dirs, n)
		}
	}
	unix.Close(fd) // before going down, so that depth holds no descriptors
	for _, n := range dirs {
		if err := d.walk(base, rel+"/"+n, prefix+"/"+n, fn); err != nil {
			return err
		}
	}
	return nil
}

// write writes the diff of items, in order, within the limits.
func (d *differ) write(w io.Writer, items []pathDiff) error {
	var buf bytes.Buffer
	for i, it := range items {
		buf.Reset()
		shown, err := d.item(&buf, &it, hasEntries(items, i))
		if err != nil {
			return err
		}
		if !shown {
			continue
		}
		if d.files >= d.lim.MaxFiles || d.written+int64(buf.Len()) > d.lim.MaxBytes {
			limit := plural.Count(d.lim.MaxFiles, "path", "paths") + " (DiffLimits.MaxFiles)"
			if d.files < d.lim.MaxFiles {
				limit = plural.Bytes(d.lim.MaxBytes) + " of diff (DiffLimits.MaxBytes)"
			}
			if _, err := fmt.Fprintf(w, "[the diff stops at its limit of %s; not shown: %s]\n",
				limit, plural.Count(countPaths(items[i:]), "more path", "more paths")); err != nil {
				return err
			}
			break
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		d.files++
		d.written += int64(buf.Len())
	}
	for _, p := range d.unread {
		if _, err := fmt.Fprintf(w, "[the directory %s holds more than the diff reads (%s in all, DiffMaxTreeEntries): the rest of it is not shown]\n",
			quotePath("", p), plural.Count(DiffMaxTreeEntries, "entry", "entries")); err != nil {
			return err
		}
	}
	return nil
}

// hasEntries reports whether paths under items[i] follow it.
func hasEntries(items []pathDiff, i int) bool {
	return i+1 < len(items) && strings.HasPrefix(items[i+1].path, items[i].path+"/")
}

// countPaths counts the paths of items but the directories whose entries
// follow them (shown as those entries).
func countPaths(items []pathDiff) int {
	n := 0
	for i, it := range items {
		if it.old.typ != TypeDir && it.new.typ != TypeDir || !hasEntries(items, i) {
			n++
		}
	}
	return n
}

// item writes the diff of one path into buf, and reports whether there
// was anything to show. entries: paths under it follow.
func (d *differ) item(buf *bytes.Buffer, it *pathDiff, entries bool) (bool, error) {
	o, n := it.old, it.new
	if o.lost {
		d.header(buf, it.path, "its old version is no longer in the snapshot: rolled back already")
		return true, nil
	}
	shown := false
	note := it.note
	header := func() {
		d.header(buf, it.path, note)
		note = "" // said once
		shown = true
	}
	switch {
	case o.typ == TypeDir && n.typ == TypeDir:
		if o.mode == n.mode {
			return false, nil
		}
		header()
		fmt.Fprintf(buf, "old mode %s\nnew mode %s\n", gitMode(o), gitMode(n))
		return true, nil
	case o.typ == TypeDir:
		if !entries {
			header()
			fmt.Fprintf(buf, "deleted directory mode %s\n", gitMode(o))
		}
		o = version{}
	case n.typ == TypeDir:
		if !entries {
			header()
			fmt.Fprintf(buf, "new directory mode %s\n", gitMode(n))
		}
		n = version{}
	}
	var pairs [][2]version
	switch {
	case o.typ == TypeNone && n.typ == TypeNone:
	case o.typ != TypeNone && n.typ != TypeNone && o.typ != n.typ:
		// Another type of entry: shown as the old one deleted and the
		// new one added, as git does.
		pairs = [][2]version{{o, {}}, {{}, n}}
	default:
		pairs = [][2]version{{o, n}}
	}
	for _, p := range pairs {
		did, err := d.content(buf, it.path, p[0], p[1], note)
		if err != nil {
			return false, err
		}
		if did {
			note = ""
			shown = true
		}
	}
	if !shown && note != "" {
		header() // nothing differs from before the session, but the note stands
	}
	return shown, nil
}

// header writes a path's first line.
func (d *differ) header(buf *bytes.Buffer, p, note string) {
	fmt.Fprintf(buf, "diff --airlock %s %s", quotePath("a/", p), quotePath("b/", p))
	if note != "" {
		fmt.Fprintf(buf, " (%s)", note)
	}
	buf.WriteByte('\n')
}

// content writes the diff of a file or link, o and n of one type or
// absent. It writes nothing when they are the same.
func (d *differ) content(buf *bytes.Buffer, p string, o, n version, note string) (bool, error) {
	a, aLarge, err := d.bytesOf(o)
	if err != nil {
		return false, err
	}
	b, bLarge, err := d.bytesOf(n)
	if err != nil {
		return false, err
	}
	large, special := aLarge || bLarge, o.special || n.special
	sameBytes := false
	switch {
	case o.typ != n.typ || special:
	case large:
		if sameBytes, err = sameStreams(o, n); err != nil {
			return false, err
		}
	default:
		sameBytes = bytes.Equal(a, b)
	}
	if sameBytes && o.mode == n.mode {
		return false, nil
	}
	d.header(buf, p, note)
	switch {
	case o.typ == TypeNone:
		fmt.Fprintf(buf, "new file mode %s\n", gitMode(n))
	case n.typ == TypeNone:
		fmt.Fprintf(buf, "deleted file mode %s\n", gitMode(o))
	case o.mode != n.mode && o.typ != TypeSymlink:
		fmt.Fprintf(buf, "old mode %s\nnew mode %s\n", gitMode(o), gitMode(n))
	}
	aName, bName := sideName("a/", p, o), sideName("b/", p, n)
	sizes := func() string {
		return plural.Count(int(o.size), "byte", "bytes") + " -> " + plural.Count(int(n.size), "byte", "bytes")
	}
	switch {
	case sameBytes:
		// The mode alone changed.
	case special:
		fmt.Fprintf(buf, "Files %s and %s differ (a special file: its content is not shown)\n", aName, bName)
	case large:
		fmt.Fprintf(buf, "Files %s and %s differ (%s), too large to show (DiffLimits.MaxFileBytes)\n", aName, bName, sizes())
	case isBinary(a) || isBinary(b):
		fmt.Fprintf(buf, "Binary files %s and %s differ (%s)\n", aName, bName, sizes())
	default:
		fmt.Fprintf(buf, "--- %s%s\n+++ %s%s\n", aName, nameEnd(aName), bName, nameEnd(bName))
		d.hunks(buf, splitLines(a), splitLines(b))
	}
	return true, nil
}

// bytesOf reads a version's content: a file's bytes, a link's target,
// nothing when absent. large: it is over MaxFileBytes, and not read.
func (d *differ) bytesOf(v version) ([]byte, bool, error) {
	switch {
	case v.typ == TypeSymlink:
		return []byte(v.target), false, nil
	case v.typ != TypeFile || v.special:
		return nil, false, nil
	case v.size > d.lim.MaxFileBytes:
		return nil, true, nil
	}
	r, err := v.open()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, d.lim.MaxFileBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("workspace: reading for the diff: %w", err)
	}
	if int64(len(data)) > d.lim.MaxFileBytes {
		return nil, true, nil // grew since it was looked at
	}
	return data, false, nil
}

// sameStreams compares two large files' bytes without holding them, by
// their SHA-256.
func sameStreams(o, n version) (bool, error) {
	if o.typ != TypeFile || n.typ != TypeFile || o.size != n.size {
		return false, nil
	}
	var sums [2][]byte
	for k, v := range []version{o, n} {
		r, err := v.open()
		if err != nil {
			return false, err
		}
		h := sha256.New()
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return false, fmt.Errorf("workspace: reading for the diff: %w", err)
		}
		sums[k] = h.Sum(nil)
	}
	return bytes.Equal(sums[0], sums[1]), nil
}

// isBinary: a NUL byte in the first BinarySniffBytes, or not UTF-8.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), BinarySniffBytes)], 0) >= 0 || !utf8.Valid(b)
}

// gitMode writes a version's type and permission bits as git does
// (100644, 120000, 040755); a link's bits are not kept.
func gitMode(v version) string {
	switch v.typ {
	case TypeSymlink:
		return "120000"
	case TypeDir:
		return fmt.Sprintf("%06o", unix.S_IFDIR|v.mode)
	}
	return fmt.Sprintf("%06o", unix.S_IFREG|v.mode)
}

func sideName(prefix, p string, v version) string {
	if v.typ == TypeNone {
		return "/dev/null"
	}
	return quotePath(prefix, p)
}

// nameEnd is what follows a name on a ---/+++ line: a tab when it holds
// a space, as git writes, so that patch knows where the name ends.
func nameEnd(name string) string {
	if strings.IndexByte(name, ' ') >= 0 {
		return "\t"
	}
	return ""
}

// quotePath writes prefix+p as git does: in double quotes with C escapes
// when it holds a control character, a quote, a backslash or bytes that
// are not UTF-8, so that no file name can end a line or forge one.
func quotePath(prefix, p string) string {
	s := prefix + p
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] != 0x7f && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f || r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		i++
	}
	b.WriteByte('"')
	return b.String()
}

// splitLines splits text into lines that keep their line ends; only the
// last may lack one.
func splitLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// hunks writes the unified hunks that turn a into b.
func (d *differ) hunks(buf *bytes.Buffer, a, b []string) {
	for _, g := range groupOps(d.lineOps(a, b), DiffContextLines) {
		first, last := g[0], g[len(g)-1]
		fmt.Fprintf(buf, "@@ -%s +%s @@\n", hunkRange(first.I1, last.I2), hunkRange(first.J1, last.J2))
		for _, op := range g {
			if op.Tag == 'e' {
				writeLines(buf, ' ', a[op.I1:op.I2])
				continue
			}
			writeLines(buf, '-', a[op.I1:op.I2])
			writeLines(buf, '+', b[op.J1:op.J2])
		}
	}
}

func writeLines(buf *bytes.Buffer, mark byte, lines []string) {
	for _, l := range lines {
		buf.WriteByte(mark)
		buf.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			buf.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange writes one side of a hunk header: the first line and the
// count, the count left out when it is 1; an empty side names the line
// before it.
func hunkRange(i1, i2 int) string {
	switch i2 - i1 {
	case 0:
		return strconv.Itoa(i1) + ",0"
	case 1:
		return strconv.Itoa(i1 + 1)
	}
	return strconv.Itoa(i1+1) + "," + strconv.Itoa(i2-i1)
}

// opList builds difflib opcodes over the whole of both files, merging
// neighbours of one tag.
type opList []difflib.OpCode

func (l *opList) add(tag byte, i1, i2, j1, j2 int) {
	if i1 == i2 && j1 == j2 {
		return
	}
	if n := len(*l); n > 0 {
		p := &(*l)[n-1]
		if p.Tag == tag && p.I2 == i1 && p.J2 == j1 {
			p.I2, p.J2 = i2, j2
			return
		}
	}
	*l = append(*l, difflib.OpCode{Tag: tag, I1: i1, I2: i2, J1: j1, J2: j2})
}

// lineOps compares a and b: the common head and tail are set aside, the
// rest anchored on the lines that occur exactly once in each (in an
// order both share: the longest increasing run), and difflib matches the
// gaps between anchors.
func (d *differ) lineOps(a, b []string) []difflib.OpCode {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops opList
	ops.add('e', 0, head, 0, head)
	ai, bi := head, head
	for _, an := range anchors(a[head:len(a)-tail], b[head:len(b)-tail]) {
		ia, jb := head+an[0], head+an[1]
		d.gap(&ops, a, b, ai, ia, bi, jb)
		ops.add('e', ia, ia+1, jb, jb+1)
		ai, bi = ia+1, jb+1
	}
	d.gap(&ops, a, b, ai, len(a)-tail, bi, len(b)-tail)
	ops.add('e', len(a)-tail, len(a), len(b)-tail, len(b))
	return ops
}

// gap matches a[i1:i2] with b[j1:j2] by difflib, within the work limits;
// past them it is replaced whole.
func (d *differ) gap(ops *opList, a, b []string, i1, i2, j1, j2 int) {
	n := (i2 - i1) * (j2 - j1)
	if n == 0 || n > diffMaxGapPairs || d.pairs+n > diffMaxPairs {
		ops.add('d', i1, i2, j1, j1)
		ops.add('i', i2, i2, j1, j2)
		return
	}
	d.pairs += n
	for _, op := range difflib.NewMatcher(a[i1:i2], b[j1:j2]).GetOpCodes() {
		tag := op.Tag
		if tag == 'r' {
			ops.add('d', i1+op.I1, i1+op.I2, j1+op.J1, j1+op.J1)
			ops.add('i', i1+op.I2, i1+op.I2, j1+op.J1, j1+op.J2)
			continue
		}
		ops.add(tag, i1+op.I1, i1+op.I2, j1+op.J1, j1+op.J2)
	}
}

// anchors returns index pairs (in a, in b) of lines that occur once in a
// and once in b, the longest sequence of them in the same order in both.
func anchors(a, b []string) [][2]int {
	type count struct{ na, nb, ib int }
	seen := make(map[string]*count, len(a))
	for _, l := range a {
		c := seen[l]
		if c == nil {
			c = &count{}
			seen[l] = c
		}
		c.na++
	}
	for j, l := range b {
		if c := seen[l]; c != nil {
			c.nb++
			c.ib = j
		}
	}
	var cand [][2]int
	for i, l := range a {
		if c := seen[l]; c.na == 1 && c.nb == 1 {
			cand = append(cand, [2]int{i, c.ib})
		}
	}
	// Longest increasing run of b's indexes (patience sorting): tops[k]
	// is the candidate ending the best run of length k+1 so far.
	var tops []int
	prev := make([]int, len(cand))
	for k, c := range cand {
		at, _ := slices.BinarySearchFunc(tops, c[1], func(t, want int) int { return cand[t][1] - want })
		prev[k] = -1
		if at > 0 {
			prev[k] = tops[at-1]
		}
		if at == len(tops) {
			tops = append(tops, k)
		} else {
			tops[at] = k
		}
	}
	if len(tops) == 0 {
		return nil
	}
	out := make([][2]int, len(tops))
	for k, i := len(tops)-1, tops[len(tops)-1]; k >= 0; k, i = k-1, prev[i] {
		out[k] = cand[i]
	}
	return out
}

// groupOps cuts ops into hunks: each change with up to n unchanged lines
// around it, changes closer than 2n lines apart in one hunk.
func groupOps(ops []difflib.OpCode, n int) [][]difflib.OpCode {
	var groups [][]difflib.OpCode
	var cur []difflib.OpCode
	changed := false
	for k, op := range ops {
		if op.Tag != 'e' {
			cur = append(cur, op)
			changed = true
			continue
		}
		size := op.I2 - op.I1
		if !changed {
			// Leading context: its last n lines.
			keep := min(n, size)
			cur = []difflib.OpCode{{Tag: 'e', I1: op.I2 - keep, I2: op.I2, J1: op.J2 - keep, J2: op.J2}}
			continue
		}
		if k < len(ops)-1 && size <= 2*n {
			cur = append(cur, op)
			continue
		}
		keep := min(n, size)
		cur = append(cur, difflib.OpCode{Tag: 'e', I1: op.I1, I2: op.I1 + keep, J1: op.J1, J2: op.J1 + keep})
		groups = append(groups, cur)
		cur = []difflib.OpCode{{Tag: 'e', I1: op.I2 - keep, I2: op.I2, J1: op.J2 - keep, J2: op.J2}}
		changed = false
	}
	if changed {
		groups = append(groups, cur)
	}
	return groups
}

// Summary says in one line what the changes do: "3 added, 1 modified,
// 12 deleted (48KiB kept for rollback)".
func (s *ChangeSet) Summary() string {
	if s == nil {
		return "no changes"
	}
	added, modified, deleted := s.Counts()
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{added, "added"}, {modified, "modified"}, {deleted, "deleted"}} {
		if c.n > 0 {
			parts = append(parts, strconv.Itoa(c.n)+" "+c.what)
		}
	}
	if len(s.Skipped) > 0 {
		parts = append(parts, plural.Count(len(s.Skipped), "special file", "special files")+" not applied")
	}
	if len(parts) == 0 {
		return "no changes"
	}
	out := strings.Join(parts, ", ")
	if s.OldBytes > 0 {
		out += " (" + plural.Bytes(s.OldBytes) + " kept for rollback)"
	}
	return out
}
