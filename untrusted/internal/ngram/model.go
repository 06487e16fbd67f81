package ngram

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"math"
	"sync"
)

// Model is a trained logistic regression over the hashed features.
type Model struct {
	// Weights has Buckets entries.
	Weights []float32
	// Bias is the intercept.
	Bias float32
	// Threshold is the window logit chosen (on the held-out split) as the
	// point where the model flags: Score maps it to probability 0.5.
	Threshold float32
}

// Result is a scored text.
type Result struct {
	// Prob is the calibrated probability that the text is an attack: the
	// best window's logit less Threshold, through the logistic function,
	// so that 0.5 is the model's own flagging point.
	Prob float64
	// Logit is the best window's raw logit.
	Logit float64
	// Start and End are the best window's byte span in the text.
	Start, End int
}

// Score scores the first MaxBytes of text. A window's logit is the bias
// plus the sum of the weights of the features that end inside it (each
// counted as often as it occurs) over the square root of their count, so
// that a short text and a full window weigh alike; the text takes its
// best window's.
func (m *Model) Score(text string) Result {
	runes, offs := Normalize(text)
	sums := make([]float64, len(runes)+1)
	counts := make([]int32, len(runes)+1)
	Features(runes, func(end int, b int32) {
		sums[end+1] += float64(m.Weights[b])
		counts[end+1]++
	})
	for i := 1; i < len(sums); i++ {
		sums[i] += sums[i-1]
		counts[i] += counts[i-1]
	}
	best := Result{Logit: math.Inf(-1)}
	for _, w := range Windows(len(runes)) {
		l := float64(m.Bias)
		if n := counts[w[1]] - counts[w[0]]; n > 0 {
			l += (sums[w[1]] - sums[w[0]]) / math.Sqrt(float64(n))
		}
		if l > best.Logit {
			best = Result{Logit: l, Start: offs[w[0]], End: offs[w[1]]}
		}
	}
	best.Prob = Sigmoid(best.Logit - float64(m.Threshold))
	return best
}

// Sigmoid is the logistic function.
func Sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// The weights file: magic, then little-endian Buckets (uint32), Bias,
// Threshold and Scale (float32), then Buckets int16 weights, each
// Scale times its value. Quantising to 16 bits halves the file (512 KiB)
// and loses nothing a threshold sees.
const (
	magic      = "airlkng1"
	headerSize = len(magic) + 4 + 3*4
	// FileSize is the size of an encoded model.
	FileSize = headerSize + 2*Buckets
)

// Encode writes m in the weights file's layout.
func (m *Model) Encode() []byte {
	var maxAbs float64
	for _, w := range m.Weights {
		maxAbs = max(maxAbs, math.Abs(float64(w)))
	}
	scale := float32(maxAbs / math.MaxInt16)
	if scale == 0 {
		scale = 1
	}
	b := make([]byte, 0, FileSize)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, Buckets)
	for _, f := range []float32{m.Bias, m.Threshold, scale} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	for _, w := range m.Weights {
		q := math.Round(float64(w) / float64(scale))
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(max(-math.MaxInt16, min(math.MaxInt16, q)))))
	}
	return b
}

// ErrBadWeights is returned by Decode for data that is not a weights file
// of this feature space.
var ErrBadWeights = errors.New("ngram: not a weights file for this feature space (retrain: go run ./untrusted/internal/train)")

// Decode reads a weights file.
func Decode(b []byte) (*Model, error) {
	if len(b) != FileSize || string(b[:len(magic)]) != magic || binary.LittleEndian.Uint32(b[len(magic):]) != Buckets {
		return nil, ErrBadWeights
	}
	f := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[len(magic)+4+4*i:])) }
	m := &Model{Bias: f(0), Threshold: f(1), Weights: make([]float32, Buckets)}
	scale := f(2)
	for i := range m.Weights {
		m.Weights[i] = float32(int16(binary.LittleEndian.Uint16(b[headerSize+2*i:]))) * scale
	}
	return m, nil
}

//go:embed weights.bin
var weights []byte

// Weights returns the embedded weights file.
func Weights() []byte { return weights }

// Embedded is the model embedded in the binary, decoded at its first use.
// It is nil only if weights.bin is broken, which its test rules out.
var Embedded = sync.OnceValue(func() *Model {
	m, err := Decode(weights)
	if err != nil {
		return nil
	}
	return m
})
