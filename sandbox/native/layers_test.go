package native

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// TestSeccompDecides shows the seccomp filter is the layer that refuses,
// where the others would let the call through: a nested user namespace
// (unprivileged users may make one) and an AF_INET socket (an empty
// network namespace still hands one out). The control runs the same with
// only the filter off.
func TestSeccompDecides(t *testing.T) {
	for _, tool := range []string{"/usr/bin/unshare", "/usr/bin/python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s (apt-get install util-linux python3)", tool)
		}
	}
	script := `unshare -U true && echo USERNS; python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM)' && echo INET; exit 0`
	for _, filtered := range []bool{false, true} {
		sb := newNative(t, nil)
		if !filtered {
			sb.skip = map[sandbox.Layer]bool{sandbox.LayerSeccomp: true}
		}
		r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		out := string(r.Stdout)
		for _, what := range []string{"USERNS", "INET"} {
			if got := strings.Contains(out, what); got == filtered {
				t.Errorf("seccomp on=%v: %s reached=%v (stdout %q, stderr %q)", filtered, what, got, out, r.Stderr)
			}
		}
		if r.Has(sandbox.LayerSeccomp) != filtered {
			t.Errorf("seccomp on=%v but Enforced %q", filtered, r.Enforced)
		}
	}
}

// TestInitFailures checks what the init refuses, and that it is told
// apart from the command's own failures.
func TestInitFailures(t *testing.T) {
	sb := newNative(t, nil)
	ws := t.TempDir()
	ctx := context.Background()
	_, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Dir: "missing"})
	if !strings.Contains(errString(err), "invalid_spec") {
		t.Errorf("a Dir that does not exist: got %v, want invalid_spec", err)
	}
	r, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"no-such-command-airlock"}, Workspace: ws})
	if err != nil || r.ExitCode != 127 || !strings.Contains(string(r.Stderr), "not found") {
		t.Errorf("a missing command: got %v, exit %d, stderr %q; want exit 127 saying not found", err, r.ExitCode, r.Stderr)
	}
	_, err = sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: ws + "/nope"})
	if !strings.Contains(errString(err), "invalid_spec") {
		t.Errorf("a missing workspace: got %v, want invalid_spec", err)
	}
	_, err = sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, ReadOnlyPaths: []string{"/nonexistent/airlock"}})
	if !strings.Contains(errString(err), "invalid_spec") {
		t.Errorf("a missing read-only path: got %v, want invalid_spec", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestNoDescriptorLeaks: the command holds its three standard streams and
// nothing of the init's (the status pipe would let it forge its result).
func TestNoDescriptorLeaks(t *testing.T) {
	r, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/ls", "/proc/self/fd"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// 3 is the directory ls itself opened.
	if got := string(r.Stdout); got != "0\n1\n2\n3\n" {
		t.Errorf("the command's descriptors: %q, want 0-2 and ls's own 3 (stderr %q)", got, r.Stderr)
	}
}

// TestLandlockMissing: on a kernel without the Landlock the sandbox needs,
// Run refuses, naming the layer, unless degradation is allowed.
func TestLandlockMissing(t *testing.T) {
	old := landlockVersion
	t.Cleanup(func() { landlockVersion = old })
	sb := newNative(t, nil)
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo ran"}, Workspace: t.TempDir()}
	for _, v := range []int{0, 3} {
		landlockVersion = func() int { return v }
		_, err := sb.Run(context.Background(), spec)
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "landlock") {
			t.Errorf("ABI %d: got %v, want ErrUnavailable naming landlock", v, err)
		}
	}
	landlockVersion = func() int { return 0 }
	spec.AllowDegraded = true
	r, err := sb.Run(context.Background(), spec)
	if err != nil || string(r.Stdout) != "ran\n" || !slices.Contains(r.Degraded, sandbox.LayerLandlock) || r.Has(sandbox.LayerLandlock) {
		t.Errorf("ABI 0 with AllowDegraded: err %v, stdout %q, Enforced %q, Degraded %q", err, r.Stdout, r.Enforced, r.Degraded)
	}
}

// TestUsage: the result says what the command used.
func TestUsage(t *testing.T) {
	r, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{
		Argv:      []string{"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; head -c 8388608 /dev/zero > /tmp/f"},
		Workspace: t.TempDir(),
	})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	u := r.Usage
	if u.UserCPU+u.SystemCPU <= 0 || u.MaxRSS <= 0 || u.MemPeak < 8<<20 {
		t.Errorf("usage %+v: want CPU and RSS, and a memory peak of at least the 8 MiB written to /tmp", u)
	}
	if r.Duration <= 0 {
		t.Errorf("Duration %v", r.Duration)
	}
}

// TestProcSysReadOnly: /proc/sys is read-only by its mount, not only by
// Landlock, for a command that is the host's root without Landlock (as
// with AllowDegraded on an old kernel). The witness is the host name,
// private to the sandbox's UTS namespace.
func TestProcSysReadOnly(t *testing.T) {
	sb := newNative(t, nil)
	sb.skip = map[sandbox.Layer]bool{sandbox.LayerLandlock: true}
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo pwned > /proc/sys/kernel/hostname; cat /proc/sys/kernel/hostname"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Stdout), "pwned") || !strings.Contains(string(r.Stderr), "Read-only") {
		t.Errorf("/proc/sys was written, or refused for another reason than the read-only mount: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// TestCgroupsRemoved: each run's cgroups are there while it runs (the
// control) and gone after it, even when the command left processes behind.
func TestCgroupsRemoved(t *testing.T) {
	sb := newNative(t, nil)
	if !sb.cg.mem.ok() || !sb.cg.pids.ok() {
		t.Fatal("this test needs the memory and pids cgroup controllers (cgroup v1 or v2) and root")
	}
	id := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(runID.Load()+1, 10) + "-" + runNonce
	var dirs []string
	for _, h := range []hierarchy{sb.cg.mem, sb.cg.pids, sb.cg.unified} {
		if h.ok() {
			dirs = append(dirs, filepath.Join(h.parent(), id))
		}
	}
	seen := make(chan bool, 1)
	go func() {
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(dirs[0]); err == nil {
				seen <- true
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		seen <- false
	}()
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "sleep 600 & sleep 600 & sleep 1"}, Workspace: t.TempDir()})
	if err != nil || !r.Has(sandbox.LayerCgroupMem) || !r.Has(sandbox.LayerCgroupPids) {
		t.Fatalf("%v %+v", err, r)
	}
	if !<-seen {
		t.Fatalf("control: %s never showed while the command ran", dirs[0])
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the run's cgroup %s is still there (%v)", d, err)
		}
	}
}
