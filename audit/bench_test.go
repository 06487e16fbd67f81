package audit

import (
	"fmt"
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

// BenchmarkAppendWriters measures Append from W writer processes at once,
// in GroupCommit mode, on one log: each appends b.N/W records of the
// typical entry (the first also the remainder). ns/op is wall time per
// record, from when all have the log open until the last has closed it
// (synced) and exited.
func BenchmarkAppendWriters(b *testing.B) {
	if !writersApart {
		b.Skip("no flock here: writers are not kept apart")
	}
	for _, writers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "audit.jsonl")
			ws := make([]*writerProc, writers)
			for i := range ws {
				n := b.N / writers
				if i == 0 {
					n += b.N % writers
				}
				ws[i] = startWriter(b, writerSpec{Log: path, Name: fmt.Sprintf("proc%d", i), Count: n, Wait: true})
			}
			for _, w := range ws {
				w.waitReady(b)
			}
			b.ResetTimer()
			for _, w := range ws {
				w.start(b)
			}
			for _, w := range ws {
				if err := w.finish(); err != nil {
					b.Fatalf("writer %s: %v: %s", w.name, err, w.stderr.String())
				}
			}
			b.StopTimer()
			if rep, err := Verify(path); err != nil || !rep.OK || rep.Records != b.N {
				b.Fatalf("Verify: %+v, %v; want OK with %d records", rep, err, b.N)
			}
		})
	}
}

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
