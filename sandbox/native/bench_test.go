package native

import (
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// BenchmarkRunTrue is the latency of one sandboxed `true`, every layer on.
func BenchmarkRunTrue(b *testing.B) {
	benchRun(b, nil)
}

// BenchmarkLayers measures what each layer costs: `true` with that one
// layer switched off (through the unexported skip set, which no
// production path can reach), against all of them on.
func BenchmarkLayers(b *testing.B) {
	for _, c := range []struct {
		name string
		skip []sandbox.Layer
	}{
		{"all", nil},
		{"no-seccomp", []sandbox.Layer{sandbox.LayerSeccomp}},
		{"no-landlock", []sandbox.Layer{sandbox.LayerLandlock}},
		{"no-cgroups", []sandbox.Layer{sandbox.LayerCgroupMem, sandbox.LayerCgroupPids}},
		{"no-cgroupns", []sandbox.Layer{sandbox.LayerCgroupNS}},
		{"no-netns", []sandbox.Layer{sandbox.LayerNetNS}},
		{"no-ipc-uts-ns", []sandbox.Layer{sandbox.LayerIPCNS, sandbox.LayerUTSNS}},
	} {
		b.Run(c.name, func(b *testing.B) { benchRun(b, c.skip) })
	}
}

func benchRun(b *testing.B, skip []sandbox.Layer) {
	sb, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	sb.skip = map[sandbox.Layer]bool{}
	for _, l := range skip {
		sb.skip[l] = true
	}
	ws := b.TempDir()
	spec := sandbox.Spec{Argv: []string{"true"}, Workspace: ws}
	sandboxtest.Latency(b, sb, func() sandbox.Spec { return spec })
}

// BenchmarkOverlay is the latency of one sandboxed `true` in a writable
// workspace, bound plainly and as the lower layer of an overlay
// (Spec.Overlay), side by side in one run. Each overlay run gets fresh,
// empty directories, made and removed outside the time measured.
func BenchmarkOverlay(b *testing.B) {
	for _, overlay := range []bool{false, true} {
		name := "writable"
		if overlay {
			name = "overlay"
		}
		b.Run(name, func(b *testing.B) {
			sb, err := New(nil)
			if err != nil {
				b.Fatal(err)
			}
			sandboxtest.BenchOverlay(b, sb, overlay)
		})
	}
}
