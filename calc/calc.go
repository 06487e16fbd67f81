// Package calc is a small, exact arithmetic language for values a model must
// not compute in prose: numbers, unary + and -, binary + - * /, parentheses,
// a currency marker ($100) and percent literals (20%).
//
// The grammar is the whitelist. Anything other languages accept but this one
// does not (names, calls, **, comparison, ...) is refused with
// unsupported_syntax; malformed input with invalid_syntax. Every refusal is an
// *Error carrying a stable Code, a message, one concrete repair hint and the
// byte offset of the offending token.
//
// Arithmetic is exact and rational throughout: 0.1+0.2 is 0.3 and 1/3*3 is 1.
// Only a final value that does not terminate as a decimal is rounded, to 34
// significant digits (half-even), and marked inexact. Work is bounded by
// Limits, enforced while scanning and parsing, so no input can make the
// package recurse, loop or allocate past them.
//
//	v, err := calc.Eval("($100 + $250.75) * 20%", nil)
//	// v.String() == "70.15", v.Exact() == true
package calc

import "strconv"

// Default limits. Each is part of the interface and documented in the README.
const (
	DefaultMaxLength = 4096  // code points in an expression
	DefaultMaxNodes  = 512   // number 1, unary or binary operator 2, percent literal 4
	DefaultMaxDepth  = 64    // enclosing parentheses and unary operators around any number
	DefaultMaxBits   = 16384 // bits in the numerator or denominator of any exact value
	DefaultMaxPlaces = 100   // decimal places that Rounding may ask for
)

// Digits is the number of significant digits a non-terminating result is
// rounded to (the precision of IEEE 754 decimal128).
const Digits = 34

// Limits bound the work one expression may cause. A zero field means its
// default. Tripping a limit returns an error whose code names it.
type Limits struct {
	MaxLength int // expression_too_long past this many code points
	MaxNodes  int // expression_too_complex past this many nodes
	MaxDepth  int // expression_too_deep past this nesting
	MaxBits   int // expression_too_complex when an exact value needs more bits
	MaxPlaces int // invalid_input when Rounding.Places exceeds it
}

// RoundingMode names how a value is rounded to a fixed number of places.
type RoundingMode int

const (
	HalfEven RoundingMode = iota // ties to the even neighbour (banker's rounding)
	HalfUp                       // ties away from zero
)

// Rounding asks for the final value rounded to Places decimal places, for
// money. The value then keeps exactly Places places ("5.00").
type Rounding struct {
	Places int
	Mode   RoundingMode
}

// Options configures parsing and evaluation. A nil *Options means defaults.
type Options struct {
	// Accounting makes parentheses that directly enclose a single literal
	// negate it: (123) is -123, ($1,234.50) is -1234.5, (5)*2 is -10.
	Accounting bool
	// Round, when set, rounds the final value to a fixed number of places.
	Round *Rounding
	// Limits bound the work; zero fields take their defaults.
	Limits Limits
}

// Eval parses and evaluates src. It returns the exact value, or an *Error.
// It is safe for concurrent use and does not allocate when every
// intermediate value fits in 64-bit numerator and denominator.
func Eval(src string, opts *Options) (Value, error) {
	cfg := &defaults
	if opts != nil {
		c := configure(opts)
		if err := c.check(); err != nil {
			return Value{}, err
		}
		cfg = &c
	}
	m := getMachine()
	defer putMachine(m)
	m.reset(cfg)
	m.src = src
	if _, err := parse(src, &m.cfg, nil, m); err != nil {
		return Value{}, err
	}
	return m.result()
}

// Parse parses src into an expression that can be printed or evaluated.
func Parse(src string, opts *Options) (*Expr, error) {
	cfg := configure(opts)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ops, err := parse(src, &cfg, nil, nil)
	if err != nil {
		return nil, err
	}
	return &Expr{src: src, ops: ops, cfg: cfg}, nil
}

// Expr is a parsed expression. It is immutable and safe for concurrent use.
type Expr struct {
	src string
	ops []op // the tree in postfix order
	cfg config
}

// Eval evaluates the expression with the options it was parsed with.
func (e *Expr) Eval() (Value, error) {
	m := getMachine()
	defer putMachine(m)
	return m.run(e.src, e.ops, &e.cfg)
}

// String prints the expression with the fewest parentheses that keep its
// tree, without spaces, currency markers or thousands separators. Parsing
// the printed form with the same options gives the same tree, within the
// same limits.
func (e *Expr) String() string { return printExpr(e.src, e.ops, e.cfg.accounting) }

// defaults is the configuration of nil Options.
var defaults = configure(nil)

// config is Options resolved against the defaults.
type config struct {
	accounting bool
	round      *Rounding
	lim        Limits
}

func configure(o *Options) config {
	var c config
	if o != nil {
		c.accounting = o.Accounting
		c.lim = o.Limits
		if o.Round != nil {
			r := *o.Round
			c.round = &r
		}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.lim.MaxLength, DefaultMaxLength)
	def(&c.lim.MaxNodes, DefaultMaxNodes)
	def(&c.lim.MaxDepth, DefaultMaxDepth)
	def(&c.lim.MaxBits, DefaultMaxBits)
	def(&c.lim.MaxPlaces, DefaultMaxPlaces)
	return c
}

func (c *config) check() error {
	if r := c.round; r != nil {
		if r.Places < 0 || r.Places > c.lim.MaxPlaces {
			return &Error{Code: CodeInvalidInput, Pos: NoPos,
				Msg:  "rounding places out of range",
				Hint: "Round to between 0 and " + strconv.Itoa(c.lim.MaxPlaces) + " decimal places"}
		}
		if r.Mode != HalfEven && r.Mode != HalfUp {
			return &Error{Code: CodeInvalidInput, Pos: NoPos,
				Msg: "unknown rounding mode", Hint: "Use half-even or half-up rounding"}
		}
	}
	return nil
}
