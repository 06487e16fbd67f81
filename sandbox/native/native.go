// Package native is airlock's own Linux sandbox backend: no helper binary
// of anyone else's, only the kernel. Each Run re-executes the current
// binary (or Options.Exe) as the sandbox's init in new user, mount, PID,
// network, IPC, UTS and cgroup namespaces, inside cgroups of its own; the
// init builds a minimal root (read-only system binds, the workspace,
// private /tmp, /proc and /dev), pivots into it, drops every capability, sets no_new_privs, applies
// Landlock and a seccomp filter, lowers the rlimits and starts the command.
// When the command ends, the init exits and the kernel kills whatever the
// command left in the PID namespace.
//
// The init is served by package internal/nsinit, whose init function takes
// over the process when it was started as the sandbox's init. Importing
// this package is enough for any binary (the airlock CLI, a test binary)
// to serve as its own init; nsinit imports only the standard library,
// golang.org/x/sys/unix and go-landlock, so that it runs before most of
// the heavy packages of the binary are initialized. A binary that does not
// import this package cannot be the init (see Options.Exe). A large
// program still pays for its size at every start: it can run the small
// cmd/airlock-sandbox-init instead (Options.Exe, FindInit), whose build is
// checked against its own at the first run (nsinit.Fingerprint).
//
// Users and ids: run by root, the command runs as CommandUID inside the
// user namespace, which maps to root's own uid outside (so that it can
// write the workspace root owns), with no capability anywhere; the init
// itself is root inside, mapped to InitHostUID outside. Being root's uid
// on the host without a capability still gives owner rights on host-root
// files the kernel checks by uid alone (sysctls, device nodes): that is why
// every bind, /proc/sys and the devices are read-only mounts, beneath
// Landlock's own write rules. Run by another
// user, who can map only their own uid, the command is root inside the
// namespace, that user outside, again with no capability. Such a user
// usually cannot create cgroups (cgroup v1): the memory and pids limits
// are then refused (ErrUnavailable) unless Spec.AllowDegraded, when the
// run goes on and Result.Degraded says what is missing.
//
// Network: NetworkNone leaves an empty network namespace and no socket
// family but AF_UNIX. NetworkProxy adds one way out (see proxy.go): the
// init, while it still may, brings loopback up, listens on
// sandbox.ProxyAddr and hands the listener to this process, which relays
// each connection to the host's egress proxy socket (Spec.Proxy). The
// command may then make AF_INET TCP sockets and, by Landlock, connect to
// sandbox.ProxyPort only; bind(2) stays denied (a listen(2) that
// autobinds an ephemeral port is possible, and useless: nothing may
// connect to it), and there is nothing else in its namespace.
// HTTP_PROXY, HTTPS_PROXY, http_proxy and https_proxy (sandbox.ProxyEnv)
// are set to the relay unless Spec.Env sets them.
//
//	sb, err := native.New(nil)
//	res, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"make", "test"}, Workspace: dir, WorkspaceWritable: true})
package native

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/native/internal/nsinit"
)

// Name is the backend's name.
const Name = "native"

// The ids of the sandbox's processes (see the package comment).
const (
	CommandUID  = 1000
	CommandGID  = 1000
	InitHostUID = 65534
	InitHostGID = 65534
)

// InitTasks is the allowance of the sandbox's init, a Go process whose
// runtime holds a few threads of its own (GOMAXPROCS=1 keeps them few),
// on top of Limits.Pids. The command's tree gets Limits.Pids, in a pids
// cgroup of its own below the init's: the init's threads take none of it,
// and cannot give it any.
const InitTasks = 8

// DefaultTmpSize bounds the sandbox's /tmp and /dev/shm each; their pages
// also count against Limits.Memory.
const DefaultTmpSize = 64 << 20

// MaxTmpSize is the most Options.TmpSize may be.
const MaxTmpSize = 4 << 30

// DefaultHostname is the sandbox's host name.
const DefaultHostname = "airlock"

// OutputDrainWait bounds how long Run waits for the output pipes to close
// after the init is gone; only a process outside the sandbox holding them
// (which cannot be) would make it matter.
const OutputDrainWait = 5 * time.Second

// Options configure the backend. Nil means the defaults.
type Options struct {
	// Exe is the binary started as the sandbox's init; it must import
	// this package (cmd/airlock-sandbox-init is such a binary, and
	// FindInit finds it). "" is /proc/self/exe, the running binary. An
	// Exe built from other sources than the running binary's init is
	// noticed at its first run, which then falls back to /proc/self/exe
	// for good (see Sandbox.Exe).
	Exe string
	// CgroupRoot is where the cgroup hierarchies are mounted; "" is
	// /sys/fs/cgroup. Hierarchies mounted elsewhere are ignored.
	CgroupRoot string
	// TmpSize bounds /tmp and /dev/shm each, in bytes; 0 is
	// DefaultTmpSize.
	TmpSize int64
	// Hostname is the sandbox's host name; "" is DefaultHostname.
	Hostname string
}

// Sandbox is the native backend. It is safe for concurrent use.
type Sandbox struct {
	exe string
	// stale is set once Exe reported that it runs other code than this
	// binary's init: every run from then on re-executes this binary.
	stale    atomic.Bool
	tmpSize  int64
	hostname string
	cg       cgroupSystem
	// skip switches single layers off, for the benchmarks that measure
	// what each costs; no exported way sets it.
	skip map[sandbox.Layer]bool
}

var runID atomic.Int64

// landlockVersion is the kernel's Landlock ABI; a test stands in an older
// kernel through it.
var landlockVersion = nsinit.LandlockVersion

// New returns the native backend, after checking that this kernel can give
// its core: user namespaces and the re-exec. Layers a Spec may do without
// (cgroups, Landlock) are checked at each Run.
func New(opts *Options) (*Sandbox, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Sandbox{exe: o.Exe, tmpSize: o.TmpSize, hostname: o.Hostname}
	if s.exe == "" {
		s.exe = selfExe
	}
	if s.tmpSize == 0 {
		s.tmpSize = DefaultTmpSize
	}
	if s.tmpSize < 0 || s.tmpSize > MaxTmpSize {
		return nil, sandbox.Invalid(fmt.Sprintf("Options.TmpSize %d is out of range", s.tmpSize), fmt.Sprintf("give at most %d, or 0 for the default", MaxTmpSize))
	}
	if s.hostname == "" {
		s.hostname = DefaultHostname
	}
	root := o.CgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	s.cg = detectCgroups(root)
	s.cg.sweepStale()
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return nil, sandbox.Unavailable(sandbox.LayerUserNS, "this kernel has no user namespaces", "use a kernel built with CONFIG_USER_NS, or the container backend")
	}
	return s, nil
}

// Name returns "native".
func (s *Sandbox) Name() string { return Name }

// selfExe is the running binary, the init of last resort: it imports this
// package, so its init is always this package's own.
const selfExe = "/proc/self/exe"

// Exe returns the binary the next run starts as its init: Options.Exe, or
// /proc/self/exe once Options.Exe turned out to be stale.
func (s *Sandbox) Exe() string {
	if s.stale.Load() {
		return selfExe
	}
	return s.exe
}

// initMarker is the value of nsinit.EnvMarker for the init exe: the
// running binary needs no proof that its init is its own.
func initMarker(exe string) string {
	if exe == selfExe {
		return nsinit.MarkerSelf
	}
	return nsinit.Fingerprint()
}

// errStaleInit is a run the init refused because it was built from other
// sources than this binary's (nsinit.StageStale); nothing of it ran.
var errStaleInit = errors.New("sandbox: the init binary was built from other sources than this program")

// Run runs spec; see sandbox.Sandbox.
func (s *Sandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	res, err := s.run(ctx, spec, s.Exe())
	if errors.Is(err, errStaleInit) {
		// An init binary left over from another build: this binary's
		// own init is the one that matches the Config it sends.
		s.stale.Store(true)
		res, err = s.run(ctx, spec, selfExe)
	}
	return res, err
}

func (s *Sandbox) run(ctx context.Context, spec sandbox.Spec, exe string) (sandbox.Result, error) {
	if err := spec.Check(); err != nil {
		return sandbox.Result{}, err
	}
	lim := spec.Limits.WithDefaults()
	if err := checkPaths(&spec); err != nil {
		return sandbox.Result{}, err
	}
	if err := checkProxy(&spec); err != nil {
		return sandbox.Result{}, err
	}
	env := commandEnv(spec.Env)
	var proxyPort uint16
	if spec.Network == sandbox.NetworkProxy {
		env, proxyPort = proxyEnv(env), sandbox.ProxyPort
	}
	var degraded []sandbox.Layer
	cfg := nsinit.Config{
		Argv:        spec.Argv,
		Env:         env,
		Dir:         spec.Dir,
		Workspace:   spec.Workspace,
		Writable:    spec.WorkspaceWritable,
		Masked:      sandbox.MaskedDirs,
		Protected:   sandbox.ReadOnlyDirs,
		ReadOnly:    spec.ReadOnlyPaths,
		Overlay:     overlayConfig(spec.Overlay),
		Hostname:    s.hostname,
		TmpSize:     s.tmpSize,
		NoFile:      uint64(lim.OpenFiles),
		NProc:       uint64(lim.Pids + InitTasks),
		FileSize:    uint64(lim.FileSize),
		CPUSec:      uint64((lim.CPU + time.Second - 1) / time.Second),
		Seccomp:     !s.skip[sandbox.LayerSeccomp],
		NetworkNone: true,
		ProxyPort:   proxyPort,
		CgroupNS:    !s.skip[sandbox.LayerCgroupNS],
	}
	if !s.skip[sandbox.LayerLandlock] {
		v := landlockVersion()
		switch {
		case v >= nsinit.LandlockABI:
			cfg.Landlock, cfg.LandlockStrict = true, true
		case !spec.AllowDegraded:
			return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerLandlock,
				fmt.Sprintf("the kernel's Landlock ABI is %d; the sandbox needs %d", v, nsinit.LandlockABI),
				"boot a kernel 6.7 or later with Landlock enabled (lsm=landlock), or allow degradation")
		case v == 0:
			degraded = append(degraded, sandbox.LayerLandlock)
		default:
			cfg.Landlock = true // best effort; the init reports it degraded
		}
	}
	if os.Geteuid() == 0 {
		cfg.UID, cfg.GID, cfg.SetGroups = CommandUID, CommandGID, true
	}

	// The cgroups, before anything starts.
	// The pid names the owner (for sweepStaleCgroups); the random part
	// keeps a reused pid from meeting the cgroup of a process killed
	// before it could remove it.
	id := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(runID.Add(1), 10) + "-" + runNonce
	rc, memErr, pidsErr := s.cg.newRunCgroup(id, lim.Memory, lim.Pids, !s.skip[sandbox.LayerCgroupMem], !s.skip[sandbox.LayerCgroupPids])
	defer rc.remove()
	for _, c := range []struct {
		layer sandbox.Layer
		err   error
	}{{sandbox.LayerCgroupMem, memErr}, {sandbox.LayerCgroupPids, pidsErr}} {
		if c.err == nil {
			continue
		}
		if !spec.AllowDegraded {
			return sandbox.Result{}, sandbox.Unavailable(c.layer,
				fmt.Sprintf("cannot make a cgroup for the limit: %v", c.err),
				"run airlock as root, or on cgroup v2 with a delegated subtree, or allow degradation")
		}
		degraded = append(degraded, c.layer)
	}
	if pidsErr == nil && rc.cmdPids != "" {
		cfg.CommandPids = lim.Pids
	}
	return s.start(ctx, spec, lim, &cfg, rc, degraded, exe)
}

// checkPaths checks the host side of the Spec's paths.
func checkPaths(spec *sandbox.Spec) error {
	if ws := spec.Workspace; ws != "" {
		st, err := os.Stat(ws)
		if err != nil || !st.IsDir() {
			return sandbox.Invalid(fmt.Sprintf("Workspace %q is not a directory on the host", ws), "create the workspace first")
		}
		for _, m := range sandbox.MaskedDirs {
			p := path.Join(ws, m)
			st, err := os.Lstat(p)
			switch {
			case errors.Is(err, os.ErrNotExist) && spec.WorkspaceWritable:
				// Make it, so that it can be masked: else the command
				// could create airlock's state dir with its own content.
				if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
					return fmt.Errorf("sandbox: making %s to mask it: %w", p, err)
				}
			case err == nil && !st.IsDir():
				return sandbox.Invalid(fmt.Sprintf("the workspace's %s is not a directory", m), "airlock keeps its state there: move the file or link away")
			}
		}
	}
	if spec.Overlay != nil {
		if err := spec.Overlay.Prepare(spec.Workspace); err != nil {
			return err
		}
	}
	for _, p := range spec.ReadOnlyPaths {
		for _, r := range reservedPaths {
			if p == r || strings.HasPrefix(p, r+"/") {
				return sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q is under %s, which the sandbox makes itself", p, r), "bind a path outside "+strings.Join(reservedPaths, ", "))
			}
		}
		if _, err := os.Stat(p); err != nil {
			return sandbox.Invalid(fmt.Sprintf("ReadOnlyPaths entry %q does not exist on the host", p), "give paths that exist on the host")
		}
	}
	return nil
}

// overlayConfig is the init's copy of o.
func overlayConfig(o *sandbox.Overlay) *nsinit.Overlay {
	if o == nil {
		return nil
	}
	return &nsinit.Overlay{Upper: o.Upper, Work: o.Work}
}

// reservedPaths are the sandbox's own mounts, which ReadOnlyPaths may not
// cover or sit under.
var reservedPaths = []string{sandbox.WorkspaceMount, "/proc", "/dev"}

// commandEnv is the command's environment: exactly env, plus HOME and
// PATH where it sets neither.
func commandEnv(env []string) []string {
	out := append([]string{}, env...)
	home, path := false, false
	for _, kv := range env {
		switch {
		case len(kv) >= 5 && kv[:5] == "HOME=":
			home = true
		case len(kv) >= 5 && kv[:5] == "PATH=":
			path = true
		}
	}
	if !home {
		out = append(out, "HOME=/tmp")
	}
	if !path {
		out = append(out, "PATH="+sandbox.DefaultPath)
	}
	return out
}

// capture reads one output stream, keeping at most limit bytes; past it,
// it says so on over and drains the rest.
type capture struct {
	buf       []byte
	truncated bool
}

func (c *capture) read(r io.Reader, limit int64, over func()) {
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			room := limit - int64(len(c.buf))
			if int64(n) > room {
				c.buf = append(c.buf, chunk[:room]...)
				if !c.truncated {
					c.truncated = true
					over()
				}
			} else {
				c.buf = append(c.buf, chunk[:n]...)
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *Sandbox) start(ctx context.Context, spec sandbox.Spec, lim sandbox.Limits, cfg *nsinit.Config, rc *runCgroup, degraded []sandbox.Layer, exe string) (sandbox.Result, error) {
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			f.Close()
		}
		closers = nil
	}
	defer closeAll()
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return r, w, err
	}
	stdinR, stdinW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	cfgR, cfgW, err4 := pipe()
	statR, statW, err5 := pipe()
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: pipes: %w", err)
	}
	extra := []*os.File{cfgR, statW}
	var relayCtl, relayChild *os.File
	if cfg.ProxyPort != 0 {
		// A message socket, so that the listener arrives with its one
		// byte in one read; both ends close-on-exec, ExtraFiles dups the
		// child's into the init alone.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("sandbox: the relay's socket pair: %w", err)
		}
		relayCtl, relayChild = os.NewFile(uintptr(fds[0]), "relay-ctl"), os.NewFile(uintptr(fds[1]), "relay-child")
		closers = append(closers, relayCtl, relayChild)
		extra = append(extra, relayChild) // nsinit.ProxyFD
	}
	var hop []*os.File
	if cfg.CommandPids > 0 {
		var err error
		hop, err = rc.openPidsHop()
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("sandbox: opening the command's pids cgroup for the init: %w", err)
		}
		closers = append(closers, hop...)
		if len(extra) == 2 {
			extra = append(extra, nil) // no nsinit.ProxyFD
		}
		extra = append(extra, hop...) // nsinit.PidsEnterFD, PidsMaxFD, PidsLeaveFD
	}

	// os.StartProcess, not os/exec, which imports path/filepath: both
	// initialize too late for `airlock exec`'s fast start. The init's
	// files are all *os.File, so os/exec would only have passed them on.
	attr := &os.ProcAttr{
		Env:   []string{nsinit.EnvMarker + "=" + initMarker(exe), "GOMAXPROCS=1", "GOGC=off"},
		Files: append([]*os.File{stdinR, outW, errW}, extra...),
		Sys: &syscall.SysProcAttr{
			Cloneflags: s.cloneflags(),
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: InitHostUID, Size: 1}, {ContainerID: CommandUID, HostID: 0, Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: InitHostGID, Size: 1}, {ContainerID: CommandGID, HostID: gid, Size: 1}}
		attr.Sys.GidMappingsEnableSetgroups = true
		// Become root of the namespace before the re-exec, so that the
		// init starts with every capability there.
		attr.Sys.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	} else {
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	}
	// Pdeathsig fires when the thread that started the child ends, not the
	// process: keep this goroutine on its thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	began := time.Now()
	proc, err := os.StartProcess(exe, []string{nsinit.Argv0}, attr)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
			return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerUserNS, fmt.Sprintf("cannot create the namespaces: %v", err),
				"allow unprivileged user namespaces (sysctl user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns=0), or use the container backend")
		}
		return sandbox.Result{}, fmt.Errorf("sandbox: starting the init %s: %w", exe, err)
	}
	// The child's ends belong to the child now.
	for _, f := range append([]*os.File{stdinR, outW, errW, cfgR, statW}, hop...) {
		f.Close()
	}
	closers = []*os.File{stdinW, outR, errR, cfgW, statR}
	var rl *relay
	if relayCtl != nil {
		relayChild.Close()
		var err error
		rl, err = startRelay(relayCtl, spec.Proxy)
		if err != nil {
			rl.close()
			proc.Kill()
			rc.killAll()
			proc.Wait()
			return sandbox.Result{}, err
		}
		// Whatever the outcome, the relay ends with the run.
		defer rl.close()
	}
	killInit := func() { rc.killAll(); proc.Kill() }

	if err := rc.add(proc.Pid); err != nil {
		killInit()
		proc.Wait()
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	b, err := json.Marshal(cfg)
	if err == nil {
		_, err = cfgW.Write(b)
	}
	cfgW.Close()
	if err != nil {
		killInit()
		proc.Wait()
		return sandbox.Result{}, fmt.Errorf("sandbox: sending the init its config: %w", err)
	}

	// killed is set only by the loop below, which alone calls stop; the
	// first reason wins.
	var killed sandbox.Killed
	end := make(chan sandbox.Killed, 2)
	stop := func(k sandbox.Killed) {
		if killed == sandbox.KilledNone {
			killed = k
			killInit()
		}
	}
	var wg sync.WaitGroup
	var stdout, stderr capture
	wg.Add(2)
	go func() { defer wg.Done(); stdout.read(outR, lim.Output, func() { end <- sandbox.KilledOutput }) }()
	go func() { defer wg.Done(); stderr.read(errR, lim.Output, func() { end <- sandbox.KilledOutput }) }()
	go func() {
		// A command that does not read its input must not block us:
		// the write ends when the tree dies and the pipe breaks.
		stdinW.Write(spec.Stdin)
		stdinW.Close()
	}()
	var reports []nsinit.Report
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		sc := bufio.NewScanner(io.LimitReader(statR, nsinit.MaxConfig))
		for sc.Scan() {
			var r nsinit.Report
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				reports = append(reports, r)
			}
		}
	}()
	waited := make(chan error, 1)
	go func() {
		st, err := proc.Wait()
		if err == nil && !st.Success() {
			err = errors.New(st.String()) // what os/exec's ExitError says
		}
		waited <- err
	}()

	timer := time.NewTimer(lim.Wall)
	defer timer.Stop()
	var waitErr error
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case waitErr = <-waited:
			break loop
		case k := <-end:
			stop(k)
		case <-timer.C:
			stop(sandbox.KilledWall)
		case <-ctxDone:
			ctxDone = nil // closed for good: once is enough
			stop(sandbox.KilledWall)
		}
	}
	duration := time.Since(began)
	// The init is gone, and with it the PID namespace; kill through the
	// cgroup too, in case of a process that is still on its way out.
	rc.killAll()
	drained := make(chan struct{})
	go func() { wg.Wait(); <-statusDone; close(drained) }()
	select {
	case <-drained:
	case <-time.After(OutputDrainWait):
		outR.Close()
		errR.Close()
		statR.Close()
		<-drained
	}
	oom, pidsMax, peak := rc.stats()

	res := sandbox.Result{
		Stdout:    stdout.buf,
		Stderr:    stderr.buf,
		Truncated: stdout.truncated || stderr.truncated,
		Duration:  duration,
		Degraded:  degraded,
	}
	res.Usage.MemPeak = peak
	for _, n := range namespaces {
		if !s.skip[n.layer] {
			res.Enforced = append(res.Enforced, n.layer)
		}
	}
	if rc.mem != "" {
		res.Enforced = append(res.Enforced, sandbox.LayerCgroupMem)
	}
	if rc.pids != "" {
		res.Enforced = append(res.Enforced, sandbox.LayerCgroupPids)
	}
	var started, done *nsinit.Report
	for i := range reports {
		r := &reports[i]
		switch {
		case r.Stage == nsinit.StageStale:
			return sandbox.Result{}, fmt.Errorf("%w: %s", errStaleInit, r.Error)
		case r.Stage != "":
			if killed != sandbox.KilledNone {
				break
			}
			return sandbox.Result{}, initFailure(r, spec.AllowDegraded)
		case r.Started:
			started = r
		case r.Done:
			done = r
		}
	}
	if started != nil {
		for _, l := range started.Enforced {
			res.Enforced = append(res.Enforced, sandbox.Layer(l))
		}
		for _, l := range started.Degraded {
			res.Degraded = append(res.Degraded, sandbox.Layer(l))
		}
	}
	switch {
	case done != nil && done.Exited:
		res.ExitCode = done.Code
	case done != nil:
		res.ExitCode = 128 + done.Signal
	case killed != sandbox.KilledNone:
		res.ExitCode = 128 + int(syscall.SIGKILL)
	case oom || pidsMax:
		// The init itself fell to the limit (the OOM killer chose it, or
		// its runtime could not start a thread), and the tree with it.
		res.ExitCode = 128 + int(syscall.SIGKILL)
	default:
		return sandbox.Result{}, fmt.Errorf("sandbox: the init ended without a report (%v): %s", waitErr, clip(stderr.buf))
	}
	if done != nil {
		res.Usage.UserCPU = time.Duration(done.UtimeUS) * time.Microsecond
		res.Usage.SystemCPU = time.Duration(done.StimeUS) * time.Microsecond
		res.Usage.MaxRSS = done.MaxRSSKB << 10
	}
	res.Killed = killed
	if killed == sandbox.KilledNone {
		cpu := res.Usage.UserCPU + res.Usage.SystemCPU
		switch {
		case oom:
			res.Killed = sandbox.KilledOOM
		case done != nil && (done.Signal == int(syscall.SIGXCPU) ||
			// SIGKILL at the hard limit, a second past the soft one; the
			// rusage is coarser than the kernel's CPU clock, hence 3/4.
			done.Signal == int(syscall.SIGKILL) && cpu >= time.Duration(cfg.CPUSec)*time.Second*3/4):
			res.Killed = sandbox.KilledCPU
		case pidsMax:
			res.Killed = sandbox.KilledPids
		}
	}
	res.TimedOut = res.Killed == sandbox.KilledWall
	return res, nil
}

// namespaces are those the init is cloned into. The benchmarks may leave
// out the optional ones to measure them; user, mount and PID namespaces
// are the frame of everything else.
var namespaces = []struct {
	layer    sandbox.Layer
	flag     uintptr
	optional bool
}{
	{sandbox.LayerUserNS, syscall.CLONE_NEWUSER, false},
	{sandbox.LayerMountNS, syscall.CLONE_NEWNS, false},
	{sandbox.LayerPIDNS, syscall.CLONE_NEWPID, false},
	{sandbox.LayerNetNS, syscall.CLONE_NEWNET, true},
	{sandbox.LayerIPCNS, syscall.CLONE_NEWIPC, true},
	{sandbox.LayerUTSNS, syscall.CLONE_NEWUTS, true},
}

func (s *Sandbox) cloneflags() uintptr {
	var f uintptr
	for _, n := range namespaces {
		if !n.optional || !s.skip[n.layer] {
			f |= n.flag
		}
	}
	return f
}

// initFailure turns a setup failure the init reported into the error.
func initFailure(r *nsinit.Report, allowDegraded bool) error {
	switch r.Kind {
	case "invalid":
		return sandbox.Invalid(r.Error, "fix the Spec's paths")
	case "unavailable":
		layer := sandbox.Layer(r.Layer)
		if layer == "" {
			layer = stageLayer(r.Stage)
		}
		if layer == sandbox.LayerOverlay {
			return sandbox.Unavailable(layer, fmt.Sprintf("the kernel refused the overlay over the workspace: %s", r.Error),
				"use Linux 6.8 or later with overlayfs, and Overlay.Upper and Overlay.Work on a filesystem with user xattrs (ext4, xfs, btrfs; tmpfs from 6.6); or run without Overlay")
		}
		return sandbox.Unavailable(layer, fmt.Sprintf("%s: %s", r.Stage, r.Error),
			"check that this kernel allows it in a user namespace, or use the container backend")
	}
	return fmt.Errorf("sandbox: the init failed at %s: %s", r.Stage, r.Error)
}

func stageLayer(stage string) sandbox.Layer {
	switch stage {
	case "cgroupns":
		return sandbox.LayerCgroupNS
	case "pivot_root":
		return sandbox.LayerPivotRoot
	case "readonly_root":
		return sandbox.LayerReadOnly
	}
	return sandbox.LayerMountNS
}

func clip(b []byte) string {
	if len(b) > 1000 {
		b = b[:1000]
	}
	return string(b)
}
