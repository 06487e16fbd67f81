package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// helperEnv makes the test binary act as the unprivileged helper.
const helperEnv = "AIRLOCK_NATIVE_UNPRIVILEGED_HELPER"

// helperReport is what the helper prints, one JSON document.
type helperReport struct {
	RefusedErr   string
	RefusedIsUnv bool
	Degraded     sandbox.Result
	DegradedErr  string
	Wall         sandbox.Result
	WallErr      string
}

// TestUnprivileged runs the backend as uid 65534 (nobody), who cannot
// create cgroups on this host's cgroup v1: the limits must be refused
// without AllowDegraded, and the run must go on, saying so, with it.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test switches to uid 65534 with setpriv and needs to run as root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("this test needs setpriv (apt-get install util-linux)")
	}
	// The test binary and the workspace where nobody can reach them.
	dir, err := os.MkdirTemp("", "airlock-unpriv-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "native.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(ws, 65534, 65534)

	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^TestUnprivilegedHelper$")
	cmd.Env = []string{helperEnv + "=" + ws, "PATH=" + sandbox.DefaultPath}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the helper failed: %v\n%s", err, out)
	}
	var rep helperReport
	start := strings.Index(string(out), "{")
	end := strings.LastIndex(string(out), "}")
	if start < 0 || end < start || json.Unmarshal(out[start:end+1], &rep) != nil {
		t.Fatalf("the helper printed no report:\n%s", out)
	}
	if !rep.RefusedIsUnv || !strings.Contains(rep.RefusedErr, string(sandbox.LayerCgroupMem)) {
		t.Errorf("without AllowDegraded: got %q, want ErrUnavailable naming %s", rep.RefusedErr, sandbox.LayerCgroupMem)
	}
	r := rep.Degraded
	if rep.DegradedErr != "" || string(r.Stdout) != "0\nwritten\n" {
		t.Fatalf("with AllowDegraded: err %q, stdout %q, stderr %q", rep.DegradedErr, r.Stdout, r.Stderr)
	}
	for _, l := range []sandbox.Layer{sandbox.LayerCgroupMem, sandbox.LayerCgroupPids} {
		if !slices.Contains(r.Degraded, l) || r.Has(l) {
			t.Errorf("layer %s: Degraded %q, Enforced %q; want it degraded", l, r.Degraded, r.Enforced)
		}
	}
	for _, l := range []sandbox.Layer{sandbox.LayerUserNS, sandbox.LayerPIDNS, sandbox.LayerNetNS, sandbox.LayerPivotRoot, sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs, sandbox.LayerLandlock, sandbox.LayerSeccomp} {
		if !r.Has(l) {
			t.Errorf("layer %s missing from Enforced %q", l, r.Enforced)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "f")); err != nil || string(b) != "x\n" {
		t.Errorf("the write to the workspace did not land: %v %q", err, b)
	}
	if w := rep.Wall; rep.WallErr != "" || !w.TimedOut || w.Killed != sandbox.KilledWall {
		t.Errorf("wall limit without cgroups: err %q, timed out %v, killed %q", rep.WallErr, w.TimedOut, w.Killed)
	}
}

// TestUnprivilegedHelper is the unprivileged side of TestUnprivileged;
// run on its own it does nothing.
func TestUnprivilegedHelper(t *testing.T) {
	ws := os.Getenv(helperEnv)
	if ws == "" {
		return
	}
	sb, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var rep helperReport
	ctx := context.Background()
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", "id -u; echo x > /workspace/f && echo written"}, Workspace: ws, WorkspaceWritable: true}
	_, err = sb.Run(ctx, spec)
	if err != nil {
		rep.RefusedErr = err.Error()
		rep.RefusedIsUnv = errors.Is(err, sandbox.ErrUnavailable)
	}
	spec.AllowDegraded = true
	rep.Degraded, err = sb.Run(ctx, spec)
	if err != nil {
		rep.DegradedErr = err.Error()
	}
	rep.Wall, err = sb.Run(ctx, sandbox.Spec{Argv: []string{"/bin/sh", "-c", "sleep 600 & sleep 600"}, AllowDegraded: true, Limits: sandbox.Limits{Wall: 2 * time.Second}})
	if err != nil {
		rep.WallErr = err.Error()
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
}
