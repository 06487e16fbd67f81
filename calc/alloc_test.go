package calc

import "testing"

// TestEvalSmallDoesNotAllocate keeps the fast path honest: an expression
// whose intermediate values all fit int64 numerators and denominators is
// evaluated without allocating.
func TestEvalSmallDoesNotAllocate(t *testing.T) {
	for _, src := range []string{
		"1+2",
		"($100 + $250.75) * 20% - 12.5/4",
		"((1+2)*(3-4))/5",
		"100 / 7",
		"-(-(-7))",
		"1,234.56 * 1.08",
	} {
		Eval(src, nil) // warm the machine pool
		if n := testing.AllocsPerRun(100, func() { Eval(src, nil) }); n != 0 {
			t.Errorf("Eval(%q) allocates %v times per run, want 0", src, n)
		}
	}
}
