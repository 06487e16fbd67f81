package calc_test

// spec_test.go is a conformance test written from the specification of the
// calc language (issue 2: "The language", "Numbers", "Currency", "Percent",
// "Accounting negatives", "Exactness", "Limits", "Error values"), not from
// the implementation. Where the specification leaves a detail open (for
// example which byte an unbalanced-parenthesis error points at), the case
// lists every reading the specification allows and says so.

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/calc"
)

// The hints the specification quotes.
const (
	hintTimes    = "Use '*' for multiplication, not 'x'"
	hintPower    = "Exponentiation is not supported; multiply instead"
	hintCurrency = "Use '$' only directly before a number"
	hintPercent  = "Percent must follow a number, as in 20%"
)

const (
	exactAny = iota // do not check Exact()
	exactYes
	exactNo
)

type valCase struct {
	name  string
	src   string
	opts  *calc.Options
	want  string
	exact int
}

type errCase struct {
	name string
	src  string
	opts *calc.Options
	code calc.Code
	hint string // the hint must contain this; "" means only non-empty
	pos  []int  // acceptable positions; nil means the spec implies none
}

func at(p ...int) []int { return p }

var accounting = &calc.Options{Accounting: true}

func round(places int, mode calc.RoundingMode) *calc.Options {
	return &calc.Options{Round: &calc.Rounding{Places: places, Mode: mode}}
}

func runVals(t *testing.T, cases []valCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := calc.Eval(c.src, c.opts)
			if err != nil {
				t.Fatalf("Eval(%.80q) error = %v, want value %q", c.src, err, c.want)
			}
			if got := v.String(); got != c.want {
				t.Errorf("Eval(%q).String() = %q, want %q", c.src, got, c.want)
			}
			switch c.exact {
			case exactYes:
				if !v.Exact() {
					t.Errorf("Eval(%q).Exact() = false, want true", c.src)
				}
			case exactNo:
				if v.Exact() {
					t.Errorf("Eval(%q).Exact() = true, want false", c.src)
				}
			}
		})
	}
}

func runErrs(t *testing.T, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := calc.Eval(c.src, c.opts)
			if err == nil {
				t.Fatalf("Eval(%.80q) = %q, want error %s", c.src, v.String(), c.code)
			}
			checkErr(t, c.src, err, c.code, c.hint, c.pos)
		})
	}
}

func checkErr(t *testing.T, src string, err error, code calc.Code, hint string, pos []int) {
	t.Helper()
	var e *calc.Error
	if !errors.As(err, &e) {
		t.Fatalf("Eval(%.80q) error %T %v, want *calc.Error", src, err, err)
	}
	if e.Code != code {
		t.Errorf("Eval(%.80q) code = %s (msg %q, hint %q, pos %d), want %s", src, e.Code, e.Msg, e.Hint, e.Pos, code)
	}
	if !slices.Contains(calc.Codes, e.Code) {
		t.Errorf("Eval(%.80q) code %q is not in calc.Codes", src, e.Code)
	}
	if e.Msg == "" {
		t.Errorf("Eval(%.80q) has an empty message", src)
	}
	if e.Hint == "" {
		t.Errorf("Eval(%.80q) has an empty hint", src)
	}
	if hint != "" && !strings.Contains(e.Hint, hint) {
		t.Errorf("Eval(%.80q) hint = %q, want it to contain %q", src, e.Hint, hint)
	}
	if pos != nil && !slices.Contains(pos, e.Pos) {
		t.Errorf("Eval(%.80q) pos = %d, want one of %v", src, e.Pos, pos)
	}
	if e.Pos != calc.NoPos && (e.Pos < 0 || e.Pos > len(src)) {
		t.Errorf("Eval(%.80q) pos = %d, outside the input", src, e.Pos)
	}
}

// ---------------------------------------------------------------- grammar

func TestSpecGrammar(t *testing.T) {
	runVals(t, []valCase{
		{"number", "7", nil, "7", exactYes},
		{"add", "1+2", nil, "3", exactYes},
		{"sub", "5-8", nil, "-3", exactYes},
		{"mul", "6*7", nil, "42", exactYes},
		{"div", "7/2", nil, "3.5", exactYes},
		{"mul before add", "1+2*3", nil, "7", exactYes},
		{"div before sub", "10-6/2", nil, "7", exactYes},
		{"sub left assoc", "10-4-3", nil, "3", exactYes},
		{"div left assoc", "100/10/5", nil, "2", exactYes},
		{"mixed left assoc", "8/2*4", nil, "16", exactYes},
		{"parens override", "(1+2)*3", nil, "9", exactYes},
		{"nested parens", "((2+3)*(4-1))/5", nil, "3", exactYes},
		{"unary minus", "-5", nil, "-5", exactYes},
		{"unary plus", "+5", nil, "5", exactYes},
		{"double unary minus", "--5", nil, "5", exactYes},
		{"unary after binary", "2*-3", nil, "-6", exactYes},
		{"unary minus paren", "-(2+3)", nil, "-5", exactYes},
		{"unary binds tighter than mul", "-2*3", nil, "-6", exactYes},
		{"sub of negative", "1--1", nil, "2", exactYes},
		{"plus plus", "1++1", nil, "2", exactYes},
		{"doc example", "($100 + $250.75) * 20%", nil, "70.15", exactYes},
	})
}

// ---------------------------------------------------------------- numbers

func TestSpecNumberForms(t *testing.T) {
	runVals(t, []valCase{
		{"integer", "1", nil, "1", exactYes},
		{"fraction", "1.5", nil, "1.5", exactYes},
		{"leading dot", ".5", nil, "0.5", exactYes},
		{"trailing dot", "5.", nil, "5", exactYes},
		{"exponent", "1e3", nil, "1000", exactYes},
		{"upper exponent negative", "2.5E-2", nil, "0.025", exactYes},
		{"exponent plus sign", "1e+3", nil, "1000", exactYes},
		{"exponent zero", "7e0", nil, "7", exactYes},
		{"trailing zeros dropped", "1.50", nil, "1.5", exactYes},
		{"zero", "0", nil, "0", exactYes},
		{"zero fraction", "0.0", nil, "0", exactYes},
		{"negative zero", "-0", nil, "0", exactYes},
		{"zero times negative", "0*-1", nil, "0", exactYes},
		{"many digits kept exactly", "1.00000000000000000000000000000000000001", nil, "1.00000000000000000000000000000000000001", exactYes},
		{"thousands", "1,234.56", nil, "1234.56", exactYes},
		{"thousands currency", "$1,234,567", nil, "1234567", exactYes},
		{"thousands one group", "12,345", nil, "12345", exactYes},
		{"thousands three digit lead", "123,456", nil, "123456", exactYes},
		{"thousands negative", "-1,234", nil, "-1234", exactYes},
		{"thousands in expression", "1,000+2,000*3", nil, "7000", exactYes},
	})
	runErrs(t, []errCase{
		// Which byte a bad grouping points at (the number or the comma) is
		// open, so these positions are not checked beyond being in range.
		{"group of two", "1,23", nil, calc.CodeInvalidSyntax, "", nil},
		{"group of four", "12,3456", nil, calc.CodeInvalidSyntax, "", nil},
		{"double comma", "1,,234", nil, calc.CodeInvalidSyntax, "", nil},
		{"leading comma", ",123", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"short last group", "1,234,56", nil, calc.CodeInvalidSyntax, "", nil},
		{"lead group of four", "1234,567", nil, calc.CodeInvalidSyntax, "", nil},
		{"trailing comma", "1,234,", nil, calc.CodeInvalidSyntax, "", nil},
		{"comma in fraction", "1,234.5,6", nil, calc.CodeInvalidSyntax, "", nil},
		{"lone dot", ".", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"exponent without digits", "1e", nil, calc.CodeInvalidSyntax, "", at(0, 1)},
		{"exponent sign without digits", "1e+", nil, calc.CodeInvalidSyntax, "", at(0, 1)},
		{"two dots", "1.2.3", nil, calc.CodeInvalidSyntax, "", at(0, 3)},
		{"fractional exponent", "1e3.5", nil, calc.CodeInvalidSyntax, "", at(0, 3)},
		{"two numbers side by side", "1 2", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"two decimals side by side", "1.5 .5", nil, calc.CodeInvalidSyntax, "", at(4)},
		{"two currency side by side", "$1 $2", nil, calc.CodeInvalidSyntax, "", at(3)},
		// Hex, octal and binary literals and _ groups are literals other
		// languages accept: unsupported_syntax.
		{"hex", "0x10", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"hex letters", "0xFF", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"octal", "0o17", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"binary", "0b101", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"underscore group", "1_000", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"underscore groups", "1_000_000", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
	})
}

func TestSpecWhitespace(t *testing.T) {
	runVals(t, []valCase{
		{"newline between tokens", "1\n+2", nil, "3", exactYes},
		{"tabs", "\t1\t+\t2\t", nil, "3", exactYes},
		{"CR LF", "1\r\n+\r\n2", nil, "3", exactYes},
		{"lone CR", "1\r+\r2", nil, "3", exactYes},
		{"leading and trailing", "   1+2   ", nil, "3", exactYes},
		{"inside parens", "( 1 + 2 ) * 3", nil, "9", exactYes},
		{"newlines inside parens", "(\n1\n+\n2\n)\n*\n3", nil, "9", exactYes},
		{"around unary", "- 5", nil, "-5", exactYes},
		{"all four kinds", " \t\r\n7 \t\r\n", nil, "7", exactYes},
	})
	runErrs(t, []errCase{
		{"NUL", "1\x00+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"trailing NUL", "1+2\x00", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"SOH", "\x01", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"vertical tab", "1\v+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"form feed", "1\f+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"escape", "\x1b[31m1", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"DEL", "1+\x7f2", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"C1 NEL", "1\u0085+2", nil, calc.CodeInvalidSyntax, "", at(1)},
	})
}

func TestSpecNonASCII(t *testing.T) {
	runErrs(t, []errCase{
		{"times sign", "3 × 4", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"division sign", "10 ÷ 2", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"minus sign", "5 − 3", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"middle dot", "2·3", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"fullwidth plus", "1＋2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"arabic-indic digits", "١+٢", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"arabic-indic digit after ascii", "1+٢", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"devanagari digit", "१", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"fullwidth digit", "１+2", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"NBSP", "1\u00a0+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"ideographic space", "1\u3000+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"thin space", "1\u2009+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"zero width space", "1+2\u200b", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"BOM", "\ufeff1+2", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"line separator", "1\u2028+2", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"euro", "€100", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"pound", "£5", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"emoji", "1+😀", nil, calc.CodeInvalidSyntax, "", at(2)},
	})
}

func TestSpecInvalidInput(t *testing.T) {
	// Position: no token is well defined in bytes that are not UTF-8, so
	// only "in range or NoPos" is checked.
	runErrs(t, []errCase{
		{"bad byte", "1+\xff", nil, calc.CodeInvalidInput, "", nil},
		{"bad byte first", "\xff", nil, calc.CodeInvalidInput, "", nil},
		{"truncated sequence", "1+\xc3", nil, calc.CodeInvalidInput, "", nil},
		{"surrogate", "\xed\xa0\x80", nil, calc.CodeInvalidInput, "", nil},
		{"overlong", "\xc0\xb1", nil, calc.CodeInvalidInput, "", nil},
	})
}

// ---------------------------------------------------------------- currency

func TestSpecCurrency(t *testing.T) {
	runVals(t, []valCase{
		{"dollar", "$100", nil, "100", exactYes},
		{"dollar in parens", "($100)", nil, "100", exactYes},
		{"negative dollar", "-$5", nil, "-5", exactYes},
		{"dollar space", "$ 100", nil, "100", exactYes},
		{"dollar tab", "$\t100", nil, "100", exactYes},
		{"dollar newline", "$\n100", nil, "100", exactYes},
		{"dollar fraction", "$250.75", nil, "250.75", exactYes},
		{"dollar leading dot", "$.5", nil, "0.5", exactYes},
		{"dollar after operator", "2*$3", nil, "6", exactYes},
		{"dollar after space", "2 * $3", nil, "6", exactYes},
		{"dollar minus dollar", "$5-$3", nil, "2", exactYes},
		{"plus dollar", "+$5", nil, "5", exactYes},
		{"dollar thousands", "$1,234,567", nil, "1234567", exactYes},
	})
	runErrs(t, []errCase{
		{"double dollar", "$$100", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"digit before dollar", "1$100", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(1)},
		{"dollar name", "$total", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"trailing dollar", "100$", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(3)},
		{"dollar minus", "$-5", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"dollar plus", "$+5", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"lone dollar", "$", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"dollar paren", "$(5)", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(0)},
		{"dot before dollar", "1.$5", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(2)},
		{"paren before dollar", "(1)$5", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(3)},
		{"dollar at end after op", "5*$", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(2)},
	})
}

// ---------------------------------------------------------------- percent

func TestSpecPercent(t *testing.T) {
	runVals(t, []valCase{
		{"twenty percent", "20%", nil, "0.2", exactYes},
		{"percent of dollars", "$100 * 20%", nil, "20", exactYes},
		{"space before percent", "20 %", nil, "0.2", exactYes},
		{"newline before percent", "20\n%", nil, "0.2", exactYes},
		{"hundred percent", "100%", nil, "1", exactYes},
		{"fractional percent", "1.5%", nil, "0.015", exactYes},
		{"small percent", "0.1%", nil, "0.001", exactYes},
		{"exponent percent", "1e2%", nil, "1", exactYes},
		{"thousands percent", "1,000%", nil, "10", exactYes},
		{"negative percent", "-20%", nil, "-0.2", exactYes},
		{"percent sum", "20%+5%", nil, "0.25", exactYes},
		{"percent times number", "50%*200", nil, "100", exactYes},
		{"percent in parens", "(20%)", nil, "0.2", exactYes},
	})
	runErrs(t, []errCase{
		// "5 % 3": the offending token is either the '%' used as modulo (2)
		// or the '3' that follows a percent literal (4); both are readings.
		{"modulo spaced", "5 % 3", nil, calc.CodeInvalidSyntax, "", at(2, 4)},
		{"modulo tight", "5%3", nil, calc.CodeInvalidSyntax, "", at(1, 2)},
		{"percent after paren", "(20)%", nil, calc.CodeInvalidSyntax, hintPercent, at(4)},
		{"leading percent", "%20", nil, calc.CodeInvalidSyntax, hintPercent, at(0)},
		{"double percent", "20%%", nil, calc.CodeInvalidSyntax, hintPercent, at(3)},
		{"lone percent", "%", nil, calc.CodeInvalidSyntax, hintPercent, at(0)},
		{"percent after operator", "1+%", nil, calc.CodeInvalidSyntax, hintPercent, at(2)},
	})
}

// ---------------------------------------------------------------- accounting

func TestSpecAccounting(t *testing.T) {
	runVals(t, []valCase{
		{"on literal", "(123)", accounting, "-123", exactYes},
		{"on currency", "($1,234.50)", accounting, "-1234.5", exactYes},
		{"on times two", "(5)*2", accounting, "-10", exactYes},
		{"on minus paren", "-(123)", accounting, "123", exactYes},
		{"on after operator", "2*(3)", accounting, "-6", exactYes},
		{"on exponent literal", "(1.5e3)", accounting, "-1500", exactYes},
		{"on zero", "(0)", accounting, "0", exactYes},
		{"on expression not literal", "(1+2)", accounting, "3", exactYes},
		{"on unary minus not literal", "(-5)", accounting, "-5", exactYes},
		{"off literal", "(123)", nil, "123", exactYes},
		{"off currency", "($1,234.50)", nil, "1234.5", exactYes},
		{"off times two", "(5)*2", nil, "10", exactYes},
		{"off minus paren", "-(123)", nil, "-123", exactYes},
		{"off empty options", "(123)", &calc.Options{}, "123", exactYes},
		{"on with rounding", "($1,234.50)", &calc.Options{Accounting: true,
			Round: &calc.Rounding{Places: 2, Mode: calc.HalfEven}}, "-1234.50", exactAny},
	})
}

// ---------------------------------------------------------------- exactness

func TestSpecExactness(t *testing.T) {
	runVals(t, []valCase{
		{"point one plus point two", "0.1+0.2", nil, "0.3", exactYes},
		{"third times three", "1/3*3", nil, "1", exactYes},
		{"third", "1/3", nil, "0.3333333333333333333333333333333333", exactNo},
		{"two thirds", "2/3", nil, "0.6666666666666666666666666666666667", exactNo},
		{"negative two thirds", "-2/3", nil, "-0.6666666666666666666666666666666667", exactNo},
		{"seventh", "1/7", nil, "0.1428571428571428571428571428571429", exactNo},
		{"ninth", "1/9", nil, "0.1111111111111111111111111111111111", exactNo},
		{"ten thirds", "10/3", nil, "3.333333333333333333333333333333333", exactNo},
		{"hundred sevenths", "100/7", nil, "14.28571428571428571428571428571429", exactNo},
		{"1e21 thirds plain", "1e21/3", nil, "333333333333333333333.3333333333333", exactNo},
		{"1e22 thirds scientific", "1e22/3", nil, "3.333333333333333333333333333333333e+21", exactNo},
		{"tiny thirds", "1e-10/3", nil, "3.333333333333333333333333333333333e-11", exactNo},
		{"thirds sum", "1/3+1/3+1/3", nil, "1", exactYes},
		{"thirds cancel", "1/3-1/3", nil, "0", exactYes},
		{"sixth times six", "1/6*6", nil, "1", exactYes},
		{"point one times three", "0.1*3", nil, "0.3", exactYes},
		{"one minus point nine", "1-0.9", nil, "0.1", exactYes},
		{"cancel to zero", "0.3-0.1-0.2", nil, "0", exactYes},
		{"terminating division", "10/4", nil, "2.5", exactYes},
		{"binary fraction", "1/1024", nil, "0.0009765625", exactYes},
		{"long terminating", "1/1073741824", nil, "9.31322574615478515625e-10", exactYes},
		{"tiny kept", "1e-400", nil, "1e-400", exactYes},
		{"tiny scaled", "1e-400*1e10", nil, "1e-390", exactYes},
		{"tiny squared", "1e-400*1e-400", nil, "1e-800", exactYes},
		{"tiny divided", "1e-400/1e300", nil, "1e-700", exactYes},
		{"tiny back to one", "1e-400*1e200*1e200", nil, "1", exactYes},
		{"max float literal", "1.7976931348623157e308", nil, "1.7976931348623157e+308", exactYes},
	})
}

func TestSpecMaxFloatExact(t *testing.T) {
	// The exact value of math.MaxFloat64 is a finite float64: allowed,
	// and printed as its shortest exact decimal in scientific form.
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 1024-53))
	digits := max.String()
	want := digits[:1] + "." + strings.TrimRight(digits[1:], "0") + "e+" + strconv.Itoa(len(digits)-1)
	runVals(t, []valCase{{"MaxFloat64 exact", digits, nil, want, exactYes}})

	// 2^1024 exceeds float64's finite range.
	over := new(big.Int).Lsh(big.NewInt(1), 1024).String()
	runErrs(t, []errCase{{"2^1024 literal", over, nil, calc.CodeNonFinite, "", at(0)}})
}

func TestSpecDivisionByZero(t *testing.T) {
	// pos: the '/' or the start of the divisor are both "the offending
	// token".
	runErrs(t, []errCase{
		{"one over zero", "1/0", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"exact zero from decimals", "1/(0.1+0.2-0.3)", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"zero over zero", "0/0", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"zero point zero", "1/0.0", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"one minus one", "1/(1-1)", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"negative zero", "1/-0", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"zero percent", "1/0%", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"zero exponent", "1/0e5", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"currency zero", "$5/$0", nil, calc.CodeDivisionByZero, "", at(2, 3)},
		{"thirds cancel", "1/(1/3*3-1)", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"spaced", "10 / (2 - 2)", nil, calc.CodeDivisionByZero, "", at(3, 5)},
	})
}

func TestSpecNonFinite(t *testing.T) {
	runErrs(t, []errCase{
		{"literal beyond range", "1e309", nil, calc.CodeNonFinite, "", at(0)},
		{"literal 2e308", "2e308", nil, calc.CodeNonFinite, "", at(0)},
		{"literal 1.8e308", "1.8e308", nil, calc.CodeNonFinite, "", at(0)},
		{"negative literal beyond range", "-1e309", nil, calc.CodeNonFinite, "", at(0, 1)},
		{"literal 1e400", "1e400", nil, calc.CodeNonFinite, "", at(0)},
		{"exponent beyond 400", "1e401", nil, calc.CodeNonFinite, "", at(0)},
		{"exponent beyond -400", "1e-401", nil, calc.CodeNonFinite, "", at(0)},
		{"huge exponent", "1e99999999999999999999", nil, calc.CodeNonFinite, "", at(0)},
		{"huge negative exponent", "1e-99999999999999999999", nil, calc.CodeNonFinite, "", at(0)},
		{"literal in expression", "1+1e309", nil, calc.CodeNonFinite, "", at(2)},
		{"intermediate product", "1e308*10", nil, calc.CodeNonFinite, "", nil},
		{"intermediate sum", "1e308+1e308", nil, calc.CodeNonFinite, "", nil},
		{"intermediate negative", "-1e308-1e308", nil, calc.CodeNonFinite, "", nil},
		{"intermediate then back", "1e308*10/100", nil, calc.CodeNonFinite, "", nil},
		{"intermediate squared", "1e200*1e200/1e200", nil, calc.CodeNonFinite, "", nil},
		{"divide by tiny", "1/1e-309", nil, calc.CodeNonFinite, "", nil},
		{"divide by tiny kept value", "1/1e-400", nil, calc.CodeNonFinite, "", nil},
		{"divide by tiny squared", "1/(1e-400*1e-400)", nil, calc.CodeNonFinite, "", nil},
	})
}

func TestSpecRounding(t *testing.T) {
	he, hu := calc.HalfEven, calc.HalfUp
	runVals(t, []valCase{
		{"5 to 2 places", "5", round(2, he), "5.00", exactAny},
		{"5 to 2 places half-up", "5", round(2, hu), "5.00", exactAny},
		{"1.1 to 2 places", "1.1", round(2, he), "1.10", exactAny},
		{"2.675 half-even", "2.675", round(2, he), "2.68", exactAny},
		{"2.675 half-up", "2.675", round(2, hu), "2.68", exactAny},
		{"2.665 half-even", "2.665", round(2, he), "2.66", exactAny},
		{"2.665 half-up", "2.665", round(2, hu), "2.67", exactAny},
		{"1.005 half-even", "1.005", round(2, he), "1.00", exactAny},
		{"1.005 half-up", "1.005", round(2, hu), "1.01", exactAny},
		{"0.005 half-even", "0.005", round(2, he), "0.00", exactAny},
		{"0.005 half-up", "0.005", round(2, hu), "0.01", exactAny},
		{"0.015 half-even", "0.015", round(2, he), "0.02", exactAny},
		{"0.125 half-even", "0.125", round(2, he), "0.12", exactAny},
		{"0.125 half-up", "0.125", round(2, hu), "0.13", exactAny},
		{"eighth half-even", "1/8", round(2, he), "0.12", exactAny},
		{"eighth half-up", "1/8", round(2, hu), "0.13", exactAny},
		{"2.5 half-even", "2.5", round(0, he), "2", exactAny},
		{"2.5 half-up", "2.5", round(0, hu), "3", exactAny},
		{"3.5 half-even", "3.5", round(0, he), "4", exactAny},
		{"-2.5 half-even", "-2.5", round(0, he), "-2", exactAny},
		{"-2.5 half-up", "-2.5", round(0, hu), "-3", exactAny},
		{"-2.665 half-up", "-2.665", round(2, hu), "-2.67", exactAny},
		{"123.456 to 0", "123.456", round(0, he), "123", exactAny},
		{"third to 2", "1/3", round(2, he), "0.33", exactAny},
		{"two thirds to 2", "2/3", round(2, he), "0.67", exactAny},
		{"two thirds to 40 from exact value", "2/3", round(40, he), "0." + strings.Repeat("6", 39) + "7", exactAny},
		{"money", "$1,234.5", round(2, he), "1234.50", exactAny},
		{"percent of money", "$100 * 20%", round(2, he), "20.00", exactAny},
		{"doc example", "($100 + $250.75) * 20%", round(2, hu), "70.15", exactAny},
	})
}

func TestSpecOutputForm(t *testing.T) {
	runVals(t, []valCase{
		{"0.3", "0.3", nil, "0.3", exactYes},
		{"20", "20", nil, "20", exactYes},
		{"-12.5", "-12.5", nil, "-12.5", exactYes},
		{"100 keeps zeros", "100", nil, "100", exactYes},
		{"1e20 plain", "1e20", nil, "100000000000000000000", exactYes},
		{"21 nines plain", "999999999999999999999", nil, "999999999999999999999", exactYes},
		{"21 digits plain", "123456789012345678901", nil, "123456789012345678901", exactYes},
		{"1e21 scientific", "1e21", nil, "1e+21", exactYes},
		{"22 digits scientific", "1234567890123456789012", nil, "1.234567890123456789012e+21", exactYes},
		{"1e-6 plain", "1e-6", nil, "0.000001", exactYes},
		{"1e-7 plain", "1e-7", nil, "0.0000001", exactYes},
		{"1.5e-7 plain", "1.5e-7", nil, "0.00000015", exactYes},
		{"1e-8 scientific", "1e-8", nil, "1e-8", exactYes},
		{"9.9e-8 scientific", "9.9e-8", nil, "9.9e-8", exactYes},
		{"1e300", "1e300", nil, "1e+300", exactYes},
		{"-1e300", "-1e300", nil, "-1e+300", exactYes},
		{"123e300", "123e300", nil, "1.23e+302", exactYes},
		{"1.25e-10", "1.25e-10", nil, "1.25e-10", exactYes},
		{"-1.5e-8", "-1.5e-8", nil, "-1.5e-8", exactYes},
		{"1e-300", "1e-300", nil, "1e-300", exactYes},
	})
}

// ---------------------------------------------------------------- limits

func parens(n int, inner string) string {
	return strings.Repeat("(", n) + inner + strings.Repeat(")", n)
}

// nodeExpr builds a flat sum of k terms, the first p of which are the
// percent literal 1% and the first u of which carry a unary minus. Its node
// count is k + 2(k-1) + 3p + 2u and its depth at most 1.
func nodeExpr(k, p, u int, num string) (src string, nodes int, want string) {
	terms := make([]string, k)
	sum := new(big.Rat)
	for i := range terms {
		term, v := num, big.NewRat(1, 1)
		if i < p {
			term, v = num+"%", big.NewRat(1, 100)
		}
		if i < u {
			term, v = "-"+term, new(big.Rat).Neg(v)
		}
		terms[i] = term
		sum.Add(sum, v)
	}
	s := strings.TrimRight(strings.TrimRight(sum.FloatString(4), "0"), ".")
	return strings.Join(terms, "+"), k + 2*(k-1) + 3*p + 2*u, s
}

func TestSpecLimitNodes(t *testing.T) {
	for _, c := range []struct {
		name    string
		k, p, u int
		num     string
		nodes   int
	}{
		{"chain of 171", 171, 0, 0, "1", 511},
		{"chain with two unary", 170, 0, 2, "1", 512},
		{"chain with percent and unary", 169, 1, 2, "1", 512},
		{"percents with unary", 85, 85, 2, "1", 512},
		{"currency chain with unary", 170, 0, 2, "$1", 512},
		{"chain with one unary", 171, 0, 1, "1", 513},
		{"chain with percent and one unary", 170, 1, 1, "1", 513},
		{"percents and a number with unary", 86, 85, 1, "1", 513},
		{"chain with four unary", 169, 0, 4, "1", 513},
		{"chain of 172", 172, 0, 0, "1", 514},
		{"currency chain over", 171, 0, 1, "$1", 513},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, nodes, want := nodeExpr(c.k, c.p, c.u, c.num)
			if nodes != c.nodes {
				t.Fatalf("test bug: %d nodes, expected %d", nodes, c.nodes)
			}
			v, err := calc.Eval(src, nil)
			if nodes <= calc.DefaultMaxNodes {
				if err != nil {
					t.Fatalf("%d nodes: error %v, want value %s", nodes, err, want)
				}
				if v.String() != want {
					t.Fatalf("%d nodes: got %s, want %s", nodes, v.String(), want)
				}
				return
			}
			if err == nil {
				t.Fatalf("%d nodes: got %s, want expression_too_complex", nodes, v.String())
			}
			checkErr(t, src, err, calc.CodeExpressionTooComplex, "", nil)
		})
	}

	// Parentheses add no nodes.
	t.Run("parenthesised terms 512", func(t *testing.T) {
		src, _, want := nodeExpr(170, 0, 2, "1")
		terms := strings.Split(src, "+")
		for i := range terms {
			terms[i] = "(" + terms[i] + ")"
		}
		v, err := calc.Eval("("+strings.Join(terms, "+")+")", nil)
		if err != nil || v.String() != want {
			t.Fatalf("got %v, %v; want %s", v, err, want)
		}
	})
	t.Run("multiplication 511", func(t *testing.T) {
		v, err := calc.Eval(strings.Repeat("1*", 170)+"1", nil)
		if err != nil || v.String() != "1" {
			t.Fatalf("got %v, %v; want 1", v, err)
		}
	})
	t.Run("flat chain of 255 additions is too complex, not too deep", func(t *testing.T) {
		src := strings.Repeat("1+", 255) + "1"
		_, err := calc.Eval(src, nil)
		checkErr(t, src, err, calc.CodeExpressionTooComplex, "", nil)
	})
	t.Run("custom MaxNodes", func(t *testing.T) {
		lim := func(n int) *calc.Options { return &calc.Options{Limits: calc.Limits{MaxNodes: n}} }
		for _, c := range []struct {
			src   string
			limit int
			want  string // "" means expression_too_complex
		}{
			{"1", 1, "1"},
			{"-1", 3, "-1"},
			{"-1", 2, ""},
			{"1+2", 4, "3"},
			{"1+2", 3, ""},
			{"1+-2", 6, "-1"},
			{"1+-2", 5, ""},
			{"2%", 4, "0.02"},
			{"2%", 3, ""},
			{"-2%", 6, "-0.02"},
			{"-2%", 5, ""},
			{"1+2%", 7, "1.02"},
			{"1+2%", 6, ""},
			{"(((1)))", 1, "1"},
		} {
			v, err := calc.Eval(c.src, lim(c.limit))
			if c.want == "" {
				checkErr(t, c.src, err, calc.CodeExpressionTooComplex, "", nil)
			} else if err != nil || v.String() != c.want {
				t.Errorf("Eval(%.80q) under MaxNodes %d = %v, %v; want %s", c.src, c.limit, v, err, c.want)
			}
		}
	})
}

func TestSpecLimitDepth(t *testing.T) {
	runVals(t, []valCase{
		{"64 parens", parens(64, "1"), nil, "1", exactYes},
		{"64 unary minus", strings.Repeat("-", 64) + "1", nil, "1", exactYes},
		{"64 unary plus", strings.Repeat("+", 64) + "1", nil, "1", exactYes},
		{"64 spaced unary", strings.Repeat("- ", 64) + "1", nil, "1", exactYes},
		{"32 minus-paren pairs", strings.Repeat("-(", 32) + "1" + strings.Repeat(")", 32), nil, "1", exactYes},
		{"63 parens around unary", parens(63, "-1"), nil, "-1", exactYes},
		{"64 parens after a term", "1+" + parens(64, "1"), nil, "2", exactYes},
		{"64 parens around percent", parens(64, "20%"), nil, "0.2", exactYes},
		{"64 parens around currency", parens(64, "$5"), nil, "5", exactYes},
		{"64 parens around a sum", parens(64, "1+2"), nil, "3", exactYes},
		{"flat chain of 255 additions has no depth", strings.Repeat("1+", 255) + "1",
			&calc.Options{Limits: calc.Limits{MaxNodes: 10000, MaxDepth: 1}}, "256", exactYes},
		{"MaxDepth 1 one paren", "(1)", &calc.Options{Limits: calc.Limits{MaxDepth: 1}}, "1", exactYes},
		{"MaxDepth 1 one unary", "-1", &calc.Options{Limits: calc.Limits{MaxDepth: 1}}, "-1", exactYes},
	})
	runErrs(t, []errCase{
		{"65 parens", parens(65, "1"), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"65 unary minus", strings.Repeat("-", 65) + "1", nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"65 spaced unary", strings.Repeat("- ", 65) + "1", nil, calc.CodeExpressionTooDeep, "", at(128)},
		{"mix to 65", strings.Repeat("-(", 32) + "-1" + strings.Repeat(")", 32), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"64 parens around unary", parens(64, "-1"), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"65 parens after a term", "1+" + parens(65, "1"), nil, calc.CodeExpressionTooDeep, "", at(66)},
		{"4096 open parens", strings.Repeat("(", 4096), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"4096 minus signs", strings.Repeat("-", 4096), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"MaxDepth 1 two parens", "((1))", &calc.Options{Limits: calc.Limits{MaxDepth: 1}}, calc.CodeExpressionTooDeep, "", at(1)},
		{"MaxDepth 1 two unary", "--1", &calc.Options{Limits: calc.Limits{MaxDepth: 1}}, calc.CodeExpressionTooDeep, "", at(1)},
		{"MaxDepth 1 paren unary", "(-1)", &calc.Options{Limits: calc.Limits{MaxDepth: 1}}, calc.CodeExpressionTooDeep, "", at(1)},
	})
}

func TestSpecLimitLength(t *testing.T) {
	runVals(t, []valCase{
		{"4096 code points", "1" + strings.Repeat(" ", 4095), nil, "1", exactYes},
		{"MaxLength 8 at limit", "1+2+3+45", &calc.Options{Limits: calc.Limits{MaxLength: 8}}, "51", exactYes},
	})
	runErrs(t, []errCase{
		{"4097 code points", "1" + strings.Repeat(" ", 4096), nil, calc.CodeExpressionTooLong, "", nil},
		{"4097 digits", strings.Repeat("1", 4097), nil, calc.CodeExpressionTooLong, "", nil},
		{"4097 parens before depth", strings.Repeat("(", 4097), nil, calc.CodeExpressionTooLong, "", nil},
		{"non-ASCII first, 4097 code points", "×" + strings.Repeat("1", 4096), nil, calc.CodeExpressionTooLong, "", nil},
		{"4097 times signs", strings.Repeat("×", 4097), nil, calc.CodeExpressionTooLong, "", nil},
		{"4097 emoji", strings.Repeat("😀", 4097), nil, calc.CodeExpressionTooLong, "", nil},
		{"syntax error first, 4097 code points", ")" + strings.Repeat("1", 4096), nil, calc.CodeExpressionTooLong, "", nil},
		{"currency error first, 4097 code points", "$$" + strings.Repeat(" ", 4095), nil, calc.CodeExpressionTooLong, "", nil},
		// Bytes are not code points: these are short enough.
		{"4096 code points 4097 bytes", "1" + strings.Repeat(" ", 4094) + "×", nil, calc.CodeInvalidSyntax, "", at(4095)},
		{"2049 times signs", strings.Repeat("×", 2049), nil, calc.CodeInvalidSyntax, "", at(0)},
		{"1025 emoji", strings.Repeat("😀", 1025), nil, calc.CodeInvalidSyntax, "", at(0)},
		{"MaxLength 8 over", "1+2+3+456", &calc.Options{Limits: calc.Limits{MaxLength: 8}}, calc.CodeExpressionTooLong, "", nil},
	})
}

func TestSpecLongLiteralIsFast(t *testing.T) {
	frac := "0." + strings.Repeat("1234567890", 410)[:4094]
	check := func(name, src string, f func(v calc.Value, err error)) {
		t.Run(name, func(t *testing.T) {
			if n := len([]rune(src)); n > 4096 {
				t.Fatalf("test bug: %d code points", n)
			}
			best := time.Hour
			var v calc.Value
			var err error
			for range 5 {
				start := time.Now()
				v, err = calc.Eval(src, nil)
				best = min(best, time.Since(start))
			}
			f(v, err)
			// A hang guard, not a speed figure: the margin is generous.
			if best > time.Second {
				t.Errorf("Eval of %d bytes took %v: linear work should take far less", len(src), best)
			}
		})
	}
	// A 4096-digit integer is beyond float64's range.
	check("4096-digit integer", "1"+strings.Repeat("0", 4095), func(v calc.Value, err error) {
		checkErr(t, "4096-digit integer", err, calc.CodeNonFinite, "", at(0))
	})
	check("4096-digit nines", strings.Repeat("9", 4096), func(v calc.Value, err error) {
		checkErr(t, "4096 nines", err, calc.CodeNonFinite, "", at(0))
	})
	check("4094 fraction digits", frac, func(v calc.Value, err error) {
		if err != nil {
			t.Fatalf("error %v, want the exact value", err)
		}
		want := strings.TrimRight(frac, "0")
		if v.String() != want || !v.Exact() {
			t.Fatalf("got %.40s... (len %d, exact %v), want %.40s... (len %d)", v.String(), len(v.String()), v.Exact(), want, len(want))
		}
	})
	check("4096-char grouped integer", "1"+strings.Repeat(",000", 1023), func(v calc.Value, err error) {
		checkErr(t, "grouped", err, calc.CodeNonFinite, "", at(0))
	})
	check("long exponent", "1e"+strings.Repeat("9", 4094), func(v calc.Value, err error) {
		checkErr(t, "long exponent", err, calc.CodeNonFinite, "", at(0))
	})
	check("long negative exponent", "1e-"+strings.Repeat("9", 4093), func(v calc.Value, err error) {
		checkErr(t, "long negative exponent", err, calc.CodeNonFinite, "", at(0))
	})
}

// TestSpecPathological: every input is bounded work and ends in a value or
// a listed error.
func TestSpecPathological(t *testing.T) {
	for _, src := range []string{
		strings.Repeat("(", 4096), strings.Repeat(")", 4096), strings.Repeat("-", 4096),
		strings.Repeat("1+", 2048), strings.Repeat("$", 4096), strings.Repeat("%", 4096),
		strings.Repeat("1", 4096), strings.Repeat(",", 4096), strings.Repeat("1,", 2048),
		strings.Repeat("1e", 2048), strings.Repeat(".", 4096), strings.Repeat("9.", 2048),
		strings.Repeat("1/3*", 1023) + "1", strings.Repeat("1e-400*", 585) + "1",
		strings.Repeat("0.1234567/", 400) + "7", strings.Repeat("(1/7+", 60) + "1" + strings.Repeat(")", 60),
		strings.Repeat(" ", 4096), strings.Repeat("x", 4096), strings.Repeat("×", 4096),
		strings.Repeat("-(", 2048), strings.Repeat("1%", 2048), strings.Repeat("$1%", 1365),
	} {
		start := time.Now()
		v, err := calc.Eval(src, nil)
		if d := time.Since(start); d > 2*time.Second { // a hang guard with a generous margin
			t.Errorf("Eval(%.20q...) took %v", src, d)
		}
		if err != nil {
			checkErr(t, src, err, errCode(err), "", nil)
		} else if v.String() == "" {
			t.Errorf("Eval(%.20q...) printed an empty value", src)
		}
	}
}

func errCode(err error) calc.Code {
	var e *calc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ---------------------------------------------------------------- model mistakes

func TestSpecModelMistakes(t *testing.T) {
	runErrs(t, []errCase{
		{"2 x 3", "2 x 3", nil, calc.CodeInvalidSyntax, hintTimes, at(2)},
		{"2x3", "2x3", nil, calc.CodeInvalidSyntax, hintTimes, at(1)},
		{"2 x3", "2 x3", nil, calc.CodeInvalidSyntax, hintTimes, at(2)},
		{"2x 3", "2x 3", nil, calc.CodeInvalidSyntax, hintTimes, at(1)},
		{"(1+1) x 3", "(1+1) x 3", nil, calc.CodeInvalidSyntax, hintTimes, at(6)},
		{"2^3", "2^3", nil, calc.CodeUnsupportedSyntax, hintPower, at(1)},
		{"2 ^ 3", "2 ^ 3", nil, calc.CodeUnsupportedSyntax, hintPower, at(2)},
		{"2**3", "2**3", nil, calc.CodeUnsupportedSyntax, hintPower, at(1)},
		{"2 ** 3", "2 ** 3", nil, calc.CodeUnsupportedSyntax, hintPower, at(2)},
		{"7 // 2", "7 // 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"7 mod 2", "7 mod 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"5 % 3", "5 % 3", nil, calc.CodeInvalidSyntax, "", at(2, 4)},
		{"sqrt(4)", "sqrt(4)", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"abs(-1)", "abs(-1)", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"max(1,2)", "max(1,2)", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"pi*2", "pi*2", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"2*pi", "2*pi", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"2 * x", "2 * x", nil, calc.CodeUnsupportedSyntax, "", at(4)},
		{"math.pi", "math.pi", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"e", "e", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"Infinity", "Infinity", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"NaN", "NaN", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"1,000,00", "1,000,00", nil, calc.CodeInvalidSyntax, "", nil},
		{"€100", "€100", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"100 USD", "100 USD", nil, calc.CodeUnsupportedSyntax, "", at(4)},
		{"3 × 4", "3 × 4", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"10 ÷ 2", "10 ÷ 2", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"5 − 3", "5 − 3", nil, calc.CodeInvalidSyntax, "", at(2)},
		{"50% of 200", "50% of 200", nil, calc.CodeUnsupportedSyntax, "", at(4)},
		// Unclosed '(': the paren or the end of input.
		{"(1+2", "(1+2", nil, calc.CodeInvalidSyntax, "", at(0, 4)},
		{"1+2)", "1+2)", nil, calc.CodeInvalidSyntax, "", at(3)},
		// Dangling operator: the operator or the end of input.
		{"1+", "1+", nil, calc.CodeInvalidSyntax, "", at(1, 2)},
		{"1*", "1*", nil, calc.CodeInvalidSyntax, "", at(1, 2)},
		{"(", "(", nil, calc.CodeInvalidSyntax, "after '('", at(0, 1)},
		{"1+(", "1+(", nil, calc.CodeInvalidSyntax, "after '('", at(2, 3)},
		{"((", "((", nil, calc.CodeInvalidSyntax, "after '('", at(1, 2)},
		{"*3", "*3", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"/3", "/3", nil, calc.CodeInvalidSyntax, "", at(0)},
		{"1 + * 2", "1 + * 2", nil, calc.CodeInvalidSyntax, "", at(4)},
		{"()", "()", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"2(3+4)", "2(3+4)", nil, calc.CodeInvalidSyntax, "", at(1)},
		{"(2)(3)", "(2)(3)", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"(2)3", "(2)3", nil, calc.CodeInvalidSyntax, "", at(3)},
		{"empty", "", nil, calc.CodeInvalidSyntax, "", at(calc.NoPos, 0)},
		{"only spaces", "  \n\t ", nil, calc.CodeInvalidSyntax, "", nil},
		{`""`, `""`, nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{`"1+2"`, `"1+2"`, nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"'1+2'", "'1+2'", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"[1,2]", "[1,2]", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"{1}", "{1}", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"1 < 2", "1 < 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 >= 2", "1 >= 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 == 1", "1 == 1", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 != 1", "1 != 1", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"True", "True", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"1 && 2", "1 && 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 || 2", "1 || 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"!1", "!1", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"1 & 2", "1 & 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 | 2", "1 | 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"1 << 2", "1 << 2", nil, calc.CodeUnsupportedSyntax, "", at(2)},
		{"~1", "~1", nil, calc.CodeUnsupportedSyntax, "", at(0)},
		{"1e", "1e", nil, calc.CodeInvalidSyntax, "", at(0, 1)},
		{"1.2.3", "1.2.3", nil, calc.CodeInvalidSyntax, "", at(0, 3)},
		{"0x10", "0x10", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
		{"1_000", "1_000", nil, calc.CodeUnsupportedSyntax, "", at(0, 1)},
	})
}

// TestSpecEveryCode reaches each code once, with its hint, and checks
// errors.Is against a code-only *Error.
func TestSpecEveryCode(t *testing.T) {
	cases := []errCase{
		{"invalid_syntax", "2 x 3", nil, calc.CodeInvalidSyntax, hintTimes, at(2)},
		{"unsupported_syntax", "2**3", nil, calc.CodeUnsupportedSyntax, hintPower, at(1)},
		{"invalid_currency_marker", "100$", nil, calc.CodeInvalidCurrencyMarker, hintCurrency, at(3)},
		{"expression_too_long", strings.Repeat("1", 4097), nil, calc.CodeExpressionTooLong, "", nil},
		{"expression_too_complex", strings.Repeat("1+", 171) + "1", nil, calc.CodeExpressionTooComplex, "", nil},
		{"expression_too_deep", parens(65, "1"), nil, calc.CodeExpressionTooDeep, "", at(64)},
		{"division_by_zero", "1/(0.1+0.2-0.3)", nil, calc.CodeDivisionByZero, "", at(1, 2)},
		{"non_finite", "1e308*10", nil, calc.CodeNonFinite, "", nil},
		{"invalid_input", "1+\xff", nil, calc.CodeInvalidInput, "", nil},
	}
	seen := map[calc.Code]bool{}
	for _, c := range cases {
		seen[c.code] = true
	}
	for _, code := range calc.Codes {
		if !seen[code] {
			t.Errorf("calc.Codes has %s, which this test does not reach", code)
		}
	}
	runErrs(t, cases)
	for _, c := range cases {
		t.Run("errors.Is "+c.name, func(t *testing.T) {
			_, err := calc.Eval(c.src, c.opts)
			if !errors.Is(err, &calc.Error{Code: c.code}) {
				t.Errorf("errors.Is(%v, &Error{Code: %s}) = false", err, c.code)
			}
			for _, other := range calc.Codes {
				if other != c.code && errors.Is(err, &calc.Error{Code: other}) {
					t.Errorf("errors.Is(%v, &Error{Code: %s}) = true", err, other)
				}
			}
			wrapped := fmt.Errorf("context: %w", err)
			if !errors.Is(wrapped, &calc.Error{Code: c.code}) {
				t.Errorf("errors.Is through a wrapper = false")
			}
			if err.Error() == "" {
				t.Errorf("Error() is empty")
			}
		})
	}
}

// ---------------------------------------------------------------- properties

func TestSpecFloat64MatchesString(t *testing.T) {
	for _, src := range []string{
		"0.1+0.2", "1/3", "2/3", "1e300", "-12.5", "1e-300", "1.7976931348623157e308",
		"$1,234.56*20%", "100/7", "1e22/3", "1e-10/3", "123456789012345678901", "1/1073741824",
	} {
		t.Run(src, func(t *testing.T) {
			v, err := calc.Eval(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, perr := strconv.ParseFloat(v.String(), 64)
			if perr != nil {
				t.Fatalf("ParseFloat(%q): %v", v.String(), perr)
			}
			if got := v.Float64(); got != want {
				t.Errorf("Float64() = %v, ParseFloat(String()) = %v", got, want)
			}
		})
	}
}

func TestSpecRat(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"0.1+0.2", "3/10"},
		{"1/3*3", "1"},
		{"$100 * 20%", "20"},
		{"-12.5", "-25/2"},
		{"1e-400", "1/1" + strings.Repeat("0", 400)},
	} {
		t.Run(c.src, func(t *testing.T) {
			v, err := calc.Eval(c.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := new(big.Rat).SetString(c.want)
			if got := v.Rat(); got.Cmp(want) != 0 {
				t.Errorf("Rat() = %s, want %s", got.RatString(), want.RatString())
			}
		})
	}
}

func TestSpecNilOptionsAreDefaults(t *testing.T) {
	for _, src := range []string{"(123)", "1/3", parens(64, "1"), strings.Repeat("1+", 170) + "1"} {
		a, errA := calc.Eval(src, nil)
		b, errB := calc.Eval(src, &calc.Options{})
		if fmt.Sprint(errA) != fmt.Sprint(errB) || a.String() != b.String() {
			t.Errorf("Eval(%.20q) with nil and zero Options differ: %v/%v vs %v/%v", src, a, errA, b, errB)
		}
	}
}

// TestSpecRandomInputs: no input panics or returns anything but a value or
// a listed error, and exact values print a decimal that parses back to
// their Float64.
func TestSpecRandomInputs(t *testing.T) {
	alphabet := []string{
		"0", "1", "9", "5", ".", "e", "E", "+", "-", "*", "/", "(", ")", "$", "%", ",",
		" ", "\n", "\t", "x", "_", "^", "~", "a", "×", "٣", "\x00", "\xff", "1,000", "1e400", "1e-400", "20%",
	}
	rng := rand.New(rand.NewSource(2))
	for i := range 20000 {
		var b strings.Builder
		for range rng.Intn(24) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		src := b.String()
		opts := &calc.Options{Accounting: i%2 == 0}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Eval(%.80q) panicked: %v", src, r)
				}
			}()
			v, err := calc.Eval(src, opts)
			if err != nil {
				var e *calc.Error
				if !errors.As(err, &e) {
					t.Fatalf("Eval(%.80q) error %T", src, err)
				}
				if !slices.Contains(calc.Codes, e.Code) || e.Msg == "" || e.Hint == "" {
					t.Fatalf("Eval(%.80q) = %#v", src, e)
				}
				if e.Pos != calc.NoPos && (e.Pos < 0 || e.Pos > len(src)) {
					t.Fatalf("Eval(%.80q) pos %d out of range", src, e.Pos)
				}
				return
			}
			s := v.String()
			if s == "" {
				t.Fatalf("Eval(%.80q) printed empty", src)
			}
			if v.Exact() {
				if f, _ := strconv.ParseFloat(s, 64); f != v.Float64() {
					t.Fatalf("Eval(%.80q) = %s but Float64 %v", src, s, v.Float64())
				}
			}
		}()
	}
}
