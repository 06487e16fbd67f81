package calc

import (
	"errors"
	"math"
	"math/big"
	"math/rand"
	"strconv"
	"testing"
	"testing/quick"
)

// infBoundary is 2^1024 - 2^970, halfway between math.MaxFloat64 and
// 2^1024: the least magnitude that float64 conversion rounds to infinity
// (the tie goes to the even neighbour, 2^1024).
func infBoundary() *big.Int {
	b := new(big.Int).Lsh(big.NewInt(1), 1024)
	return b.Sub(b, new(big.Int).Lsh(big.NewInt(1), 970))
}

// TestFiniteBoundary pins the range check to the exact point where a
// value's float64 stops being finite, from both sides, in every tier and
// after rounding.
func TestFiniteBoundary(t *testing.T) {
	b := infBoundary()
	below := new(big.Int).Sub(b, big.NewInt(1)).String()
	maxF, _ := new(big.Float).SetFloat64(math.MaxFloat64).Int(nil)
	half := &Options{Round: &Rounding{Places: 0, Mode: HalfEven}}
	tests := []struct {
		src  string
		opts *Options
		ok   bool
	}{
		{"1.7976931348623158e308 + 1e292", nil, false}, // rounds to +Inf
		{"1.7976931348623157e308 + 1e292", nil, true},  // rounds to MaxFloat64
		{"1.7976931348623158e308", nil, true},
		{maxF.String(), nil, true},
		{maxF.String() + "+1", nil, true}, // past MaxFloat64, still rounds down to it
		{b.String(), nil, false},
		{"-" + b.String(), nil, false},
		{below, nil, true},
		{"-" + below, nil, true},
		{below + "+1", nil, false},
		{below + "+0.5", nil, true},
		{"(" + below + "+0.5)/1", nil, true},
		{"(" + below + "+0.5)*2/2", nil, false}, // the intermediate product is past it
		{below + "+0.5", half, false},           // half-even rounds up to the boundary
		{below + "+0.25", half, true},
	}
	for _, tt := range tests {
		v, err := Eval(tt.src, tt.opts)
		if !tt.ok {
			if !errors.Is(err, &Error{Code: CodeNonFinite}) {
				t.Errorf("%.40s...: got %v, %v; want non_finite", tt.src, v, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%.40s...: %v; want a value", tt.src, err)
			continue
		}
		if f := v.Float64(); math.IsInf(f, 0) || math.IsNaN(f) {
			t.Errorf("%.40s...: float %v", tt.src, f)
		}
	}
}

// TestFiniteIffFloat is the property behind non_finite: calc gives a value
// exactly when the value's float64 is finite. Values are drawn around the
// boundary, where a check by bit length or against MaxFloat64 goes wrong.
func TestFiniteIffFloat(t *testing.T) {
	b := infBoundary()
	base := new(big.Int).Sub(b, new(big.Int).Lsh(big.NewInt(1), 972))
	prop := func(off uint64, den uint16, neg bool) bool {
		// base + off * 2^909: from 2^972 below the boundary to as far past
		// it, so that about half the values are finite.
		k := new(big.Int).Lsh(new(big.Int).SetUint64(off), 909)
		n := new(big.Int).Add(base, k)
		d := int64(den%7) + 1
		want := new(big.Rat).SetFrac(n, big.NewInt(d))
		src := n.String() + "/" + strconv.FormatInt(d, 10)
		if neg {
			src = "-" + src
			want.Neg(want)
		}
		f, _ := want.Float64()
		v, err := Eval(src, nil)
		// The literal n is checked before the division.
		wantOK := !math.IsInf(f, 0) && new(big.Rat).SetInt(n).Cmp(new(big.Rat).SetInt(b)) < 0
		if wantOK != (err == nil) {
			t.Logf("%s: err %v, float %v", src, err, f)
			return false
		}
		return err != nil || v.Float64() == f
	}
	cfg := &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(1))}
	if err := quick.Check(prop, cfg); err != nil {
		t.Fatal(err)
	}
}
