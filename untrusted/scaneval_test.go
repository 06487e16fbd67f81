package untrusted_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"airlock.dev/airlock/untrusted/internal/scaneval"
)

var update = flag.Bool("update", false, "rewrite testdata/scaneval/eval.jsonl from the source files")

const evalDir = "testdata/scaneval"

func loadEval(t testing.TB) []scaneval.Doc {
	t.Helper()
	docs, err := scaneval.Load(evalDir)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestScanEvalExport keeps testdata/scaneval/eval.jsonl, which the
// comparison harness in testdata/compare reads, equal to the expanded
// source files; -update rewrites it.
func TestScanEvalExport(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, d := range loadEval(t) {
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	path := evalDir + "/eval.jsonl"
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is stale: run go test ./untrusted -run TestScanEvalExport -update", path)
	}
}
