package untrusted_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"airlock.dev/airlock/untrusted"
	"airlock.dev/airlock/untrusted/internal/scaneval"
)

// Targets of the evaluation, per attack category and per kind of clean
// document, on all documents of the category (both splits).
const (
	minRecall     = 0.90
	maxFalseFlags = 0.05
	// minAttackDocs and minCleanDocs keep the set from shrinking.
	minAttackDocs = 20
	minCleanDocs  = 200
)

// evalRow counts one category's documents and how many were flagged, per
// split.
type evalRow struct {
	attack          bool
	n, flagged      [2]int // [train, holdout]
	missed, falsely []string
}

func (r *evalRow) rate(split int) float64 {
	var n, f int
	if split == 2 {
		n, f = r.n[0]+r.n[1], r.flagged[0]+r.flagged[1]
	} else {
		n, f = r.n[split], r.flagged[split]
	}
	if n == 0 {
		return 0
	}
	return float64(f) / float64(n)
}

// TestScanEval runs Scan over the evaluation set and prints recall per
// attack category and false flags per kind of clean document, on the
// train split, the held-out split and both. It fails when a category's
// recall over both splits is under minRecall or a clean kind's false-flag
// rate is over maxFalseFlags. Print the table with
//
//	go test ./untrusted -run TestScanEval -v
func TestScanEval(t *testing.T) {
	docs := loadEval(t)
	rows := map[string]*evalRow{}
	var names []string
	clean := 0
	for _, d := range docs {
		key := "clean/" + d.Category
		if d.Attack {
			key = "attack/" + d.Category
		}
		r := rows[key]
		if r == nil {
			r = &evalRow{attack: d.Attack}
			rows[key] = r
			names = append(names, key)
		}
		split := 0
		if d.Split == scaneval.Holdout {
			split = 1
		}
		rep := untrusted.Scan(d.Text)
		r.n[split]++
		if rep.Flagged {
			r.flagged[split]++
		}
		switch {
		case d.Attack && !rep.Flagged:
			r.missed = append(r.missed, fmt.Sprintf("%s [%s] score %.2f %v", d.Name, d.Split, rep.Score, rep.Names()))
		case !d.Attack && rep.Flagged:
			r.falsely = append(r.falsely, fmt.Sprintf("%s [%s] score %.2f %v", d.Name, d.Split, rep.Score, rep.Names()))
		}
		if !d.Attack {
			clean++
		}
	}
	slices.Sort(names) // attack/... before clean/...
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| category | measure | train n | train | held-out n | held-out | all |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, name := range names {
		r := rows[name]
		kind := "recall"
		if !r.attack {
			kind = "false flags"
		}
		fmt.Fprintf(&tab, "| %s | %s | %d | %.1f%% | %d | %.1f%% | %.1f%% |\n",
			name, kind, r.n[0], 100*r.rate(0), r.n[1], 100*r.rate(1), 100*r.rate(2))
	}
	t.Log(tab.String())
	for _, name := range names {
		r := rows[name]
		for _, m := range r.missed {
			t.Logf("missed: %s", m)
		}
		for _, m := range r.falsely {
			t.Logf("false flag: %s", m)
		}
		switch {
		case r.attack && r.n[0]+r.n[1] < minAttackDocs:
			t.Errorf("%s: %d documents, want at least %d", name, r.n[0]+r.n[1], minAttackDocs)
		case r.attack && r.rate(2) < minRecall:
			t.Errorf("%s: recall %.1f%%, want at least %.0f%%", name, 100*r.rate(2), 100*minRecall)
		case !r.attack && r.rate(2) > maxFalseFlags:
			t.Errorf("%s: %.1f%% false flags, want at most %.0f%%", name, 100*r.rate(2), 100*maxFalseFlags)
		}
	}
	if clean < minCleanDocs {
		t.Errorf("%d clean documents, want at least %d", clean, minCleanDocs)
	}
}

// BenchmarkScanEval scans the evaluation set's clean documents, the
// common case: ordinary pages, mail and code with no attack in them.
func BenchmarkScanEval(b *testing.B) {
	var sb strings.Builder
	for _, d := range loadEval(b) {
		if !d.Attack {
			sb.WriteString(d.Text)
			sb.WriteByte('\n')
		}
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		untrusted.Scan(text)
	}
}
