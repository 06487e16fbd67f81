// Command train fits the injection scanner's n-gram model
// (untrusted/internal/ngram) and writes its weights file. Run it from the
// module root:
//
//	go run ./untrusted/internal/train
//
// It reads the train split of untrusted/testdata/scaneval and every
// document of untrusted/testdata/scantrain (extra training documents);
// it picks the model's threshold on the held-out split of scaneval and
// never reads the blind split's documents (they are dropped as loaded).
// Training is deterministic: the same data and code give the same bytes,
// which the package's test checks against the embedded weights.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	eval := fs.String("eval", DefaultEvalDir, "the evaluation set (its train split trains, its held-out split sets the threshold)")
	extra := fs.String("extra", DefaultExtraDir, "extra training documents, every one of them trains")
	out := fs.String("out", DefaultOut, "where to write the weights file")
	cv := fs.Int("cv", 0, "cross-validate with this many folds on the training documents and print recall at fixed false-flag rates; write nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cv > 1 {
		report, err := CrossValidate(*eval, *extra, *cv)
		if err != nil {
			fmt.Fprintln(stderr, "train:", err)
			return 1
		}
		fmt.Fprint(stdout, report)
		return 0
	}
	data, report, err := Build(*eval, *extra)
	if err != nil {
		fmt.Fprintln(stderr, "train:", err)
		return 1
	}
	fmt.Fprint(stdout, report)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(stderr, "train:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", *out, len(data))
	return 0
}
