package workspace

import (
	"errors"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// The overlay code works on directory descriptors, as the kernel does: a
// change is applied with one renameat from the upper layer's directory to
// the workspace's, each opened beneath the workspace with openat2 and no
// symbolic link followed on the way (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
// so that neither a link in the tree nor one swapped in while applying
// can move a change outside the workspace or into StateDir.

// resolveBeneath is the resolution every overlay path is opened with.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens rel ("." for base itself) beneath the directory base.
func openBeneath(base int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: resolveBeneath}
	for {
		fd, err := unix.Openat2(base, rel, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue // EAGAIN: a rename raced the lookup; the kernel asks for a retry
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat2", Path: rel, Err: err}
		}
		return fd, nil
	}
}

// openDirBeneath opens the directory rel beneath base for reading.
func openDirBeneath(base int, rel string) (int, error) {
	return openBeneath(base, rel, unix.O_RDONLY|unix.O_DIRECTORY)
}

// lstatAt is fstatat without following a final link. ok is false, with
// no error, when the name does not exist.
func lstatAt(dir int, name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		return st, true, nil
	case errors.Is(err, unix.ENOENT):
		return st, false, nil
	}
	return st, false, &os.PathError{Op: "fstatat", Path: name, Err: err}
}

// readNames lists the names in the open directory dir, sorted. It reads
// through a duplicate, so dir stays open.
func readNames(dir int) ([]string, error) {
	fd, err := unix.Dup(dir)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// readlinkAt reads the target of the link name in dir.
func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", &os.PathError{Op: "readlinkat", Path: name, Err: err}
	}
	return string(buf[:n]), nil
}

// typeOf is the entry type of a stat's mode: a file, a directory, a
// symbolic link, or "" for anything else (a device, a pipe, a socket).
func typeOf(mode uint32) EntryType {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	}
	return ""
}

// isWhiteout reports whether a stat is overlayfs's whiteout: a character
// device with device number 0/0, which marks a deleted entry.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// The extended attributes overlayfs marks its upper layer with: opaque
// (a directory that hides the lower one entirely) and redirect (a renamed
// directory, which the sandbox mounts without: redirect_dir=off). The
// trusted. names are used in the initial user namespace, the user. names
// with userxattr in any other.
var (
	opaqueXattrs   = []string{"trusted.overlay.opaque", "user.overlay.opaque"}
	redirectXattrs = []string{"trusted.overlay.redirect", "user.overlay.redirect"}
	metacopyXattrs = []string{"trusted.overlay.metacopy", "user.overlay.metacopy"}
)

// xattrAt returns the value of the first of names that the entry name in
// the directory dir carries, not following a final link.
func xattrAt(dir int, name string, names []string) (string, bool) {
	p := "/proc/self/fd/" + strconv.Itoa(dir) + "/" + name
	buf := make([]byte, 64)
	for _, n := range names {
		sz, err := unix.Lgetxattr(p, n, buf)
		switch {
		case err == nil:
			return string(buf[:sz]), true
		case errors.Is(err, unix.ERANGE):
			return "", true // longer than any value overlayfs writes for these
		}
	}
	return "", false
}
