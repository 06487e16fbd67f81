// Package container is the sandbox backend that runs each command in a
// fresh container through the Docker Engine API, as Docker and Podman
// (podman system service) serve it on a unix socket. Optionally under
// another OCI runtime, such as gVisor's runsc.
//
//	sb := container.New(&container.Options{Image: "localhost/airlock-busybox:test"})
//	res, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"ls"}, Workspace: dir})
//
// Every container has no network (NetworkMode none), a read-only root
// file system, no capabilities, no-new-privileges, a seccomp profile of
// the backend's own (seccomp.go), a pids and a memory limit (swap
// included), ulimits for open files, file size and CPU time, an init as
// PID 1, runs as nobody (65534:65534), sees the workspace at /workspace
// (read-only unless asked) with airlock's .airlock directory masked by an
// empty read-only directory (under Options.StateDir), and gets a private
// tmpfs /tmp. It is removed after the run, also when the wall limit or
// ctx kills it.
//
// The environment is exactly Spec.Env (plus HOME and PATH): engines add
// their own variables (HOSTNAME, and Podman's container and TERM), so the
// command is started through env -i inside the container, which the image
// must therefore have (Options.EnvPath).
//
// What the Engine API does not tell: a fork refused by the pids limit, the
// CPU time used, and (Podman on cgroup v1) reliably that the OOM killer
// struck. On a local engine with cgroup v1 and the cgroupfs manager the
// backend puts the container under its own parent cgroup
// (Options.CgroupParent) and reads the container's cgroup counters while
// it runs (see cgwatch.go), so Killed is pids or oom and Usage has CPU and
// peak memory. Where that cannot be done (a remote engine, cgroup v2, the
// systemd manager), the limits still hold, State.OOMKilled still gives
// oom, but Killed stays empty for a refused fork; Result.Degraded does not
// list it, since the layer itself was applied. The cgroup namespace is
// asked for and listed in Enforced only when the engine reports it gave
// one (Podman's compatible API does not).
//
// Why a small hand-written client rather than github.com/moby/moby/client:
// the backend needs nine endpoints (version, image inspect, create,
// attach, start, wait, inspect, kill, remove) of a stable, versioned HTTP
// API; the client library would add some twenty modules (its API types,
// containerd's errdefs, the OCI image spec, go-connections, OpenTelemetry,
// ...) to the airlock binary for them, and its types must not leak into
// our API anyway.
package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"airlock.dev/airlock/sandbox"
)

// The defaults of Options.
const (
	DefaultImage        = "localhost/airlock-busybox:test"
	DefaultEnvPath      = "/usr/bin/env"
	DefaultUser         = "65534:65534"
	DefaultCgroupParent = "/airlock-container"
	// DefaultPodmanSocket and DefaultDockerSocket are tried in this order
	// when neither Options.Socket nor DOCKER_HOST names one.
	DefaultPodmanSocket = "/run/podman/podman.sock"
	DefaultDockerSocket = "/var/run/docker.sock"
)

// NprocUlimit is the RLIMIT_NPROC each container gets. The pids cgroup is
// the real bound; this one is counted per user across the host, so it is
// set to the most any Spec may ask for, only to keep the engine from
// asking for a value above the hard limit of a host without
// CAP_SYS_RESOURCE (which makes every container fail to start).
const NprocUlimit = sandbox.MaxPids

// CleanupTimeout bounds the kill and remove after a run, which go on even
// when ctx has ended.
const CleanupTimeout = 30 * time.Second

// Options configure the backend. A nil *Options means the defaults.
type Options struct {
	// Socket is the engine's unix socket. "" means DOCKER_HOST when it is
	// a unix:// address, else DefaultPodmanSocket if it exists, else
	// DefaultDockerSocket.
	Socket string
	// Image runs every command; "" means DefaultImage. It must hold
	// EnvPath and whatever the commands need.
	Image string
	// Runtime is the OCI runtime, e.g. "runsc" for gVisor; "" means the
	// engine's default. The runtime must be installed and registered with
	// the engine.
	Runtime string
	// EnvPath is env(1) inside the image; "" means DefaultEnvPath.
	EnvPath string
	// User is the user:group the command runs as; "" means DefaultUser.
	// A root user ("0", "root", "0:0") is refused.
	User string
	// CgroupParent is the parent cgroup given to the engine, under which
	// the backend watches pids.events (see the package doc); "" means
	// DefaultCgroupParent. "-" leaves it to the engine.
	CgroupParent string
	// CgroupRoot is where the host's cgroup v1 hierarchies are mounted; ""
	// means /sys/fs/cgroup.
	CgroupRoot string
	// StateDir holds the seccomp profile a local Podman reads and the
	// empty directory bound over the workspace's .airlock; "" means
	// airlock-container-UID under os.TempDir(). It must be the caller's
	// own directory, not a symlink.
	StateDir string
}

// Sandbox runs commands in containers. It is safe for concurrent use.
type Sandbox struct {
	opts Options
	c    *client

	mu    sync.Mutex
	ready *engine // set once the engine answered and has the image
}

// engine is what the backend learned of the engine and set up for it.
type engine struct {
	podman   bool
	seccomp  string // the SecurityOpt value
	emptyDir string
}

// New returns the backend. It does not reach the engine yet: Available
// and Run do.
func New(opts *Options) *Sandbox {
	s := &Sandbox{}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Socket == "" {
		s.opts.Socket = defaultSocket(os.Getenv("DOCKER_HOST"))
	}
	if s.opts.Image == "" {
		s.opts.Image = DefaultImage
	}
	if s.opts.EnvPath == "" {
		s.opts.EnvPath = DefaultEnvPath
	}
	if s.opts.User == "" {
		s.opts.User = DefaultUser
	}
	if s.opts.CgroupParent == "" {
		s.opts.CgroupParent = DefaultCgroupParent
	}
	if s.opts.CgroupRoot == "" {
		s.opts.CgroupRoot = "/sys/fs/cgroup"
	}
	if s.opts.StateDir == "" {
		s.opts.StateDir = filepath.Join(os.TempDir(), fmt.Sprintf("airlock-container-%d", os.Geteuid()))
	}
	s.c = newClient(s.opts.Socket)
	return s
}

func defaultSocket(dockerHost string) string {
	if p, ok := strings.CutPrefix(dockerHost, "unix://"); ok && p != "" {
		return p
	}
	if _, err := os.Stat(DefaultPodmanSocket); err == nil {
		return DefaultPodmanSocket
	}
	return DefaultDockerSocket
}

// Name is "container".
func (s *Sandbox) Name() string { return "container" }

// Socket is the engine socket the backend uses.
func (s *Sandbox) Socket() string { return s.opts.Socket }

// Available reports whether the engine answers and has the image, as an
// ErrUnavailable that says what to do.
func (s *Sandbox) Available(ctx context.Context) error {
	_, err := s.engine(ctx)
	return err
}

// engine checks the engine and the image and sets up the state directory,
// once; a failure is not kept, since the engine may come up meanwhile.
func (s *Sandbox) engine(ctx context.Context) (*engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready != nil {
		return s.ready, nil
	}
	var v struct {
		Components []struct{ Name string }
	}
	if err := s.c.do(ctx, "GET", "/version", nil, nil, &v); err != nil {
		return nil, sandbox.Unavailable("", fmt.Sprintf("no container engine answers on %s (%v)", s.opts.Socket, err), fmt.Sprintf("start one (podman system service --time=0 unix://%s), or run scripts/setup-sandbox.sh as root", s.opts.Socket))
	}
	e := &engine{}
	for _, c := range v.Components {
		if strings.Contains(c.Name, "Podman") {
			e.podman = true
		}
	}
	err := s.c.do(ctx, "GET", "/images/"+s.opts.Image+"/json", nil, nil, nil)
	switch {
	case isStatus(err, 404):
		return nil, sandbox.Unavailable("", fmt.Sprintf("the engine on %s has no image %s", s.opts.Socket, s.opts.Image), "import it (scripts/setup-sandbox.sh does), or set Options.Image")
	case err != nil:
		return nil, sandbox.Unavailable("", fmt.Sprintf("the engine on %s: %v", s.opts.Socket, err), "start it, or run scripts/setup-sandbox.sh as root")
	}
	if err := ownDir(s.opts.StateDir, 0o755); err != nil {
		return nil, err
	}
	e.emptyDir = filepath.Join(s.opts.StateDir, "empty")
	if err := ownDir(e.emptyDir, 0o555); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(e.emptyDir); err != nil || len(ents) > 0 {
		return nil, fmt.Errorf("container: %s must be an empty directory (it masks .airlock): remove what is in it", e.emptyDir)
	}
	profile, err := seccompJSON()
	if err != nil {
		return nil, err
	}
	if e.podman {
		// Podman reads seccomp=PATH on its own host; Docker takes the JSON.
		path, err := seccompFile(s.opts.StateDir, profile)
		if err != nil {
			return nil, fmt.Errorf("container: write the seccomp profile: %w", err)
		}
		e.seccomp = "seccomp=" + path
	} else {
		e.seccomp = "seccomp=" + string(profile)
	}
	s.ready = e
	return e, nil
}

// ownDir makes dir with mode if it is missing, and checks that it is a
// directory of the caller's, so nobody else can put things in it.
func ownDir(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil && !os.IsExist(err) {
		return fmt.Errorf("container: make %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("container: %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("container: %s is not a directory of uid %d writable by it alone: remove it, or set Options.StateDir", dir, os.Geteuid())
	}
	return nil
}

// The layers every container gets. The cgroup namespace is added where the
// engine reports it gave one.
var layersAll = []sandbox.Layer{
	sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS, sandbox.LayerIPCNS,
	sandbox.LayerUTSNS, sandbox.LayerPivotRoot, sandbox.LayerReadOnly,
	sandbox.LayerCgroupMem, sandbox.LayerCgroupPids, sandbox.LayerRlimits,
	sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs, sandbox.LayerSeccomp, sandbox.LayerNonRoot,
}

// Run runs spec in a new container. See sandbox.Sandbox.
func (s *Sandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if err := spec.Check(); err != nil {
		return sandbox.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("container: not started: %w", err)
	}
	if spec.Network == sandbox.NetworkProxy {
		// No relay here yet: refusing beats running with no network at
		// all while the caller thinks the proxy is there.
		return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerEgressProxy, "the container backend has no egress proxy mode yet", "use the native backend for commands that need the egress proxy")
	}
	if spec.Overlay != nil {
		// The engine mounts the workspace itself; an overlay of ours
		// would need the engine's own mount options, which the Engine
		// API does not give. Never a plain writable bind instead.
		return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerOverlay, "the container backend has no copy-on-write workspace",
			"use the native backend (or bwrap 0.9 or later) for a command whose changes must be reviewable, or run without Overlay")
	}
	var degraded []sandbox.Layer
	if isRootUser(s.opts.User) {
		if !spec.AllowDegraded {
			return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerNonRoot, fmt.Sprintf("Options.User %q is root", s.opts.User), "give a non-root user:group, or set Spec.AllowDegraded")
		}
		degraded = append(degraded, sandbox.LayerNonRoot)
	}
	lim := spec.Limits.WithDefaults()
	e, err := s.engine(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// The caller's deadline ran out while a loaded engine was
			// still answering its first question: the wall limit, as
			// when it ends during create or start.
			return endedBeforeStart(), nil
		}
		return sandbox.Result{}, err
	}
	body, err := s.createBody(&spec, lim, e)
	if err != nil {
		return sandbox.Result{}, err
	}

	name := "airlock-" + randomHex(8)
	var created struct {
		Id string
	}
	if err := s.c.do(ctx, "POST", "/containers/create", url.Values{"name": {name}}, body, &created); err != nil {
		if ctx.Err() != nil {
			return endedBeforeStart(), nil
		}
		return sandbox.Result{}, s.engineError("create the container", err)
	}
	id := created.Id
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
		defer cancel()
		s.c.do(cctx, "DELETE", "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	}()
	if s.opts.Runtime != "" {
		if err := s.checkRuntime(ctx, id, e); err != nil {
			return sandbox.Result{}, err
		}
	}
	res, err := s.run(ctx, id, &spec, lim)
	if err == nil && len(degraded) > 0 {
		res.Degraded = degraded
		res.Enforced = slices.DeleteFunc(res.Enforced, func(l sandbox.Layer) bool { return slices.Contains(degraded, l) })
	}
	return res, err
}

// checkRuntime makes sure the container will run under Options.Runtime:
// Podman's Docker-compatible API accepts HostConfig.Runtime and ignores
// it, so its own inspect endpoint is asked which runtime it chose.
func (s *Sandbox) checkRuntime(ctx context.Context, id string, e *engine) error {
	var got string
	if e.podman {
		var info struct{ OCIRuntime string }
		if err := s.c.do(ctx, "GET", "/libpod/containers/"+id+"/json", nil, nil, &info); err != nil {
			return s.engineError("inspect the container's runtime", err)
		}
		got = info.OCIRuntime
	} else {
		var info struct{ HostConfig struct{ Runtime string } }
		if err := s.c.do(ctx, "GET", "/containers/"+id+"/json", nil, nil, &info); err != nil {
			return s.engineError("inspect the container's runtime", err)
		}
		got = info.HostConfig.Runtime
	}
	if got != s.opts.Runtime {
		return sandbox.Unavailable("", fmt.Sprintf("the engine on %s would run the container under OCI runtime %q, not Options.Runtime %q", s.opts.Socket, got, s.opts.Runtime), fmt.Sprintf("register %s with the engine and make it the default (Podman's compatible API ignores a per-container runtime), or leave Runtime empty", s.opts.Runtime))
	}
	return nil
}

// endedBeforeStart is the result of a run whose ctx ended while the engine
// was still being checked, or creating or starting the container: as with any run, ctx
// ending is the wall limit, whether or not the command got to start. A
// loaded engine can take seconds to start a container, so a short
// deadline can end there.
func endedBeforeStart() sandbox.Result {
	return sandbox.Result{ExitCode: 128 + int(syscall.SIGKILL), TimedOut: true, Killed: sandbox.KilledWall}
}

func (s *Sandbox) engineError(what string, err error) error {
	if isStatus(err, 404) || isStatus(err, 400) {
		return fmt.Errorf("container: %s: %w", what, err)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return fmt.Errorf("container: %s on %s: %w", what, s.opts.Socket, err)
	}
	return sandbox.Unavailable("", fmt.Sprintf("container engine on %s: %s: %v", s.opts.Socket, what, err), "start it, or run scripts/setup-sandbox.sh as root")
}

func (s *Sandbox) run(ctx context.Context, id string, spec *sandbox.Spec, lim sandbox.Limits) (sandbox.Result, error) {
	var res sandbox.Result
	conn, br, err := s.c.attach(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return endedBeforeStart(), nil
		}
		return res, s.engineError("attach", err)
	}
	defer conn.Close()

	var cw *cgroupWatch
	if s.opts.CgroupParent != "-" {
		cw = watchCgroups(s.opts.CgroupRoot, s.opts.CgroupParent, id)
		defer cw.finish()
	}

	var (
		mu     sync.Mutex
		killed sandbox.Killed
	)
	kill := func(reason sandbox.Killed) {
		mu.Lock()
		first := killed == sandbox.KilledNone
		if first {
			killed = reason
		}
		mu.Unlock()
		if first {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
			defer cancel()
			s.c.do(cctx, "POST", "/containers/"+id+"/kill", url.Values{"signal": {"KILL"}}, nil, nil)
		}
	}
	stdout := &sandbox.Capped{Max: lim.Output, OnOver: func() { go kill(sandbox.KilledOutput) }}
	stderr := &sandbox.Capped{Max: lim.Output, OnOver: func() { go kill(sandbox.KilledOutput) }}
	streamDone := make(chan error, 1)
	go func() { streamDone <- demux(br, stdout, stderr) }()

	start := time.Now()
	if err := s.c.do(ctx, "POST", "/containers/"+id+"/start", nil, nil, nil); err != nil {
		if ctx.Err() != nil {
			// The deferred remove kills it if the engine started it after all.
			return endedBeforeStart(), nil
		}
		return res, s.engineError("start the container", err)
	}
	go func() {
		// Stdin, then end-of-file by closing our half of the connection.
		if len(spec.Stdin) > 0 {
			conn.Write(spec.Stdin)
		}
		conn.CloseWrite()
	}()
	wall := time.AfterFunc(lim.Wall, func() { kill(sandbox.KilledWall) })
	defer wall.Stop()
	stop := context.AfterFunc(ctx, func() { kill(sandbox.KilledWall) })
	defer stop()

	// Wait outlives ctx: after a kill the container still has to stop.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lim.Wall+CleanupTimeout)
	defer cancel()
	var waited struct {
		StatusCode int
	}
	if err := s.c.do(wctx, "POST", "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &waited); err != nil {
		kill(sandbox.KilledWall)
		return res, s.engineError("wait for the container", err)
	}
	res.Duration = time.Since(start)
	// The stream ends when the container's side closes; bound the wait in
	// case an engine keeps it open.
	select {
	case <-streamDone:
	case <-time.After(5 * time.Second):
		conn.Close()
		<-streamDone
	}

	var info struct {
		State struct {
			OOMKilled bool
			ExitCode  int
		}
		HostConfig struct {
			CgroupnsMode string
		}
	}
	if err := s.c.do(wctx, "GET", "/containers/"+id+"/json", nil, nil, &info); err != nil {
		return res, s.engineError("inspect the container", err)
	}
	cw.finish()
	res.ExitCode = waited.StatusCode
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Over() || stderr.Over()
	res.Enforced = append([]sandbox.Layer{}, layersAll...)
	if info.HostConfig.CgroupnsMode == "private" {
		// Asked for, and not every engine gives it: Podman's compatible
		// API leaves the container in the host's cgroup namespace.
		res.Enforced = append(res.Enforced, sandbox.LayerCgroupNS)
	}
	var pidsFailed, oom, cpuKnown bool
	if cw != nil {
		cw.mu.Lock()
		pidsFailed, oom, cpuKnown = cw.pidsFailed, cw.oomKilled, cw.cpuKnown
		res.Usage.MemPeak, res.Usage.UserCPU, res.Usage.SystemCPU = cw.memPeak, cw.user, cw.sys
		cw.mu.Unlock()
	}
	cpu := res.Usage.UserCPU + res.Usage.SystemCPU
	if !cpuKnown {
		// No CPU reading: the run's length bounds its CPU time from above,
		// so a SIGKILL no sooner than the limit may be the CPU limit.
		cpu = res.Duration
	}
	mu.Lock()
	res.Killed = killed
	mu.Unlock()
	switch {
	case res.Killed != sandbox.KilledNone:
	case info.State.OOMKilled || oom:
		res.Killed = sandbox.KilledOOM
	case pidsFailed:
		res.Killed = sandbox.KilledPids
	case res.ExitCode == 128+24: // SIGXCPU: RLIMIT_CPU's soft limit
		res.Killed = sandbox.KilledCPU
	case res.ExitCode == 128+9 && cpu >= lim.CPU-lim.CPU/10:
		// The hard CPU limit is SIGKILL, one second after the soft one.
		res.Killed = sandbox.KilledCPU
	}
	res.TimedOut = res.Killed == sandbox.KilledWall
	return res, nil
}

func isRootUser(u string) bool {
	user, _, _ := strings.Cut(u, ":")
	return user == "" || user == "0" || user == "root"
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// createBody is the container's configuration for spec.
func (s *Sandbox) createBody(spec *sandbox.Spec, lim sandbox.Limits, e *engine) (map[string]any, error) {
	env, err := sandbox.CommandEnv(spec.Env)
	if err != nil {
		return nil, err
	}
	if strings.Contains(spec.Argv[0], "=") {
		return nil, sandbox.Invalid(fmt.Sprintf("Argv[0] %q holds '=', which env(1) would take for an assignment", spec.Argv[0]), "name the command without '='")
	}
	type mount struct {
		Type     string
		Source   string `json:",omitempty"`
		Target   string
		ReadOnly bool
	}
	var mounts []mount
	for _, p := range spec.ReadOnlyPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return nil, sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q is not a clean absolute path below /", p), "give clean absolute host paths such as /opt/tool")
		}
		if _, err := os.Stat(p); err != nil {
			return nil, sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q: %v", p, err), "give only paths that exist on the host")
		}
		mounts = append(mounts, mount{Type: "bind", Source: p, Target: p, ReadOnly: true})
	}
	workdir := "/"
	if spec.Workspace != "" {
		ws := spec.Workspace
		if !filepath.IsAbs(ws) {
			return nil, sandbox.Invalid(fmt.Sprintf("Workspace %q is not an absolute path", ws), "give the workspace's absolute host path")
		}
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			return nil, sandbox.Invalid(fmt.Sprintf("Workspace %q is not a directory on the host", ws), "give an existing directory as the workspace")
		}
		mounts = append(mounts, mount{Type: "bind", Source: ws, Target: sandbox.WorkspaceMount, ReadOnly: !spec.WorkspaceWritable})
		for _, m := range sandbox.MaskedDirs {
			fi, err := os.Lstat(filepath.Join(ws, m))
			switch {
			case err == nil && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0:
				return nil, sandbox.Invalid(fmt.Sprintf("the workspace's %s is not a directory, and airlock keeps its state there", m), "move that file out of the workspace")
			case err != nil && !spec.WorkspaceWritable:
				continue // read-only and absent: nothing to hide, nothing can be made
			}
			// An empty directory bound read-only: a tmpfs would do on
			// Docker, but Podman copies the directory's files into it.
			mounts = append(mounts, mount{Type: "bind", Source: e.emptyDir, Target: path.Join(sandbox.WorkspaceMount, m), ReadOnly: true})
		}
		if spec.WorkspaceWritable {
			for _, p := range sandbox.ReadOnlyEntries(ws) {
				mounts = append(mounts, mount{Type: "bind", Source: filepath.Join(ws, p), Target: path.Join(sandbox.WorkspaceMount, p), ReadOnly: true})
			}
		}
		workdir = sandbox.WorkspaceMount
		if spec.Dir != "" {
			if !filepath.IsLocal(spec.Dir) {
				return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is not a relative path inside the workspace", spec.Dir), "give a path relative to the workspace, without .. or a leading /")
			}
			root, err := os.OpenRoot(ws)
			if err != nil {
				return nil, fmt.Errorf("container: open the workspace: %w", err)
			}
			fi, err := root.Stat(spec.Dir)
			root.Close()
			if err != nil || !fi.IsDir() {
				return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is not a directory in the workspace", spec.Dir), "create the directory first, or run from the workspace itself")
			}
			workdir = path.Join(sandbox.WorkspaceMount, filepath.ToSlash(spec.Dir))
		}
	} else if spec.Dir != "" {
		return nil, sandbox.Invalid(fmt.Sprintf("Dir %q is set but there is no Workspace", spec.Dir), "set Workspace, or leave Dir empty")
	}

	cpu := int64((lim.CPU + time.Second - 1) / time.Second)
	type ulimit struct {
		Name       string
		Soft, Hard int64
	}
	host := map[string]any{
		"NetworkMode": "none",
		// Private is Docker's default on cgroup v2 only; on v1 the
		// container would see the host's cgroup paths.
		"CgroupnsMode":   "private",
		"ReadonlyRootfs": true,
		"CapDrop":        []string{"ALL"},
		"SecurityOpt":    []string{"no-new-privileges", e.seccomp},
		"PidsLimit":      lim.Pids, // the init counts too: the command's tree gets one fewer, never more
		"Memory":         lim.Memory,
		"MemorySwap":     lim.Memory, // memory plus swap: no swap on top
		"Tmpfs":          map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777"},
		"Mounts":         mounts,
		"Ulimits": []ulimit{
			{"nofile", int64(lim.OpenFiles), int64(lim.OpenFiles)},
			{"nproc", NprocUlimit, NprocUlimit},
			{"fsize", lim.FileSize, lim.FileSize},
			// SIGXCPU at the limit, SIGKILL a second later.
			{"cpu", cpu, cpu + 1},
			{"core", 0, 0},
		},
		"AutoRemove": false, // removed explicitly, after its state is read
		// An init as PID 1 (Podman's catatonit, Docker's tini) runs the
		// command as its child, so the command's signals behave as on a
		// host (PID 1 ignores those it has no handler for) and its exit
		// status is passed on, 128+N for signal N.
		"Init": true,
	}
	if s.opts.Runtime != "" {
		host["Runtime"] = s.opts.Runtime
	}
	if s.opts.CgroupParent != "-" {
		host["CgroupParent"] = s.opts.CgroupParent
	}
	// env -i drops what the engine adds, then sets exactly the Spec's.
	entry := append([]string{s.opts.EnvPath, "-i"}, env...)
	entry = append(entry, spec.Argv...)
	return map[string]any{
		"Image":           s.opts.Image,
		"Entrypoint":      entry,
		"Cmd":             []string{},
		"Env":             env,
		"User":            s.opts.User,
		"WorkingDir":      workdir,
		"Hostname":        "airlock",
		"NetworkDisabled": true,
		"AttachStdin":     true,
		"AttachStdout":    true,
		"AttachStderr":    true,
		"OpenStdin":       true,
		"StdinOnce":       true,
		"Tty":             false,
		"HostConfig":      host,
	}, nil
}
