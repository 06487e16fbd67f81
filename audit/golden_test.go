package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.jsonl and its head file")

// TestGolden pins the format: the same entries with the same clock must
// give the same bytes, and the log kept in testdata must verify. A change
// here breaks every log already written; run with -update only for a
// deliberate change of format.
func TestGolden(t *testing.T) {
	const golden = "testdata/golden.jsonl"
	path, _ := writeLog(t, 3, nil)
	for _, c := range [][2]string{{path, golden}, {HeadPath(path), HeadPath(golden)}} {
		got, err := os.ReadFile(c[0])
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(c[1], got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(c[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the log writes now:\ngot  %s\nwant %s", filepath.Base(c[1]), got, want)
		}
	}
	rep, err := Verify(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != 3 {
		t.Errorf("Verify(%s): %+v", golden, rep)
	}
}
