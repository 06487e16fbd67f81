package calc

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// benchFile is the shared benchmark input: SET<TAB>EXPRESSION per line.
const benchFile = "../../shared/bench/calc-expressions.tsv"

func loadBench(tb testing.TB) map[string][]string {
	tb.Helper()
	f, err := os.Open(benchFile)
	if err != nil {
		tb.Fatalf("benchmark input missing: %v (it lives in shared/bench beside the repository)", err)
	}
	defer f.Close()
	sets := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		set, expr, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		sets[set] = append(sets[set], expr)
		sets["all"] = append(sets["all"], expr)
	}
	return sets
}

// BenchmarkEval measures parse+evaluate per expression of each set of the
// shared input; ns/op is per expression.
func BenchmarkEval(b *testing.B) {
	sets := loadBench(b)
	for _, name := range []string{"all", "typical", "medium", "chain50", "nest20"} {
		exprs := sets[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := Eval(exprs[i%len(exprs)], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvalString adds printing the result, the full answer a caller shows.
func BenchmarkEvalString(b *testing.B) {
	exprs := loadBench(b)["all"]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v, err := Eval(exprs[i%len(exprs)], nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = v.String()
	}
}
