// Package nsinit is the first process inside a native sandbox: it builds
// the sandbox's root filesystem, drops every privilege, applies Landlock
// and seccomp, starts the command and reports how it ended.
//
// The parent re-executes its own binary (/proc/self/exe), or starts a
// binary of its own for the init (cmd/airlock-sandbox-init), with argv[0]
// set to Argv0 and the environment variable EnvMarker set to its
// Fingerprint (MarkerSelf for its own binary); this package's init function recognises that and never
// returns to main. The parent
// starts it with GOMAXPROCS=1 and GOGC=off: few threads (they count
// against the pids limit) and no collector work in a process that lives
// as long as the command but allocates almost nothing. Go initializes
// a package as soon as its imports are, choosing by import path among
// those ready, and this package imports only the standard library,
// golang.org/x/sys/unix and go-landlock: so in any binary that links the
// native backend (the airlock CLI, a test binary) the init hook runs
// before the heavy packages (cel-go, protobuf, SQL drivers) initialize,
// and the sandbox's first process stays small. Keep its imports that way,
// and away from standard packages with initializers whose paths sort
// late (path/filepath, net, regexp): the hook also waits for those, and
// everything that sorts before them runs first.
//
// The protocol: the parent passes the Config as one JSON document on fd
// ConfigFD and closes it once the child is in its cgroups (so reading it
// is also the signal to go on); the child writes Reports, one JSON line
// each, on fd StatusFD. In proxy mode (Config.ProxyPort) fd ProxyFD is a
// unix socket on which the init sends the relay's listening socket, once,
// before it drops its privileges (see proxy.go). With Config.CommandPids,
// fds PidsEnterFD to PidsLeaveFD put the command in its own pids cgroup
// (see pids.go).
package nsinit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Argv0 and EnvMarker mark the re-executed init: argv[0] is Argv0 and
// EnvMarker holds the parent's Fingerprint (see fingerprint.go), or
// MarkerSelf. Both must be present.
const (
	Argv0     = "airlock-sandbox-init"
	EnvMarker = "AIRLOCK_SANDBOX_INIT"
)

// MarkerSelf is EnvMarker's value when the init is the parent's own
// binary re-executed (/proc/self/exe), whose init is the parent's by
// definition: no Fingerprint is computed on either side.
const MarkerSelf = "self"

// StageStale is the Report.Stage of an init whose Fingerprint is not the
// parent's: it built nothing, and the parent should run its own binary as
// the init.
const StageStale = "stale_init"

// The file descriptors the parent hands the init.
const (
	ConfigFD = 3
	StatusFD = 4
	// ProxyFD, given only when Config.ProxyPort is set, is a unix socket
	// on which the init sends the parent the relay's listening socket.
	ProxyFD = 5
	// PidsEnterFD, PidsMaxFD and PidsLeaveFD, given only when
	// Config.CommandPids is set, are open for writing on the command's
	// pids cgroup's thread list and pids.max, and on the init's own
	// cgroup's thread list (see enterCommandCgroup).
	PidsEnterFD = 6
	PidsMaxFD   = 7
	PidsLeaveFD = 8
)

// MaxConfig bounds the Config document the init reads.
const MaxConfig = 1 << 20

// Config is everything the init needs, decided by the parent.
type Config struct {
	Argv      []string
	Env       []string
	Dir       string // relative to the workspace mount
	Workspace string // host path, "" for none
	Writable  bool
	Masked    []string // relative to the workspace
	Protected []string // relative to the workspace: bound read-only over themselves
	ReadOnly  []string // extra host paths, bound at the same path
	// Overlay, when set, mounts the workspace as the lower layer of an
	// overlay at /workspace (Writable is then set too) instead of binding it.
	Overlay  *Overlay `json:",omitempty"`
	Hostname string

	UID, GID         int  // the command's ids inside the user namespace
	SetGroups        bool // setgroups(2) is allowed in the namespace
	TmpSize          int64
	NoFile, NProc    uint64
	FileSize, CPUSec uint64

	Landlock       bool // apply Landlock
	LandlockStrict bool // refuse when the kernel lacks part of it
	Seccomp        bool
	NetworkNone    bool
	// ProxyPort, when not 0, is the port on 127.0.0.1 where the init
	// opens the relay's listener (see proxy.go) and the one TCP port the
	// command may connect to; it implies the filter's TCP-only sockets.
	ProxyPort uint16
	CgroupNS  bool
	// CommandPids, when not 0, is the pids limit of the command's own
	// cgroup, below the init's: the command is forked into it (see
	// enterCommandCgroup), so the init's threads take nothing from it.
	CommandPids int
}

// Report is one message from the init to the parent.
type Report struct {
	// A failure before the command started: Stage names the step, Kind
	// is "invalid" (the Spec's fault), "unavailable" (the kernel's) or
	// "fault".
	Stage, Kind, Error string
	Layer              string `json:",omitempty"`

	// Enforced: the layers applied, sent just before the command starts.
	Enforced []string `json:",omitempty"`
	Degraded []string `json:",omitempty"`
	Started  bool     `json:",omitempty"`

	// The end: the command's wait status and rusage.
	Done          bool  `json:",omitempty"`
	Exited        bool  `json:",omitempty"`
	Code, Signal  int   `json:",omitempty"`
	UtimeUS       int64 `json:",omitempty"`
	StimeUS       int64 `json:",omitempty"`
	MaxRSSKB      int64 `json:",omitempty"`
	NotFound      bool  `json:",omitempty"`
	NotFoundError string
}

func init() {
	if len(os.Args) == 0 || os.Args[0] != Argv0 || os.Getenv(EnvMarker) == "" {
		return
	}
	// Everything from here runs on the main OS thread, which is never
	// unlocked: the privileges are dropped and the filters applied on
	// this thread, and the command is forked from it.
	runtime.LockOSThread()
	os.Exit(Main())
}

// failure is a setup step that went wrong.
type failure struct {
	stage, kind, layer string
	err                error
}

func (f *failure) Error() string { return f.stage + ": " + f.err.Error() }

func fail(stage, kind string, err error) *failure {
	return &failure{stage: stage, kind: kind, err: err}
}

// Main is the init: it returns the exit status of the init process.
func Main() int {
	status := os.NewFile(StatusFD, "status")
	cfgFile := os.NewFile(ConfigFD, "config")
	if status == nil || cfgFile == nil {
		fmt.Fprintln(os.Stderr, "airlock: the sandbox init was started without its descriptors")
		return 125
	}
	report := func(r Report) {
		b, _ := json.Marshal(r)
		status.Write(append(b, '\n'))
	}
	if got := os.Getenv(EnvMarker); got != MarkerSelf && got != Fingerprint() {
		report(Report{Stage: StageStale, Kind: "fault", Error: fmt.Sprintf("this init was built from other sources (fingerprint %s, the parent's %s)", Fingerprint(), got)})
		// Read the Config all the same, so that the parent's write does
		// not fail before it sees the report.
		io.Copy(io.Discard, io.LimitReader(cfgFile, MaxConfig+1))
		return 125
	}
	b, err := io.ReadAll(io.LimitReader(cfgFile, MaxConfig+1))
	cfgFile.Close()
	var cfg Config
	if err == nil && len(b) > MaxConfig {
		err = fmt.Errorf("config over %d bytes", MaxConfig)
	}
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || len(cfg.Argv) == 0 {
		// The parent closed the pipe without a config: it gave up on us.
		return 125
	}
	syscall.CloseOnExec(StatusFD)
	// Not dumpable: a host process of the init's host uid cannot ptrace
	// it while it still holds the namespace's capabilities.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	pid, enforced, degraded, f := setup(&cfg)
	if f != nil {
		report(Report{Stage: f.stage, Kind: f.kind, Layer: f.layer, Error: f.err.Error()})
		return 125
	}
	report(Report{Started: true, Enforced: enforced, Degraded: degraded})
	if pid < 0 {
		report(Report{Done: true, Exited: true, Code: 127, NotFound: true, NotFoundError: notFound})
		return 0
	}
	return reap(pid, report)
}

// notFound holds why the command could not be started, for exit 127.
var notFound string

// reap waits for the command, reaping every orphan on the way, and reports
// the command's end. The init then exits, and with it the PID namespace:
// the kernel kills whatever the command left behind. The raw wait4 keeps
// the Go scheduler from starting a thread while this one blocks, which
// matters when the pids limit is exhausted.
func reap(pid int, report func(Report)) int {
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		got, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&ws)), 0, uintptr(unsafe.Pointer(&ru)), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			report(Report{Stage: "wait", Kind: "fault", Error: e.Error()})
			return 125
		}
		if int(got) != pid {
			continue
		}
		r := Report{Done: true,
			UtimeUS:  ru.Utime.Sec*1e6 + ru.Utime.Usec,
			StimeUS:  ru.Stime.Sec*1e6 + ru.Stime.Usec,
			MaxRSSKB: ru.Maxrss,
		}
		switch {
		case ws.Exited():
			r.Exited, r.Code = true, ws.ExitStatus()
		case ws.Signaled():
			r.Signal = int(ws.Signal())
		}
		report(r)
		return 0
	}
}

// setup builds the sandbox and starts the command. It returns the
// command's pid (-1 when it was not found) and the layers applied.
func setup(cfg *Config) (int, []string, []string, *failure) {
	var enforced, degraded []string
	on := func(l string) { enforced = append(enforced, l) }
	if cfg.CgroupNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return 0, nil, nil, fail("cgroupns", "unavailable", err)
		}
		on("cgroupns")
	}
	if err := buildRoot(cfg); err != nil {
		return 0, nil, nil, err
	}
	if cfg.Overlay != nil && cfg.Workspace != "" {
		on("overlay")
	}
	on("pivot_root")
	on("readonly_root")
	if cfg.Hostname != "" {
		unix.Sethostname([]byte(cfg.Hostname))
	}
	if err := setRlimits(cfg); err != nil {
		return 0, nil, nil, fail("rlimits", "fault", err)
	}
	on("rlimits")
	on("setsid")

	// Resolve the command and its directory while the init can still
	// see everything it will be allowed to.
	dir := "/workspace"
	if cfg.Workspace == "" {
		dir = "/tmp"
	}
	if cfg.Dir != "" {
		dir = dir + "/" + cfg.Dir
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return 0, nil, nil, fail("dir", "invalid", fmt.Errorf("Dir %q is not a directory in the workspace", cfg.Dir))
	}
	path, lookErr := lookPath(cfg.Argv[0], cfg.Env)

	// The relay's listener needs CAP_NET_ADMIN in the namespace (to bring
	// loopback up), which the drop below takes away.
	if cfg.ProxyPort != 0 {
		if err := openRelay(cfg.ProxyPort); err != nil {
			return 0, nil, nil, err
		}
		on("egress_proxy")
	}
	if err := dropPrivileges(cfg); err != nil {
		return 0, nil, nil, err
	}
	// Changing ids clears the parent-death signal the parent set: arm it
	// again, so that the init, and with it the whole PID namespace, dies
	// when the airlock process that started it does, even by SIGKILL.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return 0, nil, nil, fail("caps_dropped", "fault", fmt.Errorf("re-arming the parent-death signal: %w", err))
	}
	on("caps_dropped")
	if cfg.UID != 0 {
		on("non_root_user")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, nil, nil, fail("no_new_privs", "fault", err)
	}
	on("no_new_privs")
	if cfg.Landlock {
		ok, err := applyLandlock(cfg)
		if err != nil {
			f := fail("landlock", "unavailable", err)
			f.layer = "landlock"
			return 0, nil, nil, f
		}
		if ok {
			on("landlock")
		} else {
			degraded = append(degraded, "landlock")
		}
	}
	if cfg.Seccomp {
		if err := applySeccomp(socketPolicy(cfg)); err != nil {
			f := fail("seccomp", "unavailable", err)
			f.layer = "seccomp"
			return 0, nil, nil, f
		}
		on("seccomp")
	}
	// Whatever the init inherited without close-on-exec (the parent's own
	// leaked descriptors) must not reach the command.
	if err := cloexecFrom(3); err != nil {
		return 0, nil, nil, fail("descriptors", "fault", err)
	}
	if lookErr != nil {
		notFound = lookErr.Error()
		fmt.Fprintf(os.Stderr, "airlock: %v\n", lookErr)
		return -1, enforced, degraded, nil
	}
	if cfg.CommandPids > 0 {
		if err := enterCommandCgroup(); err != nil {
			f := fail("cgroup_pids", "unavailable", err)
			f.layer = "cgroup_pids"
			return 0, nil, nil, f
		}
	}
	pid, err := syscall.ForkExec(path, cfg.Argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   cfg.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if cfg.CommandPids > 0 {
		if lerr := leaveCommandCgroup(cfg.CommandPids); lerr != nil {
			if err == nil {
				// Fail closed: a command whose limit could not be set
				// does not run on.
				syscall.Kill(pid, syscall.SIGKILL)
			}
			f := fail("cgroup_pids", "fault", lerr)
			f.layer = "cgroup_pids"
			return 0, nil, nil, f
		}
	}
	if err != nil {
		notFound = fmt.Sprintf("%s: %v", cfg.Argv[0], err)
		fmt.Fprintf(os.Stderr, "airlock: cannot run %s\n", notFound)
		return -1, enforced, degraded, nil
	}
	return pid, enforced, degraded, nil
}

// lookPath finds argv0 in the PATH of the command's own environment.
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + argv0
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH %q", argv0, path)
}

func setRlimits(cfg *Config) error {
	for _, l := range []struct {
		res      int
		cur, max uint64
		name     string
	}{
		{unix.RLIMIT_CORE, 0, 0, "CORE"},
		{unix.RLIMIT_NOFILE, cfg.NoFile, cfg.NoFile, "NOFILE"},
		{unix.RLIMIT_FSIZE, cfg.FileSize, cfg.FileSize, "FSIZE"},
		// SIGXCPU at the limit, SIGKILL a second later for a command
		// that catches it.
		{unix.RLIMIT_CPU, cfg.CPUSec, cfg.CPUSec + 1, "CPU"},
		{unix.RLIMIT_NPROC, cfg.NProc, cfg.NProc, "NPROC"},
	} {
		// Only lowering is possible (no CAP_SYS_RESOURCE on the host), so
		// a limit already below ours stays.
		var old syscall.Rlimit
		if err := syscall.Getrlimit(l.res, &old); err != nil {
			return fmt.Errorf("getrlimit %s: %w", l.name, err)
		}
		nl := syscall.Rlimit{Cur: min(l.cur, old.Max), Max: min(l.max, old.Max)}
		if err := syscall.Setrlimit(l.res, &nl); err != nil {
			return fmt.Errorf("setrlimit %s: %w", l.name, err)
		}
	}
	return nil
}

// cloexecFrom marks every descriptor from fd up close-on-exec:
// close_range(2) where the kernel has it (5.11), else one by one.
func cloexecFrom(fd uint) error {
	err := unix.CloseRange(fd, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close_range: %v; listing /proc/self/fd: %w", err, rerr)
	}
	for _, e := range ents {
		var n int
		if _, serr := fmt.Sscan(e.Name(), &n); serr == nil && n >= int(fd) {
			syscall.CloseOnExec(n)
		}
	}
	return nil
}
