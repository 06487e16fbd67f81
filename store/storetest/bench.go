package storetest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/store"
)

// BenchmarkLedger measures one Acquire and one Complete of a fresh key
// through package ledger: what the gate adds to every side-effecting call.
// "serial" runs one call at a time, "parallel" GOMAXPROCS*4 goroutines at
// once (several gateway workers sharing the store). Each reports ops/s.
func BenchmarkLedger(b *testing.B, s store.Ledger) {
	l, err := ledger.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var n atomic.Int64
	once := func(b *testing.B) {
		k, err := ledger.KeyFor(ledger.Call{Session: run, Step: n.Add(1), Tool: "run_command", Args: []byte(`{"cmd":"make"}`)})
		if err != nil {
			b.Fatal(err)
		}
		t, err := l.Acquire(context.Background(), k, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := t.Complete(context.Background(), []byte("result "+strconv.FormatInt(n.Load(), 10))); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			once(b)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				once(b)
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}
