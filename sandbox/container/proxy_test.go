package container_test

import (
	"context"
	"errors"
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/container"
)

// TestProxyModeRefused: this backend has no egress relay, so a Spec that
// asks for the proxied network is refused, naming the layer, rather than
// run with no network while the caller believes the proxy is there.
func TestProxyModeRefused(t *testing.T) {
	sb := container.New(nil)
	_, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Network: sandbox.NetworkProxy, Proxy: "/run/airlock/proxy.sock"})
	var se *sandbox.Error
	if !errors.Is(err, sandbox.ErrUnavailable) || !errors.As(err, &se) || se.Layer != sandbox.LayerEgressProxy || se.Hint == "" {
		t.Fatalf("proxy mode: %v, want sandbox_unavailable naming %s with a hint", err, sandbox.LayerEgressProxy)
	}
}
