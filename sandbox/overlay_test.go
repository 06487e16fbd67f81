package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"airlock.dev/airlock/sandbox"
)

func TestOverlayCheck(t *testing.T) {
	const ws = "/w"
	spec := func(upper, work string) sandbox.Spec {
		return sandbox.Spec{Argv: []string{"true"}, Workspace: ws, WorkspaceWritable: true,
			Overlay: &sandbox.Overlay{Upper: upper, Work: work}}
	}
	for _, c := range []struct {
		name string
		spec sandbox.Spec
		want string // "" for valid, else a word of the message
	}{
		{"under .airlock", spec("/w/.airlock/o/upper", "/w/.airlock/o/work"), ""},
		{"outside the workspace", spec("/var/lib/airlock/upper", "/var/lib/airlock/work"), ""},
		{"no workspace", sandbox.Spec{Argv: []string{"true"}, Overlay: &sandbox.Overlay{Upper: "/u", Work: "/k"}}, "WorkspaceWritable"},
		{"read-only workspace", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Overlay: &sandbox.Overlay{Upper: "/u", Work: "/k"}}, "WorkspaceWritable"},
		{"relative upper", spec("upper", "/w/.airlock/work"), "Overlay.Upper"},
		{"unclean work", spec("/w/.airlock/upper", "/w/.airlock/x/../work"), "Overlay.Work"},
		{"empty work", spec("/w/.airlock/upper", ""), "Overlay.Work"},
		{"root upper", spec("/", "/w/.airlock/work"), "Overlay.Upper"},
		{"same", spec("/w/.airlock/o", "/w/.airlock/o"), "same directory"},
		{"upper in work", spec("/w/.airlock/o/upper", "/w/.airlock/o"), "inside Overlay.Work"},
		{"work in upper", spec("/w/.airlock/o", "/w/.airlock/o/work"), "inside Overlay.Upper"},
		{"visible in the workspace", spec("/w/src/upper", "/w/.airlock/work"), "could see it"},
		{"the workspace itself", spec("/w", "/w/.airlock/work"), "could see it"},
		{"the masked dir itself", spec("/w/.airlock", "/w/.airlock2/work"), "could see it"},
		{"workspace inside upper", spec("/", "/k"), "Overlay.Upper"},
		{"workspace below upper", sandbox.Spec{Argv: []string{"true"}, Workspace: "/a/w", WorkspaceWritable: true, Overlay: &sandbox.Overlay{Upper: "/a", Work: "/k"}}, "inside Overlay.Upper"},
	} {
		err := c.spec.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it valid", c.name, err)
		case c.want != "" && !errors.Is(err, sandbox.ErrInvalidSpec):
			t.Errorf("%s: got %v, want ErrInvalidSpec", c.name, err)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %q does not say %q", c.name, err, c.want)
		}
	}
}

func TestOverlayPrepare(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	upper, work := mk("upper"), mk("work")
	os.Chmod(dir, 0o751)
	if err := (&sandbox.Overlay{Upper: upper, Work: work}).Prepare(dir); err != nil {
		t.Fatalf("two empty directories side by side: %v", err)
	}
	// The overlay's root is Upper: it must look like the workspace's.
	if fi, err := os.Stat(upper); err != nil || fi.Mode().Perm() != 0o751 {
		t.Errorf("Upper's mode after Prepare: %v (%v), want the workspace's 0751", fi.Mode().Perm(), err)
	}
	full := mk("full")
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(upper, link); err != nil {
		t.Fatal(err)
	}
	// /dev/shm is a tmpfs: another filesystem than the test's temp dir,
	// unless that is one too.
	other := ""
	if shm, err := os.MkdirTemp("/dev/shm", "airlock-overlay-"); err == nil {
		defer os.RemoveAll(shm)
		a, _ := os.Stat(shm)
		b, _ := os.Stat(dir)
		if devOf(a) != devOf(b) {
			other = shm
		}
	}
	for _, c := range []struct {
		name        string
		upper, work string
		want        string
	}{
		{"missing upper", filepath.Join(dir, "none"), work, "not a directory"},
		{"upper not empty", full, work, "not empty"},
		{"work not empty", upper, full, "not empty"},
		{"upper a link", link, work, "not a directory"},
		{"other filesystem", upper, other, "same filesystem"},
	} {
		if c.work == "" {
			t.Logf("%s: no second filesystem at /dev/shm to try", c.name)
			continue
		}
		err := (&sandbox.Overlay{Upper: c.upper, Work: c.work}).Prepare(dir)
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrInvalidSpec saying %q", c.name, err, c.want)
		}
	}
}

func devOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev
	}
	return 0
}
