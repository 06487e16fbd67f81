// Package sandboxtest is the conformance and escape suite every sandbox
// backend must pass. A backend's test calls Run with a constructor:
//
//	func TestSuite(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return newBackend(t) }, nil)
//	}
//
// Every escape test makes a real attempt whose success would be visible
// (a token echoed by a host server, a file landing on the host, a host
// process killed), and first proves the same attempt succeeds outside the
// sandbox or in a control case, so that no test passes because the probe
// was broken. The probes are /bin/sh scripts (busybox sh is enough) and a
// small static Go program (internal/probe) the suite builds with
// CGO_ENABLED=0 and copies into each workspace as /workspace/probe.
//
// The suite needs root on the host (for the raw-socket, setuid and
// /etc/shadow controls) and the go command (to build the probe, unless
// Options.Probe names a built one); without them the tests fail and say
// what to provide.
package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// Options adapt the suite to a backend. Nil means the defaults.
type Options struct {
	// Probe is the path of a built probe (CGO_ENABLED=0 go build
	// airlock.dev/airlock/sandbox/sandboxtest/internal/probe); "" builds
	// it with the go command.
	Probe string
	// Shell is the shell inside the sandbox; "" means /bin/sh.
	Shell string
	// Layers are the layers the backend must report in Result.Enforced
	// for a default Spec.
	Layers []sandbox.Layer
	// Unavailable returns a sandbox that cannot apply a layer a default
	// Spec needs (for example one told to use a cgroup root that does
	// not exist), and that layer. Run must refuse with ErrUnavailable,
	// and run with Spec.AllowDegraded, listing the layer in Degraded.
	// Required: the suite fails without it.
	Unavailable func(t *testing.T) (sandbox.Sandbox, sandbox.Layer)
	// Timeout bounds each Run the suite makes; 0 means DefaultTimeout.
	Timeout time.Duration
	// NoOverlay says the backend has no copy-on-write workspace
	// (Spec.Overlay): every Run with one must refuse with ErrUnavailable
	// naming sandbox.LayerOverlay, with or without AllowDegraded, and
	// leave the workspace as it was.
	NoOverlay bool
}

// DefaultTimeout is how long the suite lets one Run take before it calls
// the backend hung. It is far above every limit the suite sets, because CI
// machines are slow and shared.
const DefaultTimeout = 2 * time.Minute

// slack is the margin the suite allows past a limit before it says the
// backend failed to enforce it promptly.
const slack = 30 * time.Second

// Run runs the whole suite against the backend newSandbox returns. Tests
// that change the process environment or watch host processes do not run
// in parallel.
func Run(t *testing.T, newSandbox func(t *testing.T) sandbox.Sandbox, opts *Options) {
	s := &suite{newSandbox: newSandbox}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Shell == "" {
		s.opts.Shell = "/bin/sh"
	}
	if s.opts.Timeout == 0 {
		s.opts.Timeout = DefaultTimeout
	}
	s.probe = s.opts.Probe
	if s.probe == "" {
		s.probe = buildProbe(t)
	}
	for _, c := range []struct {
		name string
		f    func(t *testing.T)
	}{
		{"Conformance/ExitCode", s.testExitCode},
		{"Conformance/Output", s.testOutput},
		{"Conformance/Stdin", s.testStdin},
		{"Conformance/Env", s.testEnv},
		{"Conformance/Dir", s.testDir},
		{"Conformance/Workspace", s.testWorkspace},
		{"Conformance/Tmp", s.testTmp},
		{"Conformance/Descriptors", s.testDescriptors},
		{"Conformance/Enforced", s.testEnforced},
		{"Conformance/Unavailable", s.testUnavailable},
		{"Conformance/InvalidSpec", s.testInvalidSpec},
		{"Escape/TCP", s.testTCP},
		{"Escape/UDP", s.testUDP},
		{"Escape/UnixSocket", s.testUnix},
		{"Escape/RawSocket", s.testRaw},
		{"Escape/ReadSecret", s.testReadSecret},
		{"Escape/WriteOutside", s.testWriteOutside},
		{"Escape/Syscalls", s.testSyscalls},
		{"Escape/Setuid", s.testSetuid},
		{"Escape/ProcSys", s.testProcSys},
		{"Escape/Terminal", s.testTerminal},
		{"Escape/HostProcess", s.testHostProcess},
		{"Escape/HostEnv", s.testHostEnv},
		{"Escape/MaskedDir", s.testMasked},
		{"Escape/RepositoryFiles", s.testReadOnlyDirs},
		{"Limits/ForkBomb", s.testForkBomb},
		{"Limits/Pids", s.testPids},
		{"Limits/PidsPeak", s.testPidsPeak},
		{"Limits/Memory", s.testMemory},
		{"Limits/CPU", s.testCPU},
		{"Limits/WallAndOrphans", s.testWall},
		{"Limits/Output", s.testOutputFlood},
		{"Overlay/Changes", s.testOverlayChanges},
		{"Overlay/DeleteAll", s.testOverlayDeleteAll},
		{"Overlay/Escape", s.testOverlayEscape},
		{"Overlay/Wall", s.testOverlayWall},
	} {
		t.Run(c.name, c.f)
	}
}

type suite struct {
	newSandbox func(t *testing.T) sandbox.Sandbox
	opts       Options
	probe      string
}

// buildProbe compiles the probe once per call of Run.
func buildProbe(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the sandbox suite builds its probe with the go command, which is not in PATH: install Go or set Options.Probe (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "probe")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-o", out, "airlock.dev/airlock/sandbox/sandboxtest/internal/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, b)
	}
	return out
}

func token(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "airlock-probe-" + hex.EncodeToString(b)
}

// workspace makes a fresh workspace holding the probe and a .airlock dir.
func (s *suite) workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	// The sandbox may run the command as another uid than the test's.
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	copyFile(t, s.probe, filepath.Join(ws, "probe"), 0o755)
	if err := os.Mkdir(filepath.Join(ws, ".airlock"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil {
		t.Fatal(err)
	}
}

// spec is a Spec running a shell script in ws.
func (s *suite) sh(ws, script string) sandbox.Spec {
	return sandbox.Spec{Argv: []string{s.opts.Shell, "-c", script}, Workspace: ws}
}

func (s *suite) probeSpec(ws string, args ...string) sandbox.Spec {
	return sandbox.Spec{Argv: append([]string{sandbox.WorkspaceMount + "/probe"}, args...), Workspace: ws}
}

// run runs spec in a new sandbox and fails the test on an error.
func (s *suite) run(t *testing.T, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	return s.runIn(t, s.newSandbox(t), spec)
}

func (s *suite) runIn(t *testing.T, sb sandbox.Sandbox, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	start := time.Now()
	r, err := sb.Run(ctx, spec)
	if err != nil {
		t.Fatalf("%s: Run(%q): %v", sb.Name(), spec.Argv, err)
	}
	if d := time.Since(start); d > s.opts.Timeout {
		t.Fatalf("Run(%q) took %v, past the suite's timeout %v: the backend does not honour ctx", spec.Argv, d, s.opts.Timeout)
	}
	return r
}

func describe(r sandbox.Result) string {
	return fmt.Sprintf("exit %d, killed %q, timed out %v, truncated %v\nstdout: %q\nstderr: %q",
		r.ExitCode, r.Killed, r.TimedOut, r.Truncated, clip(r.Stdout), clip(r.Stderr))
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// host runs the probe on the host, as the control case.
func (s *suite) host(t *testing.T, attr *syscall.SysProcAttr, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(s.probe, args...)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the probe on the host: %v", err)
	}
	return string(out), err == nil && hasLine(out, "reached")
}

// hasLine reports whether a line of out starts with prefix.
func hasLine(out []byte, prefix string) bool {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// mustReachOnHost is the control: the probe must succeed outside the sandbox.
func (s *suite) mustReachOnHost(t *testing.T, attr *syscall.SysProcAttr, args ...string) {
	t.Helper()
	out, ok := s.host(t, attr, args...)
	if !ok {
		t.Fatalf("control: probe %q does not succeed on the host, so a denial in the sandbox would prove nothing (run the suite as root): %s", args, out)
	}
}

// mustNotReach runs the probe in the sandbox and fails if it got there.
func (s *suite) mustNotReach(t *testing.T, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	r := s.run(t, spec)
	if r.ExitCode == 0 || hasLine(r.Stdout, "reached") {
		t.Fatalf("escape: %q succeeded in the sandbox: %s", spec.Argv, describe(r))
	}
	if !hasLine(r.Stdout, "denied") {
		t.Fatalf("the probe %q did not say it was denied (did it run at all?): %s", spec.Argv, describe(r))
	}
	return r
}

func requireRoot(t *testing.T, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s needs the suite to run as root on the host (euid is %d)", what, os.Geteuid())
	}
}

// --- conformance ---

func (s *suite) testExitCode(t *testing.T) {
	ws := s.workspace(t)
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"kill -9 $$", 128 + 9},
		{"kill -TERM $$", 128 + 15},
	} {
		r := s.run(t, s.sh(ws, c.script))
		if r.ExitCode != c.want || r.Killed != sandbox.KilledNone || r.TimedOut {
			t.Errorf("%q: got exit %d killed %q timed out %v, want exit %d and not killed", c.script, r.ExitCode, r.Killed, r.TimedOut, c.want)
		}
	}
}

func (s *suite) testOutput(t *testing.T) {
	r := s.run(t, s.sh(s.workspace(t), "echo out; echo err >&2; echo more"))
	if got, want := string(r.Stdout), "out\nmore\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := string(r.Stderr), "err\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if r.Truncated {
		t.Error("Truncated is set for a few bytes of output")
	}
}

func (s *suite) testStdin(t *testing.T) {
	ws := s.workspace(t)
	in := bytes.Repeat([]byte("line of input\n"), 10000)
	spec := s.sh(ws, "cat")
	spec.Stdin = in
	r := s.run(t, spec)
	if !bytes.Equal(r.Stdout, in) {
		t.Errorf("cat gave back %d bytes, want the %d fed", len(r.Stdout), len(in))
	}
	r = s.run(t, s.sh(ws, "cat; echo end"))
	if got := string(r.Stdout); got != "end\n" {
		t.Errorf("with nil Stdin, cat printed %q, want an empty input", got)
	}
}

func (s *suite) testEnv(t *testing.T) {
	ws := s.workspace(t)
	for _, c := range []struct {
		env, want []string
	}{
		{[]string{"A=1", "B=two words"}, []string{"A=1", "B=two words", "HOME=/tmp", "PATH=" + sandbox.DefaultPath}},
		{[]string{"HOME=/workspace", "PATH=/bin"}, []string{"HOME=/workspace", "PATH=/bin"}},
		{nil, []string{"HOME=/tmp", "PATH=" + sandbox.DefaultPath}},
	} {
		spec := s.probeSpec(ws, "env")
		spec.Env = c.env
		r := s.run(t, spec)
		got := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Env %q: the command saw %q, want exactly %q (%s)", c.env, got, want, describe(r))
		}
	}
}

func (s *suite) testDir(t *testing.T) {
	ws := s.workspace(t)
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o777); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{"": "/workspace", "sub": "/workspace/sub", "sub/deeper": "/workspace/sub/deeper"} {
		spec := s.sh(ws, "pwd")
		spec.Dir = dir
		r := s.run(t, spec)
		if got := strings.TrimSpace(string(r.Stdout)); got != want {
			t.Errorf("Dir %q: pwd is %q, want %q (%s)", dir, got, want, describe(r))
		}
	}
}

func (s *suite) testWorkspace(t *testing.T) {
	ws := s.workspace(t)
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Read-only by default: the host file is readable, a write fails and
	// lands nowhere.
	r := s.run(t, s.sh(ws, "cat /workspace/in.txt; echo x > /workspace/out.txt && echo WROTE"))
	if !strings.HasPrefix(string(r.Stdout), "from host\n") {
		t.Errorf("the workspace is not readable: %s", describe(r))
	}
	if strings.Contains(string(r.Stdout), "WROTE") || exists(filepath.Join(ws, "out.txt")) {
		t.Errorf("wrote to a read-only workspace: %s", describe(r))
	}
	// Writable when asked, and the write lands on the host.
	spec := s.sh(ws, "echo x > /workspace/out.txt && mkdir -p /workspace/d/e && echo y > /workspace/d/e/f")
	spec.WorkspaceWritable = true
	r = s.run(t, spec)
	if b, err := os.ReadFile(filepath.Join(ws, "d", "e", "f")); err != nil || string(b) != "y\n" || !exists(filepath.Join(ws, "out.txt")) {
		t.Errorf("writes to a writable workspace did not land (%v): %s", err, describe(r))
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (s *suite) testTmp(t *testing.T) {
	ws := s.workspace(t)
	hostFile, err := os.CreateTemp("", "airlock-host-tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	hostFile.Close()
	t.Cleanup(func() { os.Remove(hostFile.Name()) })
	name := filepath.Base(hostFile.Name())
	tok := token(t)
	r := s.run(t, s.sh(ws, "echo hello > /tmp/"+tok+" && cat /tmp/"+tok+" && ls -a /tmp"))
	if !strings.HasPrefix(string(r.Stdout), "hello\n") {
		t.Errorf("/tmp is not writable: %s", describe(r))
	}
	if strings.Contains(string(r.Stdout), name) {
		t.Errorf("the sandbox's /tmp shows the host's %s: %s", hostFile.Name(), describe(r))
	}
	if exists(filepath.Join(os.TempDir(), tok)) {
		os.Remove(filepath.Join(os.TempDir(), tok))
		t.Errorf("a file written to the sandbox's /tmp landed in the host's %s", os.TempDir())
	}
	r = s.run(t, s.sh(ws, "cat /tmp/"+tok))
	if r.ExitCode == 0 {
		t.Errorf("/tmp is shared between runs: %s", describe(r))
	}
}

// testDescriptors: the command holds its three streams and nothing the
// backend or the test process had open (a leaked pipe could let it forge
// its result, a leaked directory could let it out of its root).
func (s *suite) testDescriptors(t *testing.T) {
	// An open descriptor without close-on-exec in the test process: a
	// backend that lets it through hands it to the command.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_SETFD, 0); e != 0 {
		t.Fatal(e)
	}
	r := s.run(t, s.sh(s.workspace(t), "ls /proc/self/fd"))
	// 3 is the directory ls itself opened.
	if got := strings.Fields(string(r.Stdout)); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Errorf("the command's descriptors are %q, want 0, 1, 2 (and ls's own 3): %s", got, describe(r))
	}
}

func (s *suite) testEnforced(t *testing.T) {
	r := s.run(t, s.sh(s.workspace(t), "true"))
	if len(r.Enforced) == 0 {
		t.Fatal("Result.Enforced is empty")
	}
	for _, l := range s.opts.Layers {
		if !r.Has(l) {
			t.Errorf("layer %q missing from Enforced %q", l, r.Enforced)
		}
	}
	if len(r.Degraded) != 0 {
		t.Errorf("Degraded %q without AllowDegraded", r.Degraded)
	}
}

func (s *suite) testUnavailable(t *testing.T) {
	if s.opts.Unavailable == nil {
		t.Fatal("Options.Unavailable is not set: give the suite a sandbox that cannot apply a layer, so that it can check the refusal")
	}
	sb, layer := s.opts.Unavailable(t)
	ws := s.workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	spec := s.sh(ws, "echo ran")
	_, err := sb.Run(ctx, spec)
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("without AllowDegraded: got error %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), string(layer)) {
		t.Errorf("the refusal %q does not name the layer %q", err, layer)
	}
	spec.AllowDegraded = true
	r := s.runIn(t, sb, spec)
	if string(r.Stdout) != "ran\n" {
		t.Errorf("with AllowDegraded the command did not run: %s", describe(r))
	}
	if !slices.Contains(r.Degraded, layer) || r.Has(layer) {
		t.Errorf("with AllowDegraded: Degraded %q, Enforced %q; want %q in Degraded only", r.Degraded, r.Enforced, layer)
	}
}

func (s *suite) testInvalidSpec(t *testing.T) {
	ws := s.workspace(t)
	sb := s.newSandbox(t)
	for _, c := range []struct {
		name string
		spec sandbox.Spec
	}{
		{"no argv", sandbox.Spec{Workspace: ws}},
		{"empty argv[0]", sandbox.Spec{Argv: []string{""}, Workspace: ws}},
		{"NUL in argv", sandbox.Spec{Argv: []string{"echo", "a\x00b"}, Workspace: ws}},
		{"NUL in env", sandbox.Spec{Argv: []string{"true"}, Env: []string{"A=\x00"}, Workspace: ws}},
		{"huge argv", sandbox.Spec{Argv: []string{"echo", strings.Repeat("a", sandbox.MaxArgvBytes)}, Workspace: ws}},
		{"huge stdin", sandbox.Spec{Argv: []string{"cat"}, Stdin: make([]byte, sandbox.MaxStdin+1), Workspace: ws}},
		{"network", sandbox.Spec{Argv: []string{"true"}, Network: "host", Workspace: ws}},
		{"negative wall", sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Wall: -time.Second}, Workspace: ws}},
		{"wall too long", sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Wall: sandbox.MaxWall + 1}, Workspace: ws}},
		{"memory too big", sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Memory: sandbox.MaxMemory + 1}, Workspace: ws}},
		{"pids too many", sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Pids: sandbox.MaxPids + 1}, Workspace: ws}},
		{"output too big", sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Output: sandbox.MaxOutput + 1}, Workspace: ws}},
		{"dir escapes", sandbox.Spec{Argv: []string{"true"}, Dir: "../..", Workspace: ws}},
		{"dir absolute", sandbox.Spec{Argv: []string{"true"}, Dir: "/etc", Workspace: ws}},
		{"relative workspace", sandbox.Spec{Argv: []string{"true"}, Workspace: "relative/dir"}},
		{"relative read-only path", sandbox.Spec{Argv: []string{"true"}, ReadOnlyPaths: []string{"usr"}, Workspace: ws}},
		{"overlay on a read-only workspace", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Overlay: &sandbox.Overlay{Upper: ws + "/.airlock/u", Work: ws + "/.airlock/w"}}},
		{"overlay upper in sight", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, WorkspaceWritable: true, Overlay: &sandbox.Overlay{Upper: ws + "/u", Work: ws + "/.airlock/w"}}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		_, err := sb.Run(ctx, c.spec)
		cancel()
		if !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: got error %v, want ErrInvalidSpec", c.name, err)
		}
	}
}

// --- escapes: network ---

// echoServer answers each line with the same line, and counts connections.
func echoServer(t *testing.T, network, addr string) (net.Listener, *sync.WaitGroup) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listening on %s %s: %v", network, addr, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					io.WriteString(c, line)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln, &wg
}

func (s *suite) testTCP(t *testing.T) {
	ln, _ := echoServer(t, "tcp", "127.0.0.1:0")
	tok := token(t)
	addr := ln.Addr().String()
	s.mustReachOnHost(t, nil, "tcp", addr, tok)
	ws := s.workspace(t)
	s.mustNotReach(t, s.probeSpec(ws, "tcp", addr, tok))
	// The same through the shell's own tools, where they exist.
	_, port, _ := net.SplitHostPort(addr)
	r := s.run(t, s.sh(ws, "echo "+tok+" > /dev/tcp/127.0.0.1/"+port+" && echo REACHED; command -v nc >/dev/null && echo "+tok+" | nc -w 2 127.0.0.1 "+port+" && echo REACHED; exit 0"))
	if strings.Contains(string(r.Stdout), "REACHED") {
		t.Errorf("the shell reached the host's TCP server: %s", describe(r))
	}
}

func (s *suite) testUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	tok := token(t)
	addr := pc.LocalAddr().String()
	s.mustReachOnHost(t, nil, "udp", addr, tok)
	if !waitFor(got, tok, 5*time.Second) {
		t.Fatal("control: the host's UDP listener did not receive the probe's datagram")
	}
	tok2 := token(t)
	r := s.run(t, s.probeSpec(s.workspace(t), "udp", addr, tok2))
	if waitFor(got, tok2, 2*time.Second) {
		t.Fatalf("escape: a datagram from the sandbox reached the host's 127.0.0.1: %s", describe(r))
	}
}

func waitFor(ch chan string, want string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case s := <-ch:
			if s == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func (s *suite) testUnix(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	path := filepath.Join(dir, "host.sock")
	echoServer(t, "unix", path)
	os.Chmod(path, 0o777)
	abstract := "@" + token(t)
	echoServer(t, "unix", abstract)
	tok := token(t)
	ws := s.workspace(t)
	for _, addr := range []string{path, abstract} {
		s.mustReachOnHost(t, nil, "unix", addr, tok)
		s.mustNotReach(t, s.probeSpec(ws, "unix", addr, tok))
	}
}

func (s *suite) testRaw(t *testing.T) {
	requireRoot(t, "the raw-socket control")
	s.mustReachOnHost(t, nil, "raw")
	s.mustNotReach(t, s.probeSpec(s.workspace(t), "raw"))
}

// --- escapes: files ---

func (s *suite) testReadSecret(t *testing.T) {
	requireRoot(t, "the /etc/shadow control")
	dir := t.TempDir()
	secret := token(t)
	path := filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	ws := s.workspace(t)
	for _, p := range []string{path, dir, "/etc/shadow", "/root"} {
		out, ok := s.host(t, nil, "read", p)
		if !ok {
			if p == "/etc/shadow" && os.IsNotExist(statErr(p)) {
				t.Logf("the host has no %s: nothing to leak", p)
				continue
			}
			t.Fatalf("control: the host cannot read %s: %s", p, out)
		}
		r := s.run(t, s.probeSpec(ws, "read", p))
		if r.ExitCode == 0 {
			// A path may exist inside (an empty /root, a filtered /etc);
			// it must not show the host's content.
			hostLines := strings.Split(strings.TrimSpace(out), "\n")[1:]
			for _, l := range hostLines {
				if l != "" && strings.Contains(string(r.Stdout), l) {
					t.Errorf("escape: the sandbox read the host's %s (%q): %s", p, l, describe(r))
					break
				}
			}
		}
		if strings.Contains(string(r.Stdout), secret) {
			t.Errorf("escape: the secret in %s is readable in the sandbox", p)
		}
	}
	// And through the shell.
	r := s.run(t, s.sh(ws, "cat "+path+" /etc/shadow /etc/gshadow; ls -a /root; exit 0"))
	if strings.Contains(string(r.Stdout), secret) || strings.Contains(string(r.Stdout), "root:") {
		t.Errorf("escape: the shell read a host secret: %s", describe(r))
	}
}

func statErr(p string) error {
	_, err := os.Stat(p)
	return err
}

func (s *suite) testWriteOutside(t *testing.T) {
	hostDir := t.TempDir()
	os.Chmod(hostDir, 0o777)
	tok := token(t)
	targets := []string{
		"/etc/" + tok,
		"/usr/" + tok,
		"/" + tok,
		filepath.Join(os.TempDir(), tok),
		filepath.Join(hostDir, tok),
	}
	t.Cleanup(func() {
		for _, p := range targets {
			os.Remove(p)
		}
	})
	ws := s.workspace(t)
	var script strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&script, "echo %s > %s; ", tok, p)
	}
	// The control: the same script writes to the workspace.
	script.WriteString("echo " + tok + " > /workspace/control")
	spec := s.sh(ws, script.String())
	spec.WorkspaceWritable = true
	r := s.run(t, spec)
	if b, err := os.ReadFile(filepath.Join(ws, "control")); err != nil || !strings.Contains(string(b), tok) {
		t.Fatalf("control: the script could not write even to the writable workspace: %s", describe(r))
	}
	for _, p := range targets {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), tok) {
			t.Errorf("escape: the sandbox wrote the host's %s", p)
		}
	}
}

// --- escapes: syscalls and privileges ---

func (s *suite) testSyscalls(t *testing.T) {
	requireRoot(t, "the syscall controls")
	ws := s.workspace(t)
	if err := os.Mkdir(filepath.Join(ws, "mnt"), 0o777); err != nil {
		t.Fatal(err)
	}
	mountDir := t.TempDir()
	for _, name := range []string{"ptrace", "mount", "unshare", "setns", "kexec_load", "bpf"} {
		t.Run(name, func(t *testing.T) {
			args := []string{"sys", name}
			var attr *syscall.SysProcAttr
			if name == "mount" {
				// A mount on the host itself would change the host: the
				// control mounts in a throwaway user and mount namespace.
				args = append(args, mountDir)
				attr = &syscall.SysProcAttr{
					Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
					UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
					GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
				}
			}
			out, ok := s.host(t, attr, args...)
			if !ok {
				if name == "kexec_load" && strings.Contains(out, "errno=38") {
					t.Logf("this kernel has no kexec_load (ENOSYS), so there is nothing to reach; checking the sandbox refuses it all the same")
				} else {
					t.Fatalf("control: %s does not succeed on the host: %s", name, out)
				}
			}
			if name == "mount" {
				args[2] = sandbox.WorkspaceMount + "/mnt"
			}
			spec := s.probeSpec(ws, args...)
			spec.WorkspaceWritable = true
			s.mustNotReach(t, spec)
		})
	}
}

func (s *suite) testSetuid(t *testing.T) {
	requireRoot(t, "the setuid control")
	// The control: a setuid-root copy does give euid 0 to an unprivileged
	// user on the host.
	dir, err := os.MkdirTemp("", "airlock-suid-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	hostCopy := filepath.Join(dir, "probe")
	copyFile(t, s.probe, hostCopy, 0o755|os.ModeSetuid)
	if err := os.Chown(hostCopy, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostCopy, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostCopy, "ids")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "euid=0 ") {
		t.Fatalf("control: a setuid-root probe run as uid 65534 on the host does not get euid 0 (is %s mounted nosuid?): %v %s", dir, err, out)
	}

	ws := s.workspace(t)
	suid := filepath.Join(ws, "suid-probe")
	copyFile(t, s.probe, suid, 0o755)
	os.Chown(suid, 0, 0)
	if err := os.Chmod(suid, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	plain := s.run(t, s.probeSpec(ws, "ids"))
	r := s.run(t, sandbox.Spec{Argv: []string{"/workspace/suid-probe", "ids"}, Workspace: ws})
	f, g := strings.Fields(string(plain.Stdout)), strings.Fields(string(r.Stdout))
	if len(f) != 3 || len(g) != 3 {
		t.Fatalf("the ids probe did not run: %s / %s", describe(plain), describe(r))
	}
	if f[0] != g[0] {
		t.Errorf("escape: the setuid probe changed euid in the sandbox: %s, without setuid %s", g[0], f[0])
	}
	for _, v := range [][]string{f, g} {
		if v[2] != "capeff=0000000000000000" {
			t.Errorf("the command holds capabilities: %s", v[2])
		}
	}
}

// testProcSys: /proc/sys is not writable. The kernel gives the owner's
// write bits on sysctls to any process whose uid is the host's root, in a
// user namespace or not; the witness written is the host name, which a
// UTS namespace keeps harmless, standing for the global ones.
func (s *suite) testProcSys(t *testing.T) {
	tok := token(t) // 30 bytes, within the 64 of a host name
	// Control: in a throwaway user and UTS namespace the write works.
	s.mustReachOnHost(t, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWUTS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}, "sysctl", tok)
	s.mustNotReach(t, s.probeSpec(s.workspace(t), "sysctl", tok))
}

// testTerminal: TIOCSTI, which types into a terminal as if its user
// did, and TIOCLINUX, a virtual console's controls, are refused with the
// filter's EPERM, also with the high half of the request number set (the
// kernel drops it, a 64-bit comparison does not). The probe makes the
// terminal its controlling one, where the kernel itself would let the
// push through (see the probe's tty); on the host it does.
func (s *suite) testTerminal(t *testing.T) {
	tok := token(t)
	s.mustReachOnHost(t, nil, "tty", tok)
	r := s.mustNotReach(t, s.probeSpec(s.workspace(t), "tty", tok))
	for _, req := range []string{"TIOCSTI", "TIOCSTI|1<<32", "TIOCLINUX"} {
		if !hasLine(r.Stdout, req+" errno=1 (") {
			t.Errorf("ioctl %s: want EPERM from the seccomp filter: %s", req, describe(r))
		}
	}
}

// --- escapes: host processes and environment ---

func (s *suite) testHostProcess(t *testing.T) {
	tok := token(t)
	victim := exec.Command(s.probe, "marker", tok)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- victim.Wait() }()
	t.Cleanup(func() { victim.Process.Kill(); <-done })
	pid := strconv.Itoa(victim.Process.Pid)
	// Control: from the host the probe finds the process and may signal it
	// (signal 0: nothing is sent).
	s.mustReachOnHost(t, nil, "pids", tok, pid, "0")
	r := s.mustNotReach(t, s.probeSpec(s.workspace(t), "pids", tok, pid, "1"))
	if strings.Contains(string(r.Stdout), "found pid") {
		t.Errorf("escape: the sandbox sees the host process: %s", describe(r))
	}
	select {
	case err := <-done:
		t.Fatalf("escape: the host process died while the sandbox ran: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

func (s *suite) testHostEnv(t *testing.T) {
	tok := token(t)
	t.Setenv("AIRLOCK_SUITE_SECRET", tok)
	s.mustReachOnHost(t, nil, "env", tok)
	ws := s.workspace(t)
	s.mustNotReach(t, s.probeSpec(ws, "env", tok))
	r := s.run(t, s.sh(ws, "env; cat /proc/1/environ; cat /proc/self/environ; exit 0"))
	if strings.Contains(string(r.Stdout)+string(r.Stderr), tok) {
		t.Errorf("escape: the host environment shows in the sandbox: %s", describe(r))
	}
}

func (s *suite) testMasked(t *testing.T) {
	ws := s.workspace(t)
	secret := token(t)
	masked := filepath.Join(ws, ".airlock", "x")
	if err := os.WriteFile(masked, []byte(secret), 0o666); err != nil {
		t.Fatal(err)
	}
	// Control: the same file elsewhere in the workspace is readable.
	if err := os.WriteFile(filepath.Join(ws, "x"), []byte(secret), 0o666); err != nil {
		t.Fatal(err)
	}
	spec := s.sh(ws, "cat /workspace/x; echo; cat /workspace/.airlock/x; ls -a /workspace/.airlock; echo pwned > /workspace/.airlock/x; echo pwned > /workspace/.airlock/y; mkdir /workspace/.airlock/z; exit 0")
	spec.WorkspaceWritable = true
	r := s.run(t, spec)
	if got := strings.Count(string(r.Stdout), secret); got != 1 {
		t.Errorf("the secret shows %d times, want once (from /workspace/x, the control): %s", got, describe(r))
	}
	if b, _ := os.ReadFile(masked); string(b) != secret {
		t.Errorf("escape: the sandbox overwrote .airlock/x: %q", b)
	}
	for _, p := range []string{"y", "z"} {
		if exists(filepath.Join(ws, ".airlock", p)) {
			t.Errorf("escape: a write through the sandbox landed in .airlock/%s", p)
		}
	}
	// The masking must hold even when the sandbox replaces the masked dir.
	r = s.run(t, func() sandbox.Spec {
		sp := s.sh(ws, "mv /workspace/.airlock /workspace/gone; rm -rf /workspace/.airlock; ls /workspace/gone; exit 0")
		sp.WorkspaceWritable = true
		return sp
	}())
	if b, _ := os.ReadFile(masked); string(b) != secret {
		t.Errorf("escape: .airlock was moved or removed through the sandbox (%s)", describe(r))
	}
}

// testReadOnlyDirs: in a writable workspace, the repository's own files
// (.git: hooks and config that run code on the host) can be read but not
// changed, moved or removed; the rest of the workspace stays writable.
func (s *suite) testReadOnlyDirs(t *testing.T) {
	ws := s.workspace(t)
	hooks := filepath.Join(ws, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o777); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(ws, ".git", "config")
	if err := os.WriteFile(config, []byte("[core]\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, ".git"), 0o777)
	os.Chmod(hooks, 0o777)
	os.Chmod(config, 0o666)
	spec := s.sh(ws, "cat /workspace/.git/config; echo 'echo pwned' > /workspace/.git/hooks/pre-commit; echo '[core] fsmonitor = x' >> /workspace/.git/config; "+
		"mv /workspace/.git /workspace/moved; rm -rf /workspace/.git; echo ok > /workspace/control; exit 0")
	spec.WorkspaceWritable = true
	r := s.run(t, spec)
	if !strings.Contains(string(r.Stdout), "[core]") {
		t.Errorf(".git must stay readable: %s", describe(r))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "control")); err != nil || string(b) != "ok\n" {
		t.Fatalf("the control write into the workspace failed (%v): %s", err, describe(r))
	}
	if exists(filepath.Join(hooks, "pre-commit")) {
		t.Errorf("escape: a hook was written into .git through the sandbox")
	}
	if b, _ := os.ReadFile(config); string(b) != "[core]\n" {
		t.Errorf("escape: .git/config was changed through the sandbox: %q", b)
	}
	if exists(filepath.Join(ws, "moved")) || !exists(config) {
		t.Errorf("escape: .git was moved or removed through the sandbox")
	}
}

// --- limits ---

func (s *suite) testForkBomb(t *testing.T) {
	spec := s.sh(s.workspace(t), "b() { b | b & }; b; sleep 60")
	spec.Limits = sandbox.Limits{Pids: 32, Wall: 10 * time.Second}
	start := time.Now()
	r := s.run(t, spec)
	if d := time.Since(start); d > spec.Limits.Wall+slack {
		t.Errorf("the fork bomb ran %v, past Wall %v", d, spec.Limits.Wall)
	}
	switch {
	case r.Killed == sandbox.KilledPids:
	case r.Killed == sandbox.KilledWall && r.TimedOut:
	default:
		t.Errorf("fork bomb: want Killed pids (or wall with TimedOut): %s", describe(r))
	}
}

func (s *suite) testPids(t *testing.T) {
	ws := s.workspace(t)
	// Control: under the limit nothing is killed.
	spec := s.sh(ws, "i=0; while [ $i -lt 5 ]; do sleep 1 & i=$((i+1)); done; wait; echo done")
	spec.Limits.Pids = 32
	if r := s.run(t, spec); r.Killed != sandbox.KilledNone || string(r.Stdout) != "done\n" {
		t.Fatalf("control: 5 processes under a limit of 32: %s", describe(r))
	}
	spec = s.sh(ws, "i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); done; echo done")
	spec.Limits = sandbox.Limits{Pids: 16, Wall: 20 * time.Second}
	r := s.run(t, spec)
	if r.Killed != sandbox.KilledPids {
		t.Errorf("100 processes under a limit of 16: want Killed pids: %s", describe(r))
	}
}

// pidsPeakLimit is the Limits.Pids of testPidsPeak: small, so the bomb
// reaches it at once, and large enough that an allowance of a few tasks
// for a backend's own processes shows above it.
const pidsPeakLimit = 24

// pidsSampleEvery is how often testPidsPeak counts the tree.
const pidsSampleEvery = 5 * time.Millisecond

// testPidsPeak: a fork bomb whose every child holds on never has more
// than Limits.Pids processes and threads at once, counting the command's
// own, as counted from the host: every task whose environment holds the
// run's token, which only the command's tree inherits. The run still ends
// by its limits, and nothing of the tree is left behind.
func (s *suite) testPidsPeak(t *testing.T) {
	tok := token(t)
	spec := s.sh(s.workspace(t), "b() { sleep 60 & b & wait; }; b")
	spec.Env = []string{"AIRLOCK_SUITE_PIDS=" + tok}
	spec.Limits = sandbox.Limits{Pids: pidsPeakLimit, Wall: 8 * time.Second}
	stop := make(chan struct{})
	peak := make(chan int, 1)
	go func() {
		most := 0
		for {
			most = max(most, len(hostTasksWithEnv(tok)))
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(pidsSampleEvery):
			}
		}
	}()
	start := time.Now()
	r := s.run(t, spec)
	d := time.Since(start)
	close(stop)
	most := <-peak
	t.Logf("peak: %d tasks at once under Limits.Pids %d (%s)", most, pidsPeakLimit, describe(r))
	if most > pidsPeakLimit {
		t.Errorf("escape: %d processes and threads of the command's tree ran at once, past Limits.Pids %d", most, pidsPeakLimit)
	}
	// Control: the count does see the tree, so a peak within the limit
	// means something.
	if most < pidsPeakLimit/2 {
		t.Errorf("control: the host saw at most %d tasks of the fork bomb at once, under half the limit %d: is the count blind?", most, pidsPeakLimit)
	}
	if d > spec.Limits.Wall+slack {
		t.Errorf("the fork bomb ran %v, past Wall %v", d, spec.Limits.Wall)
	}
	if r.Killed != sandbox.KilledPids && r.Killed != sandbox.KilledWall {
		t.Errorf("want Killed pids or wall: %s", describe(r))
	}
	if left := untilGone(func() []string { return hostTasksWithEnv(tok) }); len(left) > 0 {
		t.Fatalf("escape: %d tasks of the fork bomb outlived the run: %v", len(left), left)
	}
}

// reapWait is how long the suite gives the kernel to reap a killed tree.
const reapWait = 5 * time.Second

// untilGone calls left until it finds nothing or reapWait has passed, and
// returns what it found last.
func untilGone[T any](left func() []T) []T {
	deadline := time.Now().Add(reapWait)
	for {
		l := left()
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostTasksWithEnv lists the host's tasks (threads included, as
// "pid/tid") of the processes whose environment holds tok.
func hostTasksWithEnv(tok string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(b, []byte(tok)) {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + e.Name() + "/task")
		if err != nil {
			continue // gone meanwhile
		}
		for _, task := range tasks {
			out = append(out, e.Name()+"/"+task.Name())
		}
	}
	return out
}

func (s *suite) testMemory(t *testing.T) {
	ws := s.workspace(t)
	// Control: an allocation well under the limit succeeds.
	spec := s.probeSpec(ws, "mem", "16")
	spec.Limits.Memory = 256 << 20
	if r := s.run(t, spec); r.ExitCode != 0 || r.Killed != sandbox.KilledNone {
		t.Fatalf("control: 16 MiB under a 256 MiB limit: %s", describe(r))
	}
	spec = s.probeSpec(ws, "mem", "1024")
	spec.Limits.Memory = 64 << 20
	r := s.run(t, spec)
	if r.ExitCode == 0 || r.Killed != sandbox.KilledOOM {
		t.Errorf("1 GiB under a 64 MiB limit: want Killed oom: %s", describe(r))
	}
	if r.Usage.MemPeak > 0 && r.Usage.MemPeak > 2*spec.Limits.Memory {
		t.Errorf("MemPeak %d is far over the limit %d", r.Usage.MemPeak, spec.Limits.Memory)
	}
}

func (s *suite) testCPU(t *testing.T) {
	ws := s.workspace(t)
	spec := s.sh(ws, "i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; echo done")
	if r := s.run(t, spec); r.Killed != sandbox.KilledNone || string(r.Stdout) != "done\n" {
		t.Fatalf("control: a short loop: %s", describe(r))
	}
	// The second loop ignores SIGXCPU, the soft limit's warning: it must
	// die all the same.
	for _, script := range []string{"while :; do :; done", "trap '' XCPU; while :; do :; done"} {
		spec = s.sh(ws, script)
		spec.Limits = sandbox.Limits{CPU: time.Second, Wall: 60 * time.Second}
		r := s.run(t, spec)
		if r.Killed != sandbox.KilledCPU || r.TimedOut || r.ExitCode == 0 {
			t.Errorf("%q past 1s of CPU: want Killed cpu and not TimedOut: %s", script, describe(r))
		}
		// Half the limit: the kernel's rusage is coarser than its CPU clock.
		if cpu := r.Usage.UserCPU + r.Usage.SystemCPU; cpu != 0 && cpu < 500*time.Millisecond {
			t.Errorf("%q killed for CPU after only %v of CPU", script, cpu)
		}
	}
}

func (s *suite) testWall(t *testing.T) {
	ws := s.workspace(t)
	tok := token(t)
	spec := s.sh(ws, "/workspace/probe daemon "+tok+"; sleep 600")
	spec.Limits.Wall = 5 * time.Second
	seen := make(chan bool, 1)
	stop := make(chan struct{})
	go func() {
		// While the command runs, the marker must be visible from the
		// host: this proves the check afterwards can see it.
		for {
			if len(hostProcsWith(tok)) > 0 {
				seen <- true
				return
			}
			select {
			case <-stop:
				seen <- false
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	r := s.run(t, spec)
	d := time.Since(start)
	close(stop)
	if !<-seen {
		t.Fatalf("control: the marker never showed in the host's /proc while the command ran: %s", describe(r))
	}
	if !r.TimedOut || r.Killed != sandbox.KilledWall {
		t.Errorf("want TimedOut and Killed wall: %s", describe(r))
	}
	if d > spec.Limits.Wall+slack {
		t.Errorf("Run took %v for a Wall of %v", d, spec.Limits.Wall)
	}
	// Give the kernel a moment to reap, then nothing of the tree may remain.
	if left := untilGone(func() []int { return hostProcsWith(tok) }); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("escape: the double-forked grandchild survived the wall limit on the host: pids %v", left)
	}
	// ctx ending is the same as the wall limit.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := s.newSandbox(t).Run(ctx, s.sh(ws, "sleep 600"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.Killed != sandbox.KilledWall {
		t.Errorf("ctx done: want TimedOut and Killed wall: %s", describe(r))
	}
}

// hostProcsWith lists the host pids whose argv holds tok (but not the
// suite's own shell scripts, which name it too).
func hostProcsWith(tok string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("marker\x00"+tok)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (s *suite) testOutputFlood(t *testing.T) {
	ws := s.workspace(t)
	for _, c := range []struct {
		name, script string
		stream       func(r sandbox.Result) []byte
	}{
		{"stdout", "yes flood", func(r sandbox.Result) []byte { return r.Stdout }},
		{"stderr", "yes flood >&2", func(r sandbox.Result) []byte { return r.Stderr }},
	} {
		spec := s.sh(ws, c.script)
		spec.Limits = sandbox.Limits{Output: 64 << 10, Wall: 60 * time.Second}
		start := time.Now()
		r := s.run(t, spec)
		got := c.stream(r)
		if !r.Truncated || r.Killed != sandbox.KilledOutput || r.TimedOut {
			t.Errorf("%s flood: want Truncated and Killed output: %s", c.name, describe(r))
		}
		if int64(len(got)) != spec.Limits.Output {
			t.Errorf("%s flood: kept %d bytes, want exactly Limits.Output (%d)", c.name, len(got), spec.Limits.Output)
		}
		if d := time.Since(start); d > slack {
			t.Errorf("%s flood: ended after %v; the tree should die at the cap", c.name, d)
		}
	}
}
