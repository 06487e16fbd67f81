package container_test

import (
	"context"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/container"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// requireEngine fails the test (never skips it) when the engine or the
// test image is missing, saying how to provide them.
func requireEngine(t *testing.T) *container.Sandbox {
	t.Helper()
	sb := container.New(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sb.Available(ctx); err != nil {
		t.Fatalf("the container backend needs Podman's API service and the test image: run scripts/setup-sandbox.sh as root: %v", err)
	}
	return sb
}

// allLayers is what every container gets; the cgroup namespace is not
// among them, since Podman's compatible API does not give one.
var allLayers = []sandbox.Layer{
	sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS, sandbox.LayerIPCNS,
	sandbox.LayerUTSNS, sandbox.LayerPivotRoot, sandbox.LayerReadOnly,
	sandbox.LayerCgroupMem, sandbox.LayerCgroupPids, sandbox.LayerRlimits,
	sandbox.LayerCapsDrop, sandbox.LayerNoNewPrivs, sandbox.LayerSeccomp, sandbox.LayerNonRoot,
}

func TestSuite(t *testing.T) {
	requireEngine(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Sandbox { return container.New(nil) }, &sandboxtest.Options{
		Layers: allLayers,
		Unavailable: func(t *testing.T) (sandbox.Sandbox, sandbox.Layer) {
			return container.New(&container.Options{User: "0:0"}), sandbox.LayerNonRoot
		},
		NoOverlay: true,
	})
}
