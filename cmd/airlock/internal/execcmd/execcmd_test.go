package execcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox/native"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512", 512, true}, {"64K", 64 << 10, true}, {"64M", 64 << 20, true}, {"1G", 1 << 30, true},
		{"64MB", 64 << 20, true}, {"64MiB", 64 << 20, true}, {"2k", 2 << 10, true},
		{"", 0, false}, {"M", 0, false}, {"-1M", 0, false}, {"1.5G", 0, false}, {"lots", 0, false},
		{"99999999999G", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestNeedsFull(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--", "true"}, false},
		{[]string{"--json", "--timeout", "2s", "--", "curl", "--network"}, false},
		{[]string{"--network", "proxy", "--", "true"}, true},
		{[]string{"-network=proxy", "--", "true"}, true},
		{[]string{"--resolve", "a:1.2.3.4", "--", "true"}, true},
		{[]string{"--backend", "container", "--", "true"}, true},
		{[]string{"--backend=container", "--", "true"}, true},
		{[]string{"--backend", "bwrap", "--", "true"}, false},
	} {
		if got := NeedsFull(c.args); got != c.want {
			t.Errorf("NeedsFull(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestNewSandboxFindsInit: the native backend runs airlock-sandbox-init
// from the program's own directory when it is installed there, and the
// program itself when it is not.
func TestNewSandboxFindsInit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	sibling := filepath.Join(filepath.Dir(self), native.InitBinary)
	if _, err := os.Lstat(sibling); err == nil {
		t.Skipf("%s exists already; not touching it", sibling)
	}
	exe := func() string {
		t.Helper()
		sb, err := NewSandbox("native")
		if err != nil {
			t.Fatal(err)
		}
		return sb.(*native.Sandbox).Exe()
	}
	if got := exe(); got != "/proc/self/exe" {
		t.Errorf("with no init binary installed the init is %q, want /proc/self/exe", got)
	}
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD (this test needs the go command): %v", err)
	}
	build := exec.Command("go", "build", "-o", sibling, "./cmd/airlock-sandbox-init")
	build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	defer os.Remove(sibling)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock-sandbox-init: %v\n%s", err, out)
	}
	if err := os.Chmod(filepath.Dir(sibling), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := exe(); got != sibling {
		t.Errorf("with the init binary installed the init is %q, want %q", got, sibling)
	}
}
