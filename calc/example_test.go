package calc_test

import (
	"errors"
	"fmt"

	"airlock.dev/airlock/calc"
)

func ExampleEval() {
	v, err := calc.Eval("$1200 * 8.25%", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(v, v.Exact(), v.Float64())

	v, _ = calc.Eval("100/7", nil)
	fmt.Println(v, v.Exact())
	// Output:
	// 99 true 99
	// 14.28571428571428571428571428571429 false
}

func ExampleEval_error() {
	_, err := calc.Eval("2 x 3", nil)
	var e *calc.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Pos)
		fmt.Println(e.Hint)
	}
	fmt.Println(errors.Is(err, &calc.Error{Code: calc.CodeInvalidSyntax}))
	// Output:
	// invalid_syntax 2
	// Use '*' for multiplication, not 'x'
	// true
}

func ExampleOptions() {
	opts := &calc.Options{Accounting: true, Round: &calc.Rounding{Places: 2, Mode: calc.HalfUp}}
	v, _ := calc.Eval("($1,234.50) * 3 / 7", opts)
	fmt.Println(v, v.Exact())
	// Output:
	// -529.07 false
}

func ExampleParse() {
	e, _ := calc.Parse("((1 + 2)) * (3 - (4 - 5))", nil)
	fmt.Println(e)
	v, _ := e.Eval()
	fmt.Println(v)
	// Output:
	// (1+2)*(3-(4-5))
	// 12
}
