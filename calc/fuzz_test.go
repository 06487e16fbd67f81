package calc

import (
	"errors"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzEval checks, on any input, that Eval returns a value or a listed error
// value and never panics; that Parse and Eval agree; and that printing the
// parsed tree and parsing it again gives the same tree and the same value.
// The seed corpus is in testdata/fuzz/FuzzEval; crashers found are kept there.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"1+2", "($100 + $250.75) * 20% - 12.5/4", "1,234.56", "-(-(-7))",
		"1/(0.1+0.2-0.3)", "1e308*10", "2 x 3", "5 % 3", "(123)", "1e-400",
		"100/7", "$ 100", "((((1))))", "1,,234", "sqrt(2)", "2**3", "\u00d7",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, src string, accounting bool) {
		opts := &Options{Accounting: accounting}
		v, err := Eval(src, opts)
		checkOutcome(t, src, err)
		e, perr := Parse(src, opts)
		if perr != nil {
			// What Parse refuses, Eval refuses the same way.
			if err == nil || perr.Error() != err.Error() {
				t.Fatalf("Parse(%q) err %v, Eval err %v", src, perr, err)
			}
			return
		}
		v2, err2 := e.Eval()
		sameOutcome(t, "Expr.Eval", src, v, err, v2, err2)

		printed := e.String()
		if utf8.RuneCountInString(printed) > utf8.RuneCountInString(src) {
			t.Fatalf("printed %q is longer than %q", printed, src)
		}
		e3, err := Parse(printed, opts)
		if err != nil {
			t.Fatalf("Parse(%q) printed from %q: %v", printed, src, err)
		}
		if again := e3.String(); again != printed {
			t.Fatalf("printing is not stable: %q -> %q -> %q", src, printed, again)
		}
		v3, err3 := e3.Eval()
		sameOutcome(t, "re-parsed "+printed, src, v, err2, v3, err3)
	})
}

func code(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func checkOutcome(t *testing.T, src string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Eval(%q) error %T %v is not an *Error", src, err, err)
	}
	if !slices.Contains(Codes, e.Code) {
		t.Fatalf("Eval(%q) code %q is not listed", src, e.Code)
	}
	if e.Msg == "" || e.Hint == "" {
		t.Fatalf("Eval(%q) error %+v lacks a message or hint", src, e)
	}
	if e.Pos < NoPos || e.Pos > len(src) {
		t.Fatalf("Eval(%q) error position %d is outside the input", src, e.Pos)
	}
}

func sameOutcome(t *testing.T, what, src string, v1 Value, err1 error, v2 Value, err2 error) {
	t.Helper()
	if code(err1) != code(err2) {
		t.Fatalf("%s of %q: code %q, want %q", what, src, code(err2), code(err1))
	}
	if err1 != nil {
		return
	}
	if v1.Rat().Cmp(v2.Rat()) != 0 || v1.String() != v2.String() || v1.Exact() != v2.Exact() {
		t.Fatalf("%s of %q: %s (exact %v), want %s (exact %v)", what, src, v2, v2.Exact(), v1, v1.Exact())
	}
}
