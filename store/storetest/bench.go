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
	serialAndParallel(b, func(b *testing.B, _ string) {
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
	})
}

// benchObserveBatch is how many values one benchmarked Observe adds:
// about what one tool result carries.
const benchObserveBatch = 10

// BenchmarkObserve measures one Observe of benchObserveBatch new values
// from untrusted content: what the gate adds after a tool result.
// "serial" adds to one session that already holds store.MaxObservations,
// so every call also drops the oldest; in "parallel" each goroutine adds
// to its own session, new at first.
func BenchmarkObserve(b *testing.B, s store.Sessions) {
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	full := make([]store.Observation, store.MaxObservations)
	for i := range full {
		full[i] = store.Observation{Source: "web", Value: fmt.Sprintf("https://full-%d.example/page", i)}
	}
	if err := s.Observe(context.Background(), run, full, 0, t0); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	serialAndParallel(b, func(b *testing.B, worker string) {
		k := n.Add(1)
		obs := make([]store.Observation, benchObserveBatch)
		for i := range obs {
			obs[i] = store.Observation{Source: "tool:fetch", Value: fmt.Sprintf("https://h%d-%d.example/page", k, i)}
		}
		if err := s.Observe(context.Background(), run+worker, obs, 0, t0); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkState measures one State of a session holding 100
// observations, read after the last of them: what the gate reads before
// every call when nothing new came in.
func BenchmarkState(b *testing.B, s store.Sessions) {
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	obs := make([]store.Observation, 100)
	for i := range obs {
		obs[i] = store.Observation{Source: "web", Value: fmt.Sprintf("https://h%d.example/page", i)}
	}
	if err := s.Observe(context.Background(), id, obs, store.MarkFlagged, t0); err != nil {
		b.Fatal(err)
	}
	st, err := s.State(context.Background(), id, 0)
	if err != nil || len(st.Observations) != len(obs) {
		b.Fatalf("State = %d observations, %v; want %d", len(st.Observations), err, len(obs))
	}
	last := st.Observations[len(obs)-1].Seq
	serialAndParallel(b, func(b *testing.B, _ string) {
		st, err := s.State(context.Background(), id, last)
		if err != nil || !st.Exists || len(st.Observations) != 0 {
			b.Fatalf("State = %+v, %v; want the session and nothing new", st, err)
		}
	})
}

// BenchmarkChargeSession measures one ChargeSession of one step and
// some tokens, without limits: what the gate writes for every call it lets
// run. Each goroutine charges its own session.
func BenchmarkChargeSession(b *testing.B, s store.Sessions) {
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	serialAndParallel(b, func(b *testing.B, worker string) {
		if _, err := s.ChargeSession(context.Background(), run+worker, store.Charge{Steps: 1, Tokens: 100}, t0); err != nil {
			b.Fatal(err)
		}
	})
}

// serialAndParallel runs op as "serial", one at a time, and as
// "parallel", GOMAXPROCS*4 goroutines at once (several gateway workers
// sharing the store), each reporting ops/s. worker names the goroutine
// ("" when serial).
func serialAndParallel(b *testing.B, op func(b *testing.B, worker string)) {
	b.Run("serial", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			op(b, "")
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
	var workers atomic.Int64
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			worker := fmt.Sprint("-", workers.Add(1))
			for pb.Next() {
				op(b, worker)
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}
