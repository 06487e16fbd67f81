package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
)

// ReadOnlyEntries returns the ReadOnlyDirs that exist in the host
// workspace ws as a directory or a regular file: what a backend binds
// read-only over itself. A link, or nothing, is left alone (the command
// cannot follow a link out of the workspace it sees).
func ReadOnlyEntries(ws string) []string {
	var out []string
	for _, p := range ReadOnlyDirs {
		fi, err := os.Lstat(path.Join(ws, p))
		if err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			out = append(out, p)
		}
	}
	return out
}

// Prepare checks the host side of Spec.Overlay, which Spec.Check has
// checked as written, and readies it for workspace ws: Upper and Work
// are directories (not links to one), empty, on one filesystem that can
// hold the user.* xattrs overlayfs marks opaque directories with in a
// user namespace. Upper then takes the mode (and, for root, the owner) of
// the workspace's root: the overlay's root directory is Upper's own, and
// the command must see the workspace's. A backend calls it just before
// it mounts.
func (o *Overlay) Prepare(ws string) error {
	var dev uint64
	for i, d := range []struct{ name, p string }{{"Upper", o.Upper}, {"Work", o.Work}} {
		fi, err := os.Lstat(d.p)
		if err != nil || !fi.IsDir() {
			return Invalid(fmt.Sprintf("Overlay.%s %q is not a directory on the host", d.name, d.p),
				"create it, empty, before the run (not a symbolic link)")
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return Invalid(fmt.Sprintf("Overlay.%s %q: no device number", d.name, d.p), "give a directory on a local filesystem")
		}
		if i == 0 {
			dev = st.Dev
		} else if st.Dev != dev {
			return Invalid(fmt.Sprintf("Overlay.Work %q is not on the same filesystem as Overlay.Upper %q", o.Work, o.Upper),
				"make both directories side by side in one directory")
		}
		f, err := os.Open(d.p)
		if err != nil {
			return Invalid(fmt.Sprintf("Overlay.%s %q cannot be read: %v", d.name, d.p, err), "give a directory this process can read")
		}
		names, _ := f.Readdirnames(1)
		f.Close()
		if len(names) > 0 {
			return Invalid(fmt.Sprintf("Overlay.%s %q is not empty (it holds %q)", d.name, d.p, names[0]),
				"give a fresh, empty directory for each run")
		}
	}
	// Only a filesystem without the feature is refused here; any other
	// failure is left to the kernel's mount, which says more.
	if err := syscall.Setxattr(o.Work, overlayProbeXattr, []byte("y"), 0); errors.Is(err, syscall.ENOTSUP) {
		return Unavailable(LayerOverlay, fmt.Sprintf("the filesystem of Overlay.Work %q cannot hold user xattrs (%v), where overlayfs marks a directory made again as opaque", o.Work, err),
			"put the overlay's directories on ext4, xfs, btrfs or tmpfs")
	}
	syscall.Removexattr(o.Work, overlayProbeXattr)
	fi, err := os.Stat(ws)
	if err != nil {
		return Invalid(fmt.Sprintf("Workspace %q: %v", ws, err), "create the workspace first")
	}
	var up syscall.Stat_t
	if err := syscall.Lstat(o.Upper, &up); err != nil {
		return fmt.Errorf("sandbox: Overlay.Upper: %w", err)
	}
	if os.FileMode(up.Mode).Perm() != fi.Mode().Perm() {
		if err := os.Chmod(o.Upper, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("sandbox: giving Overlay.Upper the workspace's mode: %w", err)
		}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (st.Uid != up.Uid || st.Gid != up.Gid) {
		if err := os.Lchown(o.Upper, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("sandbox: giving Overlay.Upper the workspace's owner: %w", err)
		}
	}
	return nil
}

// overlayProbeXattr is the xattr Prepare sets and removes on Overlay.Work
// to learn whether its filesystem holds user xattrs.
const overlayProbeXattr = "user.airlock.probe"

// CommandEnv returns the whole environment a backend gives a command:
// env, each entry checked to be KEY=value, plus HOME=/tmp and
// PATH=DefaultPath where env sets neither.
func CommandEnv(env []string) ([]string, error) {
	var home, pathSet bool
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Invalid(fmt.Sprintf("Env entry %q is not KEY=value", kv), "write each entry as KEY=value with a non-empty KEY")
		}
		switch k {
		case "HOME":
			home = true
		case "PATH":
			pathSet = true
		}
		out = append(out, kv)
	}
	if !home {
		out = append(out, "HOME=/tmp")
	}
	if !pathSet {
		out = append(out, "PATH="+DefaultPath)
	}
	return out, nil
}

// Capped is the writer a backend collects a command's stdout or stderr
// in: it keeps the first Max bytes and calls OnOver once past them. It
// never fails a write, so the command is not stopped by a broken pipe
// before the backend's kill reaches it. It is safe for concurrent use.
type Capped struct {
	Max    int64
	OnOver func()

	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
	once sync.Once
}

func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.Max - int64(c.buf.Len())
	over := int64(len(p)) > room
	if over {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
	} else {
		c.buf.Write(p)
	}
	c.mu.Unlock()
	if over && c.OnOver != nil {
		c.once.Do(c.OnOver)
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (c *Capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes()
}

// Over reports whether more than Max bytes were written.
func (c *Capped) Over() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.over
}
