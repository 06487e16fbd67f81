package bwrap_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

func run(t *testing.T, sb *bwrap.Sandbox, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := sb.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Argv, err)
	}
	return r
}

func sh(script string) sandbox.Spec {
	return sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}}
}

func TestMissingBinary(t *testing.T) {
	sb := bwrap.New(&bwrap.Options{Path: "/nonexistent/bwrap"})
	for _, err := range []error{sb.Available(), func() error { _, err := sb.Run(context.Background(), sh("true")); return err }()} {
		var se *sandbox.Error
		if !errors.As(err, &se) || se.Code != sandbox.CodeUnavailable || !strings.Contains(se.Hint, "apt-get install bubblewrap") {
			t.Errorf("got %v, want ErrUnavailable saying apt-get install bubblewrap", err)
		}
	}
}

func TestName(t *testing.T) {
	if got := bwrap.New(nil).Name(); got != "bwrap" {
		t.Errorf("Name() = %q", got)
	}
}

func TestCommandNotFound(t *testing.T) {
	requireBwrap(t)
	r := run(t, bwrap.New(nil), sandbox.Spec{Argv: []string{"no-such-command-here"}})
	if r.ExitCode != 127 || r.Killed != sandbox.KilledNone {
		t.Errorf("exit %d killed %q stderr %q, want 127 like a shell", r.ExitCode, r.Killed, r.Stderr)
	}
}

func TestInvalid(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]sandbox.Spec{
		"env without =":          {Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		"env empty key":          {Argv: []string{"true"}, Env: []string{"=v"}},
		"argv0 with =":           {Argv: []string{"A=b"}},
		"dir is a file":          {Argv: []string{"true"}, Workspace: ws, Dir: "file"},
		"dir missing":            {Argv: []string{"true"}, Workspace: ws, Dir: "nope"},
		"dir without workspace":  {Argv: []string{"true"}, Dir: "sub"},
		"workspace missing":      {Argv: []string{"true"}, Workspace: filepath.Join(ws, "nope")},
		"read-only path missing": {Argv: []string{"true"}, ReadOnlyPaths: []string{filepath.Join(ws, "nope")}},
		"read-only path root":    {Argv: []string{"true"}, ReadOnlyPaths: []string{"/"}},
		"read-only path unclean": {Argv: []string{"true"}, ReadOnlyPaths: []string{ws + "/../x"}},
	} {
		_, err := bwrap.New(nil).Run(context.Background(), spec)
		var se *sandbox.Error
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !errors.As(err, &se) || se.Code != sandbox.CodeInvalidSpec || se.Hint == "" {
			t.Errorf("%s: got %v, want an invalid_spec sandbox.Error with a hint", name, err)
		}
	}
	// A .airlock that is a file cannot be masked as a directory.
	ws2 := t.TempDir()
	os.WriteFile(filepath.Join(ws2, ".airlock"), []byte("x"), 0o644)
	if _, err := bwrap.New(nil).Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Workspace: ws2}); !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Errorf(".airlock is a file: got %v, want ErrInvalidSpec", err)
	}
}

func TestContextDoneBeforeStart(t *testing.T) {
	requireBwrap(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := bwrap.New(nil).Run(ctx, sh("true")); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want an error wrapping context.Canceled", err)
	}
}

func TestRlimits(t *testing.T) {
	requireBwrap(t)
	spec := sh("ulimit -n; ulimit -f; ulimit -t; ulimit -c")
	spec.Limits = sandbox.Limits{OpenFiles: 100, FileSize: 1 << 20, CPU: 1500 * time.Millisecond}
	r := run(t, bwrap.New(nil), spec)
	// dash reports the file size in 512-byte blocks; CPU rounds up.
	if got, want := string(r.Stdout), "100\n2048\n2\n0\n"; got != want {
		t.Errorf("ulimits %q, want %q (stderr %q)", got, want, r.Stderr)
	}
	// FileSize holds: a write past it fails.
	spec = sandbox.Spec{Argv: []string{"/bin/sh", "-c", "head -c 200000 /dev/zero > /tmp/big; echo $?; wc -c < /tmp/big"}}
	spec.Limits.FileSize = 100000
	r = run(t, bwrap.New(nil), spec)
	if f := strings.Fields(string(r.Stdout)); len(f) != 2 || f[0] == "0" || f[1] != "100000" {
		t.Errorf("writing 200000 bytes under FileSize 100000: %q %q, want a failure and 100000 bytes kept", r.Stdout, r.Stderr)
	}
}

func TestHiddenPaths(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "public"), []byte("public\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("secret\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "private"), 0o755)
	os.WriteFile(filepath.Join(dir, "private", "key"), []byte("key\n"), 0o644)
	sb := bwrap.New(&bwrap.Options{HiddenPaths: []string{filepath.Join(dir, "secret"), filepath.Join(dir, "private")}})
	spec := sh(fmt.Sprintf("cd %s; cat public secret private/key; ls private; touch private/x; exit 0", dir))
	spec.ReadOnlyPaths = []string{dir}
	r := run(t, sb, spec)
	if got := string(r.Stdout); got != "public\n" {
		t.Errorf("stdout %q, want only the public file (stderr %q)", got, r.Stderr)
	}
}

func TestDefaultHidesShadow(t *testing.T) {
	requireBwrap(t)
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Fatalf("this test needs a host /etc/shadow to hide: %v", err)
	}
	r := run(t, bwrap.New(nil), sh("wc -c < /etc/shadow"))
	if got := strings.TrimSpace(string(r.Stdout)); got != "0" && r.ExitCode == 0 {
		t.Errorf("/etc/shadow shows %s bytes in the sandbox, want it hidden", got)
	}
}

func TestSeccompAndNamespaces(t *testing.T) {
	requireBwrap(t)
	r := run(t, bwrap.New(nil), sh("grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; id -u; hostname; cat /proc/net/dev | wc -l"))
	for _, want := range []string{"Seccomp:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000", "\n65534\n", "\nairlock\n", "\n3\n"} {
		if !strings.Contains("\n"+string(r.Stdout), want) {
			t.Errorf("missing %q in %q (stderr %q)", want, r.Stdout, r.Stderr)
		}
	}
	// The filter refuses what the suite's probe does not try: a new
	// namespace through unshare(1), and a mount.
	r = run(t, bwrap.New(nil), sh("unshare -n true && echo UNSHARED; exit 0"))
	if strings.Contains(string(r.Stdout), "UNSHARED") || !strings.Contains(string(r.Stderr), "Operation not permitted") {
		t.Errorf("unshare -n: stdout %q stderr %q, want it refused with EPERM", r.Stdout, r.Stderr)
	}
}

func TestCgroupsRemoved(t *testing.T) {
	requireBwrap(t)
	parent := fmt.Sprintf("airlock-bwrap-test-%d", os.Getpid())
	sb := bwrap.New(&bwrap.Options{CgroupParent: parent})
	r := run(t, sb, sh("sleep 0.1 & sleep 0.1 & wait"))
	if !r.Has(sandbox.LayerCgroupMem) {
		t.Fatalf("no cgroup layers: Enforced %q", r.Enforced)
	}
	own := ownCgroup(t, "memory")
	dir := filepath.Join(bwrap.DefaultCgroupRoot, "memory", own, parent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the run's parent cgroup %s: %v", dir, err)
	}
	if len(ents) > 0 {
		var left []string
		for _, e := range ents {
			if e.IsDir() {
				left = append(left, e.Name())
			}
		}
		if len(left) > 0 {
			t.Errorf("cgroups left after Run: %v", left)
		}
	}
	for _, c := range []string{"memory", "pids", "cpuacct"} {
		os.Remove(filepath.Join(bwrap.DefaultCgroupRoot, c, ownCgroup(t, c), parent))
	}
}

func ownCgroup(t *testing.T, controller string) string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		p := strings.SplitN(l, ":", 3)
		if len(p) == 3 && strings.Contains(","+p[1]+",", ","+controller+",") {
			return p[2]
		}
	}
	t.Fatalf("no %s cgroup", controller)
	return ""
}

func TestConcurrent(t *testing.T) {
	requireBwrap(t)
	sb := bwrap.New(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sb.Run(context.Background(), sh(fmt.Sprintf("echo %d", i)))
			if err != nil {
				errs <- err
				return
			}
			if got, want := string(r.Stdout), fmt.Sprintf("%d\n", i); got != want {
				errs <- fmt.Errorf("run %d printed %q", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A bwrap that fails while making the sandbox is an error, not a Result:
// the command never ran.
func TestSetupFailure(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	for name, script := range map[string]string{
		// Fails before it has a child.
		"before clone": "echo 'bwrap: cannot make namespaces' >&2; exit 1",
		// Reports a child, then dies before the child reads --block-fd.
		"before block": `echo "{\"child-pid\": $$}" >&3; exec 3>&-; sleep 0.2; echo 'bwrap: mount failed' >&2; exit 1`,
	} {
		fake := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := bwrap.New(&bwrap.Options{Path: fake}).Run(context.Background(), sh("true"))
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "bwrap: ") || !strings.Contains(err.Error(), "could not make the sandbox") {
			t.Errorf("%s: got %v, want ErrUnavailable quoting bwrap", name, err)
		}
	}
}

// A descriptor the test process holds without close-on-exec does not
// reach the command, and keeps its flag in the test process.
func TestInheritedDescriptors(t *testing.T) {
	requireBwrap(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	r := run(t, bwrap.New(nil), sh("ls /proc/self/fd"))
	if got := strings.Fields(string(r.Stdout)); strings.Join(got, " ") != "0 1 2 3" {
		t.Errorf("the command holds descriptors %q, want only 0 1 2 (and ls's 3)", got)
	}
	if flags, err := unix.FcntlInt(fd, unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Errorf("the test's descriptor came back with flags %d (%v), want close-on-exec still off", flags, err)
	}
}

// The command's uid is the caller's outside, root here, and the kernel
// lets host uid 0 write sysctls by file mode alone: /proc/sys must be
// read-only. (A leak here would only drop the host's page cache.)
func TestProcSysReadOnly(t *testing.T) {
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test checks what root's sandbox may write: run it as root")
	}
	r := run(t, bwrap.New(nil), sh("echo 1 > /proc/sys/vm/drop_caches && echo WROTE; echo x > /proc/sys/kernel/hostname && echo WROTE; grep -c ' /proc/sys proc ro' /proc/mounts"))
	if strings.Contains(string(r.Stdout), "WROTE") || !strings.HasSuffix(string(r.Stdout), "1\n") {
		t.Errorf("/proc/sys is writable in the sandbox: %q %q", r.Stdout, r.Stderr)
	}
}

// Every namespace Enforced names is one of the sandbox's own.
func TestNamespacesOwn(t *testing.T) {
	requireBwrap(t)
	names := map[string]sandbox.Layer{"cgroup": sandbox.LayerCgroupNS, "ipc": sandbox.LayerIPCNS, "mnt": sandbox.LayerMountNS,
		"net": sandbox.LayerNetNS, "pid": sandbox.LayerPIDNS, "user": sandbox.LayerUserNS, "uts": sandbox.LayerUTSNS}
	var script strings.Builder
	for ns := range names {
		fmt.Fprintf(&script, "echo %s $(readlink /proc/self/ns/%s);", ns, ns)
	}
	r := run(t, bwrap.New(nil), sh(script.String()))
	for _, line := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("bad line %q in %q (stderr %q)", line, r.Stdout, r.Stderr)
		}
		host, err := os.Readlink("/proc/self/ns/" + f[0])
		if err != nil {
			t.Fatal(err)
		}
		if f[1] == host {
			t.Errorf("the sandbox shares the host's %s namespace", f[0])
		}
		if !r.Has(names[f[0]]) {
			t.Errorf("Enforced %q lacks %s", r.Enforced, names[f[0]])
		}
	}
	if n := strings.Count(string(r.Stdout), "\n"); n != len(names) {
		t.Errorf("%d namespaces read, want %d", n, len(names))
	}
}

// BenchmarkRunTrue is one Run of `true` with every layer on; the side by
// side figures are sandboxbench's.
func BenchmarkRunTrue(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Fatalf("bwrap is not installed: run scripts/setup-sandbox.sh as root: %v", err)
	}
	sb := bwrap.New(nil)
	for b.Loop() {
		r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// BenchmarkOverlay is `true` in a writable workspace, bound plainly and
// as the lower layer of an overlay, side by side. A bwrap without
// --overlay (before 0.9) has no overlay figure: that half says why.
func BenchmarkOverlay(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Fatalf("bwrap is not installed: run scripts/setup-sandbox.sh as root: %v", err)
	}
	sb := bwrap.New(nil)
	b.Run("writable", func(b *testing.B) { sandboxtest.BenchOverlay(b, sb, false) })
	b.Run("overlay", func(b *testing.B) {
		if err := sb.HasOverlay(); err != nil {
			b.Skipf("no overlay figure: %v", err)
		}
		sandboxtest.BenchOverlay(b, sb, true)
	})
}
