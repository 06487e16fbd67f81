package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writerEnv, when set, makes the test binary a writer process: TestMain
// runs the writerSpec it holds (JSON) instead of the tests.
const writerEnv = "AUDIT_TEST_WRITER"

// writerSpec is what a writer process does.
type writerSpec struct {
	Log         string        // the log to append to
	Name        string        // the first word of each record's Note
	Count       int           // how many records to append
	UntilKilled bool          // append until killed, whatever Count says
	NoteBytes   int           // padding added to each Note
	Pace        time.Duration // pause after each record
	Sync        SyncMode
	Wait        bool // wait for a line on stdin after Open, before appending
	Report      bool // print "seq hash" of each record Append returns, at once
	// DieMidAppend: after Count records, write half of the next line,
	// holding the lock, and kill itself (SIGKILL) there.
	DieMidAppend bool
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		if err := runWriter(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runWriter(spec string) error {
	var s writerSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return err
	}
	l, err := Open(s.Log, &Options{Sync: s.Sync, LockWait: MaxLockWait})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if s.Wait {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
	}
	pad := strings.Repeat("x", s.NoteBytes)
	for i := 0; s.UntilKilled || i < s.Count; i++ {
		e := entry(i)
		e.Note = fmt.Sprintf("%s %d %s", s.Name, i, pad)
		r, err := l.Append(e)
		if err != nil {
			return err
		}
		if s.Report {
			fmt.Printf("%d %s\n", r.Seq, r.Hash) // unbuffered: a kill loses none
		}
		time.Sleep(s.Pace)
	}
	if s.DieMidAppend {
		return dieMidAppend(l)
	}
	return l.Close()
}

// dieMidAppend does what Append does up to the middle of its write, and
// there the process kills itself, as if killed at that moment.
func dieMidAppend(l *Log) error {
	e := entry(0)
	e.Note = "the line of a writer killed while writing it"
	l.mu.Lock()
	if err := l.lock(); err != nil {
		return err
	}
	if err := l.catchUp(); err != nil {
		return err
	}
	line, _, err := encodeRecord(nil, l.seq+1, time.Now().UTC(), l.hash, appendEntry(nil, &e))
	if err != nil {
		return err
	}
	if _, err := l.f.Write(line[:len(line)/2]); err != nil {
		return err
	}
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	select {} // until the signal ends the process
}

// writerProc is a writer process, and what it reported.
type writerProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{} // closed once it has opened the log
	done   chan struct{} // closed once its output is read to the end
	stderr bytes.Buffer  // read it after finish

	mu   sync.Mutex
	recs []head // each record its Append returned

	once sync.Once
	err  error
}

// startWriter starts the test binary as a writer process.
func startWriter(t testing.TB, s writerSpec) *writerProc {
	t.Helper()
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	w := &writerProc{name: s.Name, cmd: exec.Command(os.Args[0]), ready: make(chan struct{}), done: make(chan struct{})}
	w.cmd.Env = append(os.Environ(), writerEnv+"="+string(spec))
	w.cmd.Stderr = &w.stderr
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		w.finish()
	})
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var h head
			if sc.Text() == "ready" {
				close(w.ready)
			} else if _, err := fmt.Sscanf(sc.Text(), "%d %s", &h.Seq, &h.Hash); err == nil {
				w.mu.Lock()
				w.recs = append(w.recs, h)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// waitReady waits until the writer has opened the log.
func (w *writerProc) waitReady(t testing.TB) {
	t.Helper()
	select {
	case <-w.ready:
	case <-w.done:
		t.Fatalf("writer %s: %v: %s", w.name, w.finish(), w.stderr.String())
	}
}

// start lets a writer started with Wait append.
func (w *writerProc) start(t testing.TB) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// finish waits for the writer to exit.
func (w *writerProc) finish() error {
	w.once.Do(func() {
		<-w.done
		w.err = w.cmd.Wait()
	})
	return w.err
}

func (w *writerProc) reported() []head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]head(nil), w.recs...)
}

// checkReported checks that each record a writer's Append returned is in
// the log, at its seq, with its hash, and is that writer's.
func checkReported(t *testing.T, recs []Record, name string, reported []head) {
	t.Helper()
	for _, h := range reported {
		if h.Seq == 0 || h.Seq > uint64(len(recs)) {
			t.Errorf("%s: Append returned seq %d, not in the log of %d records", name, h.Seq, len(recs))
			continue
		}
		r := recs[h.Seq-1]
		if r.Hash != h.Hash || !strings.HasPrefix(r.Entry.Note, name+" ") {
			t.Errorf("%s: Append returned seq %d hash %.12s; the log holds hash %.12s, note %.20q", name, h.Seq, h.Hash, r.Hash, r.Entry.Note)
		}
	}
}

// appendPaced appends n records named name from one goroutine, pausing
// after each, and returns what Append returned.
func appendPaced(t *testing.T, l *Log, name string, n int, pace time.Duration) []head {
	var got []head
	for i := range n {
		e := entry(i)
		e.Note = fmt.Sprintf("%s %d", name, i)
		r, err := l.Append(e)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			break
		}
		got = append(got, head{Seq: r.Seq, Hash: r.Hash})
		time.Sleep(pace)
	}
	return got
}

// TestWritersShareOneChain: four writer processes and two goroutines of
// this one append at once to one log. The log is one chain holding every
// record each Append returned, seqs 1 to the total without gaps.
func TestWritersShareOneChain(t *testing.T) {
	if !writersApart {
		t.Skip("no flock here: writers are not kept apart")
	}
	const procs, goroutines, each = 4, 2, 200
	const pace = 100 * time.Microsecond // so that the writers interleave
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var ws []*writerProc
	for i := range procs {
		ws = append(ws, startWriter(t, writerSpec{Log: path, Name: fmt.Sprintf("proc%d", i), Count: each, Pace: pace, Wait: true, Report: true}))
	}
	for _, w := range ws {
		w.waitReady(t)
	}
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		w.start(t)
	}
	mine := make([][]head, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { mine[g] = appendPaced(t, l, fmt.Sprintf("parent%d", g), each, pace) })
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := w.finish(); err != nil {
			t.Fatalf("writer %s: %v: %s", w.name, err, w.stderr.String())
		}
	}

	const total = (procs + goroutines) * each
	rep := mustVerify(t, path)
	if !rep.OK || rep.Records != total || rep.Seq != total || rep.PastHead != 0 {
		t.Fatalf("Verify: got %+v, want OK with %d records, all named by the head", rep, total)
	}
	recs := logRecords(t, path)
	for _, w := range ws {
		if got := len(w.reported()); got != each {
			t.Errorf("%s reported %d records, want %d", w.name, got, each)
		}
		checkReported(t, recs, w.name, w.reported())
	}
	for g := range goroutines {
		checkReported(t, recs, fmt.Sprintf("parent%d", g), mine[g])
	}
	switches := 0
	for i := 1; i < len(recs); i++ {
		if strings.Fields(recs[i].Entry.Note)[0] != strings.Fields(recs[i-1].Entry.Note)[0] {
			switches++
		}
	}
	t.Logf("%d of %d records follow another writer's", switches, total-1)
	if switches < each {
		t.Errorf("only %d records follow another writer's: the writers did not append at once", switches)
	}
}

// TestKilledWriter: writers die by SIGKILL while others go on appending:
// one in the middle of its write (it kills itself there, holding the
// lock), and one of large records killed at a random moment. A line cut
// short is what Verify reports until the next writer cuts it; in the end
// the log verifies, holds every record any Append returned, the dead
// writers' too, and Open continues it.
func TestKilledWriter(t *testing.T) {
	if !writersApart {
		t.Skip("no flock here: writers are not kept apart")
	}
	const each, pace = 150, time.Millisecond
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	big := startWriter(t, writerSpec{Log: path, Name: "big", UntilKilled: true, NoteBytes: 900 << 10, Wait: true, Report: true})
	ws := []*writerProc{big}
	for i := range 2 {
		ws = append(ws, startWriter(t, writerSpec{Log: path, Name: fmt.Sprintf("proc%d", i), Count: each, Pace: pace, Wait: true, Report: true}))
	}
	for _, w := range ws {
		w.waitReady(t)
	}

	// The first death, while the others wait to start.
	dier := startWriter(t, writerSpec{Log: path, Name: "dier", Count: 5, DieMidAppend: true, Report: true})
	if err := dier.finish(); err == nil || len(dier.reported()) != 5 {
		t.Fatalf("the writer that dies in its write: exit %v after %d records: %s", err, len(dier.reported()), dier.stderr.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	partial := data[bytes.LastIndexByte(data, '\n')+1:]
	rep := mustVerify(t, path)
	if p := rep.Problems; len(partial) == 0 || rep.Records != 5 || len(p) != 1 || p[0].Kind != KindMalformed || p[0].Line != 6 {
		t.Fatalf("Verify after a writer died in its write: %+v; want 5 records, then a line cut short", rep)
	}

	for _, w := range ws {
		w.start(t)
	}
	var mine []head
	var wg sync.WaitGroup
	wg.Go(func() { mine = appendPaced(t, l, "parent", each, pace) })
	for deadline := time.Now().Add(30 * time.Second); len(big.reported()) < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the big writer did not append")
		}
	}
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // anywhere in an append
	if err := big.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := big.finish(); err == nil {
		t.Fatal("the big writer exited by itself")
	}
	wg.Wait()
	if _, err := l.Append(entry(-1)); err != nil { // after the kill, whatever the others did
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws[1:] {
		if err := w.finish(); err != nil {
			t.Fatalf("writer %s: %v: %s", w.name, err, w.stderr.String())
		}
	}

	rep = mustVerify(t, path)
	if !rep.OK || rep.Seq != uint64(rep.Records) {
		t.Fatalf("Verify: got %+v, want OK", rep)
	}
	if data, _ := os.ReadFile(path); bytes.Contains(data, partial) {
		t.Error("the line cut short is still in the log")
	}
	recs := logRecords(t, path)
	for _, w := range append(ws, dier) {
		checkReported(t, recs, w.name, w.reported())
	}
	checkReported(t, recs, "parent", mine)
	if want := 5 + 2*each + len(mine) + len(big.reported()) + 1; len(recs) < want {
		t.Errorf("the log holds %d records, want at least %d", len(recs), want)
	}
	t.Logf("%d records; the big writer was killed after %d", len(recs), len(big.reported()))

	l, err = Open(path, nil)
	if err != nil {
		t.Fatalf("Open after the kills: %v", err)
	}
	if r, err := l.Append(entry(1)); err != nil || r.Seq != uint64(len(recs)+1) {
		t.Errorf("Append after the kills: seq %d, %v; want seq %d", r.Seq, err, len(recs)+1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, path); !rep.OK {
		t.Errorf("Verify at the end: %v", rep.Problems)
	}
}
