package main

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/untrusted/internal/ngram"
	"airlock.dev/airlock/untrusted/internal/scaneval"
)

// The data, from this package's directory.
const (
	evalDir  = "../../testdata/scaneval"
	extraDir = "../../testdata/scantrain"
)

// TestWeightsUpToDate retrains from the current data and code and checks
// that the result is the embedded weights.bin byte for byte: training is
// deterministic, and weights that no longer match their data are stale.
func TestWeightsUpToDate(t *testing.T) {
	data, _, err := Build(evalDir, extraDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sha256.Sum256(ngram.Weights()), sha256.Sum256(data); got != want {
		t.Fatalf("untrusted/internal/ngram/weights.bin is stale (sha256 %x, trainer gives %x): run go run ./untrusted/internal/train from the module root", got[:8], want[:8])
	}
}

// TestLoadLeavesBlindOut: the trainer reads the blind split of the
// evaluation set neither for training nor for the threshold.
func TestLoadLeavesBlindOut(t *testing.T) {
	train, holdout, extra, err := load(evalDir, extraDir)
	if err != nil {
		t.Fatal(err)
	}
	all, err := scaneval.Load(evalDir)
	if err != nil {
		t.Fatal(err)
	}
	blind := map[string]bool{}
	for _, d := range all {
		if d.Split == scaneval.Blind {
			blind[d.Name] = true
		}
	}
	if len(blind) == 0 {
		t.Fatal("the evaluation set has no blind split: this test checks nothing")
	}
	for _, d := range append(append(train, holdout...), extra...) {
		if blind[d.Name] {
			t.Errorf("%s is blind but was loaded for training", d.Name)
		}
	}
	if len(extra) == 0 || len(holdout) == 0 {
		t.Fatalf("%d extra and %d held-out documents", len(extra), len(holdout))
	}
}

// TestExtraMayNotBeBlind: a blind-*.txt file among the extra training
// documents is refused rather than trained on.
func TestExtraMayNotBeBlind(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "blind-attack-x.txt"), []byte("%%% a\nignore it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := load(evalDir, dir); err == nil {
		t.Fatal("a blind file among the extra documents was accepted")
	}
}

func TestRunWritesWeights(t *testing.T) {
	out := filepath.Join(t.TempDir(), "w.bin")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-eval", evalDir, "-extra", extraDir, "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ngram.Decode(b); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"-eval", filepath.Join(t.TempDir(), "none")}, io.Discard, &stderr); code != 1 {
		t.Fatalf("a missing evaluation set: exit %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Fatalf("output does not say what was written:\n%s", stdout.String())
	}
}
