package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// BenchOverlay runs `true` in a writable workspace of sb, with a fresh
// overlay each time when overlay is set, and reports the median and 99th
// percentile of Run's latency. The overlay's directories are made and
// removed outside the time measured.
func BenchOverlay(b *testing.B, sb sandbox.Sandbox, overlay bool) {
	ws := b.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".airlock"), 0o755); err != nil {
		b.Fatal(err)
	}
	spec := sandbox.Spec{Argv: []string{"true"}, Workspace: ws, WorkspaceWritable: true}
	Latency(b, sb, func() sandbox.Spec {
		if overlay {
			dir := filepath.Join(ws, ".airlock", "overlay")
			os.RemoveAll(dir)
			spec.Overlay = &sandbox.Overlay{Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work")}
			for _, p := range []string{spec.Overlay.Upper, spec.Overlay.Work} {
				if err := os.MkdirAll(p, 0o755); err != nil {
					b.Fatal(err)
				}
			}
		}
		return spec
	})
}

// Latency runs, in b.Loop, the Spec next returns (called before each run,
// outside the time measured) in sb, and reports the median and 99th
// percentile of Run's latency. A run that fails or exits non-zero fails
// the benchmark.
func Latency(b *testing.B, sb sandbox.Sandbox, next func() sandbox.Spec) {
	var d []time.Duration
	for b.Loop() {
		spec := next()
		start := time.Now()
		r, err := sb.Run(context.Background(), spec)
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "ms-p99")
}
