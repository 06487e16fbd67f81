package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"airlock.dev/airlock/tool"
)

// The errno values the refusals are told apart by.
const (
	errNotDir      = syscall.ENOTDIR
	errIsDir       = syscall.EISDIR
	errNameTooLong = syscall.ENAMETOOLONG
	errLoop        = syscall.ELOOP
	errNotEmpty    = syscall.ENOTEMPTY
	errInval       = syscall.EINVAL
)

func isErrno(err error, errno syscall.Errno) bool { return errors.Is(err, errno) }

// escapeText is the text of os.Root's (unexported) error for a path or a
// link that leaves the root.
const escapeText = "path escapes from parent"

func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == escapeText {
			return true
		}
	}
	return false
}

// fsError turns an error from the file system about the canonical path
// canon into a refusal a model can act on, or, for a real fault, a Go error
// that names the path.
func (w *Workspace) fsError(canon string, err error) error {
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return te
	case isEscape(err):
		return tool.Errorf(tool.CodePathOutside, hintOutside, "%q leads outside the workspace", canon)
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf(tool.CodeNotFound, hintNotFound, "%q does not exist", canon)
	case isErrno(err, errNotDir):
		return tool.Errorf(tool.CodeNotADirectory, hintNotDir, "a component of %q is not a directory", canon)
	case isErrno(err, errIsDir):
		return tool.Errorf(tool.CodeNotAFile, hintNotFile, "%q is a directory", canon)
	case isErrno(err, errNameTooLong):
		return tool.Errorf(tool.CodePathOutside, "Use shorter file names (at most 255 bytes each)", "a name in %q is too long for the file system", canon)
	case isErrno(err, errLoop):
		return tool.Errorf(tool.CodePathOutside, hintChanged, "%q passes through a symbolic link", canon)
	}
	return fmt.Errorf("workspace: %s: %w", canon, err)
}

// errChanged is the refusal when a component checked to be a directory or
// a regular file turns out, at the moment of use, to be something else:
// a link swapped in after Resolve.
func errChanged(canon string) error {
	return tool.Errorf(tool.CodePathOutside, hintChanged, "%q changed while in use (a symbolic link appeared)", canon)
}

// dirOf and baseOf split a canonical path ("." for the root's children).
func dirOf(canon string) string {
	if i := strings.LastIndexByte(canon, '/'); i >= 0 {
		return canon[:i]
	}
	return "."
}

func baseOf(canon string) string { return canon[strings.LastIndexByte(canon, '/')+1:] }

// openDir opens the directory at the canonical path canon, walking from
// the root one component at a time. Each component must be a real
// directory: a link (even one inside the workspace, as Resolve has already
// followed those) means the tree changed since Resolve, and is refused.
// Opening then comparing the opened directory with the checked one leaves
// no window in which a swapped-in link could be followed. With create,
// missing directories are made (mode 0755 before umask). The caller closes
// the returned root.
func (w *Workspace) openDir(canon string, create bool) (*os.Root, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	cur, err := w.root.OpenRoot(".")
	if err != nil {
		return nil, w.fsError(".", err)
	}
	if canon == "." {
		return cur, nil
	}
	parts := strings.Split(canon, "/")
	for i, c := range parts {
		next, err := openChildDir(cur, c)
		if create && errors.Is(err, fs.ErrNotExist) {
			err = cur.Mkdir(c, 0o755)
			if err == nil || errors.Is(err, fs.ErrExist) {
				next, err = openChildDir(cur, c)
			}
		}
		cur.Close()
		if err != nil {
			at := strings.Join(parts[:i+1], "/")
			if isErrno(err, errNotDir) {
				return nil, tool.Errorf(tool.CodeNotADirectory, hintNotDir, "%q is not a directory", at)
			}
			return nil, w.useError(at, err)
		}
		cur = next
	}
	return cur, nil
}

// errSwapped marks a component that changed between its check and its use.
var errSwapped = errors.New("changed while in use")

// openChildDir opens the directory name directly inside dir, refusing a
// link or anything that is not the directory just checked.
func openChildDir(dir *os.Root, name string) (*os.Root, error) {
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errSwapped
	}
	if !fi.IsDir() {
		return nil, errNotDir
	}
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	st, err := sub.Stat(".")
	if err != nil {
		sub.Close()
		return nil, err
	}
	if !os.SameFile(fi, st) {
		sub.Close()
		return nil, errSwapped
	}
	return sub, nil
}

// openRegular opens the regular file name directly inside dir for reading
// and returns it with its information, refusing a directory, a link, a
// device, a FIFO or a socket. It opens without blocking (a FIFO swapped in
// cannot hang it) and checks that what it opened is what it examined.
func openRegular(dir *os.Root, name string) (*os.File, fs.FileInfo, error) {
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, errSwapped
	case fi.IsDir():
		return nil, nil, errIsDir
	case !fi.Mode().IsRegular():
		return nil, nil, errNotRegular
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !os.SameFile(fi, st) || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, errSwapped
	}
	return f, st, nil
}

// errNotRegular marks a device, FIFO or socket.
var errNotRegular = errors.New("not a regular file")

// openFile resolves nothing: it opens the regular file at the canonical
// path canon through openDir and openRegular, with refusals for the model.
func (w *Workspace) openFile(canon string) (*os.File, fs.FileInfo, error) {
	if canon == "." {
		return nil, nil, tool.Errorf(tool.CodeNotAFile, hintNotFile, "%q is the workspace root, a directory", canon)
	}
	d, err := w.openDir(dirOf(canon), false)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	f, fi, err := openRegular(d, baseOf(canon))
	if err != nil {
		return nil, nil, w.useError(canon, err)
	}
	return f, fi, nil
}

// useError is fsError that also knows the marks of openChildDir and
// openRegular.
func (w *Workspace) useError(canon string, err error) error {
	switch {
	case errors.Is(err, errSwapped):
		return errChanged(canon)
	case errors.Is(err, errNotRegular):
		return tool.Errorf(tool.CodeNotAFile, hintNotFile, "%q is not a regular file (a device, FIFO or socket)", canon)
	}
	return w.fsError(canon, err)
}

// tempPrefix starts the name of the temporary file a write goes through
// before it is renamed over its target.
const tempPrefix = ".airlock-tmp-"

// replaceFile atomically replaces (or creates) the file name directly
// inside dir with data: it writes a new temporary file beside it, syncs
// it, and renames it over the name. A rename replaces a link rather than
// following it. With keepMode the file gets exactly mode's permission
// bits; otherwise 0644 before umask.
func replaceFile(dir *os.Root, name string, data []byte, mode fs.FileMode, keepMode bool) (err error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := tempPrefix + hex.EncodeToString(rnd[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			dir.Remove(tmp)
		}
	}()
	if keepMode {
		if err = f.Chmod(mode.Perm()); err != nil {
			return err
		}
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return dir.Rename(tmp, name)
}

// syncDir flushes a directory's entries, so that a file created or renamed
// in it survives a crash.
func syncDir(dir *os.Root) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// readDirChunk is how many entries a directory read asks for at a time.
const readDirChunk = 256

// walkBudget counts the directory entries one ListDir, Glob or Grep reads,
// against MaxWalkEntries.
type walkBudget struct {
	left      int
	truncated bool // the budget ran out: the answer is partial
}

// readDir reads the entries of the open directory dir, at most as many as
// the budget has left; it marks the budget truncated when it stops early.
// The entries are in directory order.
func (b *walkBudget) readDir(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fs.DirEntry
	for {
		if b.left <= 0 {
			// Out of budget: the answer is partial only if more is there.
			if more, _ := f.ReadDir(1); len(more) > 0 {
				b.truncated = true
			}
			return out, nil
		}
		n := min(readDirChunk, b.left)
		ents, err := f.ReadDir(n)
		b.left -= len(ents)
		out = append(out, ents...)
		if err == io.EOF || (err == nil && len(ents) == 0) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
