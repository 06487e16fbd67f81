// Command sandboxbench measures, side by side in one run, how long each
// sandbox backend takes to spawn `true` with every layer on: the native
// backend, the bwrap backend, the container backend, and as references
// bwrap run directly as a command and, when AIRLOCK_BENCH_EXEC is set,
// whole commands of the caller's choice (the lead's hook for
// `airlock exec`). It prints the median and the 99th percentile of each,
// and how native compares with bwrap.
//
//	CGO_ENABLED=0 go run ./sandbox/sandboxbench -runs 200
//	CGO_ENABLED=0 go test ./sandbox/sandboxbench -run TestSpawnTable -v   # the same table, 200 runs
//	AIRLOCK_BENCH_EXEC='/path/to/airlock exec -- true' CGO_ENABLED=0 go run ./sandbox/sandboxbench
//
// Static, as airlock is installed (README, Install): built with cgo, the
// native candidate, whose init is this binary or one beside it, starts
// more slowly.
//
// AIRLOCK_BENCH_EXEC is split on ";" into commands, each split on spaces
// (no shell, no quoting) and run as a candidate of its own for each
// sample. The runs are interleaved, one of each candidate per round in a
// random order (see Measure), so that
// a load on the machine weighs on all of them alike.
//
// The native backend's per-layer costs are not in the table: it has no
// exported switch to turn one layer off; its own benchmark measures them
// (go test -bench BenchmarkLayers ./sandbox/native).
//
// It needs what the backends need (root, bwrap, the Podman service and
// test image: scripts/setup-sandbox.sh); a backend that cannot run is an
// error, never a silent gap in the table.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/container"
	"airlock.dev/airlock/sandbox/native"
)

// DefaultRuns is how many samples each candidate gets in a full table.
const DefaultRuns = 200

// QuickRuns is how many it gets under a plain go test ./..., where the
// table only proves that every candidate still runs.
const QuickRuns = 3

// RunTimeout bounds one sample; a hung backend is an error, not a wait.
const RunTimeout = 2 * time.Minute

// ExecEnv names the environment variable holding extra commands to time.
const ExecEnv = "AIRLOCK_BENCH_EXEC"

// ExecSep separates the commands in ExecEnv, so that two builds of a
// program (before and after a change) are measured side by side.
const ExecSep = ";"

// The candidates' names, as the table shows them.
const (
	NameNative    = "native"
	NameBwrap     = "bwrap"
	NameContainer = "container"
	NameBwrapCmd  = "bwrap (command)"
	NameExec      = "AIRLOCK_BENCH_EXEC"
)

// Candidate is one way to spawn `true`.
type Candidate struct {
	Name string
	// Run spawns `true` once and returns an error unless it ran and
	// exited 0.
	Run func(ctx context.Context) error
}

// Stats summarize one candidate's samples.
type Stats struct {
	Name        string
	N           int
	Median, P99 time.Duration
	Min, Max    time.Duration
}

// Summarize computes the Stats of samples (which it sorts).
func Summarize(name string, samples []time.Duration) Stats {
	s := Stats{Name: name, N: len(samples)}
	if len(samples) == 0 {
		return s
	}
	slices.Sort(samples)
	n := len(samples)
	if n%2 == 1 {
		s.Median = samples[n/2]
	} else {
		s.Median = (samples[n/2-1] + samples[n/2]) / 2
	}
	// The nearest-rank 99th percentile: the smallest sample that at least
	// 99% of the samples do not exceed.
	s.P99 = samples[int(math.Ceil(0.99*float64(n)))-1]
	s.Min, s.Max = samples[0], samples[n-1]
	return s
}

// backendRun runs `true` in sb with every layer on (no degradation) in an
// empty read-only workspace.
func backendRun(sb sandbox.Sandbox, workspace string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: workspace})
		if err != nil {
			return err
		}
		if r.ExitCode != 0 || r.Killed != sandbox.KilledNone || len(r.Degraded) > 0 {
			return fmt.Errorf("%s: true ended with exit %d, killed %q, degraded %q: %s", sb.Name(), r.ExitCode, r.Killed, r.Degraded, r.Stderr)
		}
		return nil
	}
}

// commandRun runs argv as a plain command.
func commandRun(argv []string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
		}
		return nil
	}
}

// BwrapCommand is the reference: bwrap itself with the namespaces, binds
// and mounts the bwrap backend asks for, without its cgroups, rlimits,
// seccomp filter or env wrapper, running `true`.
func BwrapCommand() []string {
	a := []string{"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"}
	for _, d := range bwrap.SystemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	return append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", "true")
}

// Candidates returns every candidate, in table order. Errors making one
// (the native backend refusing this kernel) are returned with the rest.
func Candidates(workspace string) ([]Candidate, error) {
	var cs []Candidate
	var errs []error
	if nb, err := native.New(nil); err != nil {
		errs = append(errs, fmt.Errorf("native: %w", err))
	} else {
		cs = append(cs, Candidate{Name: NameNative, Run: backendRun(nb, workspace)})
	}
	cs = append(cs,
		Candidate{Name: NameBwrap, Run: backendRun(bwrap.New(nil), workspace)},
		Candidate{Name: NameContainer, Run: backendRun(container.New(nil), workspace)},
		Candidate{Name: NameBwrapCmd, Run: commandRun(BwrapCommand())},
	)
	for _, c := range strings.Split(os.Getenv(ExecEnv), ExecSep) {
		if v := strings.Fields(c); len(v) > 0 {
			cs = append(cs, Candidate{Name: NameExec + ": " + strings.Join(v, " "), Run: commandRun(v)})
		}
	}
	return cs, errors.Join(errs...)
}

// Measure gives each candidate one unmeasured warm-up run, then runs
// them runs times each, one of each per round, and returns their Stats
// in order. Each round runs them in a new random order (the same every
// time Measure runs): a sandbox's teardown goes on in part after its run
// has returned (the kernel frees a network namespace from a work queue,
// the container engine cleans up), and in a fixed order the candidate
// after it paid for that every time. In a fixed order, the `airlock exec`
// right after bare bwrap took 21.3 ms where the same binary, one and two
// places later, took 12.2 and 12.1 ms (2026-12-01); waiting between runs
// instead let the machine cool, and everything took longer. The first
// failure ends it.
func Measure(ctx context.Context, cs []Candidate, runs int) ([]Stats, error) {
	one := func(c Candidate) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, RunTimeout)
		defer cancel()
		start := time.Now()
		err := c.Run(ctx)
		return time.Since(start), err
	}
	for _, c := range cs {
		if _, err := one(c); err != nil {
			return nil, fmt.Errorf("%s: warm-up run: %w", c.Name, err)
		}
	}
	samples := make([][]time.Duration, len(cs))
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	shuffle := rand.New(rand.NewPCG(1, 2))
	for range runs {
		shuffle.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			d, err := one(cs[i])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cs[i].Name, err)
			}
			samples[i] = append(samples[i], d)
		}
	}
	out := make([]Stats, len(cs))
	for i, c := range cs {
		out[i] = Summarize(c.Name, samples[i])
	}
	return out, nil
}

// PrintTable writes the table: each candidate's median, p99 and range,
// its median over the bwrap backend's, then native over bwrap.
func PrintTable(w io.Writer, stats []Stats) {
	var ref, nat *Stats
	for i := range stats {
		switch stats[i].Name {
		case NameBwrap:
			ref = &stats[i]
		case NameNative:
			nat = &stats[i]
		}
	}
	n := 0
	if len(stats) > 0 {
		n = stats[0].N
	}
	fmt.Fprintf(w, "spawn latency of `true`, every layer on, %d runs each (interleaved)\n", n)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "candidate\tmedian\tp99\tmin\tmax\tmedian / bwrap backend")
	for _, s := range stats {
		ratio := "-"
		if ref != nil && ref.Median > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(s.Median)/float64(ref.Median))
		}
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%v\t%s\n", s.Name, round(s.Median), round(s.P99), round(s.Min), round(s.Max), ratio)
	}
	tw.Flush()
	if nat != nil && ref != nil && ref.Median > 0 && ref.P99 > 0 {
		fmt.Fprintf(w, "native / bwrap: median %.2fx, p99 %.2fx\n",
			float64(nat.Median)/float64(ref.Median), float64(nat.P99)/float64(ref.P99))
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
