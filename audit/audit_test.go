package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock returns a Now that ticks one millisecond per call from a fixed
// instant, so that logs written by tests are the same every run.
func clock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// entry is a typical entry for call i.
func entry(i int) Entry {
	args := fmt.Sprintf(`{"expression":"%d*2"}`, i)
	result := fmt.Sprint(i * 2)
	return Entry{
		CallID: fmt.Sprintf("call-%d", i), Session: "s1", Tool: "calculate", Role: "operator", Mode: "ask",
		Decision: DecisionAllow,
		Stages: []Stage{
			{Name: "decode", Decision: DecisionPass, Micros: 3},
			{Name: "validate", Decision: DecisionPass, Micros: 12},
			{Name: "authorize", Decision: DecisionAllow, Micros: 5},
			{Name: "approval", Decision: DecisionSkip},
			{Name: "execute", Decision: DecisionPass, Micros: 40},
		},
		ArgsBytes: len(args), ArgsSHA256: sum(args),
		ResultBytes: len(result), ResultSHA256: sum(result),
		Note: fmt.Sprintf("call %d", i),
	}
}

// writeLog writes a log of n records with a fixed clock and returns its
// path and records.
func writeLog(t testing.TB, n int, opts *Options) (string, []Record) {
	t.Helper()
	return writeLogBy(t, 1, n, opts)
}

// writeLogBy is writeLog with several writers, Logs of their own that
// take turns: writer i%writers appends record i.
func writeLogBy(t testing.TB, writers, n int, opts *Options) (string, []Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	if opts == nil {
		opts = &Options{}
	}
	if opts.Now == nil {
		opts.Now = clock()
	}
	logs := make([]*Log, writers)
	for w := range logs {
		l, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		logs[w] = l
	}
	var recs []Record
	for i := 1; i <= n; i++ {
		r, err := logs[i%writers].Append(entry(i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path, recs
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(data), "\n")[:strings.Count(string(data), "\n")]
}

func mustVerify(t testing.TB, path string) Report {
	t.Helper()
	rep, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestAppendWritesAChain(t *testing.T) {
	path, recs := writeLog(t, 5, nil)
	lines := readLines(t, path)
	if got, want := len(lines), 5; got != want {
		t.Fatalf("lines: got %d, want %d", got, want)
	}
	prev := ""
	for i, r := range recs {
		if got, want := r.Seq, uint64(i+1); got != want {
			t.Errorf("record %d: seq %d, want %d", i, got, want)
		}
		if r.Prev != prev {
			t.Errorf("seq %d: prev %q, want %q", r.Seq, r.Prev, prev)
		}
		prev = r.Hash
		// The line is what encoding/json writes for the record.
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := lines[i]; got != string(want)+"\n" {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, got, want)
		}
	}
	rep := mustVerify(t, path)
	if !rep.OK || rep.Records != 5 || rep.Seq != 5 || rep.Head != recs[4].Hash || rep.PastHead != 0 {
		t.Errorf("Verify: got %+v, want OK with 5 records, head %s", rep, recs[4].Hash)
	}
}

// TestHashIsOverTheLineWithoutIt checks the documented definition: cut the
// hash member from the line and hash the rest.
func TestHashIsOverTheLineWithoutIt(t *testing.T) {
	path, _ := writeLog(t, 3, nil)
	for i, line := range readLines(t, path) {
		body, hash, ok := strings.Cut(strings.TrimSuffix(line, "\n"), `,"hash":"`)
		if !ok {
			t.Fatalf("line %d has no hash member: %s", i+1, line)
		}
		if got, want := sum(body+"}"), strings.TrimSuffix(hash, `"}`); got != want {
			t.Errorf("line %d: SHA-256 of the line without its hash is %s, the line says %s", i+1, got, want)
		}
	}
}

func TestFileModes(t *testing.T) {
	path, _ := writeLog(t, 1, nil)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{
		{filepath.Dir(path), 0o700 | os.ModeDir},
		{path, 0o600},
		{HeadPath(path), 0o600},
	} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode(); got != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.want)
		}
	}
}

func TestOpenContinuesTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	now := clock()
	var all []Record
	for run := range 3 {
		l, err := Open(path, &Options{Now: now})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if seq, _ := l.Head(); seq != uint64(len(all)) {
			t.Errorf("run %d: Head seq %d, want %d", run, seq, len(all))
		}
		for i := range 4 {
			r, err := l.Append(entry(run*10 + i))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq != all[i-1].Seq+1 || all[i].Prev != all[i-1].Hash {
			t.Errorf("seq %d does not follow seq %d", all[i].Seq, all[i-1].Seq)
		}
	}
	rep := mustVerify(t, path)
	if got, want := fmt.Sprint(rep.OK, rep.Records, rep.Seq), "true 12 12"; got != want {
		t.Errorf("Verify: got %s, want %s; %v", got, want, rep.Problems)
	}
}

// TestOpenAfterCrash: records written but not synced when the writer
// died are past the head; Open takes them in and names them.
func TestOpenAfterCrash(t *testing.T) {
	path, recs := writeLog(t, 6, nil)
	if err := writeHead(HeadPath(path), head{Seq: 4, Hash: recs[3].Hash}); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK || rep.PastHead != 2 {
		t.Errorf("before Open: got %+v, want OK with 2 past the head", rep)
	}
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, _, err := readHead(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h, (head{Seq: 6, Hash: recs[5].Hash}); got != want {
		t.Errorf("head after Open: got %+v, want %+v", got, want)
	}
	r, err := l.Append(entry(7))
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 7 || r.Prev != recs[5].Hash {
		t.Errorf("next record: seq %d prev %s, want 7 after %s", r.Seq, r.Prev, recs[5].Hash)
	}
}

func TestOpenRefusesABadTail(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string, lines []string, recs []Record)
	}{
		{"edited last record", func(t *testing.T, path string, lines []string, _ []Record) {
			lines[5] = strings.Replace(lines[5], `"tool":"calculate"`, `"tool":"calculatf"`, 1)
			writeLines(t, path, lines)
		}},
		{"tail cut off", func(t *testing.T, path string, lines []string, _ []Record) {
			writeLines(t, path, lines[:4])
		}},
		{"last line cut short", func(t *testing.T, path string, lines []string, _ []Record) {
			lines[5] = lines[5][:40]
			writeLines(t, path, lines)
		}},
		{"garbage at the end", func(t *testing.T, path string, lines []string, _ []Record) {
			writeLines(t, path, append(lines, "garbage\n"))
		}},
		{"head file deleted", func(t *testing.T, path string, _ []string, _ []Record) {
			os.Remove(HeadPath(path))
		}},
		{"head file garbage", func(t *testing.T, path string, _ []string, _ []Record) {
			os.WriteFile(HeadPath(path), []byte("{}\n"), 0o600)
		}},
		{"head names another hash", func(t *testing.T, path string, _ []string, recs []Record) {
			writeHead(HeadPath(path), head{Seq: 6, Hash: recs[4].Hash})
		}},
		{"records after the head do not link", func(t *testing.T, path string, lines []string, recs []Record) {
			writeHead(HeadPath(path), head{Seq: 3, Hash: recs[2].Hash})
			lines[3], lines[4] = lines[4], lines[3]
			writeLines(t, path, lines)
		}},
		{"first records deleted, head at 0", func(t *testing.T, path string, lines []string, _ []Record) {
			writeHead(HeadPath(path), head{})
			writeLines(t, path, lines[2:])
		}},
		{"log emptied", func(t *testing.T, path string, _ []string, _ []Record) {
			writeLines(t, path, nil)
		}},
		{"log deleted", func(t *testing.T, path string, _ []string, _ []Record) {
			os.Remove(path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, recs := writeLog(t, 6, nil)
			tt.tamper(t, path, readLines(t, path), recs)
			l, err := Open(path, nil)
			if err == nil {
				l.Close()
				t.Fatal("Open: got no error, want ErrTailUnverified")
			}
			if !errors.Is(err, ErrTailUnverified) {
				t.Fatalf("Open: got %v, want ErrTailUnverified", err)
			}
			if !strings.Contains(err.Error(), "airlock audit verify") {
				t.Errorf("Open: %v: does not say how to find the record", err)
			}
		})
	}
}

func writeLines(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTwoLogsOneChain: two Logs of one file, in one process, append in
// turn and then at once; their records make one chain.
func TestTwoLogsOneChain(t *testing.T) {
	if !writersApart {
		t.Skip("no flock here: writers are not kept apart")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		logs[i] = l
	}
	var prev Record
	for i := range 6 {
		r, err := logs[i%2].Append(entry(i))
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != prev.Seq+1 || r.Prev != prev.Hash {
			t.Errorf("Log %d: seq %d prev %.8s, want seq %d prev %.8s", i%2, r.Seq, r.Prev, prev.Seq+1, prev.Hash)
		}
		if seq, hash := logs[i%2].Head(); seq != r.Seq || hash != r.Hash {
			t.Errorf("Log %d: Head %d, want %d", i%2, seq, r.Seq)
		}
		prev = r
	}
	const each = 100
	var wg sync.WaitGroup
	for i, l := range logs {
		for g := range 2 {
			wg.Go(func() {
				for k := range each {
					if _, err := l.Append(entry(1000*(2*i+g) + k)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	const total = 6 + 4*each
	if rep := mustVerify(t, path); !rep.OK || rep.Records != total || rep.Seq != total || rep.PastHead != 0 {
		t.Errorf("Verify: got %+v, want OK with %d records, all named by the head", rep, total)
	}
}

func TestConcurrentAppend(t *testing.T) {
	const workers, each = 32, 200
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{MaxBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r, err := l.Append(entry(w*each + i))
				if err != nil {
					t.Error(err)
					return
				}
				seqs[w] = append(seqs[w], r.Seq)
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, workers*each+1)
	for w := range seqs {
		for i, s := range seqs[w] {
			if s == 0 || s >= uint64(len(seen)) || seen[s] {
				t.Fatalf("seq %d handed out twice or out of range", s)
			}
			seen[s] = true
			if i > 0 && s <= seqs[w][i-1] {
				t.Errorf("worker %d: seq %d after %d", w, s, seqs[w][i-1])
			}
		}
	}
	rep := mustVerify(t, path)
	if !rep.OK || rep.Records != workers*each || rep.Seq != workers*each {
		t.Errorf("Verify: got OK=%v records=%d seq=%d, want a valid chain of %d; %v",
			rep.OK, rep.Records, rep.Seq, workers*each, rep.Problems)
	}
}

func TestRedactHook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{Redact: func(e *Entry) {
		e.Note = strings.ReplaceAll(e.Note, "hunter2", "[redacted]")
		e.Stages[0].Code = "scrubbed"
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(1)
	e.Note = "password=hunter2"
	r, err := l.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Entry.Note, "password=[redacted]"; got != want {
		t.Errorf("record's note: got %q, want %q", got, want)
	}
	if got, want := e.Note+"|"+e.Stages[0].Code, "password=hunter2|"; got != want {
		t.Errorf("the caller's entry changed: got %q, want %q", got, want)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("hunter2")) || !bytes.Contains(data, []byte(`"code":"scrubbed"`)) {
		t.Errorf("the log does not hold the redacted entry: %s", data)
	}
	if rep := mustVerify(t, path); !rep.OK {
		t.Errorf("Verify: %v", rep.Problems)
	}
}

// TestGroupCommitWritesAtOnce: each record is in the file when Append
// returns, identical to json.Marshal of the record, long before the
// syncer's window ends; Flush has nothing left to do.
func TestGroupCommitWritesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{GroupWindow: MaxGroupWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= 3; i++ {
		r, err := l.Append(entry(i))
		if err != nil {
			t.Fatal(err)
		}
		lines := readLines(t, path)
		want, _ := json.Marshal(r)
		if got := lines[len(lines)-1]; len(lines) != i || got != string(want)+"\n" {
			t.Fatalf("after Append %d: file has %d lines, last %q; want %d, last %s", i, len(lines), got, i, want)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	seq, hash := l.Head()
	if h, _, _ := readHead(HeadPath(path)); h.Seq != seq || h.Hash != hash {
		t.Errorf("head file after Sync: %+v, want seq %d hash %s", h, seq, hash)
	}
}

// TestGroupCommitSyncsWithinWindow: without Sync, the syncer names the
// record in the head file by itself.
func TestGroupCommitSyncsWithinWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{GroupWindow: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Append(entry(1))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine
	for h, _, _ := readHead(HeadPath(path)); h.Seq != r.Seq; h, _, _ = readHead(HeadPath(path)) {
		if time.Now().After(deadline) {
			t.Fatalf("the syncer did not name the record: the head file names seq %d", h.Seq)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{Sync: EveryRecord})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		r, err := l.Append(entry(i))
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := readHead(HeadPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := h, (head{Seq: r.Seq, Hash: r.Hash}); got != want {
			t.Errorf("head file after Append %d: got %+v, want %+v", i, got, want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 5 {
		t.Errorf("Verify: %+v", rep)
	}
}

func TestEveryRecordConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{Sync: EveryRecord})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := l.Append(entry(w*20 + i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 160 || rep.PastHead != 0 {
		t.Errorf("Verify: %+v", rep)
	}
}

// TestMaxBatch: with MaxBatch 1 an Append waits until the record before it
// is synced, however long the window.
func TestMaxBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{GroupWindow: MaxGroupWindow, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= 5; i++ {
		r, err := l.Append(entry(i))
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := readHead(HeadPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if h.Seq < r.Seq-1 {
			t.Errorf("after Append %d the head file names seq %d: more than MaxBatch records unsynced", r.Seq, h.Seq)
		}
	}
}

// failSync is the test hook that closes the log's file early, so that
// the sync fails.
func failSync(f *os.File) error {
	f.Close()
	return f.Sync()
}

// waitFailed waits until the syncer has recorded its failure.
func waitFailed(l *Log) {
	l.mu.Lock()
	for l.err == nil {
		l.cond.Wait()
	}
	l.mu.Unlock()
}

func TestSyncErrorIsReported(t *testing.T) {
	t.Run("next Append and Close", func(t *testing.T) {
		l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"), &Options{syncFile: failSync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(entry(1)); err != nil {
			t.Fatalf("first Append: %v", err)
		}
		waitFailed(l)
		if _, err := l.Append(entry(2)); err == nil || !strings.Contains(err.Error(), "syncing") {
			t.Errorf("Append after the sync failed: got %v, want the sync error", err)
		}
		if err := l.Sync(); err == nil {
			t.Error("Sync: got no error")
		}
		if err := l.Close(); err == nil || !strings.Contains(err.Error(), "syncing") {
			t.Errorf("Close: got %v, want the sync error", err)
		}
	})
	t.Run("Sync", func(t *testing.T) {
		l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"), &Options{GroupWindow: MaxGroupWindow, syncFile: failSync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(entry(1)); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err == nil {
			t.Error("Sync: got no error")
		}
		if err := l.Close(); err == nil {
			t.Error("Close: got no error")
		}
	})
	t.Run("EveryRecord", func(t *testing.T) {
		l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"), &Options{Sync: EveryRecord, syncFile: failSync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(entry(1)); err == nil {
			t.Error("Append: got no error")
		}
		if err := l.Close(); err == nil {
			t.Error("Close: got no error")
		}
	})
	t.Run("only at Close", func(t *testing.T) {
		l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"), &Options{GroupWindow: MaxGroupWindow, syncFile: failSync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(entry(1)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err == nil {
			t.Error("Close: got no error")
		}
	})
}

func TestClosed(t *testing.T) {
	path, _ := writeLog(t, 0, nil)
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var zero Log
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Append after Close", func() error { _, err := l.Append(entry(1)); return err }()},
		{"Sync after Close", l.Sync()},
		{"Close twice", l.Close()},
		{"Append on a zero Log", func() error { _, err := zero.Append(entry(1)); return err }()},
		{"Close on a zero Log", zero.Close()},
	} {
		if !errors.Is(c.err, ErrClosed) {
			t.Errorf("%s: got %v, want ErrClosed", c.name, c.err)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{
		{Sync: 7},
		{GroupWindow: -time.Millisecond},
		{GroupWindow: MaxGroupWindow + 1},
		{MaxBatch: -1},
		{LockWait: -time.Second},
	} {
		if l, err := Open(filepath.Join(t.TempDir(), "a.jsonl"), &o); !errors.Is(err, ErrInvalidOptions) {
			if err == nil {
				l.Close()
			}
			t.Errorf("Open(%+v): got %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestAppendRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Entry)
		want error
	}{
		{"negative size", func(e *Entry) { e.ArgsBytes = -1 }, ErrInvalidEntry},
		{"contents for a hash", func(e *Entry) { e.ResultSHA256 = "42" }, ErrInvalidEntry},
		{"upper-case hash", func(e *Entry) { e.ArgsSHA256 = strings.ToUpper(e.ArgsSHA256) }, ErrInvalidEntry},
		{"stage without name", func(e *Entry) { e.Stages[1].Name = "" }, ErrInvalidEntry},
		{"unknown stage decision", func(e *Entry) { e.Stages[1].Decision = "maybe" }, ErrInvalidEntry},
		{"negative stage time", func(e *Entry) { e.Stages[1].Micros = -5 }, ErrInvalidEntry},
		{"record too large", func(e *Entry) { e.Note = strings.Repeat("x", MaxRecordBytes) }, ErrRecordTooLarge},
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		e := entry(1)
		tt.edit(&e)
		if _, err := l.Append(e); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	// A refused entry leaves the log as it was.
	r, err := l.Append(entry(1))
	if err != nil || r.Seq != 1 {
		t.Errorf("Append after refusals: seq %d, %v; want seq 1", r.Seq, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 1 {
		t.Errorf("Verify: %+v", rep)
	}
}

func TestTimeOutOfRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{Now: func() time.Time { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(entry(1)); err == nil {
		t.Error("Append with a clock in year 10000: got no error")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestInvalidUTF8 checks that a Note with invalid UTF-8 is written as
// encoding/json writes it, returned the same, and verifies.
func TestInvalidUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := entry(1)
	e.Note, e.Tool = "bad \xff\xfe byte", "t\xc0"
	r, err := l.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Entry.Note, "bad \uFFFD\uFFFD byte"; got != want {
		t.Errorf("note: got %q, want %q", got, want)
	}
	if rep := mustVerify(t, path); !rep.OK {
		t.Errorf("Verify: %v", rep.Problems)
	}
}

// holdLock takes the log's lock as a stuck writer would, on a file
// descriptor of its own, and returns what lets it go.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockFile(f, true); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestLockWait: while another writer holds the lock, Open and Append wait
// for it up to LockWait, then fail with ErrLocked; the Log stays usable,
// and the next Append that gets the lock goes on with the chain.
func TestLockWait(t *testing.T) {
	if !writersApart {
		t.Skip("no flock here: writers are not kept apart")
	}
	const wait = 50 * time.Millisecond
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	release := holdLock(t, path)
	if _, err := Open(path, &Options{LockWait: wait}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while another writer holds the lock: %v, want ErrLocked", err)
	}
	release()
	l, err := Open(path, &Options{LockWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(entry(1)); err != nil {
		t.Fatal(err)
	}

	release = holdLock(t, path)
	for i := range 2 { // the second waits out the first's abandoned wait
		start := time.Now()
		if _, err := l.Append(entry(2)); !errors.Is(err, ErrLocked) {
			t.Fatalf("Append %d while another writer holds the lock: %v, want ErrLocked", i, err)
		}
		if took := time.Since(start); took < wait {
			t.Errorf("Append %d gave up after %v, before LockWait (%v)", i, took, wait)
		}
	}
	release()
	r, err := l.Append(entry(2))
	if err != nil {
		t.Fatalf("Append once the lock is free: %v", err)
	}
	if r.Seq != 2 {
		t.Errorf("Append after the refusals: seq %d, want 2", r.Seq)
	}

	// A writer that lets the lock go within LockWait is waited for.
	release = holdLock(t, path)
	time.AfterFunc(wait, release)
	w, err := Open(path, &Options{LockWait: 30 * time.Second})
	if err != nil {
		t.Fatalf("Open while another writer holds the lock for a while: %v", err)
	}
	if r, err := w.Append(entry(3)); err != nil || r.Seq != 3 {
		t.Fatalf("Append of a second Log: seq %d, %v; want seq 3", r.Seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 3 {
		t.Errorf("Verify: %+v", rep)
	}
	if _, err := Open(path, &Options{LockWait: MaxLockWait + time.Second}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("LockWait past MaxLockWait: %v, want ErrInvalidOptions", err)
	}
}
