package bwrap

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"airlock.dev/airlock/sandbox"
)

// The descriptors bwrap is handed (exec.Cmd.ExtraFiles start at 3).
const (
	fdInfo    = 3 // bwrap writes {"child-pid": N} here once the child exists
	fdBlock   = 4 // the child waits for one byte here before it goes on
	fdSeccomp = 5 // the compiled filter, read to EOF
)

// SandboxUID and SandboxGID are the user and group the command runs as
// inside the sandbox (nobody), mapped to the caller's own user outside.
const (
	SandboxUID = 65534
	SandboxGID = 65534
)

// Hostname is the host name the command sees.
const Hostname = "airlock"

// SystemDirs are the host directories bound read-only at the same place.
// Where one is a symlink (merged /usr), the same symlink is made instead.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc"}

// DefaultHiddenPaths are host paths inside SystemDirs replaced by an empty
// file or a read-only empty directory. The sandbox user is mapped to the
// caller's user outside, so when airlock runs as root a root-only file in
// a bound directory would otherwise be readable by the command.
var DefaultHiddenPaths = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private",
	"/etc/security/opasswd", "/etc/containers", "/etc/machine-id",
}

// ProcReadOnly are the parts of the sandbox's /proc made read-only, and
// ProcHidden those hidden (an empty file or directory), as container
// engines do. The command's user is the caller's outside the sandbox, and
// for root the kernel lets a process of host uid 0 write sysctls and
// /proc/sysrq-trigger by file mode alone, capabilities or not: a writable
// /proc/sys would let the command change the host's kernel settings.
var (
	ProcReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/fs", "/proc/bus", "/proc/irq"}
	ProcHidden   = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
		"/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/proc/asound", "/proc/kallsyms"}
)

// appendProcMasks covers ProcReadOnly and ProcHidden over the sandbox's
// new /proc. The sources are the host's own /proc entries: what a
// read-only sysctl directory shows still depends on the reader's
// namespaces, not the host's.
func appendProcMasks(a []string) []string {
	for _, p := range ProcReadOnly {
		if _, err := os.Lstat(p); err == nil {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, p := range ProcHidden {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			a = append(a, "--tmpfs", p, "--remount-ro", p)
		default:
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	return a
}

// buildArgs returns bwrap's arguments for spec, whose limits have their
// defaults. It checks the host paths the spec names and refuses a spec
// bwrap would fail on halfway.
func buildArgs(spec *sandbox.Spec, hidden []string) ([]string, error) {
	a := []string{
		// --unshare-all only tries the user and cgroup namespaces and goes
		// on silently without them; asking for each makes a missing one
		// an error instead.
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
		"--unshare-uts", "--unshare-cgroup",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxGID),
		"--hostname", Hostname,
	}
	// The private mounts first, so a ReadOnlyPaths entry under /tmp is
	// bound over the private /tmp rather than hidden by it.
	a = append(a, "--proc", "/proc")
	a = appendProcMasks(a)
	a = append(a, "--dev", "/dev", "--tmpfs", "/tmp")
	for _, d := range SystemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("bwrap: read the symlink %s: %w", d, err)
			}
			a = append(a, "--symlink", target, d)
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, p := range spec.ReadOnlyPaths {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return nil, sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q is not a clean absolute path below /", p), "give clean absolute host paths such as /opt/tool")
		}
		if _, err := os.Stat(p); err != nil {
			return nil, sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q: %v", p, err), "give only paths that exist on the host")
		}
		a = append(a, "--ro-bind", p, p)
	}
	// After ReadOnlyPaths, so a hidden path inside one is hidden too.
	for _, h := range hidden {
		fi, err := os.Lstat(h)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			a = append(a, "--tmpfs", h, "--remount-ro", h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}

	chdir := "/"
	if spec.Workspace != "" {
		ws := spec.Workspace
		if !path.IsAbs(ws) {
			return nil, sandbox.Invalid(fmt.Sprintf("Workspace %q is not an absolute path", ws), "give the workspace's absolute host path")
		}
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			return nil, sandbox.Invalid(fmt.Sprintf("Workspace %q is not a directory on the host", ws), "give an existing directory as the workspace")
		}
		switch {
		case spec.Overlay != nil:
			// bwrap chooses the overlay's options itself: Run checks
			// them in the sandbox's mountinfo before the command starts.
			a = append(a, "--overlay-src", ws, "--overlay", spec.Overlay.Upper, spec.Overlay.Work, sandbox.WorkspaceMount)
		case spec.WorkspaceWritable:
			a = append(a, "--bind", ws, sandbox.WorkspaceMount)
		default:
			a = append(a, "--ro-bind", ws, sandbox.WorkspaceMount)
		}
		for _, m := range sandbox.MaskedDirs {
			fi, err := os.Lstat(path.Join(ws, m))
			switch {
			case err == nil && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0:
				return nil, sandbox.Invalid(fmt.Sprintf("the workspace's %s is not a directory, and airlock keeps its state there", m), "move that file out of the workspace")
			case err != nil && !spec.WorkspaceWritable:
				// Read-only and absent: nothing to hide, and the command
				// cannot make it.
				continue
			}
			// Writable and absent: bwrap makes the empty mount point, so
			// the command cannot plant a state directory either.
			p := path.Join(sandbox.WorkspaceMount, m)
			a = append(a, "--tmpfs", p, "--remount-ro", p)
		}
		if spec.WorkspaceWritable {
			for _, p := range sandbox.ReadOnlyEntries(ws) {
				a = append(a, "--ro-bind", path.Join(ws, p), path.Join(sandbox.WorkspaceMount, p))
			}
		}
		chdir = sandbox.WorkspaceMount
		if spec.Dir != "" {
			if !sandbox.IsLocal(spec.Dir) {
				return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is not a relative path inside the workspace", spec.Dir), "give a path relative to the workspace, without .. or a leading /")
			}
			root, err := os.OpenRoot(ws)
			if err != nil {
				return nil, fmt.Errorf("bwrap: open the workspace: %w", err)
			}
			fi, err := root.Stat(spec.Dir)
			root.Close()
			if err != nil || !fi.IsDir() {
				return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is not a directory in the workspace", spec.Dir), "create the directory first, or run from the workspace itself")
			}
			chdir = path.Join(sandbox.WorkspaceMount, spec.Dir)
		}
	} else if spec.Dir != "" {
		return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is set but there is no Workspace", spec.Dir), "set Workspace, or leave Dir empty")
	}
	// Last of the mounts: the root bwrap built becomes read-only, so the
	// command can write only to /tmp and, if asked, the workspace.
	a = append(a, "--remount-ro", "/")

	env, err := sandbox.CommandEnv(spec.Env)
	if err != nil {
		return nil, err
	}
	a = append(a, "--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a, "--chdir", chdir,
		"--info-fd", strconv.Itoa(fdInfo),
		"--block-fd", strconv.Itoa(fdBlock),
		"--seccomp", strconv.Itoa(fdSeccomp),
		"--")
	// bwrap always sets PWD after --chdir, so the command would see a
	// variable the Spec did not give. env puts PWD back the way the Spec
	// has it (unset, or its value) and then looks argv[0] up in PATH and
	// runs it, answering 127 or 126 like a shell when it cannot.
	if _, err := os.Stat(EnvBinary); err != nil {
		return nil, sandbox.Unavailable("", fmt.Sprintf("%s is missing on the host, and the bwrap backend starts every command through it", EnvBinary), "apt-get install coreutils")
	}
	if strings.Contains(spec.Argv[0], "=") {
		// env would take it for an assignment.
		return nil, sandbox.Invalid(fmt.Sprintf("Argv[0] %q holds '=', which env(1) would take for an assignment", spec.Argv[0]), "name the command without '='")
	}
	a = append(a, EnvBinary)
	if pwd, ok := lookup(env, "PWD"); ok {
		a = append(a, "PWD="+pwd)
	} else {
		a = append(a, "-u", "PWD")
	}
	a = append(a, "--")
	return append(a, spec.Argv...), nil
}

// EnvBinary is the host's env(1), bound read-only with /usr, that starts
// every command (see buildArgs).
const EnvBinary = "/usr/bin/env"

func lookup(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v, true
		}
	}
	return "", false
}
