package calc

import (
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Value is the exact result of an evaluation. The zero Value is 0.
type Value struct {
	n, d    int64 // n/d with d > 0, when f is nil (d == 0: the zero Value); not reduced, as a GCD is dear and rarely needed
	f       *frac // the value, when it does not fit n/d
	places  int   // decimal places to print, when fixed
	fixed   bool  // rounded to places by Options.Round
	inexact bool  // the printed value differs from the exact result
}

// frac is a big value n/d with d > 0, not necessarily in lowest terms:
// reducing costs a GCD, and only Rat and Float64 need it.
type frac struct {
	n, d big.Int
	w    [2 * wideWords]big.Word // backing for n and d when they are small enough
}

// newFrac copies n/d into one allocation when the words fit.
func newFrac(n, d *big.Int) *frac {
	f := new(frac)
	nw, dw := n.Bits(), d.Bits()
	if len(nw)+len(dw) <= len(f.w) {
		k := copy(f.w[:], nw)
		copy(f.w[k:], dw)
		f.n.SetBits(f.w[:k:k])
		f.d.SetBits(f.w[k : k+len(dw) : k+len(dw)])
		if n.Sign() < 0 {
			f.n.Neg(&f.n)
		}
		return f
	}
	f.n.Set(n)
	f.d.Set(d)
	return f
}

// newFracWide copies a wide value into one allocation; the words always fit.
func newFracWide(n, d *wnat, neg bool) *frac {
	f := new(frac)
	for i, w := range n.w[:n.n] {
		f.w[i] = big.Word(w)
	}
	for i, w := range d.w[:d.n] {
		f.w[n.n+i] = big.Word(w)
	}
	f.n.SetBits(f.w[:n.n:n.n])
	f.d.SetBits(f.w[n.n : n.n+d.n : n.n+d.n])
	if neg {
		f.n.Neg(&f.n)
	}
	return f
}

func smallValue(n, d int64) Value {
	_, _, rest := split25Small(d)
	return Value{n: n, d: d, inexact: n%rest != 0}
}

// ratValue wraps a big.Rat, using the small form when it fits.
func ratValue(r *big.Rat) Value {
	if num, den := r.Num(), r.Denom(); num.IsInt64() && den.IsInt64() && num.Int64() != -1<<63 {
		return Value{n: num.Int64(), d: den.Int64()}
	}
	return Value{f: newFrac(r.Num(), r.Denom())}
}

// Exact reports whether String prints the exact result: false when a
// non-terminating value was rounded to 34 significant digits, or when
// Options.Round changed the value.
func (v Value) Exact() bool { return !v.inexact }

// Rat returns the value as a new big.Rat in lowest terms. After
// Options.Round it is the rounded value; otherwise it is the exact result,
// even when String rounds.
func (v Value) Rat() *big.Rat {
	if v.f != nil {
		return new(big.Rat).SetFrac(&v.f.n, &v.f.d)
	}
	if v.d == 0 {
		return new(big.Rat)
	}
	return big.NewRat(v.n, v.d)
}

// Sign returns -1, 0 or +1.
func (v Value) Sign() int {
	if v.f != nil {
		return v.f.n.Sign()
	}
	switch {
	case v.n < 0:
		return -1
	case v.n > 0:
		return 1
	}
	return 0
}

// Float64 returns the float64 nearest to the value.
func (v Value) Float64() float64 {
	if v.f == nil {
		if v.d == 0 {
			return 0
		}
		if abs64(v.n) <= 1<<53 && v.d <= 1<<53 {
			return float64(v.n) / float64(v.d) // exact operands: one correct rounding
		}
	}
	f, _ := v.Rat().Float64()
	return f
}

// split25Small splits d = 2^twos * 5^fives * rest. The value n/d has a
// finite decimal expansion exactly when rest divides n: no GCD is needed.
func split25Small(d int64) (twos, fives int, rest int64) {
	u := uint64(d)
	twos = bits.TrailingZeros64(u)
	u >>= twos
	for u%5 == 0 {
		u /= 5
		fives++
	}
	return twos, fives, int64(u)
}

var (
	big10  = big.NewInt(10)
	bigTen = func(k int) *big.Int { return new(big.Int).Exp(big10, big.NewInt(int64(k)), nil) }
	// fives are the powers of 5 that strip25 divides by: two repeated chunks,
	// then one try each of 5^16 ... 5^1 for the fewer than 27 that remain.
	fives = func() []struct {
		p      *big.Int
		n      int
		repeat bool
	} {
		pow := func(n int) *big.Int { return new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(n)), nil) }
		out := []struct {
			p      *big.Int
			n      int
			repeat bool
		}{{pow(216), 216, true}, {pow(27), 27, true}}
		for _, n := range []int{16, 8, 4, 2, 1} {
			out = append(out, struct {
				p      *big.Int
				n      int
				repeat bool
			}{pow(n), n, false})
		}
		return out
	}()
)

// strip25 sets rest to d without its factors 2 and 5, and returns the
// exponent k of the smallest power of ten 10^k that those factors divide.
// q and r are scratch. The divisions it needs grow with the number of 5s
// over 216, so even a 4096-digit denominator takes a few dozen.
func strip25(d, rest, q, r *big.Int) int {
	twos := int(d.TrailingZeroBits())
	rest.Rsh(d, uint(twos))
	count := 0
	for _, f := range fives {
		for {
			q.QuoRem(rest, f.p, r)
			if r.Sign() != 0 {
				break
			}
			rest.Set(q)
			count += f.n
			if !f.repeat {
				break
			}
		}
	}
	return max(twos, count)
}

// terminatesBig reports whether n/d has a finite decimal expansion: what
// remains of d without its factors 2 and 5 must divide n. It needs no GCD.
// t1, t2 and t3 are scratch.
func terminatesBig(n, d, t1, t2, t3 *big.Int) bool {
	strip25(d, t1, t2, t3)
	if t1.Cmp(bigOne) == 0 {
		return true
	}
	return t2.Rem(n, t1).Sign() == 0
}

// roundTo returns the value rounded to places decimal places.
func (v Value) roundTo(places int, mode RoundingMode) Value {
	r := v.Rat()
	num := new(big.Int).Mul(new(big.Int).Abs(r.Num()), bigTen(places))
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		switch c := new(big.Int).Lsh(rem, 1).Cmp(r.Denom()); {
		case c > 0, c == 0 && (mode == HalfUp || q.Bit(0) == 1):
			q.Add(q, bigOne)
		}
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	out := ratValue(new(big.Rat).SetFrac(q, bigTen(places)))
	out.fixed, out.places, out.inexact = true, places, rem.Sign() != 0
	return out
}

// String prints the value as a decimal: the shortest exact form when the
// value terminates, else rounded half-even to 34 significant digits; plain
// notation when the decimal exponent is in [-7, 21), else scientific
// (1e+300). A value rounded by Options.Round prints exactly its places.
func (v Value) String() string {
	if v.fixed {
		return v.fixedString()
	}
	if v.f == nil && !v.inexact {
		if s, ok := v.smallString(); ok {
			return s
		}
	}
	var n, d big.Int
	if v.f != nil {
		n.Set(&v.f.n)
		d.Set(&v.f.d)
	} else {
		n.SetInt64(v.n)
		d.SetInt64(max(v.d, 1))
	}
	if n.Sign() == 0 {
		return "0"
	}
	neg := n.Sign() < 0
	n.Abs(&n)
	var digits string
	var exp int // value = digits * 10^exp
	if !v.inexact {
		k := strip25(&d, new(big.Int), new(big.Int), new(big.Int))
		n.Mul(&n, bigTen(k))
		n.Quo(&n, &d)
		digits, exp = n.String(), -k
	} else {
		digits, exp = roundSignificant(&n, &d, Digits)
	}
	t := strings.TrimRight(digits, "0")
	exp += len(digits) - len(t)
	return layout(neg, t, exp)
}

// smallString formats a terminating small value without big arithmetic
// when its scaled digits fit in a uint64.
func (v Value) smallString() (string, bool) {
	if v.d == 0 || v.n == 0 {
		return "0", true
	}
	twos, fives, rest := split25Small(v.d)
	k := max(twos, fives)
	if k >= len(pow10) {
		return "", false
	}
	// n/d = (n/rest) / (2^twos * 5^fives) = (n/rest) * scale / 10^k.
	scale := uint64(pow10[k]) >> twos
	for range fives {
		scale /= 5
	}
	hi, q := bits.Mul64(abs64(v.n/rest), scale)
	if hi != 0 {
		return "", false
	}
	var buf [24]byte
	digits := strconv.AppendUint(buf[:0], q, 10)
	t := len(digits)
	for t > 1 && digits[t-1] == '0' {
		t--
	}
	return layout(v.n < 0, string(digits[:t]), len(digits)-t-k), true
}

// roundSignificant returns n/d (both positive) rounded half-even to sig
// significant digits, as digits * 10^exp.
func roundSignificant(n, d *big.Int, sig int) (string, int) {
	// Estimate the decimal exponent from bit lengths, then correct it.
	e := int(float64(n.BitLen()-d.BitLen()) * 0.30102999566398120)
	lo, hi := bigTen(sig-1), bigTen(sig)
	q, r := new(big.Int), new(big.Int)
	for {
		s := sig - 1 - e // q = n/d * 10^s
		num, den := new(big.Int).Set(n), new(big.Int).Set(d)
		if s >= 0 {
			num.Mul(num, bigTen(s))
		} else {
			den.Mul(den, bigTen(-s))
		}
		q.QuoRem(num, den, r)
		switch {
		case q.Cmp(hi) >= 0:
			e++
			continue
		case q.Cmp(lo) < 0:
			e--
			continue
		}
		if c := new(big.Int).Lsh(r, 1).Cmp(den); c > 0 || c == 0 && q.Bit(0) == 1 {
			q.Add(q, bigOne)
			if q.Cmp(hi) == 0 { // 9.99..95 rounded up to 10.00..0
				q.Set(lo)
				s--
			}
		}
		return q.String(), -s
	}
}

// layout prints digits * 10^exp, digits without leading or trailing zeros.
func layout(neg bool, digits string, exp int) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	e := len(digits) - 1 + exp // scientific exponent
	switch {
	case e < -7 || e >= 21:
		b.WriteString(digits[:1])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if e >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(e))
	case exp >= 0:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", exp))
	case e >= 0:
		b.WriteString(digits[:e+1])
		b.WriteByte('.')
		b.WriteString(digits[e+1:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -e-1))
		b.WriteString(digits)
	}
	return b.String()
}

// fixedString prints a value rounded to places with exactly that many
// decimal places, in plain notation.
func (v Value) fixedString() string {
	r := v.Rat()
	q := new(big.Int).Mul(new(big.Int).Abs(r.Num()), bigTen(v.places))
	q.Quo(q, r.Denom())
	s := q.String()
	if len(s) <= v.places {
		s = strings.Repeat("0", v.places-len(s)+1) + s
	}
	if v.places > 0 {
		s = s[:len(s)-v.places] + "." + s[len(s)-v.places:]
	}
	if r.Sign() < 0 {
		s = "-" + s
	}
	return s
}
