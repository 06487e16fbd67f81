package nsinit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SystemDirs are the host directories bound read-only into every sandbox,
// where they exist. A directory that is a symlink on the host (merged /usr)
// becomes the same symlink.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// MaskedEtc are the entries of /etc hidden inside the sandbox (an empty
// file or directory over them): password hashes, sudo rules, host keys.
var MaskedEtc = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssh", "ssl/private", "security/opasswd", "machine-id"}

// ProcReadOnly are the entries of the sandbox's /proc made read-only. The
// kernel grants the owner's write bits on sysctls to any process whose
// effective uid is the host's root, user namespace or not, and a command
// run for root maps to the host's root: without this, only Landlock would
// stand between it and kernel.core_pattern or sysrq-trigger.
var ProcReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}

// Devices are the host device nodes bound into the sandbox's /dev.
var Devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// newRootAt is where the new root is assembled: a tmpfs mounted over the
// host's /tmp in the init's own mount namespace (the host sees nothing).
// Sources are opened first, so a workspace under /tmp is still reachable.
const newRootAt = "/tmp"

// rootSize bounds the tmpfs of the new root itself: it holds only mount
// points and a few symlinks, and is read-only once built.
const rootSize = 1 << 20

// buildRoot makes the sandbox's filesystem and pivots into it.
func buildRoot(cfg *Config) *failure {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("mount", "unavailable", fmt.Errorf("making mounts private: %w", err))
	}
	// Open every source before the tmpfs covers /tmp.
	type source struct {
		fd      int
		target  string // inside the new root
		dir     bool
		link    string // the host path is a symlink to this
		ro      bool
		devices bool
		mnt     int // a detached mount to move in place of the bind (the overlay), or 0
	}
	var sources []source
	open := func(host, target string, ro, devices bool) *failure {
		// A system dir that is a link (merged /usr: /bin -> usr/bin) stays
		// a link; any other path is bound as what it points to.
		if link, err := os.Readlink(host); err == nil && slices.Contains(SystemDirs, host) {
			sources = append(sources, source{fd: -1, target: target, link: link})
			return nil
		}
		fd, err := unix.Open(host, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // optional: absent on this host
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fail("mount", "fault", err)
		}
		sources = append(sources, source{fd: fd, target: target, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ro: ro, devices: devices})
		return nil
	}
	for _, d := range SystemDirs {
		if f := open(d, d, true, false); f != nil {
			return f
		}
	}
	for _, d := range Devices {
		// Read-only mounts still allow writing to a device, but not
		// chmod or chown of the host's node.
		if f := open("/dev/"+d, "/dev/"+d, true, true); f != nil {
			return f
		}
	}
	wsIndex := -1
	if cfg.Workspace != "" {
		wsIndex = len(sources)
		if f := open(cfg.Workspace, "/workspace", !cfg.Writable, false); f != nil {
			return f
		}
		if len(sources) == wsIndex || !sources[wsIndex].dir {
			return fail("workspace", "invalid", fmt.Errorf("Workspace %q is not a directory", cfg.Workspace))
		}
		if cfg.Overlay != nil {
			// Built now, while the workspace and the overlay's
			// directories are still reachable by their host paths.
			mnt, f := mountOverlay(sources[wsIndex].fd, cfg.Overlay)
			if f != nil {
				return f
			}
			sources[wsIndex].mnt = mnt
		}
	}

	// The extra read-only paths last, so that they sit on top of the rest.
	for _, p := range cfg.ReadOnly {
		if _, err := os.Stat(p); err != nil {
			return fail("readonly_paths", "invalid", fmt.Errorf("ReadOnlyPaths entry %q: %v", p, err))
		}
		if f := open(p, p, true, false); f != nil {
			return f
		}
	}

	root := newRootAt
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size="+strconv.Itoa(rootSize)); err != nil {
		return fail("mount", "unavailable", fmt.Errorf("tmpfs for the new root: %w", err))
	}
	for _, d := range []string{"/tmp", "/proc", "/dev", "/dev/shm", "/workspace"} {
		if err := os.MkdirAll(root+d, 0o755); err != nil {
			return fail("mount", "fault", err)
		}
	}
	// The private /tmp first: read-only paths under /tmp go on top of it.
	size := strconv.FormatInt(cfg.TmpSize, 10)
	for _, t := range []string{"/tmp", "/dev/shm"} {
		if err := unix.Mount("tmpfs", root+t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+size); err != nil {
			return fail("mount", "unavailable", fmt.Errorf("tmpfs for %s: %w", t, err))
		}
	}
	for _, s := range sources {
		target := root + s.target
		if s.link != "" {
			if err := os.Symlink(s.link, target); err != nil {
				return fail("mount", "fault", err)
			}
			continue
		}
		if err := mountPoint(target, s.dir); err != nil {
			return fail("mount", "fault", err)
		}
		if s.mnt > 0 {
			f := placeOverlay(s.mnt, target)
			unix.Close(s.mnt)
			if f != nil {
				return f
			}
		} else if err := unix.Mount(fdPath(s.fd), target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fail("mount", "unavailable", fmt.Errorf("binding %s: %w", s.target, err))
		}
		unix.Close(s.fd)
		attr := uint64(unix.MOUNT_ATTR_NOSUID)
		if !s.devices {
			attr |= unix.MOUNT_ATTR_NODEV
		}
		if s.ro {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		if err := setAttr(target, attr, true); err != nil {
			return fail("mount", "unavailable", fmt.Errorf("making %s read-only, nosuid: %w", s.target, err))
		}
	}
	if f := maskEtc(root); f != nil {
		return f
	}
	if wsIndex >= 0 {
		for _, m := range cfg.Masked {
			if f := mask(root+"/workspace/"+m, true); f != nil {
				return f
			}
		}
		for _, p := range cfg.Protected {
			if f := protect(root + "/workspace/" + p); f != nil {
				return f
			}
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, root+"/dev/"+name); err != nil {
			return fail("mount", "fault", err)
		}
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fail("mount", "unavailable", fmt.Errorf("a /proc for the PID namespace: %w", err))
	}
	for _, p := range ProcReadOnly {
		target := root + "/proc/" + p
		if _, err := os.Lstat(target); err != nil {
			continue
		}
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fail("mount", "unavailable", fmt.Errorf("binding /proc/%s: %w", p, err))
		}
		if err := setAttr(target, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, true); err != nil {
			return fail("mount", "unavailable", fmt.Errorf("making /proc/%s read-only: %w", p, err))
		}
	}
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detach then drops it, and nothing of the host is reachable.
	if err := unix.Chdir(root); err != nil {
		return fail("pivot_root", "fault", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fail("pivot_root", "unavailable", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fail("pivot_root", "fault", fmt.Errorf("detaching the old root: %w", err))
	}
	if err := unix.Chdir("/"); err != nil {
		return fail("pivot_root", "fault", err)
	}
	if err := setAttr("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
		return fail("readonly_root", "unavailable", err)
	}
	return nil
}

// mountPoint creates an empty file or directory to mount over.
func mountPoint(target string, dir bool) error {
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(dirOf(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// setAttr sets mount attributes with mount_setattr(2) rather than a
// MS_REMOUNT|MS_BIND|MS_RDONLY remount: it reaches every submount at once
// (AT_RECURSIVE), and it keeps the flags it does not name, which a bind in
// a user namespace could not clear anyway (the source's noexec, nodev).
func setAttr(path string, set uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set})
}

// mask hides path under an empty, read-only directory (or file). A
// missing path needs no mask; anything but a directory or file there is
// refused, since a symlink would move the mask elsewhere.
// protect binds path, a directory or file of the workspace, read-only
// over itself; a symlink or nothing there is left alone (the command
// cannot follow a link out: the workspace is all it sees).
func protect(path string) *failure {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fail("mount", "fault", fmt.Errorf("%s: %w", path, err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("mount", "fault", err)
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		return nil
	}
	at := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(at, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fail("mount", "unavailable", fmt.Errorf("binding %s read-only: %w", baseOf(path), err))
	}
	if err := setAttr(path, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true); err != nil {
		return fail("mount", "unavailable", fmt.Errorf("making %s read-only: %w", baseOf(path), err))
	}
	return nil
}

func mask(path string, mustDir bool) *failure {
	// Through an O_PATH descriptor, so that the thing checked is the thing
	// covered even if the host swaps it for a symlink meanwhile.
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fail("mask", "fault", fmt.Errorf("%s: %w", path, err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("mask", "fault", err)
	}
	at := "/proc/self/fd/" + strconv.Itoa(fd)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mount("tmpfs", at, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0555,size=4096"); err != nil {
			return fail("mask", "unavailable", fmt.Errorf("masking %s: %w", path, err))
		}
	case unix.S_IFREG:
		if mustDir {
			return fail("mask", "invalid", fmt.Errorf("%s is not a directory: airlock keeps its state there; move it away", baseOf(path)))
		}
		if err := unix.Mount("/dev/null", at, "", unix.MS_BIND, ""); err != nil {
			return fail("mask", "unavailable", fmt.Errorf("masking %s: %w", path, err))
		}
		// Through the path, now that the mask is on it: read-only, so that
		// no chmod reaches the host's /dev/null.
		if err := setAttr(path, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, false); err != nil {
			return fail("mask", "unavailable", fmt.Errorf("masking %s: %w", path, err))
		}
	default:
		if mustDir {
			return fail("mask", "invalid", fmt.Errorf("%s is not a directory: airlock keeps its state there; move it away", baseOf(path)))
		}
	}
	return nil
}

func maskEtc(root string) *failure {
	for _, e := range MaskedEtc {
		p := root + "/etc/" + e
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeSymlink != 0 {
			continue // absent, or a link into a place that is masked or absent
		}
		if f := mask(p, false); f != nil {
			return f
		}
	}
	return nil
}

// dirOf and baseOf are filepath.Dir and filepath.Base for the clean
// absolute paths the init handles. Not path/filepath itself: its package
// initializer sorts late, and the init hook waits for every package it
// imports (see the package comment).
func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func baseOf(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
