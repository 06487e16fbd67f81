package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Overlay is Config's copy-on-write workspace (sandbox.Overlay): host
// directories, both empty, for overlayfs's upperdir and workdir.
type Overlay struct {
	Upper, Work string
}

// OverlayOptions and OverlayOptionsUserNS are sandbox.OverlayOptions and
// sandbox.OverlayOptionsUserNS (this package imports no airlock package;
// a test of package native keeps the lists equal): no redirects, no
// metacopy, no index, so that the upper layer holds plain files a reader
// can apply. Inside a user namespace, where the init always is, overlayfs
// cannot set trusted.* xattrs: without userxattr it mounts, but cannot
// make a directory opaque, and deleting a directory of the workspace
// fails with EIO.
var (
	OverlayOptions       = []string{"redirect_dir=off", "metacopy=off", "index=off"}
	OverlayOptionsUserNS = []string{"userxattr", "metacopy=off", "index=off"}
)

// MaxKernelLog bounds the messages read back from the kernel's log of a
// failed overlay (fsopen(2)'s fs_context), for the error.
const MaxKernelLog = 16

// mountOverlay builds the overlay whose lower layer is the directory open
// at lower (an O_PATH descriptor), detached: it returns a descriptor of
// the new mount (fsmount(2)) for move_mount(2) to put in place once the
// new root exists. The new mount API lets the init make it while the
// host's paths are all still reachable, before a tmpfs covers /tmp, where
// a workspace and its .airlock may well be; each layer is named through
// /proc/self/fd, so that no path is parsed for separators or escapes and
// the directory checked is the one used.
func mountOverlay(lower int, o *Overlay) (int, *failure) {
	unavailable := func(err error) (int, *failure) {
		f := fail("overlay", "unavailable", err)
		f.layer = "overlay"
		return -1, f
	}
	var layers []int
	defer func() {
		for _, fd := range layers {
			unix.Close(fd)
		}
	}()
	for _, p := range []string{o.Upper, o.Work} {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fail("overlay", "invalid", fmt.Errorf("Overlay directory %q: %w", p, err))
		}
		layers = append(layers, fd)
	}
	opts := OverlayOptions
	if inUserNS() {
		opts = OverlayOptionsUserNS
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return unavailable(fmt.Errorf("fsopen overlay: %w (is overlayfs built into this kernel, or its module loaded?)", err))
	}
	defer unix.Close(fs)
	// lowerdir+ (Linux 6.8) takes one layer, unparsed.
	set := []struct{ key, value string }{
		{"lowerdir+", fdPath(lower)},
		{"upperdir", fdPath(layers[0])},
		{"workdir", fdPath(layers[1])},
	}
	for _, opt := range opts {
		k, v, _ := strings.Cut(opt, "=")
		set = append(set, struct{ key, value string }{k, v})
	}
	for _, s := range set {
		var err error
		if s.value == "" {
			err = unix.FsconfigSetFlag(fs, s.key)
		} else {
			err = unix.FsconfigSetString(fs, s.key, s.value)
		}
		if err != nil {
			return unavailable(fmt.Errorf("overlay option %s: %w%s", s.key, err, kernelLog(fs)))
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return unavailable(fmt.Errorf("creating the overlay (%s): %w%s", strings.Join(opts, ","), err, kernelLog(fs)))
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return unavailable(fmt.Errorf("fsmount of the overlay: %w%s", err, kernelLog(fs)))
	}
	return mnt, nil
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// kernelLog reads what the kernel logged on the fs_context fs (overlayfs
// says there why it refused), as ": message; message", or "".
func kernelLog(fs int) string {
	var msgs []string
	buf := make([]byte, 512)
	for range MaxKernelLog {
		n, err := unix.Read(fs, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	if len(msgs) == 0 {
		return ""
	}
	return " (the kernel said: " + strings.Join(msgs, "; ") + ")"
}

// inUserNS reports whether the init runs in a user namespace other than
// the initial one, whose uid_map maps every id to itself.
func inUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true // the safer guess: userxattr works in both
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// placeOverlay moves the detached overlay mnt onto target.
func placeOverlay(mnt int, target string) *failure {
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		f := fail("overlay", "unavailable", fmt.Errorf("move_mount of the overlay to %s: %w", baseOf(target), err))
		f.layer = "overlay"
		return f
	}
	return nil
}
