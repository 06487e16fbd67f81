package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/native/internal/nsinit"
)

// The init cannot import package sandbox; its lists must be the ones the
// contract names.
func TestOverlayOptionsAreTheContracts(t *testing.T) {
	if !slices.Equal(nsinit.OverlayOptions, sandbox.OverlayOptions) || !slices.Equal(nsinit.OverlayOptionsUserNS, sandbox.OverlayOptionsUserNS) {
		t.Errorf("nsinit's overlay options %q and %q differ from sandbox's %q and %q",
			nsinit.OverlayOptions, nsinit.OverlayOptionsUserNS, sandbox.OverlayOptions, sandbox.OverlayOptionsUserNS)
	}
}

// overlayWorkspace makes a workspace with the overlay's directories under
// its .airlock.
func overlayWorkspace(t *testing.T) (ws string, o *sandbox.Overlay) {
	t.Helper()
	ws = t.TempDir()
	o = &sandbox.Overlay{Upper: filepath.Join(ws, ".airlock", "upper"), Work: filepath.Join(ws, ".airlock", "work")}
	for _, d := range []string{o.Upper, o.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws, o
}

// TestOverlayMountOptions reads the overlay's options where they are
// real, in the sandbox's own mountinfo: the init runs in a user namespace,
// so userxattr, redirect_dir forced to nofollow (no redirects made), and
// neither metacopy nor index on.
func TestOverlayMountOptions(t *testing.T) {
	ws, o := overlayWorkspace(t)
	r, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{
		Argv:      []string{"/bin/sh", "-c", "grep ' /workspace ' /proc/self/mountinfo"},
		Workspace: ws, WorkspaceWritable: true, Overlay: o,
	})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(r.Stdout))
	t.Logf("mountinfo: %s", line)
	_, super, ok := strings.Cut(line, " - overlay ")
	if !ok {
		t.Fatalf("no overlay at /workspace: %q (stderr %q)", line, r.Stderr)
	}
	opts := strings.Split(strings.Fields(super)[1], ",")
	for _, want := range []string{"userxattr", "redirect_dir=nofollow"} {
		if !slices.Contains(opts, want) {
			t.Errorf("overlay options %q lack %s", opts, want)
		}
	}
	for _, bad := range []string{"metacopy=on", "index=on", "redirect_dir=on", "redirect_dir=follow"} {
		if slices.Contains(opts, bad) {
			t.Errorf("overlay options %q hold %s", opts, bad)
		}
	}
}

// TestOverlayRefused: an overlay the kernel refuses is ErrUnavailable for
// LayerOverlay, naming the kernel's own reason, and nothing runs; never a
// writable bind instead. Here the upper directory is on a read-only
// mount, which overlayfs refuses as an upper layer.
func TestOverlayRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test makes a read-only bind mount and needs root")
	}
	ws, _ := overlayWorkspace(t)
	ro := t.TempDir()
	o := &sandbox.Overlay{Upper: filepath.Join(ro, "upper"), Work: filepath.Join(ro, "work")}
	for _, d := range []string{o.Upper, o.Work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// As the workspace's, so that nothing needs changing on the
	// read-only mount before the kernel is asked.
	os.Chmod(ws, 0o755)
	if err := unix.Mount(ro, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo ran > /workspace/ran"}, Workspace: ws, WorkspaceWritable: true, Overlay: o}
	for _, degraded := range []bool{false, true} {
		spec.AllowDegraded = degraded
		_, err := newNative(t, nil).Run(context.Background(), spec)
		var e *sandbox.Error
		if !errors.Is(err, sandbox.ErrUnavailable) || !errors.As(err, &e) || e.Layer != sandbox.LayerOverlay {
			t.Fatalf("AllowDegraded %v: got %v, want ErrUnavailable for layer %q", degraded, err, sandbox.LayerOverlay)
		}
		if !strings.Contains(e.Message, "the kernel said") {
			t.Errorf("the refusal does not give the kernel's reason: %v", err)
		}
		t.Logf("refused: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the command ran and wrote into the workspace")
	}
}
