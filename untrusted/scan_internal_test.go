package untrusted

import (
	"regexp"
	"slices"
	"testing"

	"airlock.dev/airlock/untrusted/internal/scaneval"
)

func TestFoldable(t *testing.T) {
	for re, want := range map[string]bool{
		`ignore\s+all`:     true,
		`\bnote\S+\p{Lu}`:  true,
		`[A-Z]placeholder`: false,
		`önceki`:           false,
		`игнорируй`:        false,
		`忽略|指示`:            true,
	} {
		if got := foldable(re); got != want {
			t.Errorf("foldable(%q) = %v, want %v", re, got, want)
		}
	}
}

// TestLowerMatchesFold checks that every phrase compiled without (?i)
// for speed finds, on lower-cased chunks, exactly what its (?i) form
// finds on the chunks themselves, over the evaluation set.
func TestLowerMatchesFold(t *testing.T) {
	docs, err := scaneval.Load("testdata/scaneval")
	if err != nil {
		t.Fatal(err)
	}
	all := phrases()
	folds := make([]*regexp.Regexp, len(all))
	n := 0
	for i := range all {
		if all[i].lower {
			folds[i] = regexp.MustCompile("(?i)" + all[i].re.String())
			n++
		}
	}
	if n < len(all)/2 {
		t.Fatalf("only %d of %d phrases run lower-cased", n, len(all))
	}
	for _, d := range docs {
		folded, _ := fold(d.Text)
		for _, c := range chunks(folded) {
			chunk := folded[c[0]:c[1]]
			lower, _ := asciiLower(chunk)
			for i := range all {
				if folds[i] == nil {
					continue
				}
				got := all[i].find(chunk, lower, MaxMatchesPerChunk)
				want := folds[i].FindAllStringIndex(chunk, MaxMatchesPerChunk)
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("%s: phrase %d (%s) finds %v lower-cased, %v with (?i)", d.Name, i, all[i].name, got, want)
				}
			}
		}
	}
}
