package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"

	"airlock.dev/airlock/calc"
	"cel.dev/cel-go/cel"
	"github.com/expr-lang/expr"
)

// setOrder is the row order of the report; "all" is every expression.
var setOrder = []string{"all", "typical", "medium", "chain50", "nest20"}

// loadSets reads SET<TAB>EXPRESSION lines and returns the expressions in
// file order and, for each set name and "all", their positions. Blank lines
// are skipped; any other line without a tab is an error, and so is a missing
// set, so a damaged file cannot pass quietly.
func loadSets(path string) (exprs []string, index map[string][]int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	index = map[string][]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		set, e, ok := strings.Cut(text, "\t")
		if !ok {
			return nil, nil, fmt.Errorf("%s:%d: no tab between set and expression", path, line)
		}
		index[set] = append(index[set], len(exprs))
		index["all"] = append(index["all"], len(exprs))
		exprs = append(exprs, e)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	for _, s := range setOrder {
		if len(index[s]) == 0 {
			return nil, nil, fmt.Errorf("%s: set %q is missing or empty", path, s)
		}
	}
	return exprs, index, nil
}

// engine is one evaluator under test.
type engine struct {
	name string
	// prep turns a calc expression into the engine's input; done once,
	// outside timing.
	prep func(string) (string, error)
	// run is the timed path: parse/compile and evaluate, result discarded.
	run func(string) error
	// value is run returning the result as a float64, for verification.
	value func(string) (float64, error)
}

func same(s string) (string, error) { return s, nil }

func newEngines() ([]engine, error) {
	env, err := cel.NewEnv()
	if err != nil {
		return nil, err
	}
	celEval := func(s string) (any, error) {
		ast, iss := env.Compile(s)
		if iss.Err() != nil {
			return nil, iss.Err()
		}
		prg, err := env.Program(ast)
		if err != nil {
			return nil, err
		}
		out, _, err := prg.Eval(cel.NoVars())
		if err != nil {
			return nil, err
		}
		return out.Value(), nil
	}
	exprEval := func(s string) (any, error) {
		prg, err := expr.Compile(s)
		if err != nil {
			return nil, err
		}
		return expr.Run(prg, nil)
	}
	return []engine{
		{
			name: "calc",
			prep: same,
			run: func(s string) error {
				_, err := calc.Eval(s, nil)
				return err
			},
			value: func(s string) (float64, error) {
				v, err := calc.Eval(s, nil)
				return v.Float64(), err
			},
		},
		{
			name: "floor",
			prep: same,
			run: func(s string) error {
				_, err := floorEval(s)
				return err
			},
			value: floorEval,
		},
		{
			name: "expr-lang",
			prep: func(s string) (string, error) { return rewrite(s, dialectExpr) },
			run: func(s string) error {
				_, err := exprEval(s)
				return err
			},
			value: func(s string) (float64, error) { return toFloat(exprEval(s)) },
		},
		{
			name: "cel-go",
			prep: func(s string) (string, error) { return rewrite(s, dialectCEL) },
			run: func(s string) error {
				_, err := celEval(s)
				return err
			},
			value: func(s string) (float64, error) { return toFloat(celEval(s)) },
		},
	}, nil
}

func toFloat(v any, err error) (float64, error) {
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	}
	return 0, fmt.Errorf("result %v has type %T, not a number", v, v)
}

// agree reports whether got is within a relative 1e-9 of want.
func agree(got, want float64) bool {
	if got == want {
		return true // also equal infinities
	}
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	return math.Abs(got-want) <= 1e-9*math.Max(math.Abs(got), math.Abs(want))
}

// problem is an expression an engine fails on or disagrees with the floor.
type problem struct {
	engine    string
	src       string // the calc expression
	input     string // what the engine was given
	got, want float64
	err       error
}

func (p problem) String() string {
	if p.err != nil {
		return fmt.Sprintf("%s: %q (given %q): %v", p.engine, p.src, p.input, p.err)
	}
	return fmt.Sprintf("%s: %q (given %q) = %.17g, floor %.17g", p.engine, p.src, p.input, p.got, p.want)
}

// prepare rewrites every expression for every engine and checks that each
// engine evaluates each one and agrees with the floor to a relative 1e-9.
// inputs[e] holds engine e's inputs, in the order of exprs. An expression
// that fails or disagrees is reported, never dropped.
func prepare(engines []engine, exprs []string) (inputs [][]string, problems []problem) {
	inputs = make([][]string, len(engines))
	for _, src := range exprs {
		want, ferr := floorEval(src)
		if ferr != nil {
			problems = append(problems, problem{engine: "floor", src: src, input: src, err: ferr})
		}
		for e, eng := range engines {
			in, err := eng.prep(src)
			if err != nil {
				problems = append(problems, problem{engine: eng.name, src: src, err: fmt.Errorf("rewrite: %w", err)})
				in = src
			}
			inputs[e] = append(inputs[e], in)
			if err != nil || eng.name == "floor" {
				continue
			}
			got, err := eng.value(in)
			switch {
			case err != nil:
				problems = append(problems, problem{engine: eng.name, src: src, input: in, err: err})
			case ferr == nil && !agree(got, want):
				problems = append(problems, problem{engine: eng.name, src: src, input: in, got: got, want: want})
			}
		}
	}
	return inputs, problems
}
