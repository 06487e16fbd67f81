// Package sandbox runs one command where the worst it can do is damage a
// disposable place. It defines what every backend shares: the Spec of what
// to run and how tightly, the Result, the isolation Layers, and the errors.
// The backends live in sub-packages (native, bwrap, container) and all pass
// one conformance and escape suite (sandboxtest).
//
// Mechanism apart from policy: a backend enforces exactly the Spec it is
// handed and decides nothing. A backend that cannot apply a layer the Spec
// asks for refuses to run (ErrUnavailable), unless the Spec explicitly
// allows degradation; Result.Enforced always lists what was applied.
//
// The zero Spec fails closed: no network, the workspace read-only (or
// absent), every default limit in force.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Sandbox is one backend.
type Sandbox interface {
	// Name is the backend's name: "native", "bwrap", "container".
	Name() string
	// Run runs spec.Argv to completion, or until a limit or ctx ends it.
	// An error means the command did not run (or its outcome is unknown):
	// a bad Spec (ErrInvalidSpec), a layer the backend cannot apply
	// (ErrUnavailable), or a fault of the backend. A command that ran and
	// failed is a Result with its exit code, not an error.
	Run(ctx context.Context, spec Spec) (Result, error)
}

// Network is what a command may reach.
type Network string

const (
	// NetworkNone: an empty network namespace, and no new sockets but
	// AF_UNIX. The default.
	NetworkNone Network = "none"
	// NetworkProxy: an empty network namespace as with NetworkNone, but
	// for one way out: plain TCP to ProxyAddr inside the sandbox, which
	// the backend relays to the egress proxy listening on the host's unix
	// socket Spec.Proxy. Every other address and port stays unreachable,
	// and no socket but AF_UNIX and TCP over IPv4 can be made. The
	// proxy's policy decides what the command may reach through it.
	NetworkProxy Network = "proxy"
)

// ProxyPort is the TCP port on 127.0.0.1 inside the sandbox where, in
// NetworkProxy mode, the egress proxy answers; 3128 is the port HTTP
// proxies are customarily found on.
const ProxyPort = 3128

// ProxyAddr is the proxy's address inside the sandbox.
const ProxyAddr = "127.0.0.1:3128"

// ProxyEnv are the variables a backend sets, in NetworkProxy mode, to
// "http://"+ProxyAddr, each unless Spec.Env sets it: the names curl, Go,
// Python and most HTTP clients read. ALL_PROXY is left out on purpose:
// it would send non-HTTP protocols to an HTTP proxy.
var ProxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

// Spec is what to run and how tightly. A zero field means its default.
type Spec struct {
	// Argv is the command and its arguments, run without a shell. Argv[0]
	// is looked up in PATH (from Env, else DefaultPath) inside the sandbox.
	Argv []string
	// Dir is the working directory inside the sandbox, relative to the
	// workspace; "" is the workspace itself.
	Dir string
	// Env is the whole environment of the command, "KEY=value" each. The
	// host's environment is never passed on; only these, plus HOME=/tmp
	// and PATH=DefaultPath where Env sets neither, and with NetworkProxy
	// each of ProxyEnv that Env does not set.
	Env []string
	// Stdin is fed to the command; nil means an empty input.
	Stdin []byte

	// Workspace is the host directory mounted at WorkspaceMount; "" mounts
	// none. Its MaskedDirs are hidden (an empty, read-only directory).
	Workspace string
	// WorkspaceWritable mounts the workspace read-write; by default it is
	// read-only.
	WorkspaceWritable bool
	// ReadOnlyPaths are extra host paths bound read-only at the same path.
	ReadOnlyPaths []string
	// Overlay, when set, runs the command on a copy-on-write view of the
	// workspace (see Overlay): every change it makes lands in
	// Overlay.Upper, and the workspace itself, the lower layer, is never
	// written. It needs Workspace and WorkspaceWritable. The workspace
	// must not be changed by anyone else while the command runs:
	// overlayfs leaves the outcome of changes to a lower layer under a
	// mounted overlay undefined. A backend that cannot mount the overlay
	// refuses to run (ErrUnavailable, LayerOverlay); it never falls back
	// to writing into the workspace, whatever AllowDegraded says.
	Overlay *Overlay

	// Network is NetworkNone when empty.
	Network Network
	// Proxy is the path of the unix socket on the host where an egress
	// proxy (egress.Proxy) listens; NetworkProxy requires it, every other
	// mode refuses it. The command never sees the path: the backend
	// connects to it from outside the sandbox, once per connection the
	// command makes to ProxyAddr.
	Proxy string

	Limits Limits

	// AllowDegraded lets a backend run without a layer it cannot apply
	// (for example cgroup limits for an unprivileged user on cgroup v1);
	// Result.Enforced then says what was applied. Off by default: a
	// missing layer is ErrUnavailable.
	AllowDegraded bool
}

// Overlay asks for a copy-on-write view of the workspace: an overlayfs
// whose lower layer is the workspace, mounted at WorkspaceMount instead of
// the workspace itself. Both directories are the caller's to make, empty,
// and to read and remove afterwards; the command never sees them, since
// they live under a MaskedDirs entry of the workspace (or outside it).
//
// What the upper layer holds afterwards, the contract its reader relies
// on (overlayfs's own format, with the options every backend mounts it
// with; see Documentation/filesystems/overlayfs.rst):
//
//   - A file or directory the command created, or changed in any way
//     (content, mode, owner, times, xattrs), is there whole, at its path,
//     with its new metadata: the overlay is mounted without metacopy, so
//     even a chmod copies the file's data up.
//
//   - A symbolic link or hard link the command made is there as one (two
//     names of the upper layer's one inode for a hard link; a hard link
//     to a file of the workspace copies that file up first).
//
//   - A deleted name is a whiteout: a character device 0/0 at its path.
//     overlayfs may make every whiteout a hard link of one shared inode,
//     so a whiteout's link count means nothing.
//
//   - A directory that replaced one of the workspace's (deleted and made
//     again) is opaque: it carries the xattr trusted.overlay.opaque or,
//     when mounted in a user namespace (option userxattr),
//     user.overlay.opaque, with the value "y"; nothing below it in the
//     workspace shows through. Any other directory of the upper layer is
//     merged with the workspace's of the same path.
//
//   - No redirects: the overlay is mounted without redirect_dir (in the
//     initial user namespace with redirect_dir=off,metacopy=off,index=off;
//     in a user namespace with userxattr, which implies both off, and
//     index=off). Renaming a directory of the workspace therefore fails
//     with EXDEV, and tools such as mv fall back to copying it and
//     deleting the original: the upper layer shows the new directory
//     whole and a whiteout at the old path, never an
//     overlay.redirect xattr. A renamed file is likewise its copy at the
//     new path and a whiteout at the old one.
//
//   - Other overlay.* xattrs (impure, origin, uuid) are overlayfs's
//     bookkeeping, not changes: a reader ignores them.
//
//   - A file owned by a user the sandbox's user namespace does not map
//     (the native backend maps the caller's own uid, and for root also
//     root's) cannot be copied up: changing it, or anything in a
//     directory so owned, fails in the command with EOVERFLOW, where a
//     plain bind would have let the command write it if its mode allowed.
//
// Everything in Work is overlayfs's scratch space, to be removed
// afterwards, never read.
type Overlay struct {
	// Upper is the host directory, empty at start, that becomes
	// overlayfs's upperdir: every change the command makes lands here.
	Upper string
	// Work is the host directory, empty, on the same filesystem as
	// Upper, that becomes overlayfs's workdir.
	Work string
}

// OverlayOptions are the overlayfs mount options a backend mounts
// Spec.Overlay with in the initial user namespace, and
// OverlayOptionsUserNS those inside a user namespace, where the trusted.*
// xattrs are out of reach and overlayfs needs userxattr (which forces
// redirect_dir to nofollow and metacopy off, and refuses an explicit
// redirect_dir=off). Both make the upper layer plain files and
// directories (see Overlay).
var (
	OverlayOptions       = []string{"redirect_dir=off", "metacopy=off", "index=off"}
	OverlayOptionsUserNS = []string{"userxattr", "metacopy=off", "index=off"}
)

// WorkspaceMount is where the workspace appears inside the sandbox.
const WorkspaceMount = "/workspace"

// MaskedDirs are the workspace's directories hidden from every command:
// airlock's own state (audit log, approvals, ledger, snapshots).
var MaskedDirs = []string{".airlock"}

// ReadOnlyDirs are the workspace's entries a command may read but never
// change, even in a writable workspace: the repository's own files, whose
// hooks and config run code on the host the next time a person uses git
// there. (Writes into .git through the file tools ask a person instead.)
var ReadOnlyDirs = []string{".git"}

// DefaultPath is the PATH of a command whose Env sets none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// Limits bound what a command may use. A zero field means its default;
// no limit can be switched off.
type Limits struct {
	Wall      time.Duration // wall-clock time, then the whole tree is killed
	CPU       time.Duration // CPU time (RLIMIT_CPU, whole seconds, rounded up)
	Memory    int64         // bytes of memory (cgroup), the whole tree
	Pids      int           // processes and threads at once (cgroup) of the command's tree, the command's own included
	OpenFiles int           // open file descriptors per process (RLIMIT_NOFILE)
	FileSize  int64         // bytes of one written file (RLIMIT_FSIZE)
	Output    int64         // bytes of stdout and of stderr each kept; past it the tree is killed
}

// The defaults, and the most a Spec may ask for.
const (
	DefaultWall      = 30 * time.Second
	MaxWall          = 10 * time.Minute
	DefaultCPU       = 30 * time.Second
	MaxCPU           = 10 * time.Minute
	DefaultMemory    = 512 << 20
	MaxMemory        = 8 << 30
	DefaultPids      = 128
	MaxPids          = 4096
	DefaultOpenFiles = 256
	MaxOpenFiles     = 4096
	DefaultFileSize  = 64 << 20
	MaxFileSize      = 4 << 30
	DefaultOutput    = 1 << 20
	MaxOutput        = 16 << 20
	// MaxArgvBytes bounds the argv and the environment together.
	MaxArgvBytes = 128 << 10
	// MaxStdin bounds Spec.Stdin.
	MaxStdin = 4 << 20
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	if l.Wall == 0 {
		l.Wall = DefaultWall
	}
	if l.CPU == 0 {
		l.CPU = DefaultCPU
	}
	def(&l.Memory, DefaultMemory)
	def(&l.FileSize, DefaultFileSize)
	def(&l.Output, DefaultOutput)
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	return l
}

// Check reports the first limit out of range, naming it with its value and
// maximum in the units people write (660s, 512MiB), not in nanoseconds or
// bytes.
func (l Limits) Check() error {
	for _, c := range []struct {
		name, max string // the limit in words, and the constant that bounds it
		v, hi     int64
		unit      func(int64) string
	}{
		{"wall-clock limit", "MaxWall", int64(l.Wall), int64(MaxWall), seconds},
		{"CPU-time limit", "MaxCPU", int64(l.CPU), int64(MaxCPU), seconds},
		{"memory limit", "MaxMemory", l.Memory, MaxMemory, binaryBytes},
		{"process limit", "MaxPids", int64(l.Pids), MaxPids, count},
		{"open-file limit", "MaxOpenFiles", int64(l.OpenFiles), MaxOpenFiles, count},
		{"file-size limit", "MaxFileSize", l.FileSize, MaxFileSize, binaryBytes},
		{"output limit", "MaxOutput", l.Output, MaxOutput, binaryBytes},
	} {
		if c.v < 0 {
			return Invalid(fmt.Sprintf("the %s %s is negative", c.name, c.unit(c.v)),
				fmt.Sprintf("give at most %s, or 0 for the default", c.unit(c.hi)))
		}
		if c.v > c.hi {
			return Invalid(fmt.Sprintf("the %s %s is over the maximum of %s (sandbox.%s)", c.name, c.unit(c.v), c.unit(c.hi), c.max),
				fmt.Sprintf("give at most %s, or 0 for the default", c.unit(c.hi)))
		}
	}
	return nil
}

// seconds writes a duration in nanoseconds as people write a time limit:
// whole seconds as 660s, anything finer as Go writes it (1.5s, 500ms).
func seconds(ns int64) string {
	d := time.Duration(ns)
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

// binaryBytes writes a size in the largest binary unit that divides it
// (512MiB, 8GiB), else in bytes. It is plural.Bytes for limits, which are
// round; this package cannot import plural, for the sandbox's init links
// only the standard library, x/sys and go-landlock (native's TestImports).
func binaryBytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Check reports the first thing wrong with the Spec itself, before any
// backend looks at it.
func (s *Spec) Check() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return Invalid("Argv is empty", "give the command to run as Argv[0]")
	}
	n := 0
	for _, a := range s.Argv {
		n += len(a) + 1
	}
	for _, e := range s.Env {
		n += len(e) + 1
	}
	if n > MaxArgvBytes {
		return Invalid(fmt.Sprintf("argv and environment are %d bytes, over MaxArgvBytes (%d)", n, MaxArgvBytes),
			"pass large inputs through Stdin or a workspace file")
	}
	for _, s := range append(s.Argv, s.Env...) {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return Invalid("argv or environment holds a NUL byte", "remove the NUL byte")
			}
		}
	}
	if len(s.Stdin) > MaxStdin {
		return Invalid(fmt.Sprintf("Stdin is %d bytes, over MaxStdin (%d)", len(s.Stdin), MaxStdin),
			"write large inputs to a workspace file instead")
	}
	switch s.Network {
	case "", NetworkNone:
		if s.Proxy != "" {
			return Invalid(fmt.Sprintf("Proxy %q is set but Network is not %q", s.Proxy, NetworkProxy),
				fmt.Sprintf("set Network to %q, or leave Proxy empty", NetworkProxy))
		}
	case NetworkProxy:
		if s.Proxy == "" || !path.IsAbs(s.Proxy) {
			return Invalid(fmt.Sprintf("Network %q needs Proxy, the absolute path of the egress proxy's unix socket; got %q", NetworkProxy, s.Proxy),
				"start an egress proxy on a unix socket and give its path as Proxy")
		}
	default:
		return Invalid(fmt.Sprintf("Network %q is not supported", s.Network), fmt.Sprintf("use %q or %q", NetworkNone, NetworkProxy))
	}
	if s.Workspace != "" && !path.IsAbs(s.Workspace) {
		return Invalid(fmt.Sprintf("Workspace %q is not an absolute path", s.Workspace), "give the workspace's absolute host path")
	}
	if s.Dir != "" && !IsLocal(s.Dir) {
		return Invalid(fmt.Sprintf("Dir %q is not a relative path inside the workspace", s.Dir),
			"give a path relative to the workspace, without .. or a leading /")
	}
	for _, p := range s.ReadOnlyPaths {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return Invalid(fmt.Sprintf("ReadOnlyPaths entry %q is not a clean absolute path below /", p),
				"give clean absolute host paths such as /opt/tool")
		}
	}
	if err := s.checkOverlay(); err != nil {
		return err
	}
	return s.Limits.Check()
}

// checkOverlay checks Spec.Overlay's paths as written; the backends check
// the directories themselves (Overlay.Prepare).
func (s *Spec) checkOverlay() error {
	o := s.Overlay
	if o == nil {
		return nil
	}
	if s.Workspace == "" || !s.WorkspaceWritable {
		return Invalid("Overlay needs Workspace and WorkspaceWritable: it is a writable view of a workspace",
			"set Workspace and WorkspaceWritable, or leave Overlay nil")
	}
	for _, d := range []struct{ name, p string }{{"Upper", o.Upper}, {"Work", o.Work}} {
		if !path.IsAbs(d.p) || path.Clean(d.p) != d.p || d.p == "/" {
			return Invalid(fmt.Sprintf("Overlay.%s %q is not a clean absolute path below /", d.name, d.p),
				"give the absolute host path of an empty directory")
		}
		// Inside the workspace, only where the command cannot see it:
		// else it would find its own upper layer in the merged view.
		if rel, ok := below(d.p, path.Clean(s.Workspace)); (ok || d.p == path.Clean(s.Workspace)) && !underMasked(rel) {
			return Invalid(fmt.Sprintf("Overlay.%s %q is inside the workspace but not under %s, where the command could see it", d.name, d.p, strings.Join(MaskedDirs, ", ")),
				fmt.Sprintf("put it under the workspace's %s, or outside the workspace", MaskedDirs[0]))
		}
		if _, ok := below(path.Clean(s.Workspace), d.p); ok {
			return Invalid(fmt.Sprintf("the workspace %q is inside Overlay.%s %q", s.Workspace, d.name, d.p),
				fmt.Sprintf("put the overlay's directories under the workspace's %s", MaskedDirs[0]))
		}
	}
	if o.Upper == o.Work {
		return Invalid(fmt.Sprintf("Overlay.Upper and Overlay.Work are the same directory %q", o.Upper),
			"give two distinct directories on the same filesystem")
	}
	if _, ok := below(o.Upper, o.Work); ok {
		return Invalid(fmt.Sprintf("Overlay.Upper %q is inside Overlay.Work %q", o.Upper, o.Work), "give two directories side by side, neither inside the other")
	}
	if _, ok := below(o.Work, o.Upper); ok {
		return Invalid(fmt.Sprintf("Overlay.Work %q is inside Overlay.Upper %q", o.Work, o.Upper), "give two directories side by side, neither inside the other")
	}
	return nil
}

// below reports whether p, a clean absolute path, is strictly inside dir,
// and the path of p relative to it.
func below(p, dir string) (string, bool) {
	if dir == "/" {
		return p[1:], p != "/"
	}
	rel, ok := strings.CutPrefix(p, dir+"/")
	return rel, ok
}

// underMasked reports whether rel, relative to the workspace, is below
// one of MaskedDirs.
func underMasked(rel string) bool {
	for _, m := range MaskedDirs {
		if strings.HasPrefix(rel, m+"/") {
			return true
		}
	}
	return false
}

// Killed says why the sandbox ended a command.
type Killed string

const (
	KilledNone   Killed = ""
	KilledOOM    Killed = "oom"    // the memory limit
	KilledPids   Killed = "pids"   // fork failed against the pids limit (the command may have gone on)
	KilledWall   Killed = "wall"   // the wall-clock limit, or ctx ended
	KilledCPU    Killed = "cpu"    // the CPU-time limit
	KilledOutput Killed = "output" // stdout or stderr past Limits.Output
)

// Layer names one isolation layer a backend applied.
type Layer string

// The layers. A backend lists those it applied in Result.Enforced.
const (
	LayerUserNS     Layer = "userns"
	LayerMountNS    Layer = "mountns"
	LayerPIDNS      Layer = "pidns"
	LayerNetNS      Layer = "netns"
	LayerIPCNS      Layer = "ipcns"
	LayerUTSNS      Layer = "utsns"
	LayerCgroupNS   Layer = "cgroupns"
	LayerPivotRoot  Layer = "pivot_root"
	LayerCapsDrop   Layer = "caps_dropped"
	LayerNoNewPrivs Layer = "no_new_privs"
	LayerSetsid     Layer = "setsid"
	LayerLandlock   Layer = "landlock"
	LayerSeccomp    Layer = "seccomp"
	LayerRlimits    Layer = "rlimits"
	LayerCgroupMem  Layer = "cgroup_memory"
	LayerCgroupPids Layer = "cgroup_pids"
	LayerReadOnly   Layer = "readonly_root"
	LayerNonRoot    Layer = "non_root_user"
	// LayerEgressProxy: NetworkProxy's relay was set up; the command's
	// only way out is the egress proxy.
	LayerEgressProxy Layer = "egress_proxy"
	// LayerOverlay: the workspace is the lower layer of an overlay
	// (Spec.Overlay), and the command's changes went to its upper layer.
	LayerOverlay Layer = "overlay"
)

// Result is how a command ended.
type Result struct {
	// ExitCode is the command's exit status; 128+N when signal N ended it.
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// Truncated: stdout or stderr was cut at Limits.Output.
	Truncated bool
	// TimedOut: the wall-clock limit (or ctx) ended it.
	TimedOut bool
	// Killed is why the sandbox ended it, if it did.
	Killed Killed
	Usage  Usage
	// Enforced lists the layers applied, in the order they were.
	Enforced []Layer
	// Degraded lists the layers asked for and not applied (only with
	// Spec.AllowDegraded).
	Degraded []Layer
	Duration time.Duration
}

// Usage is what the command used, where the backend can tell.
type Usage struct {
	UserCPU   time.Duration
	SystemCPU time.Duration
	MaxRSS    int64 // bytes, the largest process
	MemPeak   int64 // bytes, the whole tree (cgroup), 0 if unknown
}

// Has reports whether r enforced layer l.
func (r *Result) Has(l Layer) bool {
	for _, e := range r.Enforced {
		if e == l {
			return true
		}
	}
	return false
}

// The codes of Error.
const (
	CodeInvalidSpec = "invalid_spec"
	CodeUnavailable = "sandbox_unavailable"
)

// Error is a refusal as a value: a stable snake_case Code, a Message saying
// what is wrong and a Hint saying what to do instead. errors.Is matches it
// against ErrInvalidSpec or ErrUnavailable by its Code.
type Error struct {
	Code    string
	Layer   Layer // the layer missing, for CodeUnavailable
	Message string
	Hint    string
}

func (e *Error) Error() string {
	msg := "sandbox: " + e.Code + ": " + e.Message
	if e.Layer != "" {
		msg = "sandbox: " + e.Code + ": layer " + string(e.Layer) + ": " + e.Message
	}
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// Is makes errors.Is(err, ErrInvalidSpec) and errors.Is(err, ErrUnavailable)
// hold for an *Error of the matching code.
func (e *Error) Is(target error) bool {
	return target == ErrInvalidSpec && e.Code == CodeInvalidSpec ||
		target == ErrUnavailable && e.Code == CodeUnavailable
}

// Invalid is the refusal of a bad Spec.
func Invalid(message, hint string) error {
	return &Error{Code: CodeInvalidSpec, Message: message, Hint: hint}
}

// Unavailable is the refusal of a Spec needing a layer the backend cannot
// apply here.
func Unavailable(layer Layer, message, hint string) error {
	return &Error{Code: CodeUnavailable, Layer: layer, Message: message, Hint: hint}
}

var (
	// ErrInvalidSpec: the Spec itself is wrong; the message names the field.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrUnavailable: the backend cannot apply a layer the Spec needs
	// here; the message names the layer and what would provide it.
	ErrUnavailable = errors.New("sandbox: isolation unavailable")
)

// IsLocal is path/filepath.IsLocal on Linux: p is not empty, not
// absolute, and does not climb out of its directory with "..". It is
// written on package path, whose Clean is filepath's on Linux, because
// filepath initializes late and the sandbox backends are on the path of
// `airlock exec`'s fast start (cmd/airlock/internal/fastexec).
func IsLocal(p string) bool {
	if p == "" || path.IsAbs(p) {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}
