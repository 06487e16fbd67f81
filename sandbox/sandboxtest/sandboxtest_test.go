package sandboxtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// leaky is a "backend" that isolates nothing: it runs the probe straight
// on the host, with the host's environment. The suite must catch it.
// It runs only the probe, and refuses what could harm the host (limits,
// shell scripts, mounts, and the sysctl probe, which would rename the
// host), which the suite then reports as failures too.
type leaky struct{}

func (leaky) Name() string { return "leaky" }

func (leaky) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if err := spec.Check(); err != nil {
		return sandbox.Result{}, err
	}
	probe := sandbox.WorkspaceMount + "/probe"
	if spec.Limits != (sandbox.Limits{}) || spec.Argv[0] != probe || slicesContains(spec.Argv, "mount") || slicesContains(spec.Argv, "sysctl") || spec.Workspace == "" {
		return sandbox.Result{}, errors.New("leaky: refused")
	}
	var argv []string
	for _, a := range spec.Argv {
		argv = append(argv, strings.ReplaceAll(a, sandbox.WorkspaceMount, spec.Workspace))
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, bytes.NewReader(spec.Stdin)
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return sandbox.Result{}, err
	}
	return sandbox.Result{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Enforced: []sandbox.Layer{"none"}}, nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

const leakyEnv = "AIRLOCK_SANDBOXTEST_LEAKY"

// TestLeakyHelper runs the suite against leaky; TestSuiteCatchesLeaks
// starts it in a child process and reads which tests failed. On its own
// it does nothing.
func TestLeakyHelper(t *testing.T) {
	if os.Getenv(leakyEnv) != "1" {
		return
	}
	sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return leaky{} }, &sandboxtest.Options{Timeout: time.Minute})
}

// TestSuiteCatchesLeaks proves the escape tests are not vacuous: against a
// backend that isolates nothing, each of them fails, and for the escape,
// not for a broken probe.
func TestSuiteCatchesLeaks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the suite's controls need root: run the tests as root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakyHelper$", "-test.v")
	cmd.Env = append(os.Environ(), leakyEnv+"=1")
	out, _ := cmd.CombinedOutput()
	for _, name := range []string{"TCP", "UDP", "UnixSocket", "RawSocket", "ReadSecret", "Syscalls/ptrace", "Syscalls/unshare", "Syscalls/setns", "Syscalls/bpf", "Setuid", "HostProcess", "HostEnv"} {
		re := regexp.MustCompile(`(?m)^\s*--- FAIL: TestLeakyHelper/Escape/` + regexp.QuoteMeta(name) + ` `)
		if !re.Match(out) {
			t.Errorf("the suite did not catch the leaky backend in Escape/%s", name)
		}
	}
	if !regexp.MustCompile(`escape: .*succeeded in the sandbox|escape: the secret|escape: the sandbox read|escape: the setuid|the command holds capabilities`).Match(out) {
		t.Errorf("no failure says it is an escape:\n%s", out)
	}
	if t.Failed() {
		t.Logf("the suite's output against the leaky backend:\n%s", out)
	}
}

func TestSpecCheck(t *testing.T) {
	ok := sandbox.Spec{Argv: []string{"true"}, Workspace: "/w", Dir: "a/b", ReadOnlyPaths: []string{"/opt/x"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("a good Spec: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(s *sandbox.Spec)
	}{
		{"no argv", func(s *sandbox.Spec) { s.Argv = nil }},
		{"dir up", func(s *sandbox.Spec) { s.Dir = "../x" }},
		{"dir abs", func(s *sandbox.Spec) { s.Dir = "/x" }},
		{"ws relative", func(s *sandbox.Spec) { s.Workspace = "w" }},
		{"ro root", func(s *sandbox.Spec) { s.ReadOnlyPaths = []string{"/"} }},
		{"ro unclean", func(s *sandbox.Spec) { s.ReadOnlyPaths = []string{"/opt/../etc"} }},
		{"cpu", func(s *sandbox.Spec) { s.Limits.CPU = sandbox.MaxCPU + 1 }},
		{"files", func(s *sandbox.Spec) { s.Limits.OpenFiles = -1 }},
		{"fsize", func(s *sandbox.Spec) { s.Limits.FileSize = sandbox.MaxFileSize + 1 }},
	} {
		s := ok
		s.Limits = sandbox.Limits{}
		c.mod(&s)
		err := s.Check()
		var e *sandbox.Error
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !errors.As(err, &e) || e.Code != sandbox.CodeInvalidSpec || e.Hint == "" {
			t.Errorf("%s: got %v, want an invalid_spec Error with a hint", c.name, err)
		}
	}
	u := sandbox.Unavailable(sandbox.LayerLandlock, "m", "h")
	if !errors.Is(u, sandbox.ErrUnavailable) || errors.Is(u, sandbox.ErrInvalidSpec) || !strings.Contains(u.Error(), "landlock") {
		t.Errorf("Unavailable: %v", u)
	}
	if got := (sandbox.Limits{}).WithDefaults(); got.Wall != sandbox.DefaultWall || got.Pids != sandbox.DefaultPids || got.Output != sandbox.DefaultOutput || got.Memory != sandbox.DefaultMemory {
		t.Errorf("WithDefaults: %+v", got)
	}
}

// FuzzSpecCheck: Check never panics, and what it accepts is within every
// bound.
func FuzzSpecCheck(f *testing.F) {
	f.Add("sh", "-c", "A=1", "sub", "/w", "/opt", int64(0), int64(0), 0, []byte("in"))
	f.Add("", "\x00", "", "../..", "w", "/", int64(-1), int64(1<<40), -5, []byte(nil))
	f.Fuzz(func(t *testing.T, a0, a1, env, dir, ws, ro string, wall, mem int64, pids int, stdin []byte) {
		s := sandbox.Spec{Argv: []string{a0, a1}, Env: []string{env}, Dir: dir, Workspace: ws, ReadOnlyPaths: []string{ro}, Stdin: stdin,
			Limits: sandbox.Limits{Wall: time.Duration(wall), Memory: mem, Pids: pids}}
		if err := s.Check(); err != nil {
			if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Fatalf("Check gave %v, not ErrInvalidSpec", err)
			}
			return
		}
		l := s.Limits.WithDefaults()
		if l.Wall <= 0 || l.Wall > sandbox.MaxWall || l.Memory <= 0 || l.Memory > sandbox.MaxMemory || l.Pids <= 0 || l.Pids > sandbox.MaxPids {
			t.Fatalf("accepted out-of-range limits %+v", l)
		}
		if strings.Contains(dir, "..") && dir != "" && !strings.Contains(dir, "...") {
			for _, part := range strings.Split(dir, "/") {
				if part == ".." {
					t.Fatalf("accepted Dir %q", dir)
				}
			}
		}
	})
}
