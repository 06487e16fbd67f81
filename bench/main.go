// Command bench compares airlock's calc with a plain float64 evaluator (the
// floor), expr-lang and cel-go on the shared expression file. Run it from
// this directory:
//
//	go run . [-input FILE] [-rounds 3] [-time 300ms]
//
// Each engine parses and evaluates each expression from its source text on
// every iteration (expr-lang: Compile+Run; cel-go: Compile+Program+Eval, the
// Env made once). Rival inputs are rewritten once, before timing, and checked
// against the floor. Every cell is measured with testing.Benchmark in every
// round, engines interleaved, and the median over the rounds is reported.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func main() {
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads
	input := flag.String("input", "../../shared/bench/calc-expressions.tsv", "SET<TAB>EXPRESSION file")
	rounds := flag.Int("rounds", 3, "measurement rounds; the median is reported")
	per := flag.Duration("time", 300*time.Millisecond, "benchmark time per cell per round")
	flag.Parse()
	if *rounds < 1 || *per <= 0 {
		fatal(fmt.Errorf("-rounds must be at least 1 and -time positive"))
	}
	if err := flag.Set("test.benchtime", per.String()); err != nil {
		fatal(err)
	}

	all, index, err := loadSets(*input)
	if err != nil {
		fatal(err)
	}
	engines, err := newEngines()
	if err != nil {
		fatal(err)
	}

	// Rewrite and verify once, on every expression, before any timing.
	inputs, problems := prepare(engines, all)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "MISMATCH", p)
	}
	cellInput := func(e int, set string) []string {
		var out []string
		for _, i := range index[set] {
			out = append(out, inputs[e][i])
		}
		return out
	}

	type key struct {
		set string
		eng int
	}
	ns := map[key][]float64{}
	allocs := map[key][]float64{}
	failed := map[key]error{}
	loadBefore := loadAvg()
	start := time.Now()
	for r := 0; r < *rounds; r++ {
		for _, set := range setOrder {
			for k := range engines {
				e := (k + r) % len(engines) // rotate who goes first each round
				n, a, err := measure(engines[e].run, cellInput(e, set))
				if err != nil && failed[key{set, e}] == nil {
					failed[key{set, e}] = err
				}
				ns[key{set, e}] = append(ns[key{set, e}], n)
				allocs[key{set, e}] = append(allocs[key{set, e}], a)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done, %s\n", r+1, *rounds, time.Since(start).Round(time.Second))
	}

	cpu := strconv.Itoa(runtime.NumCPU()) + " CPUs"
	if m := cpuModel(); m != "" {
		cpu += " (" + m + ")"
	}
	fmt.Printf("%s %s/%s, %s, GOMAXPROCS %d, load avg %s before / %s after; command: cd bench && go run . -input %s -rounds %d -time %s\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, cpu, runtime.GOMAXPROCS(0), loadBefore, loadAvg(), *input, *rounds, *per)

	med := func(m map[key][]float64, set, name string) float64 {
		for e := range engines {
			if engines[e].name == name {
				return median(m[key{set, e}])
			}
		}
		panic(name)
	}
	fmt.Println("| set | exprs | calc ns/expr | calc allocs/expr | floor ns/expr | expr-lang ns/expr | cel-go ns/expr | expr-lang/calc | cel-go/calc | calc/floor |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, set := range setOrder {
		c, f := med(ns, set, "calc"), med(ns, set, "floor")
		x, g := med(ns, set, "expr-lang"), med(ns, set, "cel-go")
		fmt.Printf("| %s | %d | %s | %.2f | %s | %s | %s | %.1f× | %.0f× | %.2f× |\n",
			set, len(index[set]), group(c), med(allocs, set, "calc"), group(f), group(x), group(g),
			x/c, g/c, c/f)
	}
	fmt.Printf("\nallocs/expr over all: floor %.2f, expr-lang %.1f, cel-go %.1f. Median of %d rounds, %s per cell.\n",
		med(allocs, "all", "floor"), med(allocs, "all", "expr-lang"), med(allocs, "all", "cel-go"), *rounds, *per)

	if *rounds > 1 {
		worst, where := 0.0, ""
		for k, xs := range ns {
			if m := median(xs); m > 0 {
				if d := (slices.Max(xs) - slices.Min(xs)) / m; d > worst {
					worst, where = d, engines[k.eng].name+" on "+k.set
				}
			}
		}
		fmt.Printf("Noise: the widest spread between rounds of one cell is %.0f%% of its median (%s).\n", 100*worst, where)
	}
	counts := map[string]int{}
	for _, p := range problems {
		counts[p.engine]++
	}
	var parts []string
	for _, e := range engines {
		parts = append(parts, fmt.Sprintf("%s %d", e.name, counts[e.name]))
	}
	fmt.Printf("Verified %d expressions against the floor (relative 1e-9); failures or disagreements: %s.\n",
		len(all), strings.Join(parts, ", "))
	for k, err := range failed {
		fmt.Printf("ERROR while timing %s on %s: %v\n", engines[k.eng].name, k.set, err)
	}
	if len(problems) > 0 || len(failed) > 0 {
		os.Exit(1)
	}
}

// measure times run over exprs, cycling through them, and returns ns and
// allocations per expression. The first error seen is returned.
func measure(run func(string) error, exprs []string) (ns, allocs float64, err error) {
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		n := len(exprs)
		for i := 0; b.Loop(); i++ {
			if e := run(exprs[i%n]); e != nil && err == nil {
				err = e
			}
		}
	})
	if res.N == 0 {
		return 0, 0, fmt.Errorf("benchmark did not run")
	}
	return float64(res.T.Nanoseconds()) / float64(res.N), float64(res.MemAllocs) / float64(res.N), err
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// group formats a rounded integer with thousands separators.
func group(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg is the one-minute load average, to flag a busy machine.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
