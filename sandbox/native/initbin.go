package native

import (
	"os"
	"path"
	"syscall"
)

// InitBinary is the name of the small binary that serves as the
// sandbox's init (cmd/airlock-sandbox-init): it links only this package's
// init, so it starts in a fraction of the time a large program (the
// airlock CLI, which links every package) takes to re-execute itself.
const InitBinary = "airlock-sandbox-init"

// FindInit returns InitBinary from the running program's own directory,
// for Options.Exe, or "" when there is none that is safe to run, so that
// the running binary is the init. Safe means that no one but the owner of
// the running program (or root) could have put it there or changed it: a
// regular file and its directory, both owned by root or by this process's
// effective user, neither writable by group or others. An init in a
// shared directory such as /tmp, which anyone may write, is never used.
// Whether it was built from the same sources is checked at its first run
// (see Options.Exe).
func FindInit() string {
	// On Linux os.Executable is the kernel's own path of the running
	// file (/proc/self/exe), links already resolved, so there is nothing
	// for path.EvalSymlinks to do (and filepath initializes too late
	// for `airlock exec`'s fast start). Should the path have changed since
	// (the binary moved, a link planted at its directory), ownedSafely
	// finds no directory there, or not a safe one, and no init is used.
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := path.Dir(self)
	p := path.Join(dir, InitBinary)
	if !ownedSafely(dir, true) || !ownedSafely(p, false) {
		return ""
	}
	return p
}

// ownedSafely reports whether path (not followed if a link) is a
// directory (dir) or an executable regular file owned by root or this
// process's effective user and not writable by group or others, and, for
// root, usable by others.
func ownedSafely(path string, dir bool) bool {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return false
	}
	mode := st.Mode & syscall.S_IFMT
	switch {
	case dir && mode != syscall.S_IFDIR:
		return false
	case !dir && (mode != syscall.S_IFREG || st.Mode&0o111 == 0):
		return false
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return false
	case os.Geteuid() == 0 && st.Mode&0o001 == 0:
		// Run by root, the init starts as InitHostUID, an "other" on
		// the host, who must be able to reach and run it.
		return false
	}
	return st.Mode&0o022 == 0
}
