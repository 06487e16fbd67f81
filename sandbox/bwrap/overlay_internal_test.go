package bwrap

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [3]int
		ok   bool
	}{
		{"bubblewrap 0.8.0", [3]int{0, 8, 0}, true},
		{"bubblewrap 0.11.0", [3]int{0, 11, 0}, true},
		{"bubblewrap 1.2", [3]int{1, 2, 0}, true},
		{"bwrap 0.9.0", [3]int{}, false},
		{"bubblewrap x.9", [3]int{}, false},
		{"", [3]int{}, false},
	} {
		got, err := parseVersion(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		v    [3]int
		want bool
	}{{[3]int{0, 8, 0}, false}, {[3]int{0, 9, 0}, true}, {[3]int{0, 10, 1}, true}, {[3]int{1, 0, 0}, true}, {[3]int{0, 8, 9}, false}} {
		if got := atLeast(c.v, OverlayVersion); got != c.want {
			t.Errorf("atLeast(%v, %v) = %v", c.v, OverlayVersion, got)
		}
	}
}

// The mountinfo lines are as the kernel writes them; the first is the
// native backend's overlay, read inside a sandbox on Linux 6.18.
func TestCheckOverlayMount(t *testing.T) {
	const pre = "68 69 0:40 / /workspace rw,nosuid,nodev,relatime - "
	for _, c := range []struct {
		name, line string
		ok         bool
		want       string
	}{
		{"userxattr", pre + "overlay none rw,lowerdir+=/proc/self/fd/18,upperdir=/proc/self/fd/19,workdir=/proc/self/fd/20,redirect_dir=nofollow,uuid=on,userxattr", true, ""},
		{"initial namespace, all off", pre + "overlay overlay rw,lowerdir=/w,upperdir=/u,workdir=/k,redirect_dir=off,metacopy=off,index=off", true, ""},
		{"redirect on", pre + "overlay overlay rw,lowerdir=/w,upperdir=/u,workdir=/k,redirect_dir=on", false, "redirect_dir=on"},
		{"metacopy on", pre + "overlay overlay rw,lowerdir=/w,upperdir=/u,workdir=/k,redirect_dir=off,metacopy=on", false, "metacopy=on"},
		{"kernel defaults", pre + "overlay overlay rw,lowerdir=/w,upperdir=/u,workdir=/k", false, "neither userxattr"},
		{"metacopy by default", pre + "overlay overlay rw,lowerdir=/w,upperdir=/u,workdir=/k,redirect_dir=off", false, "metacopy left"},
		{"a bind, not an overlay", "68 69 8:1 /tmp/w /workspace rw,nosuid - ext4 /dev/vda rw", false, "not an overlay"},
		{"nothing there", "68 69 8:1 / / rw - ext4 /dev/vda rw", false, "no overlay"},
	} {
		mi := []byte("1 0 8:1 / / ro - ext4 /dev/vda rw\n" + c.line + "\n")
		err := checkOverlayMount(mi)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var e *sandbox.Error
		if !errors.As(err, &e) || e.Layer != sandbox.LayerOverlay || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: got %v, want Unavailable for layer overlay saying %q", c.name, err, c.want)
		}
	}
}

func TestBuildArgsOverlay(t *testing.T) {
	ws := t.TempDir()
	spec := sandbox.Spec{Argv: []string{"true"}, Workspace: ws, WorkspaceWritable: true,
		Overlay: &sandbox.Overlay{Upper: ws + "/.airlock/u", Work: ws + "/.airlock/w"}}
	args, err := buildArgs(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, "--overlay-src")
	if i < 0 || !slices.Equal(args[i:i+6], []string{"--overlay-src", ws, "--overlay", spec.Overlay.Upper, spec.Overlay.Work, sandbox.WorkspaceMount}) {
		t.Errorf("no overlay of the workspace at %s in %q", sandbox.WorkspaceMount, args)
	}
	if slices.Contains(args, "--bind") {
		t.Errorf("a writable bind beside the overlay: %q", args)
	}
}
