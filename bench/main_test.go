package main

import (
	"math"
	"os"
	"testing"
)

const sharedFile = "../../shared/bench/calc-expressions.tsv"

func TestFloorKnownValues(t *testing.T) {
	for _, c := range []struct {
		src  string
		want float64
	}{
		{"($100 + $250.75) * 20% - 12.5/4", 67.025},
		{"1,234.56*2", 2469.12},
		{"-(-(-7))", -7},
		{"2*(3+4)-5/(6-1)", 13},
		{"1 - 2 - 3 - 4", -8},
		{"72 / (1.5 * 4)", 12},
		{"+2 * -3", -6},
		{"$ 100 + 5 %", 100.05},
		{"-$5", -5},
		{".5 + 5. + 1e3 + 2.5E-2", 1005.525},
		{"1,234,567", 1234567},
		{" \t(\n2 )\r", 2},
	} {
		got, err := floorEval(c.src)
		if err != nil {
			t.Errorf("floorEval(%q): %v", c.src, err)
			continue
		}
		if !agree(got, c.want) {
			t.Errorf("floorEval(%q) = %.17g, want %v", c.src, got, c.want)
		}
	}
}

func TestFloorRejects(t *testing.T) {
	for _, src := range []string{"", "1 +", "(1", "1)", "$", "$ )", "1,23", "1,2345", "1.2.3", "%5", "2 x 3", ".", "1e", "1e400"} {
		if v, err := floorEval(src); err == nil {
			t.Errorf("floorEval(%q) = %v, want an error", src, v)
		}
	}
}

func TestFloorDoesNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		if _, err := floorEval("($100 + $250.75) * 20% - 12.5/4 * -(3e2 - .5)"); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("floorEval allocates %v times per call", n)
	}
}

func TestRewrite(t *testing.T) {
	for _, c := range []struct{ src, expr, cel string }{
		{"($100 + $250.75) * 20% - 12.5/4", "(100 + 250.75) * (20/100) - 12.5/4", "(100.0 + 250.75) * (20.0/100.0) - 12.5/4.0"},
		{"1,234.56*2", "1234.56*2", "1234.56*2.0"},
		{"+2 * -3", "+2 * -3", "2.0 * -3.0"},
		{"1 - +$ 3", "1 - +3", "1.0 - 3.0"},
		{"$ 100 + 5 %", "100 + (5/100)", "100.0 + (5.0/100.0)"},
		{"-$5%", "-(5/100)", "-(5.0/100.0)"},
		{".5 + 5. + 1e3 + 2.5E-2 + 5.e3", ".5 + 5. + 1e3 + 2.5E-2 + 5.e3", "0.5 + 5.0 + 1.0e3 + 2.5E-2 + 5.0e3"},
		{"(+1)+(2)", "(+1)+(2)", "(1.0)+(2.0)"},
	} {
		if got, err := rewrite(c.src, dialectExpr); err != nil || got != c.expr {
			t.Errorf("rewrite(%q, expr-lang) = %q, %v; want %q", c.src, got, err, c.expr)
		}
		if got, err := rewrite(c.src, dialectCEL); err != nil || got != c.cel {
			t.Errorf("rewrite(%q, cel-go) = %q, %v; want %q", c.src, got, err, c.cel)
		}
	}
}

// TestRewriteExamplesAgree runs the hand-written rewrite cases, and the
// floor's known values, through every engine.
func TestRewriteExamplesAgree(t *testing.T) {
	engines, err := newEngines()
	if err != nil {
		t.Fatal(err)
	}
	exprs := []string{
		"($100 + $250.75) * 20% - 12.5/4", "1,234.56*2", "-(-(-7))", "2*(3+4)-5/(6-1)",
		"+2 * -3", "1 - +$ 3", "$ 100 + 5 %", "-$5%", ".5 + 5. + 1e3 + 2.5E-2 + 5.e3",
		"(+1)+(2)", "1/3", "7/2", "- -$539", "5 --371",
	}
	_, problems := prepare(engines, exprs)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestSharedFileAgrees rewrites every expression of the shared benchmark
// file for each rival and checks that each compiles, evaluates and agrees
// with the floor to a relative 1e-9; calc is checked the same way.
func TestSharedFileAgrees(t *testing.T) {
	if _, err := os.Stat(sharedFile); err != nil {
		t.Fatalf("shared benchmark input missing: %v (expected at %s, beside the repository)", err, sharedFile)
	}
	exprs, index, err := loadSets(sharedFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range setOrder {
		t.Logf("set %s: %d expressions", s, len(index[s]))
	}
	engines, err := newEngines()
	if err != nil {
		t.Fatal(err)
	}
	inputs, problems := prepare(engines, exprs)
	for _, p := range problems {
		t.Error(p)
	}
	for e := range engines {
		if len(inputs[e]) != len(exprs) {
			t.Errorf("%s: %d inputs for %d expressions", engines[e].name, len(inputs[e]), len(exprs))
		}
	}
}

func TestAgree(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		ok   bool
	}{
		{1, 1, true}, {1, 1 + 1e-12, true}, {1, 1 + 1e-8, false}, {0, 0, true}, {0, 1e-300, false},
		{math.Inf(1), math.Inf(1), true}, {math.Inf(1), math.Inf(-1), false}, {math.NaN(), math.NaN(), false},
	} {
		if agree(c.a, c.b) != c.ok {
			t.Errorf("agree(%v, %v) = %v", c.a, c.b, !c.ok)
		}
	}
}
