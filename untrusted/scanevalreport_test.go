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
// document, on the train and held-out documents of the category. The blind
// split is a measurement only: its documents were written without sight of
// the rules, and holding the scanner to them would turn them into training
// data.
const (
	minRecall     = 0.90
	maxFalseFlags = 0.05
	// minAttackDocs and minCleanDocs keep the set from shrinking (train
	// and held out).
	minAttackDocs = 20
	minCleanDocs  = 200
)

// Columns of an evalRow: the splits, and splitBoth for train and held out
// together, the figure the targets apply to.
const (
	splitTrain = iota
	splitHoldout
	splitBlind
	splitBoth
)

// splitIndex is the column of a document's split.
func splitIndex(split string) int {
	switch split {
	case scaneval.Holdout:
		return splitHoldout
	case scaneval.Blind:
		return splitBlind
	}
	return splitTrain
}

// evalRow counts one category's documents and how many were flagged, per
// split.
type evalRow struct {
	attack          bool
	n, flagged      [3]int // [train, holdout, blind]
	rulesFlagged    [3]int // flagged by the rules alone (Options.RulesOnly)
	missed, falsely []string
}

// count is the number of documents and of flagged ones in a column.
func (r *evalRow) count(col int) (n, f int) {
	if col == splitBoth {
		return r.n[splitTrain] + r.n[splitHoldout], r.flagged[splitTrain] + r.flagged[splitHoldout]
	}
	return r.n[col], r.flagged[col]
}

func (r *evalRow) rate(col int) float64 {
	n, f := r.count(col)
	if n == 0 {
		return 0
	}
	return float64(f) / float64(n)
}

// cell prints a column's rate, "-" when it has no documents.
func (r *evalRow) cell(col int) string {
	if n, _ := r.count(col); n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*r.rate(col))
}

// TestScanEval runs Scan over the evaluation set and prints recall per
// attack category and false flags per kind of clean document, on the
// train split, the held-out split, both, and the blind split. It fails
// when a category's recall over train and held out is under minRecall or
// a clean kind's false-flag rate there is over maxFalseFlags; the blind
// column is printed, never checked. Print the table with
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
		split := splitIndex(d.Split)
		rep := untrusted.Scan(d.Text)
		r.n[split]++
		if rep.Flagged {
			r.flagged[split]++
		}
		if rules, _ := untrusted.ScanWith(d.Text, &untrusted.Options{RulesOnly: true}); rules.Flagged {
			r.rulesFlagged[split]++
		}
		switch {
		case d.Attack && !rep.Flagged:
			r.missed = append(r.missed, fmt.Sprintf("%s [%s] score %.2f %v", d.Name, d.Split, rep.Score, rep.Names()))
		case !d.Attack && rep.Flagged:
			r.falsely = append(r.falsely, fmt.Sprintf("%s [%s] score %.2f %v", d.Name, d.Split, rep.Score, rep.Names()))
		}
		if !d.Attack && split != splitBlind {
			clean++
		}
	}
	slices.Sort(names) // attack/... before clean/...
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| category | measure | train n | train | held-out n | held-out | train+held-out | blind n | blind (not checked) |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range names {
		r := rows[name]
		kind := "recall"
		if !r.attack {
			kind = "false flags"
		}
		fmt.Fprintf(&tab, "| %s | %s | %d | %s | %d | %s | %s | %d | %s |\n",
			name, kind, r.n[splitTrain], r.cell(splitTrain), r.n[splitHoldout], r.cell(splitHoldout),
			r.cell(splitBoth), r.n[splitBlind], r.cell(splitBlind))
	}
	fmt.Fprintf(&tab, "\nThe rules alone (Options.RulesOnly), then rules and model (Scan), train / held-out / blind:\n\n| category | measure | rules only | rules + model |\n|---|---|--:|--:|\n")
	var total [2]evalRow // attacks, clean
	for _, name := range names {
		r := rows[name]
		tr := &total[1]
		if r.attack {
			tr = &total[0]
		}
		tr.attack = r.attack
		for col := range r.n {
			tr.n[col] += r.n[col]
			tr.flagged[col] += r.flagged[col]
			tr.rulesFlagged[col] += r.rulesFlagged[col]
		}
	}
	rows["all attacks"], rows["all clean"] = &total[0], &total[1]
	for _, name := range append(names, "all attacks", "all clean") {
		r := rows[name]
		kind := "recall"
		if !r.attack {
			kind = "false flags"
		}
		var rules, both []string
		for col := range r.n {
			rules = append(rules, pct(r.rulesFlagged[col], r.n[col]))
			both = append(both, pct(r.flagged[col], r.n[col]))
		}
		fmt.Fprintf(&tab, "| %s | %s | %s | %s |\n", name, kind, strings.Join(rules, " / "), strings.Join(both, " / "))
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
		n, _ := r.count(splitBoth)
		switch {
		case r.attack && n < minAttackDocs:
			t.Errorf("%s: %d documents, want at least %d", name, n, minAttackDocs)
		case r.attack && r.rate(splitBoth) < minRecall:
			t.Errorf("%s: recall %.1f%%, want at least %.0f%%", name, 100*r.rate(splitBoth), 100*minRecall)
		case !r.attack && r.rate(splitBoth) > maxFalseFlags:
			t.Errorf("%s: %.1f%% false flags, want at most %.0f%%", name, 100*r.rate(splitBoth), 100*maxFalseFlags)
		}
	}
	if clean < minCleanDocs {
		t.Errorf("%d clean documents, want at least %d", clean, minCleanDocs)
	}
}

// pct prints f of n as a percentage, "-" when n is 0.
func pct(f, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(f)/float64(n))
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
