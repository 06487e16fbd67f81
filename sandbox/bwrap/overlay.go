package bwrap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"airlock.dev/airlock/sandbox"
)

// OverlayVersion is the first bubblewrap with --overlay-src and
// --overlay, which Spec.Overlay needs; an older bwrap refuses such a run.
var OverlayVersion = [3]int{0, 9, 0}

// versions caches what `bwrap --version` said, by binary path.
var versions sync.Map // string -> versionResult

type versionResult struct {
	v   [3]int
	raw string
	err error
}

// version returns bwrap's version, asked once per binary.
func version(bin string) ([3]int, string, error) {
	if r, ok := versions.Load(bin); ok {
		vr := r.(versionResult)
		return vr.v, vr.raw, vr.err
	}
	// startProcess, as for every run: os/exec is kept out of this package.
	var out bytes.Buffer
	p, err := startProcess(bin, []string{bin, "--version"}, procFiles{stdout: &out, stderr: io.Discard}, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL})
	if err == nil {
		var st *os.ProcessState
		st, err = p.wait()
		if err == nil && !st.Success() {
			err = fmt.Errorf("%s --version: %s", bin, st)
		}
	}
	vr := versionResult{raw: strings.TrimSpace(out.String()), err: err}
	if err == nil {
		vr.v, vr.err = parseVersion(vr.raw)
	}
	versions.Store(bin, vr)
	return vr.v, vr.raw, vr.err
}

// parseVersion reads "bubblewrap 0.8.0".
func parseVersion(s string) ([3]int, error) {
	var v [3]int
	f := strings.Fields(s)
	if len(f) != 2 || f[0] != "bubblewrap" {
		return v, fmt.Errorf("bwrap --version said %q, not \"bubblewrap X.Y.Z\"", s)
	}
	parts := strings.Split(f[1], ".")
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return v, fmt.Errorf("bwrap --version said %q, not \"bubblewrap X.Y.Z\"", s)
		}
		v[i] = n
	}
	return v, nil
}

func atLeast(v, min [3]int) bool {
	for i := range v {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}

// HasOverlay reports whether the bwrap this backend runs can mount
// Spec.Overlay (bubblewrap OverlayVersion or later), as an error saying
// what to install when it cannot.
func (s *Sandbox) HasOverlay() error {
	bin, err := s.binary()
	if err != nil {
		return err
	}
	return overlaySupported(bin)
}

func overlaySupported(bin string) error {
	v, raw, err := version(bin)
	if err != nil {
		return sandbox.Unavailable(sandbox.LayerOverlay, fmt.Sprintf("cannot tell whether %s has --overlay: %v", bin, err),
			"install bubblewrap 0.9 or later, or use the native backend")
	}
	if !atLeast(v, OverlayVersion) {
		return sandbox.Unavailable(sandbox.LayerOverlay, fmt.Sprintf("%s (%s) has no --overlay, which came in bubblewrap %d.%d.%d", bin, raw, OverlayVersion[0], OverlayVersion[1], OverlayVersion[2]),
			"install bubblewrap 0.9 or later, or use the native backend")
	}
	return nil
}

// checkOverlayMount reads the overlay bwrap mounted at the workspace from
// the sandbox's own mountinfo (of its child, waiting on --block-fd) and
// refuses it unless it makes no redirects and no metacopy: the upper
// layer's reader relies on that (see sandbox.Overlay), and bwrap chooses
// the options itself.
func checkOverlayMount(mountinfo []byte) error {
	for _, line := range bytes.Split(mountinfo, []byte("\n")) {
		pre, post, ok := strings.Cut(string(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || f[4] != sandbox.WorkspaceMount || len(g) < 3 {
			continue
		}
		if g[0] != "overlay" {
			return sandbox.Unavailable(sandbox.LayerOverlay, fmt.Sprintf("bwrap mounted a %s, not an overlay, at %s", g[0], sandbox.WorkspaceMount), "use the native backend")
		}
		if bad := overlayOptionsProblem(strings.Split(g[2], ",")); bad != "" {
			return sandbox.Unavailable(sandbox.LayerOverlay, fmt.Sprintf("bwrap mounted the overlay with %s (options %s): its upper layer could hold redirects or metadata-only copies", bad, g[2]),
				"use the native backend")
		}
		return nil
	}
	return sandbox.Unavailable(sandbox.LayerOverlay, "no overlay at "+sandbox.WorkspaceMount+" in the sandbox's mountinfo", "use the native backend")
}

// overlayOptionsProblem names what in an overlay's super options (as
// mountinfo shows them) lets it make redirects or metacopy, or "".
// redirect_dir is shown only when not the kernel's default, which may be
// on: absent, it is acceptable only with userxattr, which forces it to
// nofollow and metacopy off.
func overlayOptionsProblem(opts []string) string {
	userxattr, redirectOff := false, false
	for _, o := range opts {
		switch o {
		case "userxattr":
			userxattr = true
		case "redirect_dir=off", "redirect_dir=nofollow":
			redirectOff = true
		case "redirect_dir=on", "redirect_dir=follow":
			return o
		case "metacopy=on":
			return o
		}
	}
	if !userxattr && !redirectOff {
		return "neither userxattr nor redirect_dir=off"
	}
	if !userxattr && !hasOption(opts, "metacopy=off") {
		return "metacopy left to the kernel's default"
	}
	return ""
}

func hasOption(opts []string, want string) bool {
	for _, o := range opts {
		if o == want {
			return true
		}
	}
	return false
}

// readMountinfo reads the mountinfo of process pid.
func readMountinfo(pid int) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
}
