package tools

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"airlock.dev/airlock/calc"
	"airlock.dev/airlock/tool"
)

// calculateSchema bounds the expression to calc's own length limit in
// characters; calc checks it again in code points.
var calculateSchema = json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"additionalProperties": false,
	"required": ["expression"],
	"properties": {
		"expression": {
			"type": "string",
			"maxLength": ` + strconv.Itoa(calc.DefaultMaxLength) + `,
			"description": "An arithmetic expression: numbers, + - * /, parentheses, $ before a number, % after one. Example: ($100 + $250.75) * 20%"
		}
	}
}`)

// Calculate returns the calculate tool: exact arithmetic with the calc
// language. A refusal carries calc's own code, message and hint.
func Calculate() tool.Tool {
	return tool.Tool{
		Name: "calculate",
		Description: "Evaluate an arithmetic expression exactly (decimal, no floating-point error). " +
			"Accepts numbers like 1,234.56, + - * / and parentheses, $ before a number and % after one (20% is 0.2). " +
			"No variables, functions or exponentiation. Returns the exact value; a value that does not terminate " +
			"is rounded to 34 significant digits and marked inexact.",
		Schema: calculateSchema,
		Risk:   tool.RiskLow,
		Effect: tool.EffectRead,
		Run:    runCalculate,
	}
}

func runCalculate(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var args struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tool.Result{}, err
	}
	prov := tool.Provenance{Tool: "calculate", Source: "calc"}
	v, err := calc.Eval(args.Expression, nil)
	if err != nil {
		var e *calc.Error
		if !errors.As(err, &e) {
			return tool.Result{}, err
		}
		msg := e.Msg
		if e.Pos >= 0 {
			msg += " (at offset " + strconv.Itoa(e.Pos) + ")"
		}
		r := tool.Fail(tool.Code(e.Code), msg, e.Hint)
		r.Provenance = prov
		return r, nil
	}
	content := v.String()
	if !v.Exact() {
		content += " (rounded to 34 significant digits)"
	}
	out := calculation{Value: v.String(), Exact: v.Exact()}
	if f := v.Float64(); !math.IsInf(f, 0) { // JSON has no infinity: a value past float64 has no float
		out.Float = &f
	}
	structured, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: content, Provenance: prov, Structured: structured}, nil
}

// calculation is calculate's result as an object: the exact decimal, the
// nearest float64 for programs that want a number (absent past float64's
// range), and whether the value is exact (false: rounded to 34
// significant digits).
type calculation struct {
	Value string   `json:"value"`
	Float *float64 `json:"float,omitempty"`
	Exact bool     `json:"exact"`
}
