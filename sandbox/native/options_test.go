package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox"
)

func TestOptionDefaults(t *testing.T) {
	sb := newNative(t, nil)
	if sb.tmpSize != DefaultTmpSize || sb.hostname != DefaultHostname || sb.exe != "/proc/self/exe" {
		t.Errorf("defaults: tmp %d, hostname %q, exe %q", sb.tmpSize, sb.hostname, sb.exe)
	}
	for _, size := range []int64{-1, MaxTmpSize + 1} {
		if _, err := New(&Options{TmpSize: size}); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("TmpSize %d: got %v, want ErrInvalidSpec", size, err)
		}
	}
	ws := t.TempDir()
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"cat", "/proc/sys/kernel/hostname"}, Workspace: ws})
	if err != nil || strings.TrimSpace(string(r.Stdout)) != DefaultHostname {
		t.Errorf("hostname: %v %q", err, r.Stdout)
	}
}

func TestTmpSize(t *testing.T) {
	ws := t.TempDir()
	// 2 MiB fits the default /tmp and not a 1 MiB one.
	script := "head -c 2097152 /dev/zero > /tmp/big && echo fits"
	for _, c := range []struct {
		size int64
		fits bool
	}{{0, true}, {1 << 20, false}} {
		sb := newNative(t, &Options{TmpSize: c.size})
		r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(r.Stdout), "fits"); got != c.fits {
			t.Errorf("TmpSize %d: 2 MiB fits=%v, want %v (%q)", c.size, got, c.fits, r.Stderr)
		}
	}
}

func TestReadOnlyPaths(t *testing.T) {
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "data"), []byte("shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(extra, 0o755)
	sb := newNative(t, nil)
	script := "cat " + extra + "/data; echo x > " + extra + "/data && echo WROTE; echo y > " + extra + "/new && echo WROTE; exit 0"
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, ReadOnlyPaths: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "shared\n" {
		t.Errorf("stdout %q, want the file and no write (stderr %q)", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(extra, "data")); string(b) != "shared\n" {
		t.Errorf("the read-only path was written: %q", b)
	}
}

func TestReservedReadOnlyPaths(t *testing.T) {
	for _, p := range []string{"/proc", "/proc/self", "/dev", "/workspace/x"} {
		_, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, ReadOnlyPaths: []string{p}})
		if !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("ReadOnlyPaths %q: got %v, want ErrInvalidSpec", p, err)
		}
	}
}

func TestMaskedDirMustBeADir(t *testing.T) {
	ws := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(ws, ".airlock")); err != nil {
		t.Fatal(err)
	}
	_, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Workspace: ws})
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Errorf("a .airlock symlink: got %v, want ErrInvalidSpec", err)
	}
	// A writable workspace without .airlock gets one, masked.
	ws2 := t.TempDir()
	r, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo x > /workspace/.airlock/f"}, Workspace: ws2, WorkspaceWritable: true})
	if err != nil || r.ExitCode == 0 {
		t.Errorf("writing a fresh .airlock: err %v, exit %d", err, r.ExitCode)
	}
	if _, err := os.Stat(filepath.Join(ws2, ".airlock", "f")); err == nil {
		t.Error("a write landed in a fresh .airlock")
	}
}

func TestConcurrentRuns(t *testing.T) {
	sb := newNative(t, nil)
	ws := t.TempDir()
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo $$"}, Workspace: ws})
			// Host pids run in the thousands; the namespace's start at 1
			// (the init, then its few threads, then the command).
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(r.Stdout))); err == nil && (perr != nil || pid > 2*InitTasks) {
				err = errors.New("the command is not in a PID namespace of its own: pid " + string(r.Stdout))
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestRlimits(t *testing.T) {
	sb := newNative(t, nil)
	ws := t.TempDir()
	script := "ulimit -n; ulimit -c; head -c 1048576 /dev/zero > /tmp/small && echo small; head -c 2097152 /dev/zero > /tmp/big && echo big; exit 0"
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Workspace: ws,
		Limits: sandbox.Limits{OpenFiles: 100, FileSize: 1536 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Stdout), "100\n0\nsmall\n"; got != want {
		t.Errorf("stdout %q, want %q: NOFILE 100, no core dumps, a 1 MiB file and not a 2 MiB one (stderr %q)", got, want, r.Stderr)
	}
	// The defaults.
	r, err = sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "ulimit -n"}, Workspace: ws})
	if err != nil || strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(sandbox.DefaultOpenFiles) {
		t.Errorf("default NOFILE: %v %q, want %d", err, r.Stdout, sandbox.DefaultOpenFiles)
	}
}
