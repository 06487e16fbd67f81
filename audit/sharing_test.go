package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// twoLogs opens two Logs of a new log, closed when the test ends.
func twoLogs(t *testing.T) (path string, a, b *Log) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs[i] = l
	}
	return path, logs[0], logs[1]
}

// logRecords reads the records of the log at path, which must be in seq
// order from 1: recs[i] is seq i+1.
func logRecords(t *testing.T, path string) []Record {
	t.Helper()
	var recs []Record
	for i, line := range readLines(t, path) {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if r.Seq != uint64(i+1) {
			t.Fatalf("line %d holds seq %d", i+1, r.Seq)
		}
		recs = append(recs, r)
	}
	return recs
}

// cutShort appends the start of a record's line, without its newline, to
// the log at path: what a writer killed in the middle of its write leaves.
func cutShort(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(forge(t, 99, "", entry(99))[:60]); err != nil {
		t.Fatal(err)
	}
}

// TestCutsALineCutShort: the next writer, an Append or Open, cuts a line
// cut short at the end of the log, and nothing else: with records short
// and longer than tailReader reads at a time.
func TestCutsALineCutShort(t *testing.T) {
	for _, note := range []int{0, 3 * tailChunk} {
		t.Run(fmt.Sprintf("Append, notes of %d bytes", note), func(t *testing.T) { cutByAppend(t, note) })
	}
	t.Run("Open", func(t *testing.T) {
		path, recs := writeLog(t, 3, nil)
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cutShort(t, path)
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
			t.Errorf("Open left the log:\n%s\nwant it as it was before the line cut short", after)
		}
		if r, err := l.Append(entry(4)); err != nil || r.Seq != 4 || r.Prev != recs[2].Hash {
			t.Errorf("Append: seq %d, %v; want seq 4", r.Seq, err)
		}
	})
	t.Run("Open, no record yet", func(t *testing.T) {
		path, _ := writeLog(t, 0, nil)
		cutShort(t, path)
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if r, err := l.Append(entry(1)); err != nil || r.Seq != 1 || r.Prev != "" {
			t.Errorf("Append: seq %d, %v; want seq 1", r.Seq, err)
		}
		if lines := readLines(t, path); len(lines) != 1 {
			t.Errorf("the log holds %d lines, want 1", len(lines))
		}
	})
}

// cutByAppend: one Log appends after a line cut short that follows
// another Log's record, with Notes of note bytes.
func cutByAppend(t *testing.T, note int) {
	long := func(i int) Entry {
		e := entry(i)
		e.Note = strings.Repeat("n", note)
		return e
	}
	path, a, b := twoLogs(t)
	for i, l := range []*Log{a, a, b} {
		if _, err := l.Append(long(i)); err != nil {
			t.Fatal(err)
		}
	}
	before := readLines(t, path)
	cutShort(t, path)
	if rep := mustVerify(t, path); rep.OK || rep.Problems[0].Kind != KindMalformed || rep.Problems[0].Line != 4 {
		t.Fatalf("Verify of a log with a line cut short: %+v", rep)
	}
	r, err := a.Append(long(3)) // a last saw seq 2: it catches up with b
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 4 || r.Prev != logRecords(t, path)[2].Hash {
		t.Errorf("Append after a line cut short: seq %d prev %.12s, want seq 4 after b's record", r.Seq, r.Prev)
	}
	want, _ := json.Marshal(r)
	if got := readLines(t, path); len(got) != 4 || strings.Join(got[:3], "") != strings.Join(before, "") || got[3] != string(want)+"\n" {
		t.Errorf("the log after the cut: %d lines, want the 3 lines before, then seq 4", len(got))
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 4 {
		t.Errorf("Verify: %+v", rep)
	}
}

// TestAppendRefusesABadTail: an Append that finds, where other writers
// appended, a last line that is not a record past its own, writes nothing.
func TestAppendRefusesABadTail(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string, lines []string)
	}{
		{"garbage appended", func(t *testing.T, path string, lines []string) {
			writeLines(t, path, append(lines, "garbage\n"))
		}},
		{"another writer's record edited", func(t *testing.T, path string, lines []string) {
			lines[3] = strings.Replace(lines[3], `"tool":"calculate"`, `"tool":"calculatf"`, 1)
			writeLines(t, path, lines)
		}},
		{"an earlier record copied to the end", func(t *testing.T, path string, lines []string) {
			writeLines(t, path, append(lines[:3], lines[1]))
		}},
		{"this writer's last record cut off", func(t *testing.T, path string, lines []string) {
			writeLines(t, path, lines[:2])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, a, b := twoLogs(t)
			for i, l := range []*Log{a, a, a, b} {
				if _, err := l.Append(entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			tt.tamper(t, path, readLines(t, path))
			before, _ := os.ReadFile(path)
			if _, err := a.Append(entry(9)); !errors.Is(err, ErrTailUnverified) {
				t.Errorf("Append: got %v, want ErrTailUnverified", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("the refused Append changed the log")
			}
		})
	}
}

// TestHeadNeverGoesBack: Logs of one file sync at once; the head file
// only ever names a later record, and after an Append in EveryRecord mode
// it names that record or a later one.
func TestHeadNeverGoesBack(t *testing.T) {
	if !writersApart {
		t.Skip("no flock here: writers are not kept apart")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs []*Log
	for _, mode := range []SyncMode{EveryRecord, EveryRecord, GroupCommit} {
		l, err := Open(path, &Options{Sync: mode, GroupWindow: 100 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	stop := make(chan struct{})
	watched := make(chan int)
	go func() {
		var last uint64
		changes := 0
		for {
			select {
			case <-stop:
				watched <- changes
				return
			default:
			}
			h, _, err := readHead(HeadPath(path))
			if err != nil {
				t.Error(err)
			}
			if h.Seq < last {
				t.Errorf("the head file went back from seq %d to %d", last, h.Seq)
			}
			if h.Seq != last {
				changes++
			}
			last = h.Seq
		}
	}()
	var wg sync.WaitGroup
	for _, l := range logs {
		for range 2 {
			wg.Go(func() {
				for i := range 40 {
					r, err := l.Append(entry(i))
					if err != nil {
						t.Error(err)
						return
					}
					if h, _, _ := readHead(HeadPath(path)); l.mode == EveryRecord && h.Seq < r.Seq {
						t.Errorf("after Append of seq %d in EveryRecord mode the head file names seq %d", r.Seq, h.Seq)
					}
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	t.Logf("the head file changed %d times", <-watched)
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 240 || rep.PastHead != 0 {
		t.Errorf("Verify: %+v", rep)
	}
}
