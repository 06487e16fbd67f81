package calc

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// tier names where a slot's value lives. Values move up a tier when an
// operation overflows, never down: small (int64) -> wide (512 bits, fixed
// arrays) -> big (math/big, bounded by Limits.MaxBits).
type tier uint8

const (
	tierSmall tier = iota
	tierWide
	tierBig
)

// slot is one value on the evaluation stack, n/d with d > 0 and not
// necessarily reduced, held in the fields of its tier.
type slot struct {
	tier   tier
	n, d   int64 // small: |n| <= MaxInt64
	wn, wd wnat  // wide: magnitudes, with the sign in wneg
	wneg   bool
	bn, bd *big.Int // big: kept across evaluations so that they reuse memory
}

// machine evaluates postfix ops. Machines are pooled: a warm machine
// evaluates without allocating while values stay small.
type machine struct {
	stack  []slot
	sp     int      // stack depth
	t1, t2 *big.Int // scratch for big arithmetic
	t3     *big.Int
	cfg    config
	src    string // the expression, for literals converted from their text
}

var machines = sync.Pool{New: func() any {
	return &machine{stack: make([]slot, 16), t1: new(big.Int), t2: new(big.Int), t3: new(big.Int)}
}}

func getMachine() *machine  { return machines.Get().(*machine) }
func putMachine(m *machine) { m.cfg, m.src = config{}, ""; machines.Put(m) }

// reset prepares the machine for one evaluation.
func (m *machine) reset(cfg *config) {
	m.cfg, m.sp = *cfg, 0
}

// run evaluates ops, which parse produced from src.
func (m *machine) run(src string, ops []op, cfg *config) (Value, error) {
	m.reset(cfg)
	m.src = src
	for i := range ops {
		if err := m.exec(&ops[i]); err != nil {
			return Value{}, err
		}
	}
	return m.result()
}

// exec executes one op.
func (m *machine) exec(o *op) *Error {
	if o.kind == opNum {
		return m.push(&o.lit, int(o.pos))
	}
	return m.apply(o.kind, int(o.pos))
}

// push pushes a literal.
func (m *machine) push(l *literal, pos int) *Error {
	if m.sp == len(m.stack) {
		m.stack = append(m.stack, slot{})
	}
	s := &m.stack[m.sp]
	m.sp++
	if !l.big {
		s.n, s.d, s.tier = l.n, l.d, tierSmall
		return nil
	}
	return m.bigLiteral(s, l, pos)
}

// apply applies an operator to the top of the stack.
func (m *machine) apply(k opKind, pos int) *Error {
	switch k {
	case opNeg:
		s := &m.stack[m.sp-1]
		switch s.tier {
		case tierSmall:
			s.n = -s.n
		case tierWide:
			s.wneg = !s.wneg && !s.wn.isZero()
		default:
			s.bn.Neg(s.bn)
		}
	case opPos:
	default:
		m.sp--
		return m.binary(k, pos, &m.stack[m.sp-1], &m.stack[m.sp])
	}
	return nil
}

// binary sets x to x op y.
func (m *machine) binary(k opKind, pos int, x, y *slot) *Error {
	if k == opDiv && y.isZero() {
		return errAt(CodeDivisionByZero, pos, "division by zero",
			"Make sure the divisor is not zero before dividing")
	}
	if x.tier == tierSmall && y.tier == tierSmall && smallOp(k, x, y) {
		return nil
	}
	if x.tier <= tierWide && y.tier <= tierWide {
		x.widen()
		y.widen()
		if wideOp(k, x, y) {
			return nil
		}
	}
	m.promote(x)
	m.promote(y)
	t1, t2 := m.t1, m.t2
	switch k {
	case opAdd, opSub:
		if k == opSub {
			y.bn.Neg(y.bn)
		}
		if x.bd.Cmp(y.bd) == 0 {
			x.bn.Add(x.bn, y.bn)
			break
		}
		t1.Mul(x.bn, y.bd)
		t2.Mul(y.bn, x.bd)
		x.bn.Add(t1, t2)
		t1.Mul(x.bd, y.bd)
		x.bd, m.t1 = t1, x.bd
	case opMul:
		t1.Mul(x.bn, y.bn)
		t2.Mul(x.bd, y.bd)
		x.bn, m.t1 = t1, x.bn
		x.bd, m.t2 = t2, x.bd
	case opDiv:
		t1.Mul(x.bn, y.bd)
		t2.Mul(x.bd, y.bn)
		if t2.Sign() < 0 {
			t1.Neg(t1)
			t2.Neg(t2)
		}
		x.bn, m.t1 = t1, x.bn
		x.bd, m.t2 = t2, x.bd
	}
	return m.checkBig(x, pos)
}

func (s *slot) isZero() bool {
	switch s.tier {
	case tierSmall:
		return s.n == 0
	case tierWide:
		return s.wn.isZero()
	}
	return s.bn.Sign() == 0
}

// widen moves a small value to the wide tier.
func (s *slot) widen() {
	if s.tier != tierSmall {
		return
	}
	s.wn.setUint64(abs64(s.n))
	s.wd.setUint64(uint64(s.d))
	s.wneg = s.n < 0
	s.tier = tierWide
}

// promote moves a value to the big tier.
func (m *machine) promote(s *slot) {
	if s.tier == tierBig {
		return
	}
	if s.bn == nil {
		s.bn, s.bd = new(big.Int), new(big.Int)
	}
	if s.tier == tierSmall {
		s.bn.SetInt64(s.n)
		s.bd.SetInt64(s.d)
	} else {
		s.wn.setBig(s.bn, s.wneg)
		s.wd.setBig(s.bd, false)
	}
	s.tier = tierBig
}

// checkBig enforces the bounds on a big value: at most MaxBits bits in its
// numerator and denominator once reduced, and a magnitude within float64's
// finite range.
func (m *machine) checkBig(s *slot, pos int) *Error {
	maxBits := m.cfg.lim.MaxBits
	if s.bn.BitLen() > maxBits || s.bd.BitLen() > maxBits {
		reduce(s.bn, s.bd, m.t1)
		if s.bn.BitLen() > maxBits || s.bd.BitLen() > maxBits {
			return errAt(CodeExpressionTooComplex, pos,
				"the exact value needs more than "+strconv.Itoa(maxBits)+" bits",
				"Round intermediate values, or split the calculation into smaller steps")
		}
	}
	if tooLarge(s.bn, s.bd, m.t1) {
		return errAt(CodeNonFinite, pos, "the value is beyond float64's finite range (about ±1.8e308)",
			"Keep every value, including intermediate ones, within ±1.8e308")
	}
	return nil
}

// infBound is 2^1024 - 2^970, halfway between math.MaxFloat64 and 2^1024:
// a magnitude below it converts to a finite float64 (at most MaxFloat64),
// one at or above it to infinity (the tie rounds to the even 2^1024). It is
// the exact edge of the finite range, so that every value calc gives has a
// finite Float64.
var infBound = new(big.Int).Sub(new(big.Int).Lsh(bigOne, 1024), new(big.Int).Lsh(bigOne, 970))

// tooLarge reports whether |n/d| >= infBound, that is whether n/d converts
// to an infinite float64. d > 0; tmp is scratch.
func tooLarge(n, d, tmp *big.Int) bool {
	// 2^(diff-1) < |n/d| < 2^(diff+1), where diff is the difference of the
	// bit lengths: only diff 1023 and 1024 need the exact comparison.
	diff := n.BitLen() - d.BitLen()
	switch {
	case diff <= 1022: // |n/d| < 2^1023
		return false
	case diff >= 1025: // |n/d| > 2^1024
		return true
	}
	tmp.Mul(infBound, d)
	return n.CmpAbs(tmp) >= 0
}

// reduce divides n and d by their greatest common divisor.
func reduce(n, d, tmp *big.Int) {
	sign := n.Sign()
	if sign == 0 {
		d.SetInt64(1)
		return
	}
	n.Abs(n)
	tmp.GCD(nil, nil, n, d)
	if tmp.Cmp(bigOne) != 0 {
		n.Quo(n, tmp)
		d.Quo(d, tmp)
	}
	if sign < 0 {
		n.Neg(n)
	}
}

var bigOne = big.NewInt(1)

// bigLiteral converts a literal that does not fit n/d from its text.
func (m *machine) bigLiteral(s *slot, l *literal, pos int) *Error {
	text := m.src[l.start:l.end]
	if strings.IndexByte(text, ',') >= 0 {
		text = strings.ReplaceAll(text, ",", "")
	}
	mant, exp := text, 0
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		mant = text[:i]
		exp, _ = strconv.Atoi(text[i+1:]) // the scanner bounded it to ±400
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	if s.bn == nil {
		s.bn, s.bd = new(big.Int), new(big.Int)
	}
	s.tier = tierBig
	s.bn.SetString(mant, 10) // digits only: the scanner checked them
	s.bd.SetInt64(1)
	if exp > 0 {
		s.bn.Mul(s.bn, m.t1.Exp(big.NewInt(10), big.NewInt(int64(exp)), nil))
	} else if exp < 0 {
		s.bd.Exp(big.NewInt(10), big.NewInt(int64(-exp)), nil)
	}
	if l.pct {
		s.bd.Mul(s.bd, big.NewInt(100))
	}
	if l.acct {
		s.bn.Neg(s.bn)
	}
	return m.checkBig(s, pos)
}

// result turns the final slot into a Value, rounding as configured.
func (m *machine) result() (Value, error) {
	s := &m.stack[0]
	var v Value
	switch s.tier {
	case tierSmall:
		v = smallValue(s.n, s.d)
	case tierWide:
		v = m.wideValue(s)
	default:
		v = Value{f: newFrac(s.bn, s.bd)}
		v.inexact = !terminatesBig(s.bn, s.bd, m.t1, m.t2, m.t3)
	}
	if r := m.cfg.round; r != nil {
		v = v.roundTo(r.Places, r.Mode)
		// Rounding can carry a value just under the edge of the finite
		// range onto it: (2^1024 - 2^970 - 0.5) rounds to the edge.
		if v.f != nil && tooLarge(&v.f.n, &v.f.d, m.t1) {
			return Value{}, errAt(CodeNonFinite, NoPos, "the value rounded to "+strconv.Itoa(r.Places)+" places is beyond float64's finite range (about ±1.8e308)",
				"Keep every value, including the rounded result, within ±1.8e308")
		}
	}
	return v, nil
}

// wideValue turns a wide slot into a Value, in the small form when the
// value fits once reduced.
func (m *machine) wideValue(s *slot) Value {
	if s.wn.n <= 1 && s.wd.n == 1 && s.wn.w[0] <= math.MaxInt64 && s.wd.w[0] <= math.MaxInt64 {
		n := int64(s.wn.w[0])
		if s.wneg {
			n = -n
		}
		return smallValue(n, int64(s.wd.w[0]))
	}
	var rest wnat
	strip25Wide(&s.wd, &rest)
	terminates := true
	switch {
	case rest.n == 1 && rest.w[0] == 1:
	case rest.n == 1:
		var q wnat
		terminates = q.divWord(&s.wn, rest.w[0]) == 0
	default:
		s.wn.setBig(m.t1, false)
		rest.setBig(m.t2, false)
		terminates = m.t3.Rem(m.t1, m.t2).Sign() == 0
	}
	return Value{f: newFracWide(&s.wn, &s.wd, s.wneg), inexact: !terminates}
}

// smallOp sets x to x op y in int64 arithmetic and reports whether the
// result fits. The caller has ruled out division by zero.
func smallOp(k opKind, x, y *slot) bool {
	switch k {
	case opAdd, opSub:
		yn := y.n
		if k == opSub {
			yn = -yn
		}
		if x.d == y.d {
			if n, ok := add64(x.n, yn); ok {
				x.n = n
				return true
			}
		}
		a, ok1 := mul64(x.n, y.d)
		b, ok2 := mul64(yn, x.d)
		n, ok3 := add64(a, b)
		d, ok4 := mul64(x.d, y.d)
		if ok1 && ok2 && ok3 && ok4 {
			x.n, x.d = n, d
			return true
		}
		return false
	case opMul:
		return mulFrac(x, y.n, y.d)
	default: // opDiv
		yn, yd := y.d, y.n
		if yd < 0 {
			yn, yd = -yn, -yd
		}
		return mulFrac(x, yn, yd)
	}
}

// mulFrac sets x to x * n/d when the result fits, reducing across the
// fraction only if the plain product overflows.
func mulFrac(x *slot, n, d int64) bool {
	pn, ok1 := mul64(x.n, n)
	pd, ok2 := mul64(x.d, d)
	if ok1 && ok2 {
		x.n, x.d = pn, pd
		return true
	}
	g1 := int64(gcd64(abs64(x.n), uint64(d)))
	g2 := int64(gcd64(abs64(n), uint64(x.d)))
	pn, ok1 = mul64(x.n/g1, n/g2)
	pd, ok2 = mul64(x.d/g2, d/g1)
	if ok1 && ok2 {
		x.n, x.d = pn, pd
		return true
	}
	return false
}

// add64 and mul64 return the result and whether it fits; MinInt64 never
// fits, so that negation is always safe.
func add64(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0) && c != math.MinInt64
}

func mul64(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(abs64(a), abs64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

func abs64(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

// gcd64 is the binary GCD; gcd64(0, b) is b.
func gcd64(a, b uint64) uint64 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	shift := bits.TrailingZeros64(a | b)
	a >>= bits.TrailingZeros64(a)
	for b != 0 {
		b >>= bits.TrailingZeros64(b)
		if a > b {
			a, b = b, a
		}
		b -= a
	}
	return a << shift
}
