package native

import (
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// allLayers is what the native backend applies as root on a host with
// cgroups and Landlock, as the test machines are.
var allLayers = []sandbox.Layer{
	sandbox.LayerUserNS, sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS,
	sandbox.LayerIPCNS, sandbox.LayerUTSNS, sandbox.LayerCgroupNS, sandbox.LayerPivotRoot,
	sandbox.LayerReadOnly, sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs, sandbox.LayerSetsid,
	sandbox.LayerLandlock, sandbox.LayerSeccomp, sandbox.LayerRlimits, sandbox.LayerCgroupMem,
	sandbox.LayerCgroupPids, sandbox.LayerNonRoot,
}

func newNative(t *testing.T, opts *Options) *Sandbox {
	t.Helper()
	sb, err := New(opts)
	if err != nil {
		t.Fatalf("native.New: %v", err)
	}
	return sb
}

func TestSuite(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return newNative(t, nil) }, &sandboxtest.Options{
		Layers: allLayers,
		Unavailable: func(t *testing.T) (sandbox.Sandbox, sandbox.Layer) {
			return newNative(t, &Options{CgroupRoot: "/nonexistent"}), sandbox.LayerCgroupMem
		},
	})
}
