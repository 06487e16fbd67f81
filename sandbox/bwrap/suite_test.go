package bwrap_test

import (
	"os/exec"
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// requireBwrap fails the test (never skips it) when bwrap is missing.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bwrap is not installed: run scripts/setup-sandbox.sh as root (or apt-get install bubblewrap): %v", err)
	}
}

// AllLayers is what the backend applies to a default Spec as root.
var allLayers = []sandbox.Layer{
	sandbox.LayerUserNS, sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS,
	sandbox.LayerIPCNS, sandbox.LayerUTSNS, sandbox.LayerCgroupNS, sandbox.LayerPivotRoot,
	sandbox.LayerReadOnly, sandbox.LayerNonRoot, sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs,
	sandbox.LayerSetsid, sandbox.LayerSeccomp, sandbox.LayerRlimits,
	sandbox.LayerCgroupMem, sandbox.LayerCgroupPids,
}

func TestSuite(t *testing.T) {
	requireBwrap(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return bwrap.New(nil) }, &sandboxtest.Options{
		Layers: allLayers,
		Unavailable: func(t *testing.T) (sandbox.Sandbox, sandbox.Layer) {
			return bwrap.New(&bwrap.Options{CgroupRoot: t.TempDir()}), sandbox.LayerCgroupMem
		},
		// bubblewrap before 0.9 (Debian 12 has 0.8) has no --overlay:
		// the suite then checks the refusal.
		NoOverlay: bwrap.New(nil).HasOverlay() != nil,
	})
}
