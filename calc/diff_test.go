package calc

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDifferentialBigRat evaluates random well-formed expressions and
// compares each result with an independent evaluation of the same tree in
// math/big.Rat: value, exactness, division by zero and the float64 range.
func TestDifferentialBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	maxF := new(big.Rat).SetInt(infBoundary()) // the least magnitude whose float64 is infinite
	const n = 20000
	var values, zeros, tooBig int
	for i := 0; i < n; i++ {
		g := gen{rng: rng, maxF: maxF}
		src, want := g.expr(0)
		got, err := Eval(src, nil)
		switch {
		case g.zeroDiv && !g.overflow || g.zeroDiv && g.zeroFirst:
			zeros++
			if !errors.Is(err, &Error{Code: CodeDivisionByZero}) {
				t.Fatalf("%q: got %v, %v; want division_by_zero", src, got, err)
			}
		case g.overflow:
			tooBig++
			if !errors.Is(err, &Error{Code: CodeNonFinite}) {
				t.Fatalf("%q: got %v, %v; want non_finite", src, got, err)
			}
		default:
			values++
			if err != nil {
				t.Fatalf("%q: %v; want %s", src, err, want.RatString())
			}
			if got.Rat().Cmp(want) != 0 {
				t.Fatalf("%q = %s; want %s", src, got.Rat().RatString(), want.RatString())
			}
			if got.Exact() != terminatesRat(want) {
				t.Fatalf("%q: exact %v for %s", src, got.Exact(), want.RatString())
			}
			if f, _ := want.Float64(); got.Float64() != f {
				t.Fatalf("%q: float %v; want %v", src, got.Float64(), f)
			}
		}
	}
	// The generator must exercise every outcome, or the test proves little.
	if values < n/2 || zeros == 0 || tooBig == 0 {
		t.Fatalf("generator coverage: %d values, %d divisions by zero, %d out of range", values, zeros, tooBig)
	}
}

// terminatesRat reports whether r has a finite decimal expansion.
func terminatesRat(r *big.Rat) bool {
	d := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		q, m := new(big.Int), new(big.Int)
		for {
			q.QuoRem(d, big.NewInt(p), m)
			if m.Sign() != 0 {
				break
			}
			d.Set(q)
		}
	}
	return d.Cmp(big.NewInt(1)) == 0
}

// gen writes a random expression and computes its value in big.Rat,
// recording the first failure in evaluation order.
type gen struct {
	rng       *rand.Rand
	maxF      *big.Rat
	zeroDiv   bool // some division by exact zero happened
	overflow  bool // some value reached infBoundary, past float64's finite range
	zeroFirst bool // the division by zero came before any overflow
	nodes     int
}

func (g *gen) space() string {
	return [...]string{"", "", "", " ", "\t", "\n", "  "}[g.rng.IntN(7)]
}

func (g *gen) check(r *big.Rat) {
	if new(big.Rat).Abs(r).Cmp(g.maxF) >= 0 {
		g.overflow = true
	}
}

func (g *gen) expr(depth int) (string, *big.Rat) {
	if depth > 6 || g.nodes > 60 || g.rng.IntN(3) == 0 {
		return g.atom(depth)
	}
	ls, l := g.expr(depth + 1)
	rs, r := g.expr(depth + 1)
	g.nodes += 2
	op := "+-*/"[g.rng.IntN(4)]
	out := new(big.Rat)
	switch op {
	case '+':
		out.Add(l, r)
	case '-':
		out.Sub(l, r)
	case '*':
		out.Mul(l, r)
	case '/':
		if r.Sign() == 0 {
			if !g.zeroDiv && !g.overflow {
				g.zeroFirst = true
			}
			g.zeroDiv = true
			return fmt.Sprintf("(%s%s/%s(%s))", ls, g.space(), g.space(), rs), out
		}
		out.Quo(l, r)
	}
	g.check(out)
	return fmt.Sprintf("(%s%s%c%s%s)", ls, g.space(), op, g.space(), rs), out
}

func (g *gen) atom(depth int) (string, *big.Rat) {
	g.nodes++
	s, v := g.literal()
	if depth < 8 && g.rng.IntN(6) == 0 {
		g.nodes++
		return "-" + s, new(big.Rat).Neg(v)
	}
	return s, v
}

// literal returns a random literal in one of the accepted forms.
func (g *gen) literal() (string, *big.Rat) {
	r := g.rng
	var digits string
	switch r.IntN(5) {
	case 0:
		digits = "0"
	case 1:
		digits = fmt.Sprint(r.IntN(10))
	case 2:
		digits = fmt.Sprint(r.IntN(100000))
	case 3:
		digits = fmt.Sprint(r.Uint64())
	default:
		digits = fmt.Sprint(r.Uint64()) + fmt.Sprint(r.Uint64())
	}
	text, frac := digits, ""
	if r.IntN(2) == 0 {
		frac = fmt.Sprint(r.IntN(1000000))
		if r.IntN(3) == 0 {
			frac = "0" + frac
		}
		text += "." + frac
	}
	v, _ := new(big.Rat).SetString(digits + "." + frac + "0")
	if r.IntN(4) == 0 {
		e := r.IntN(700) - 350
		text += fmt.Sprintf("e%d", e)
		v.Mul(v, pow10Rat(e))
	}
	if r.IntN(5) == 0 && !strings.ContainsAny(text, ".e") && len(text) > 3 {
		text = group(text)
	}
	if r.IntN(6) == 0 {
		text += g.space() + "%"
		v.Quo(v, big.NewRat(100, 1))
	}
	if r.IntN(6) == 0 {
		text = "$" + g.space() + text
	}
	g.check(v)
	return text, v
}

func pow10Rat(e int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// group inserts thousands separators into a run of digits.
func group(d string) string {
	var b strings.Builder
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
