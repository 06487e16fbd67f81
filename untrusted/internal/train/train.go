package main

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"airlock.dev/airlock/untrusted"
	"airlock.dev/airlock/untrusted/internal/ngram"
	"airlock.dev/airlock/untrusted/internal/scaneval"
)

// Paths from the module root, and the training schedule. Changing one
// changes the weights: retrain.
const (
	DefaultEvalDir  = "untrusted/testdata/scaneval"
	DefaultExtraDir = "untrusted/testdata/scantrain"
	DefaultOut      = "untrusted/internal/ngram/weights.bin"

	// Epochs of stochastic gradient descent over the training documents.
	Epochs = 40
	// WarmEpochs train an attack document on all its windows (each at
	// 1/n of its weight) before multiple-instance learning takes over and
	// trains it on its best window only: at the start the model cannot
	// yet tell which window holds the attack.
	WarmEpochs = 2
	// LearningRate is the first epoch's step; epoch e uses
	// LearningRate/(1+e*Decay).
	LearningRate = 2.0
	Decay        = 0.2
	// L2 is the weight decay per training step.
	L2 = 1e-4
	// Planted is how many documents planted builds from each attack
	// document.
	Planted = 2
	// Seed fixes the order in which documents are visited.
	Seed = 20261202
	// AttackShare is the share of the total training weight given to
	// attack documents: there are many more clean windows than attack
	// documents.
	AttackShare = 0.5
)

// example is one document as windows of feature buckets.
type example struct {
	doc     scaneval.Doc
	feats   []int32 // the buckets, in order of the rune at which they end
	windows [][2]int32
}

func featurize(d scaneval.Doc) example {
	runes, _ := ngram.Normalize(d.Text)
	starts := make([]int32, len(runes)+1) // starts[i]: first feature ending at rune i or later
	var feats []int32
	last := 0
	ngram.Features(runes, func(end int, b int32) {
		for ; last < end; last++ {
			starts[last+1] = int32(len(feats))
		}
		feats = append(feats, b)
	})
	for ; last < len(runes); last++ {
		starts[last+1] = int32(len(feats))
	}
	ex := example{doc: d, feats: feats}
	for _, w := range ngram.Windows(len(runes)) {
		ex.windows = append(ex.windows, [2]int32{starts[w[0]], starts[w[1]]})
	}
	return ex
}

// trainer holds the weights as scale*v, so that L2 decay is one
// multiplication per step rather than one per weight.
type trainer struct {
	v     []float64
	scale float64
	bias  float64
}

// logit of a window: the features' weights summed, over the square root
// of their count (as ngram.Model.Score).
func (t *trainer) logit(feats []int32) float64 {
	if len(feats) == 0 {
		return t.bias
	}
	var sum float64
	for _, f := range feats {
		sum += t.v[f]
	}
	return t.bias + float64(t.scale*sum)/math.Sqrt(float64(len(feats)))
}

// step moves the window's logit towards label with the given weight.
func (t *trainer) step(feats []int32, label, weight, lr float64) {
	g := float64(ngram.Sigmoid(t.logit(feats))-label) * weight
	t.scale *= 1 - lr*L2
	if t.scale < 1e-9 {
		for i := range t.v {
			t.v[i] *= t.scale
		}
		t.scale = 1
	}
	t.bias -= float64(lr * g)
	if len(feats) == 0 {
		return
	}
	d := float64(lr*g) / math.Sqrt(float64(len(feats))) / t.scale
	for _, f := range feats {
		t.v[f] -= d
	}
}

func (t *trainer) best(ex *example) (int, float64) {
	bi, bl := 0, math.Inf(-1)
	for i, w := range ex.windows {
		if l := t.logit(ex.feats[w[0]:w[1]]); l > bl {
			bi, bl = i, l
		}
	}
	return bi, bl
}

// planted returns, for each attack document, Planted more made of it
// set between two clean documents (the text of one before it, of another
// after): the attack documents are short, and an attack in the wild is a
// few sentences inside an ordinary page. Multiple-instance learning must
// then find the attack's windows, and the clean text around them is
// learnt as clean.
func planted(train []example, rng *rand.Rand) []example {
	var clean []int
	for i, ex := range train {
		if !ex.doc.Attack {
			clean = append(clean, i)
		}
	}
	if len(clean) == 0 {
		return nil
	}
	var out []example
	for _, ex := range train {
		if !ex.doc.Attack {
			continue
		}
		for range Planted {
			a, b := train[clean[rng.IntN(len(clean))]].doc, train[clean[rng.IntN(len(clean))]].doc
			d := ex.doc
			d.Name += "+planted"
			d.Text = a.Text + "\n\n" + d.Text + "\n\n" + b.Text
			out = append(out, featurize(d))
		}
	}
	return out
}

// fit trains on the examples with multiple-instance learning: a clean
// document's every window is clean; an attack document has at least one
// attack window, taken to be its best one.
func fit(train []example) *trainer {
	t := &trainer{v: make([]float64, ngram.Buckets), scale: 1}
	rng := rand.New(rand.NewPCG(Seed, Seed))
	train = append(train[:len(train):len(train)], planted(train, rng)...)
	var attacks, cleanWindows float64
	for _, ex := range train {
		if ex.doc.Attack {
			attacks++
		} else {
			cleanWindows += float64(len(ex.windows))
		}
	}
	attackWeight := AttackShare / (1 - AttackShare) * cleanWindows / max(attacks, 1)
	order := make([]int, len(train))
	for i := range order {
		order[i] = i
	}
	for e := range Epochs {
		lr := LearningRate / (1 + float64(e)*Decay)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			ex := &train[i]
			switch {
			case !ex.doc.Attack:
				for _, w := range ex.windows {
					t.step(ex.feats[w[0]:w[1]], 0, 1, lr)
				}
			case e < WarmEpochs:
				for _, w := range ex.windows {
					t.step(ex.feats[w[0]:w[1]], 1, attackWeight/float64(len(ex.windows)), lr)
				}
			default:
				bi, _ := t.best(ex)
				w := ex.windows[bi]
				t.step(ex.feats[w[0]:w[1]], 1, attackWeight, lr)
			}
		}
	}
	return t
}

// model turns the trainer's weights into a Model with threshold 0.
func (t *trainer) model() *ngram.Model {
	m := &ngram.Model{Weights: make([]float32, ngram.Buckets), Bias: float32(t.bias)}
	for i, v := range t.v {
		m.Weights[i] = float32(float64(t.scale * v))
	}
	return m
}

// load returns the training documents (evalDir's train split and every
// document of extraDir, extra being those) and evalDir's held-out split.
func load(evalDir, extraDir string) (train, holdout, extra []scaneval.Doc, err error) {
	docs, err := scaneval.Load(evalDir)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, d := range docs {
		switch d.Split {
		case scaneval.Train:
			train = append(train, d)
		case scaneval.Holdout:
			holdout = append(holdout, d)
		}
		// The blind split is neither trained on nor looked at.
	}
	extra, err = scaneval.Load(extraDir)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, d := range extra {
		if d.Split == scaneval.Blind {
			return nil, nil, nil, fmt.Errorf("%s: extra training documents must not be in blind files", d.Name)
		}
		d.Split = scaneval.Train
		train = append(train, d)
	}
	return train, holdout, extra, nil
}

// Build trains on evalDir's train split and every document of extraDir,
// sets the threshold on evalDir's held-out split, and returns the weights
// file and a report of recall and false flags on train and held out.
func Build(evalDir, extraDir string) ([]byte, string, error) {
	train, holdout, extra, err := load(evalDir, extraDir)
	if err != nil {
		return nil, "", err
	}
	exs := make([]example, len(train))
	for i, d := range train {
		exs[i] = featurize(d)
	}
	m := fit(exs).model()
	// Quantise first, so that the threshold is set on the weights that
	// will be embedded.
	m, err = ngram.Decode(m.Encode())
	if err != nil {
		return nil, "", err
	}
	m.Threshold = threshold(m, holdout)
	var rep strings.Builder
	fmt.Fprintf(&rep, "trained on %d documents (%d from %s), %d windows; threshold %.3f set on %d held-out documents\n",
		len(train), len(extra), extraDir, countWindows(exs), m.Threshold, len(holdout))
	report(&rep, m, map[string][]scaneval.Doc{scaneval.Train: train, scaneval.Holdout: holdout})
	return m.Encode(), rep.String(), nil
}

func countWindows(exs []example) int {
	n := 0
	for _, ex := range exs {
		n += len(ex.windows)
	}
	return n
}

// threshold picks the window logit at which the model flags, on the
// held-out split, for the model as Scan uses it: beside the rules, a
// document flagged when either flags. It maximises the attacks caught
// less the clean documents flagged (one each) of the held-out documents
// the rules alone leave as they are, and takes the middle of the best
// interval of logits, away from the documents on both sides of it.
func threshold(m *ngram.Model, holdout []scaneval.Doc) float32 {
	type point struct {
		logit  float64
		attack bool
	}
	var pts []point
	for _, d := range holdout {
		if rulesFlag(d.Text) {
			continue // flagged whatever the model says
		}
		pts = append(pts, point{m.Score(d.Text).Logit, d.Attack})
	}
	if len(pts) == 0 {
		return 0
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.logit, b.logit) })
	// Flagging is logit >= t. With t above every point nothing is
	// flagged; lowering t past a point flags it.
	score, bestScore := 0, 0
	bestLo, bestHi := pts[len(pts)-1].logit, pts[len(pts)-1].logit+1
	for i := len(pts) - 1; i >= 0; i-- {
		if pts[i].attack {
			score++
		} else {
			score--
		}
		lo := pts[i].logit - 1
		if i > 0 {
			lo = pts[i-1].logit
		}
		if score > bestScore { // on a tie, the higher interval, found first
			bestScore, bestLo, bestHi = score, lo, pts[i].logit
		}
	}
	return float32((bestLo + bestHi) / 2)
}

// rulesFlag reports whether the rules alone flag text.
func rulesFlag(text string) bool {
	rep, err := untrusted.ScanWith(text, &untrusted.Options{RulesOnly: true})
	return err == nil && rep.Flagged
}

// report prints the model's recall per attack category and false flags
// per clean kind, per split.
func report(w *strings.Builder, m *ngram.Model, splits map[string][]scaneval.Doc) {
	type cell struct{ n, flagged int }
	rows := map[string]map[string]*cell{}
	for split, docs := range splits {
		for _, d := range docs {
			key := "clean/" + d.Category
			if d.Attack {
				key = "attack/" + d.Category
			}
			if rows[key] == nil {
				rows[key] = map[string]*cell{}
			}
			c := rows[key][split]
			if c == nil {
				c = &cell{}
				rows[key][split] = c
			}
			c.n++
			if m.Score(d.Text).Prob >= 0.5 {
				c.flagged++
			}
		}
	}
	names := make([]string, 0, len(rows))
	for k := range rows {
		names = append(names, k)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "%-28s %14s %14s\n", "model alone", "train", "held out")
	for _, k := range names {
		fmt.Fprintf(w, "%-28s", k)
		for _, split := range []string{scaneval.Train, scaneval.Holdout} {
			c := rows[k][split]
			if c == nil {
				fmt.Fprintf(w, " %14s", "-")
				continue
			}
			fmt.Fprintf(w, " %5d/%-3d %3.0f%%", c.flagged, c.n, 100*float64(c.flagged)/float64(c.n))
		}
		fmt.Fprintln(w)
	}
}

// CrossValidate trains k models, each on all training documents but
// one k-th, and reports how the held-back documents score: the recall
// per attack category at the logit that flags a given share of the
// held-back clean documents. It reads the train split and the extra
// documents only, so that settings can be compared without the held-out
// split.
func CrossValidate(evalDir, extraDir string, k int) (string, error) {
	train, _, _, err := load(evalDir, extraDir)
	if err != nil {
		return "", err
	}
	exs := make([]example, len(train))
	for i, d := range train {
		exs[i] = featurize(d)
	}
	type scored struct {
		doc   scaneval.Doc
		logit float64
	}
	var out []scored
	for fold := range k {
		var in []example
		for i, ex := range exs {
			if i%k != fold {
				in = append(in, ex)
			}
		}
		m := fit(in).model()
		for i, ex := range exs {
			if i%k == fold {
				out = append(out, scored{ex.doc, m.Score(ex.doc.Text).Logit})
			}
		}
	}
	var clean []float64
	for _, s := range out {
		if !s.doc.Attack {
			clean = append(clean, s.logit)
		}
	}
	slices.Sort(clean)
	slices.Reverse(clean)
	var w strings.Builder
	for _, ff := range []float64{0.01, 0.02, 0.05} {
		t := clean[min(int(ff*float64(len(clean))), len(clean)-1)]
		hit, n := map[string]int{}, map[string]int{}
		var cats []string
		tot, totN := 0, 0
		for _, s := range out {
			if !s.doc.Attack {
				continue
			}
			if n[s.doc.Category] == 0 {
				cats = append(cats, s.doc.Category)
			}
			n[s.doc.Category]++
			totN++
			if s.logit > t {
				hit[s.doc.Category]++
				tot++
			}
		}
		slices.Sort(cats)
		fmt.Fprintf(&w, "false flags %.0f%% (logit %.2f): recall %.1f%%", 100*ff, t, 100*float64(tot)/float64(totN))
		for _, c := range cats {
			fmt.Fprintf(&w, " %s %.0f", c, 100*float64(hit[c])/float64(n[c]))
		}
		fmt.Fprintln(&w)
	}
	return w.String(), nil
}
