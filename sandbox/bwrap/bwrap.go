// Package bwrap is the sandbox backend that runs each command under
// bubblewrap (bwrap): new user, mount, PID, network, IPC, UTS and cgroup
// namespaces; a read-only root made of the host's system directories; the
// workspace at /workspace with airlock's state masked; private /tmp, /proc
// and /dev; every capability dropped; a new session; a seccomp filter;
// rlimits; and memory and pids limits in cgroups of its own.
//
//	sb := bwrap.New(nil)
//	res, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"ls"}, Workspace: dir})
//
// How limits reach the command without a helper process: bwrap is started
// with --block-fd, so its child, once the namespaces and mounts are made,
// waits for one byte before it loads the seccomp filter and runs the
// command. While it waits, airlock learns its pid (--info-fd), moves bwrap
// and the child into the run's cgroups and sets the child's rlimits with
// prlimit(2); whatever the command starts is born inside both. The wall
// deadline, ctx and the output cap kill the child, which is PID 1 of the
// sandbox's PID namespace, so the kernel kills everything left in it,
// however it was forked or detached.
//
// The command runs as nobody (SandboxUID) inside, mapped to the caller's
// own uid outside, so a root caller's command can write a root-owned
// workspace; for the same reason root-only files in the bound system
// directories are hidden (DefaultHiddenPaths) and /proc's kernel knobs are
// read-only or hidden (ProcReadOnly, ProcHidden). Every command starts
// through env(1) (EnvBinary), because bwrap sets PWD of its own accord and
// the command must see exactly the Spec's environment. Landlock is not a
// layer bwrap applies; the mount namespace is what confines files.
//
// bwrap must be installed (Debian: apt-get install bubblewrap; or run
// scripts/setup-sandbox.sh). Memory and pids limits need write access to
// the cgroup v1 memory and pids hierarchies (root); without it Run refuses
// unless the Spec allows degradation. cgroup v2 is not supported yet.
package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox"
)

// DefaultCgroupParent is the directory, under the caller's own cgroup in
// each hierarchy, that holds one cgroup per run.
const DefaultCgroupParent = "airlock-bwrap"

// StartTimeout bounds how long bwrap may take to make the sandbox and
// report its child, apart from the command's own wall limit.
const StartTimeout = 10 * time.Second

// Options configure the backend. A nil *Options means the defaults.
type Options struct {
	// Path is the bwrap binary; "" looks up "bwrap" in PATH.
	Path string
	// CgroupRoot is where the cgroup v1 hierarchies are mounted; "" means
	// DefaultCgroupRoot.
	CgroupRoot string
	// CgroupParent names the directory under the caller's cgroup that holds
	// the runs' cgroups; "" means DefaultCgroupParent.
	CgroupParent string
	// HiddenPaths replace DefaultHiddenPaths when not nil.
	HiddenPaths []string
}

// Sandbox runs commands under bwrap. It is safe for concurrent use.
type Sandbox struct {
	opts Options
}

// New returns the backend. It does not look for bwrap yet: Available and
// Run do, so a machine without it gets an error that says what to install.
func New(opts *Options) *Sandbox {
	s := &Sandbox{}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.CgroupRoot == "" {
		s.opts.CgroupRoot = DefaultCgroupRoot
	}
	if s.opts.CgroupParent == "" {
		s.opts.CgroupParent = DefaultCgroupParent
	}
	if s.opts.HiddenPaths == nil {
		s.opts.HiddenPaths = DefaultHiddenPaths
	}
	return s
}

// Name is "bwrap".
func (s *Sandbox) Name() string { return "bwrap" }

// Available reports whether bwrap can be found, as an ErrUnavailable that
// says how to install it.
func (s *Sandbox) Available() error {
	_, err := s.binary()
	return err
}

func (s *Sandbox) binary() (string, error) {
	name := s.opts.Path
	if name == "" {
		name = "bwrap"
	}
	p, err := lookPath(name)
	if err != nil {
		return "", sandbox.Unavailable("", fmt.Sprintf("bubblewrap (%s) is not installed (%v)", name, err), "apt-get install bubblewrap, or run scripts/setup-sandbox.sh as root")
	}
	return p, nil
}

// layersNS are applied by bwrap itself, in this order, whenever it starts.
var layersNS = []sandbox.Layer{
	sandbox.LayerUserNS, sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS,
	sandbox.LayerIPCNS, sandbox.LayerUTSNS, sandbox.LayerCgroupNS, sandbox.LayerPivotRoot,
	sandbox.LayerReadOnly, sandbox.LayerNonRoot, sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs,
	sandbox.LayerSetsid,
}

// Run runs spec under bwrap. See sandbox.Sandbox.
func (s *Sandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if err := spec.Check(); err != nil {
		return sandbox.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("bwrap: not started: %w", err)
	}
	if spec.Network == sandbox.NetworkProxy {
		// No relay here yet: refusing beats running with no network at
		// all while the caller thinks the proxy is there.
		return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerEgressProxy, "the bwrap backend has no egress proxy mode yet", "use the native backend for commands that need the egress proxy")
	}
	lim := spec.Limits.WithDefaults()
	bin, err := s.binary()
	if err != nil {
		return sandbox.Result{}, err
	}
	if spec.Overlay != nil {
		if err := overlaySupported(bin); err != nil {
			return sandbox.Result{}, err
		}
		if err := spec.Overlay.Prepare(spec.Workspace); err != nil {
			return sandbox.Result{}, err
		}
	}
	args, err := buildArgs(&spec, s.opts.HiddenPaths)
	if err != nil {
		return sandbox.Result{}, err
	}

	var res sandbox.Result
	cg, cgErr := newCgroup(s.opts.CgroupRoot, s.opts.CgroupParent, lim.Memory, lim.Pids)
	if cgErr != nil {
		if !spec.AllowDegraded {
			return sandbox.Result{}, sandbox.Unavailable(sandbox.LayerCgroupMem, fmt.Sprintf("the memory and pids limits (layers %s, %s) need cgroups of the run's own: %v", sandbox.LayerCgroupMem, sandbox.LayerCgroupPids, cgErr), fmt.Sprintf("run airlock as root on a host with the cgroup v1 memory and pids controllers under %s, or set Spec.AllowDegraded", s.opts.CgroupRoot))
		}
		res.Degraded = append(res.Degraded, sandbox.LayerCgroupMem, sandbox.LayerCgroupPids)
		cg = nil
	} else {
		defer cg.remove()
	}

	r := &run{lim: lim, cg: cg}
	return r.do(ctx, bin, args, &spec, res)
}

// run is the state of one Run.
type run struct {
	lim sandbox.Limits
	cg  *cgroup

	mu     sync.Mutex
	killed sandbox.Killed
	kill   func() // set once the child is known
}

// end kills the sandbox for reason, once; later reasons are ignored, so
// the first limit hit is the one reported.
func (r *run) end(reason sandbox.Killed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed != sandbox.KilledNone {
		return
	}
	r.killed = reason
	if r.kill != nil {
		r.kill()
	}
}

// reason is why the sandbox was ended, so far.
func (r *run) reason() sandbox.Killed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed
}

func (r *run) do(ctx context.Context, bin string, args []string, spec *sandbox.Spec, res sandbox.Result) (sandbox.Result, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer infoR.Close()
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return res, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer blockR.Close()
	defer blockW.Close()
	secR, secW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return res, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer secR.Close()
	// The program is far smaller than a pipe's buffer, so it is written
	// whole before bwrap starts.
	if _, err := secW.Write(seccompProgram); err != nil {
		secW.Close()
		infoW.Close()
		return res, fmt.Errorf("bwrap: write the seccomp filter: %w", err)
	}
	secW.Close()

	stdout := &sandbox.Capped{Max: r.lim.Output, OnOver: func() { r.end(sandbox.KilledOutput) }}
	stderr := &sandbox.Capped{Max: r.lim.Output, OnOver: func() { r.end(sandbox.KilledOutput) }}
	// bwrap's own process group, so nothing sent to airlock's group (a
	// terminal's ^C) reaches it, and airlock's death takes it along.
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	start := time.Now()
	var cmd *process
	err = startClean(func() error {
		var err error
		cmd, err = startProcess(bin, append([]string{bin}, args...), procFiles{
			stdin: spec.Stdin, stdout: stdout, stderr: stderr,
			extra: []*os.File{infoW, blockR, secR},
		}, sys)
		return err
	})
	if err != nil {
		infoW.Close()
		return res, fmt.Errorf("bwrap: start %s: %w", bin, err)
	}
	infoW.Close()
	r.mu.Lock()
	r.kill = func() { cmd.Kill() }
	r.mu.Unlock()

	child, pidfd, err := r.prepare(ctx, cmd, infoR)
	if err != nil {
		r.end(sandbox.KilledWall)
		cmd.wait()
		if errors.Is(err, errNoChild) {
			return res, setupFailed(stderr.Bytes())
		}
		return res, fmt.Errorf("%w (bwrap said: %s)", err, firstLine(stderr.Bytes()))
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	if spec.Overlay != nil {
		// The child waits on --block-fd with its mounts made: what its
		// mountinfo shows is what the command would get.
		mi, err := readMountinfo(child)
		if err == nil {
			err = checkOverlayMount(mi)
		}
		if err != nil {
			r.end(sandbox.KilledWall)
			syscall.Kill(child, syscall.SIGKILL)
			cmd.Kill()
			cmd.wait()
			return res, err
		}
	}
	r.mu.Lock()
	r.kill = func() {
		// The child is PID 1 of the sandbox: killing it makes the kernel
		// kill every process left in the namespace. The pidfd cannot
		// point at a recycled pid.
		if pidfd >= 0 {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		} else {
			syscall.Kill(child, syscall.SIGKILL)
		}
		if r.cg != nil {
			r.cg.killAll()
		}
		cmd.Kill()
	}
	killedEarly := r.killed != sandbox.KilledNone
	r.mu.Unlock()
	if killedEarly {
		r.kill()
	}

	// Let the command go.
	wall := time.AfterFunc(r.lim.Wall, func() { r.end(sandbox.KilledWall) })
	defer wall.Stop()
	stop := context.AfterFunc(ctx, func() { r.end(sandbox.KilledWall) })
	defer stop()
	if _, err := blockW.Write([]byte{0}); err != nil {
		r.end(sandbox.KilledWall)
		cmd.wait()
		return res, fmt.Errorf("bwrap: release the sandbox: %w", err)
	}
	st, waitErr := cmd.wait()
	res.Duration = time.Since(start)
	if waitErr != nil {
		return res, fmt.Errorf("bwrap: wait: %w", waitErr)
	}
	// If the byte is still in the pipe, the child died before it read it:
	// bwrap failed while making the sandbox, and the command never ran.
	// (TIOCINQ is FIONREAD's name in x/sys/unix.)
	if n, err := unix.IoctlGetInt(int(blockR.Fd()), unix.TIOCINQ); err == nil && n > 0 && r.reason() == sandbox.KilledNone {
		return res, setupFailed(stderr.Bytes())
	}

	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	// bwrap's rusage does not cover the command (see cgroup.cpu), so
	// CPU comes from cpuacct and MaxRSS stays unknown.
	if r.cg != nil {
		res.Usage.UserCPU, res.Usage.SystemCPU, _ = r.cg.cpuUsage()
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Over() || stderr.Over()
	res.Enforced = append(append([]sandbox.Layer{}, layersNS...), sandbox.LayerSeccomp, sandbox.LayerRlimits)
	if spec.Overlay != nil {
		res.Enforced = append(res.Enforced, sandbox.LayerOverlay)
	}
	if r.cg != nil {
		res.Enforced = append(res.Enforced, sandbox.LayerCgroupMem, sandbox.LayerCgroupPids)
		res.Usage.MemPeak = r.cg.memPeak()
	}
	if res.ExitCode == 1 && bytes.HasPrefix(res.Stderr, []byte("bwrap: execvp ")) {
		// The command was not found or not executable inside the
		// sandbox; report it the way a shell does.
		res.ExitCode = 127
	}

	res.Killed = r.reason()
	if res.Killed == sandbox.KilledNone && r.cg != nil {
		switch {
		case r.cg.oomKills() > 0:
			res.Killed = sandbox.KilledOOM
		case r.cg.forkFailures() > 0:
			res.Killed = sandbox.KilledPids
		}
	}
	if res.Killed == sandbox.KilledNone {
		cpu := res.Usage.UserCPU + res.Usage.SystemCPU
		if cpu == 0 {
			// No cpuacct reading: the run's length bounds its CPU time
			// from above (one process; a tree may use more).
			cpu = res.Duration
		}
		limit := r.lim.CPU.Round(time.Second)
		if res.ExitCode == 128+int(syscall.SIGXCPU) ||
			(res.ExitCode == 128+int(syscall.SIGKILL) && cpu >= limit-limit/10) {
			res.Killed = sandbox.KilledCPU
		}
	}
	res.TimedOut = res.Killed == sandbox.KilledWall
	return res, nil
}

// errNoChild: bwrap ended without reporting a child.
var errNoChild = errors.New("bwrap: no child")

// setupFailed is the refusal when bwrap could not make the sandbox (the
// command never ran): most often a kernel that does not allow the
// namespaces, which no Spec can do without.
func setupFailed(stderr []byte) error {
	return sandbox.Unavailable("", "bwrap could not make the sandbox, so nothing ran: "+firstLine(stderr),
		"check that this kernel allows user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone) and that bwrap runs by hand, or use another backend")
}

// prepare waits for bwrap to report its child, then puts both in the
// cgroups and sets the child's rlimits, while the child still waits on
// --block-fd. It returns the child's pid and a pidfd for it (-1 where the
// kernel has no pidfd_open).
func (r *run) prepare(ctx context.Context, cmd *process, info *os.File) (int, int, error) {
	type childInfo struct {
		Pid int `json:"child-pid"`
	}
	got := make(chan childInfo, 1)
	go func() {
		var ci childInfo
		// One small JSON object; bwrap closes the pipe after it.
		json.NewDecoder(io.LimitReader(info, 4096)).Decode(&ci)
		got <- ci
	}()
	t := time.NewTimer(StartTimeout)
	defer t.Stop()
	var ci childInfo
	select {
	case ci = <-got:
	case <-t.C:
		return 0, -1, fmt.Errorf("bwrap: no child after %v (StartTimeout)", StartTimeout)
	case <-ctx.Done():
		return 0, -1, fmt.Errorf("bwrap: not started: %w", ctx.Err())
	}
	if ci.Pid <= 0 {
		return 0, -1, errNoChild
	}
	pidfd, err := unix.PidfdOpen(ci.Pid, 0)
	if err != nil {
		pidfd = -1
	}
	if r.cg != nil {
		for _, pid := range []int{cmd.Pid, ci.Pid} {
			if err := r.cg.add(pid); err != nil {
				closeFD(pidfd)
				return 0, -1, fmt.Errorf("bwrap: put pid %d in the run's cgroup: %w", pid, err)
			}
		}
	}
	if err := setRlimits(ci.Pid, r.lim); err != nil {
		closeFD(pidfd)
		return 0, -1, err
	}
	return ci.Pid, pidfd, nil
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// setRlimits lowers pid's limits; every later process inherits them. Only
// lowering is asked for, which needs no privilege for one's own processes.
func setRlimits(pid int, lim sandbox.Limits) error {
	cpu := uint64((lim.CPU + time.Second - 1) / time.Second)
	for _, l := range []struct {
		name     string
		res      int
		cur, max uint64
	}{
		// SIGXCPU at the limit, SIGKILL one second later for a command
		// that catches it.
		{"CPU", unix.RLIMIT_CPU, cpu, cpu + 1},
		{"OpenFiles", unix.RLIMIT_NOFILE, uint64(lim.OpenFiles), uint64(lim.OpenFiles)},
		{"FileSize", unix.RLIMIT_FSIZE, uint64(lim.FileSize), uint64(lim.FileSize)},
		{"core", unix.RLIMIT_CORE, 0, 0},
	} {
		rl := unix.Rlimit{Cur: l.cur, Max: l.max}
		if err := unix.Prlimit(pid, l.res, &rl, nil); err != nil {
			return sandbox.Unavailable(sandbox.LayerRlimits, fmt.Sprintf("cannot set the %s rlimit of the sandbox: %v", l.name, err), "run airlock as the user that starts bwrap")
		}
	}
	return nil
}

// startMu serializes startClean, so one Run's restoring of flags cannot
// reopen a descriptor to another Run's bwrap.
var startMu sync.Mutex

// startClean calls start so that the process it starts inherits only the
// files it is handed. Go opens every descriptor close-on-exec, but a
// process can inherit descriptors without the flag (from its own parent,
// or from C code), and os.StartProcess passes those on to every child;
// bwrap closes none, so the command would hold them. They are marked
// close-on-exec for the start and given their flag back after it.
func startClean(start func() error) error {
	startMu.Lock()
	defer startMu.Unlock()
	var marked []int
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= 2 {
				continue
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil || flags&unix.FD_CLOEXEC != 0 {
				continue
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err == nil {
				marked = append(marked, fd)
			}
		}
	}
	defer func() {
		for _, fd := range marked {
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
				unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags&^unix.FD_CLOEXEC)
			}
		}
	}()
	return start()
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	if s == "" {
		return "nothing on stderr"
	}
	return s
}
