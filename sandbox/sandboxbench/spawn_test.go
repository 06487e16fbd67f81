package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runsForTest is QuickRuns under a plain go test, DefaultRuns when the
// table was asked for by name (-run TestSpawnTable), and
// AIRLOCK_SPAWN_RUNS when that is set.
func runsForTest(t *testing.T) int {
	if v := os.Getenv("AIRLOCK_SPAWN_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("AIRLOCK_SPAWN_RUNS=%q: want a positive number", v)
		}
		return n
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "TestSpawnTable" && !testing.Short() {
		return DefaultRuns
	}
	return QuickRuns
}

func TestSpawnTable(t *testing.T) {
	ws := t.TempDir()
	os.Chmod(ws, 0o755)
	cs, err := Candidates(ws)
	if err != nil {
		t.Fatalf("%v: the table needs every backend; run scripts/setup-sandbox.sh as root", err)
	}
	stats, err := Measure(context.Background(), cs, runsForTest(t))
	if err != nil {
		t.Fatalf("%v: run scripts/setup-sandbox.sh as root", err)
	}
	var out bytes.Buffer
	PrintTable(&out, stats)
	t.Log("\n" + out.String())
	for _, name := range []string{NameNative, NameBwrap, NameContainer, NameBwrapCmd, "native / bwrap:"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("the table has no %q row", name)
		}
	}
}

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		in                     []time.Duration
		median, p99, min, max_ time.Duration
	}{
		{ms(5, 1, 3), 3 * time.Millisecond, 5 * time.Millisecond, time.Millisecond, 5 * time.Millisecond},
		{ms(4, 1, 3, 2), 2500 * time.Microsecond, 4 * time.Millisecond, time.Millisecond, 4 * time.Millisecond},
		{ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
	} {
		s := Summarize("x", c.in)
		if s.Median != c.median || s.P99 != c.p99 || s.Min != c.min || s.Max != c.max_ || s.N != len(c.in) {
			t.Errorf("Summarize(%v) = %+v", c.in, s)
		}
	}
	// 200 samples 1..200 ms: the 99th percentile by nearest rank is the 198th.
	var d []time.Duration
	for i := 200; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if s := Summarize("x", d); s.P99 != 198*time.Millisecond || s.Median != 100500*time.Microsecond {
		t.Errorf("1..200ms: p99 %v median %v, want 198ms and 100.5ms", s.P99, s.Median)
	}
	if s := Summarize("none", nil); s.N != 0 || s.Median != 0 {
		t.Errorf("no samples: %+v", s)
	}
}

func TestPrintTable(t *testing.T) {
	var out bytes.Buffer
	PrintTable(&out, []Stats{
		{Name: NameNative, N: 3, Median: 2 * time.Millisecond, P99: 4 * time.Millisecond},
		{Name: NameBwrap, N: 3, Median: 4 * time.Millisecond, P99: 8 * time.Millisecond},
	})
	for _, want := range []string{"3 runs each", "0.50x", "1.00x", "native / bwrap: median 0.50x, p99 0.50x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// The extra commands of AIRLOCK_BENCH_EXEC join the table, each its own
// candidate, in order.
func TestExecHook(t *testing.T) {
	t.Setenv(ExecEnv, "/bin/true extra-arg ; /bin/true second")
	cs, _ := Candidates(t.TempDir())
	if len(cs) < 2 {
		t.Fatalf("%d candidates", len(cs))
	}
	for i, want := range []string{"/bin/true extra-arg", "/bin/true second"} {
		c := cs[len(cs)-2+i]
		if !strings.HasPrefix(c.Name, NameExec) || !strings.HasSuffix(c.Name, ": "+want) {
			t.Errorf("candidate %q, want the %s command %q", c.Name, ExecEnv, want)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

func TestRunFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-runs", "0"}, &out, &errOut); code != 2 {
		t.Errorf("-runs 0: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"-nope"}, &out, &errOut); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

func BenchmarkSpawn(b *testing.B) {
	cs, err := Candidates(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cs {
		b.Run(strings.ReplaceAll(c.Name, " ", "_"), func(b *testing.B) {
			for b.Loop() {
				if err := c.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMeasureOrder: every candidate runs once per round, and the rounds
// do not all run them in one order (a fixed order charged one
// candidate's leftover teardown to the next every time).
func TestMeasureOrder(t *testing.T) {
	const runs = 20
	var order []string
	cand := func(name string) Candidate {
		return Candidate{Name: name, Run: func(context.Context) error { order = append(order, name); return nil }}
	}
	cs := []Candidate{cand("a"), cand("b"), cand("c"), cand("d")}
	stats, err := Measure(context.Background(), cs, runs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range stats {
		if s.Name != cs[i].Name || s.N != runs {
			t.Errorf("stats %d: %+v, want %s with %d samples", i, s, cs[i].Name, runs)
		}
	}
	rounds := map[string]bool{}
	for r := range runs {
		round := order[len(cs)*(r+1) : len(cs)*(r+2)] // after the warm-up round
		seen := map[string]bool{}
		for _, n := range round {
			seen[n] = true
		}
		if len(seen) != len(cs) {
			t.Errorf("round %d ran %v, want each candidate once", r, round)
		}
		rounds[strings.Join(round, "")] = true
	}
	if len(rounds) < 2 {
		t.Errorf("all %d rounds ran in one order: %v", runs, rounds)
	}
}
