package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD (this test needs the go command): %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// buildInit builds cmd/airlock-sandbox-init from the module at root into
// a fresh directory that the init, started as InitHostUID, can reach.
func buildInit(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, InitBinary)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/airlock-sandbox-init")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock-sandbox-init: %v\n%s", err, out)
	}
	return bin
}

// currentInit is cmd/airlock-sandbox-init built from this tree.
func currentInit(t *testing.T) string {
	t.Helper()
	return buildInit(t, moduleRoot(t))
}

// TestSuiteInitBinary runs the escape and conformance suite with the init
// as a binary of its own, as the airlock CLI runs it when installed so.
func TestSuiteInitBinary(t *testing.T) {
	bin := currentInit(t)
	sb := newNative(t, &Options{Exe: bin})
	sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return sb }, &sandboxtest.Options{
		Layers: allLayers,
		Unavailable: func(t *testing.T) (sandbox.Sandbox, sandbox.Layer) {
			return newNative(t, &Options{Exe: bin, CgroupRoot: "/nonexistent"}), sandbox.LayerCgroupMem
		},
	})
	if got := sb.Exe(); got != bin {
		t.Errorf("after the suite the init is %q, want the init binary %q: it was taken for stale", got, bin)
	}
}

// TestStaleInitFallsBack builds the init from a copy of the sources that
// differs by one comment, as an init left over from another build would,
// once in the init's package and once in the seccomp filter it installs,
// and checks that it builds nothing and that the run, and every run after
// it, uses this binary's own init instead.
func TestStaleInitFallsBack(t *testing.T) {
	for _, changed := range []string{"sandbox/native/internal/nsinit/nsinit.go", "sandbox/internal/seccomp/seccomp.go"} {
		t.Run(filepath.Base(filepath.Dir(changed)), func(t *testing.T) {
			root := moduleRoot(t)
			stale := t.TempDir()
			for _, f := range []string{"go.mod", "go.sum"} {
				copyFile(t, filepath.Join(root, f), filepath.Join(stale, f))
			}
			for _, d := range []string{"sandbox", "cmd/airlock-sandbox-init"} {
				cmd := exec.Command("cp", "-r", filepath.Join(root, d), filepath.Join(stale, filepath.Dir(d))+"/")
				os.MkdirAll(filepath.Join(stale, filepath.Dir(d)), 0o755)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("copying %s: %v\n%s", d, err, out)
				}
			}
			f := filepath.Join(stale, changed)
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, append(b, "\n// An older build.\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := buildInit(t, stale)

			sb := newNative(t, &Options{Exe: bin})
			ws := t.TempDir()
			os.Chmod(ws, 0o755)
			for i := range 2 {
				r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"cat", "/proc/self/status"}, Workspace: ws})
				if err != nil || r.ExitCode != 0 {
					t.Fatalf("run %d: %v, exit %d: %s", i, err, r.ExitCode, r.Stderr)
				}
				if !strings.Contains(string(r.Stdout), "Seccomp:\t2") {
					t.Errorf("run %d: the command is not under a seccomp filter:\n%s", i, r.Stdout)
				}
				if got := sb.Exe(); got != selfExe {
					t.Errorf("run %d: the init is %q, want %s after the stale one", i, got, selfExe)
				}
			}
		})
	}
}

// TestCurrentInitNotStale checks that an init built from this tree is
// used, and that the marker tells the self init from a separate one.
func TestCurrentInitNotStale(t *testing.T) {
	bin := currentInit(t)
	sb := newNative(t, &Options{Exe: bin})
	ws := t.TempDir()
	os.Chmod(ws, 0o755)
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Workspace: ws})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v, exit %d: %s", err, r.ExitCode, r.Stderr)
	}
	if got := sb.Exe(); got != bin {
		t.Errorf("the init is %q, want %q", got, bin)
	}
	if initMarker(selfExe) == initMarker(bin) {
		t.Errorf("the self marker and the fingerprint are both %q", initMarker(bin))
	}
}

func TestFindInit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	sibling := filepath.Join(filepath.Dir(self), InitBinary)
	if _, err := os.Lstat(sibling); err == nil {
		t.Skipf("%s exists already; not touching it", sibling)
	}
	if got := FindInit(); got != "" {
		t.Errorf("with no init binary: FindInit() = %q, want \"\"", got)
	}
	dir := filepath.Dir(self)
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, st.Mode().Perm())
	defer os.Remove(sibling)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		mode    os.FileMode
		dirMode os.FileMode
		link    bool
		other   bool // owned by another user
		want    bool
	}{
		{"an executable owned by us", 0o755, 0o755, false, false, true},
		{"group-writable", 0o775, 0o755, false, false, false},
		{"world-writable", 0o757, 0o755, false, false, false},
		{"not executable", 0o644, 0o755, false, false, false},
		{"in a world-writable directory", 0o755, 0o777, false, false, false},
		{"in a sticky world-writable directory, like /tmp", 0o755, 0o1777, false, false, false},
		{"a symbolic link", 0o755, 0o755, true, false, false},
		{"owned by another user", 0o755, 0o755, false, true, false},
	} {
		if c.other && os.Geteuid() != 0 {
			continue // only root can give a file away
		}
		os.Remove(sibling)
		if c.link {
			if err := os.Symlink("/bin/true", sibling); err != nil {
				t.Fatal(err)
			}
		} else {
			copyFile(t, "/bin/true", sibling)
			if err := os.Chmod(sibling, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.other {
				if err := os.Lchown(sibling, InitHostUID, InitHostGID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Chmod(dir, c.dirMode); err != nil {
			t.Fatal(err)
		}
		got := FindInit()
		if (got != "") != c.want {
			t.Errorf("%s: FindInit() = %q, want found %v", c.name, got, c.want)
		}
		if c.want && got != sibling {
			t.Errorf("%s: FindInit() = %q, want %q", c.name, got, sibling)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
