package calc

import "fmt"

// Code is a stable, machine-readable error code. Callers branch on codes,
// never on message text.
type Code string

// The error codes. They are part of the interface: never renamed, never reused.
const (
	CodeInvalidSyntax         Code = "invalid_syntax"          // malformed structure
	CodeUnsupportedSyntax     Code = "unsupported_syntax"      // valid elsewhere, outside this language
	CodeInvalidCurrencyMarker Code = "invalid_currency_marker" // '$' not directly before a number
	CodeExpressionTooLong     Code = "expression_too_long"     // more than Limits.MaxLength code points
	CodeExpressionTooComplex  Code = "expression_too_complex"  // more than Limits.MaxNodes nodes, or exact value over Limits.MaxBits
	CodeExpressionTooDeep     Code = "expression_too_deep"     // nesting deeper than Limits.MaxDepth
	CodeDivisionByZero        Code = "division_by_zero"        // divisor is exactly zero
	CodeNonFinite             Code = "non_finite"              // magnitude beyond float64's finite range
	CodeInvalidInput          Code = "invalid_input"           // not a string, not UTF-8, or bad options
)

// Codes lists every code the package can return, in documentation order.
var Codes = []Code{
	CodeInvalidSyntax, CodeUnsupportedSyntax, CodeInvalidCurrencyMarker,
	CodeExpressionTooLong, CodeExpressionTooComplex, CodeExpressionTooDeep,
	CodeDivisionByZero, CodeNonFinite, CodeInvalidInput,
}

// NoPos is the Pos of an error that no source position helps to explain.
const NoPos = -1

// Error is a refusal as a value: a stable code, a message, one concrete
// repair a model can act on, and the 0-based byte offset of the offending
// token (NoPos when no position helps).
type Error struct {
	Code Code
	Msg  string
	Hint string
	Pos  int
}

func (e *Error) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("%s at offset %d: %s", e.Code, e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &calc.Error{Code: calc.CodeDivisionByZero}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func errAt(code Code, pos int, msg, hint string) *Error {
	return &Error{Code: code, Msg: msg, Hint: hint, Pos: pos}
}
