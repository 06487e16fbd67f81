package calc

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

func randWnat(rng *rand.Rand, maxWords int) wnat {
	var z wnat
	z.n = rng.IntN(maxWords + 1)
	for i := 0; i < z.n; i++ {
		switch rng.IntN(4) {
		case 0:
			z.w[i] = ^uint64(0)
		case 1:
			z.w[i] = uint64(rng.IntN(10))
		default:
			z.w[i] = rng.Uint64()
		}
	}
	z.norm()
	return z
}

func wnatBig(x *wnat) *big.Int {
	z := new(big.Int)
	x.setBig(z, false)
	return z
}

// TestWnatMatchesBig checks each fixed-width operation against math/big on
// random operands, including the overflow report.
func TestWnatMatchesBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	limit := new(big.Int).Lsh(big.NewInt(1), 64*wideWords)
	for i := 0; i < 20000; i++ {
		x, y := randWnat(rng, wideWords), randWnat(rng, wideWords)
		bx, by := wnatBig(&x), wnatBig(&y)

		var z wnat
		want := new(big.Int).Mul(bx, by)
		if ok := z.mul(&x, &y); ok != (want.Cmp(limit) < 0) || ok && wnatBig(&z).Cmp(want) != 0 {
			t.Fatalf("mul %v * %v: ok %v, got %v", bx, by, ok, wnatBig(&z))
		}
		want = new(big.Int).Add(bx, by)
		if ok := z.add(&x, &y); ok != (want.Cmp(limit) < 0) || ok && wnatBig(&z).Cmp(want) != 0 {
			t.Fatalf("add %v + %v: ok %v, got %v", bx, by, ok, wnatBig(&z))
		}
		if got := wcmp(&x, &y); got != bx.Cmp(by) {
			t.Fatalf("cmp %v %v: %d", bx, by, got)
		}
		if bx.Cmp(by) >= 0 {
			z.sub(&x, &y)
			if wnatBig(&z).Cmp(new(big.Int).Sub(bx, by)) != 0 {
				t.Fatalf("sub %v - %v: got %v", bx, by, wnatBig(&z))
			}
		}
		if d := rng.Uint64() >> rng.IntN(64); d != 0 {
			r := z.divWord(&x, d)
			q, m := new(big.Int).QuoRem(bx, new(big.Int).SetUint64(d), new(big.Int))
			if wnatBig(&z).Cmp(q) != 0 || m.Uint64() != r {
				t.Fatalf("divWord %v / %d: got %v r %d", bx, d, wnatBig(&z), r)
			}
		}
		s := uint(rng.IntN(64 * wideWords))
		z.shr(&x, s)
		if wnatBig(&z).Cmp(new(big.Int).Rsh(bx, s)) != 0 {
			t.Fatalf("shr %v >> %d: got %v", bx, s, wnatBig(&z))
		}
	}
}

// TestStrip25Wide checks the removal of factors 2 and 5 against math/big.
func TestStrip25Wide(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		d := big.NewInt(int64(rng.IntN(1000) + 1))
		d.Mul(d, new(big.Int).Exp(big.NewInt(2), big.NewInt(int64(rng.IntN(120))), nil))
		d.Mul(d, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(rng.IntN(120))), nil))
		if d.BitLen() > 64*wideWords {
			continue
		}
		var w, rest wnat
		for j, word := range d.Bits() {
			w.w[j] = uint64(word)
		}
		w.n = len(d.Bits())
		k := strip25Wide(&w, &rest)
		// Count the factors naively, one division at a time.
		wantRest, counts := new(big.Int).Set(d), [2]int{}
		for i, p := range []int64{2, 5} {
			for new(big.Int).Rem(wantRest, big.NewInt(p)).Sign() == 0 {
				wantRest.Quo(wantRest, big.NewInt(p))
				counts[i]++
			}
		}
		wantK := max(counts[0], counts[1])
		if k2 := strip25(d, new(big.Int), new(big.Int), new(big.Int)); k2 != wantK {
			t.Fatalf("strip25(%v) = %d, want %d", d, k2, wantK)
		}
		if k != wantK || wnatBig(&rest).Cmp(wantRest) != 0 {
			t.Fatalf("strip25Wide(%v) = %d, %v; want %d, %v", d, k, wnatBig(&rest), wantK, wantRest)
		}
	}
}
