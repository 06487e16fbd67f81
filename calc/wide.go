package calc

import (
	"math/big"
	"math/bits"
)

// wideWords is the capacity of the middle tier of arithmetic: numerators and
// denominators of up to 512 bits live in fixed arrays, so the common
// overflow of int64 (long chains, deep nesting) costs no allocation and no
// math/big call. Only past this do values move to math/big.
const wideWords = 8

// wnat is an unsigned integer of at most wideWords 64-bit words, little
// endian; n counts the words in use, so w[n-1] != 0 unless n == 0.
type wnat struct {
	w [wideWords]uint64
	n int
}

func (z *wnat) setUint64(v uint64) {
	z.w[0] = v
	z.n = 0
	if v != 0 {
		z.n = 1
	}
}

func (z *wnat) isZero() bool { return z.n == 0 }

func (z *wnat) norm() {
	for z.n > 0 && z.w[z.n-1] == 0 {
		z.n--
	}
}

func wcmp(x, y *wnat) int {
	if x.n != y.n {
		if x.n < y.n {
			return -1
		}
		return 1
	}
	for i := x.n - 1; i >= 0; i-- {
		if x.w[i] != y.w[i] {
			if x.w[i] < y.w[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// mul sets z = x*y and reports whether the product fits. z may alias x or y.
func (z *wnat) mul(x, y *wnat) bool {
	if x.n == 0 || y.n == 0 {
		z.n = 0
		return true
	}
	if y.n == 1 {
		return z.mulWord(x, y.w[0])
	}
	if x.n == 1 {
		return z.mulWord(y, x.w[0])
	}
	if x.n+y.n > wideWords+1 {
		return false
	}
	var t [2 * wideWords]uint64
	for i := 0; i < x.n; i++ {
		xi := x.w[i]
		var carry uint64
		for j := 0; j < y.n; j++ {
			hi, lo := bits.Mul64(xi, y.w[j])
			var c uint64
			lo, c = bits.Add64(lo, t[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			t[i+j] = lo
			carry = hi
		}
		t[i+y.n] = carry
	}
	n := x.n + y.n
	for n > 0 && t[n-1] == 0 {
		n--
	}
	if n > wideWords {
		return false
	}
	copy(z.w[:], t[:n])
	z.n = n
	return true
}

// mulWord sets z = x*y for a one-word y and reports whether it fits. z may
// alias x.
func (z *wnat) mulWord(x *wnat, y uint64) bool {
	var carry uint64
	n := x.n
	for i := 0; i < n; i++ {
		hi, lo := bits.Mul64(x.w[i], y)
		var c uint64
		z.w[i], c = bits.Add64(lo, carry, 0)
		carry = hi + c
	}
	return z.carryOut(n, carry)
}

// carryOut ends an n-word add or multiply: a final carry takes one more
// word, if there is room.
func (z *wnat) carryOut(n int, carry uint64) bool {
	if carry != 0 {
		if n == wideWords {
			return false
		}
		z.w[n] = carry
		n++
	}
	z.n = n
	return true
}

// add sets z = x+y and reports whether the sum fits. z may alias x or y.
func (z *wnat) add(x, y *wnat) bool {
	if x.n < y.n {
		x, y = y, x
	}
	var carry uint64
	n := x.n
	for i := 0; i < n; i++ {
		var yi uint64
		if i < y.n {
			yi = y.w[i]
		}
		z.w[i], carry = bits.Add64(x.w[i], yi, carry)
	}
	return z.carryOut(n, carry)
}

// sub sets z = x-y for x >= y. z may alias x or y.
func (z *wnat) sub(x, y *wnat) {
	var borrow uint64
	for i := 0; i < x.n; i++ {
		var yi uint64
		if i < y.n {
			yi = y.w[i]
		}
		z.w[i], borrow = bits.Sub64(x.w[i], yi, borrow)
	}
	z.n = x.n
	z.norm()
}

// divWord sets z = x/d and returns x mod d. z may alias x.
func (z *wnat) divWord(x *wnat, d uint64) uint64 {
	var r uint64
	for i := x.n - 1; i >= 0; i-- {
		z.w[i], r = bits.Div64(r, x.w[i], d)
	}
	z.n = x.n
	z.norm()
	return r
}

// shr sets z = x >> s for s < 64*wideWords. z may alias x.
func (z *wnat) shr(x *wnat, s uint) {
	words, b := int(s/64), s%64
	n := x.n - words
	if n <= 0 {
		z.n = 0
		return
	}
	for i := 0; i < n; i++ {
		v := x.w[i+words] >> b
		if b != 0 && i+words+1 < x.n {
			v |= x.w[i+words+1] << (64 - b)
		}
		z.w[i] = v
	}
	z.n = n
	z.norm()
}

func (x *wnat) trailingZeros() uint {
	for i := 0; i < x.n; i++ {
		if x.w[i] != 0 {
			return uint(i*64 + bits.TrailingZeros64(x.w[i]))
		}
	}
	return 0
}

// setBig sets z to |x| in math/big, reusing z's memory.
func (x *wnat) setBig(z *big.Int, neg bool) {
	ws := z.Bits()[:0]
	for _, w := range x.w[:x.n] {
		ws = append(ws, big.Word(w))
	}
	z.SetBits(ws)
	if neg {
		z.Neg(z)
	}
}

// signedAdd sets (z, zneg) = (x, xneg) + (y, yneg) and reports whether it fits.
func signedAdd(z *wnat, x *wnat, xneg bool, y *wnat, yneg bool) (neg, ok bool) {
	if xneg == yneg {
		return xneg, z.add(x, y)
	}
	if wcmp(x, y) >= 0 {
		z.sub(x, y)
		return xneg && !z.isZero(), true
	}
	z.sub(y, x)
	return yneg, true
}

// wideOp sets x to x op y in the wide tier and reports whether the result
// fits; when it does not, x is unchanged. The caller has ruled out
// division by zero.
func wideOp(k opKind, x, y *slot) bool {
	var n, d wnat
	var neg, ok bool
	switch k {
	case opAdd, opSub:
		yneg := y.wneg != (k == opSub) && !y.wn.isZero()
		if wcmp(&x.wd, &y.wd) == 0 {
			neg, ok = signedAdd(&n, &x.wn, x.wneg, &y.wn, yneg)
			d = x.wd
			break
		}
		var a, b wnat
		if !a.mul(&x.wn, &y.wd) || !b.mul(&y.wn, &x.wd) || !d.mul(&x.wd, &y.wd) {
			return false
		}
		neg, ok = signedAdd(&n, &a, x.wneg, &b, yneg)
	case opMul:
		ok = n.mul(&x.wn, &y.wn) && d.mul(&x.wd, &y.wd)
		neg = x.wneg != y.wneg && !n.isZero()
	default: // opDiv
		ok = n.mul(&x.wn, &y.wd) && d.mul(&x.wd, &y.wn)
		neg = x.wneg != y.wneg && !n.isZero()
	}
	if !ok {
		return false
	}
	x.wn, x.wd, x.wneg = n, d, neg
	return true
}

// strip25Wide sets rest to d without its factors 2 and 5 and returns the
// exponent k of the smallest power of ten that those factors divide.
func strip25Wide(d *wnat, rest *wnat) int {
	twos := d.trailingZeros()
	rest.shr(d, twos)
	fives := 0
	var q wnat
	for {
		r := q.divWord(rest, pow5x27)
		if r != 0 {
			// Fewer than 27 fives remain, and rest and r have the same number.
			k, p := 0, uint64(1)
			for r%5 == 0 {
				r /= 5
				k++
				p *= 5
			}
			if k > 0 {
				rest.divWord(rest, p)
				fives += k
			}
			break
		}
		*rest = q
		fives += 27
	}
	return max(int(twos), fives)
}

// pow5x27 is 5^27, the largest power of five in a uint64.
const pow5x27 = 7450580596923828125
