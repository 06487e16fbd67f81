package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzVerify feeds Verify any log and head file. It must not fail or
// panic, its report must hold together, and a log it finds sound must be
// one Open continues.
func FuzzVerify(f *testing.F) {
	golden, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	goldenHead, err := os.ReadFile(HeadPath("testdata/golden.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(golden), "\n")
	f.Add(golden, goldenHead)
	f.Add([]byte(lines[0]+lines[2]+lines[1]), goldenHead)
	f.Add([]byte(lines[0]+lines[1]), goldenHead)
	f.Add(golden, []byte(`{"seq":0,"hash":""}`+"\n"))
	f.Add([]byte(lines[0]+"{}\n"+lines[1][:30]), []byte("x"))
	f.Add([]byte{}, []byte{})
	kinds := []string{KindEdited, KindDeleted, KindInserted, KindReordered, KindTruncated, KindMalformed}

	f.Fuzz(func(t *testing.T, log, headFile []byte) {
		// In memory: each run must take microseconds, or the fuzzer's
		// minimizing of a new input outlasts -fuzztime.
		rep, err := verify(bytes.NewReader(log), headFile, len(headFile) > 0, "audit.jsonl.head")
		if err != nil {
			t.Fatal(err)
		}
		nlines := strings.Count(string(log), "\n") + 1
		if rep.OK != (len(rep.Problems) == 0) || rep.Records > nlines {
			t.Fatalf("report does not hold together: %+v", rep)
		}
		for _, p := range rep.Problems {
			if !slices.Contains(kinds, p.Kind) || p.Line < 0 || p.Line > nlines+1 || p.Message == "" {
				t.Fatalf("bad problem %+v", p)
			}
		}
		if !rep.OK {
			return
		}
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, log, 0o600); err != nil {
			t.Fatal(err)
		}
		if len(headFile) > 0 {
			if err := os.WriteFile(HeadPath(path), headFile, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// Open's decision, without its syncer goroutine: the coverage the
		// fuzzer sees must not depend on scheduling, or it keeps finding
		// "new" inputs and minimizing them until its deadline.
		l, err := openFile(path, nil)
		if err != nil {
			if rep.OK {
				t.Fatalf("Verify finds the log sound but Open refuses it: %v", err)
			}
			return
		}
		l.f.Close()
	})
}

// TestVerifySoundLogsAppend: a log FuzzVerify's seeds find sound takes
// one more record through the whole of Open, Append and Close, and still
// verifies.
func TestVerifySoundLogsAppend(t *testing.T) {
	golden, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	goldenHead, err := os.ReadFile(HeadPath("testdata/golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(golden), "\n")
	for i, c := range []struct {
		log, head string
		sound     bool
	}{
		{string(golden), string(goldenHead), true},
		{"", "", true},
		{lines[0] + lines[1], string(goldenHead), false},
		{lines[0] + lines[2] + lines[1], string(goldenHead), false},
	} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		if c.head != "" {
			if err := os.WriteFile(HeadPath(path), []byte(c.head), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if rep := mustVerify(t, path); rep.OK != c.sound && c.log != "" {
			t.Fatalf("case %d: Verify OK = %v, want %v", i, rep.OK, c.sound)
		}
		l, err := Open(path, nil)
		if (err == nil) != c.sound {
			t.Fatalf("case %d: Open: %v, want sound = %v", i, err, c.sound)
		}
		if err != nil {
			continue
		}
		if _, err := l.Append(entry(1)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if after := mustVerify(t, path); !after.OK {
			t.Fatalf("case %d: a sound log with one more record does not verify: %v", i, after.Problems)
		}
	}
}

// FuzzTamper deletes, copies and moves whole lines of a sound log of
// eight records. Whatever the result, Verify must find it sound exactly
// when the lines are the ones written, in order, and must not place the
// first problem before the first line that changed.
func FuzzTamper(f *testing.F) {
	f.Add([]byte{0, 3})
	f.Add([]byte{1, 2, 5})
	f.Add([]byte{2, 0, 7})
	f.Add([]byte{2, 3, 4, 0, 7})
	f.Add([]byte{0, 7, 0, 6})
	f.Add([]byte{2, 1, 2, 2, 2, 1})
	path, _ := writeLog(f, 8, nil)
	orig := readLines(f, path)

	f.Fuzz(func(t *testing.T, ops []byte) {
		lines := slices.Clone(orig)
		for i := 0; i+2 < len(ops)+1 && i < 12 && len(lines) > 0; i += 3 {
			op := ops[i] % 3
			a, b := 0, 0
			if i+1 < len(ops) {
				a = int(ops[i+1]) % len(lines)
			}
			if i+2 < len(ops) {
				b = int(ops[i+2]) % len(lines)
			}
			switch op {
			case 0:
				lines = slices.Delete(lines, a, a+1)
			case 1:
				lines = slices.Insert(lines, b, lines[a])
			case 2:
				lines[a], lines[b] = lines[b], lines[a]
			}
		}
		p := filepath.Join(t.TempDir(), "audit.jsonl")
		writeLines(t, p, lines)
		if err := writeHead(HeadPath(p), mustHead(t, HeadPath(path))); err != nil {
			t.Fatal(err)
		}
		rep := mustVerify(t, p)
		same := slices.Equal(lines, orig)
		if rep.OK != same {
			t.Fatalf("lines changed: %v, Verify OK: %v; problems %v", !same, rep.OK, rep.Problems)
		}
		if same {
			return
		}
		first := 0
		for first < len(lines) && first < len(orig) && lines[first] == orig[first] {
			first++
		}
		if got := rep.Problems[0].Line; got != 0 && got < first+1 {
			t.Fatalf("first problem at line %d, before the first line changed (%d): %v", got, first+1, rep.Problems)
		}
	})
}

func mustHead(t testing.TB, path string) head {
	h, ok, err := readHead(path)
	if err != nil || !ok {
		t.Fatal(err, ok)
	}
	return h
}
