package audit

import (
	"path/filepath"
	"testing"
)

// benchAppend measures Append of a typical entry (five stages, two
// hashes), from one goroutine or from b.RunParallel's, eight per CPU, as
// when many calls finish at once. ns/op is per record and includes its
// share of fsyncs; the log lives in b.TempDir, on whatever disk that is.
func benchAppend(b *testing.B, mode SyncMode) {
	for _, c := range []struct {
		name     string
		parallel bool
	}{{"sequential", false}, {"parallel", true}} {
		b.Run(c.name, func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), &Options{Sync: mode})
			if err != nil {
				b.Fatal(err)
			}
			e := entry(1)
			b.ReportAllocs()
			b.ResetTimer()
			if c.parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := l.Append(e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if _, err := l.Append(e); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkAppendGroupCommit(b *testing.B) { benchAppend(b, GroupCommit) }

func BenchmarkAppendEveryRecord(b *testing.B) { benchAppend(b, EveryRecord) }

// BenchmarkVerify measures Verify per record of a log of 10000.
func BenchmarkVerify(b *testing.B) {
	path, _ := writeLog(b, 10000, nil)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Verify(path)
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Problems)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/record")
}
