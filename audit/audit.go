// Package audit keeps a tamper-evident record of every tool call: an
// append-only JSON Lines log in which each record carries the hash of the
// record before it, so that editing, deleting, inserting or reordering
// records breaks the chain where it happened, and a head file kept apart
// from the log names the last record, so that records cut from the end
// show too.
//
// One line per record, in the order of seq:
//
//	{"seq":7,"time":"2026-03-01T12:00:00.123456789Z","prev":"<hash of seq 6>","entry":{...},"hash":"<hex SHA-256>"}
//
// hash is the hex SHA-256 of the record's canonical JSON without its hash
// member: the line's bytes up to the end of the entry object, followed by
// "}". So any tool can check a record: cut `,"hash":"..."` from the line and
// hash the rest. prev is "" for seq 1. The canonical JSON is the one
// encoding/json writes for these fields in this order; Verify insists on it
// byte for byte, so that no two lines can mean the same record.
//
// An Entry carries the sizes and SHA-256 hashes of a call's arguments and
// result, never their contents; its free-text Note passes the Options.Redact
// hook before it is hashed and written.
//
// Several writers may append to one log at once: Logs in other
// processes, or several in one process. A writer takes an exclusive lock
// on the file (flock), finds where the log ends and chains its records
// onto the last record there (whoever wrote it), each written in one write
// call; it keeps the lock until its syncer has synced them (within
// Options.GroupWindow and an fsync), so that a busy writer takes the lock
// once a window, not once a record. Options.LockWait bounds a writer's
// wait for the lock. So the log holds one chain, and Verify checks all of
// it. (On
// platforms without flock the lock does nothing, and the log must have
// one writer at a time.)
//
// Durability is chosen by Options.Sync. In both modes the record is in the
// file when Append returns: in the kernel's page cache, safe from a crash
// of the process. In GroupCommit mode (the default) a background syncer
// fsyncs the file within Options.GroupWindow, many records per fsync, and
// then updates the head file. So a power loss or kernel crash loses the
// records appended since the last sync finished: about the last
// GroupWindow (plus the time of two fsyncs), and never more than
// Options.MaxBatch records of each Log. Close and Sync sync at once; Flush
// has nothing to do. In EveryRecord mode Append returns only after its
// record is fsynced and named by the head file; concurrent Appends share
// fsyncs. A failed write or sync is reported by the next Append, by Sync
// and by Close, and the Log refuses further records: Close it and Open the
// file again, which checks its tail first.
//
// The head file names the last record known to be on disk. Every writer
// updates it after its fsyncs, holding the lock, and never to an earlier
// record than it names.
//
// A writer killed in the middle of an Append (kill -9, a crash) can leave
// a line cut short at the end of the log. The next writer to take the lock
// (an Append, or Open) cuts it: it truncates the file to the end of its
// last complete line. No Append returned that record, and the head file
// never names it; nothing complete is lost. Until then Verify reports the
// line as malformed ("a write cut short"). A writer killed while it
// replaced the head file can leave a temporary file beside it
// (audit.jsonl.head.tmp...), which does no harm and may be removed.
//
// Open checks the tail of the log against the head file, so it does not
// extend a log cut short or a last record edited; Verify checks every
// record, and is what `airlock audit verify` runs.
//
// The chain shows tampering by anyone who cannot rewrite the log and its
// head file together. To anchor it against them too, copy the head
// (Log.Head) somewhere they cannot write.
//
//	l, err := audit.Open(".airlock/audit.jsonl", nil)
//	...
//	rec, err := l.Append(audit.Entry{CallID: id, Tool: "calculate", Decision: "allow", ...})
//	...
//	err = l.Close()
//	rep, err := audit.Verify(".airlock/audit.jsonl") // rep.OK, rep.Problems
package audit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Limits and defaults. Each is part of the interface.
const (
	// DefaultGroupWindow is how long the GroupCommit syncer gathers records
	// before one fsync covers them all.
	DefaultGroupWindow = 2 * time.Millisecond
	// MaxGroupWindow bounds Options.GroupWindow, and so what a power loss
	// may take.
	MaxGroupWindow = time.Second
	// DefaultMaxBatch is the default of Options.MaxBatch.
	DefaultMaxBatch = 1024
	// MaxRecordBytes is the longest line a record may take, newline
	// included. Append refuses a bigger record (ErrRecordTooLarge); Verify
	// reports a longer line as malformed.
	MaxRecordBytes = 1 << 20
	// MaxProblems is the most problems a Report lists; it counts the rest
	// in Report.MoreProblems.
	MaxProblems = 1000
)

// The decisions a Stage records.
const (
	DecisionPass  = "pass"  // the stage passed the call on unchanged
	DecisionAllow = "allow" // the stage allowed the call
	DecisionDeny  = "deny"  // the stage refused the call
	DecisionAsk   = "ask"   // the stage asked a person first
	DecisionSkip  = "skip"  // the stage did not apply to the call
	DecisionError = "error" // the stage failed; the call did not go on
	// DecisionReplay: the idempotency ledger answered with the stored
	// result of the same call, which ran before; nothing ran this time.
	DecisionReplay = "replay"
)

// stageDecisions is the set Append accepts in a Stage.
var stageDecisions = []string{DecisionPass, DecisionAllow, DecisionDeny, DecisionAsk, DecisionSkip, DecisionError, DecisionReplay}

// Errors callers may branch on. Each is wrapped, at the end of a message
// that says more.
var (
	// ErrClosed: Append, Sync or Close on a Log that is closed or was not
	// made by Open.
	ErrClosed = errors.New("audit: log is closed or was not opened")
	// ErrTailUnverified: Open found a log whose tail does not verify
	// against itself or its head file, and will not extend it.
	ErrTailUnverified = errors.New("audit: the log's tail does not verify")
	// ErrLocked: another writer (in this process or another) held the
	// log's lock for all of Options.LockWait.
	ErrLocked = errors.New("audit: log is in use by another writer")
	// ErrRecordTooLarge: the record would be longer than MaxRecordBytes.
	ErrRecordTooLarge = errors.New("audit: record over MaxRecordBytes")
	// ErrInvalidEntry: an Entry that the log must not hold.
	ErrInvalidEntry = errors.New("audit: invalid entry")
	// ErrInvalidOptions: an Options field out of range.
	ErrInvalidOptions = errors.New("audit: invalid options")
)

// Stage is one stage of the gate and what it decided.
type Stage struct {
	Name     string `json:"name"`
	Decision string `json:"decision"` // one of the Decision constants
	Code     string `json:"code,omitempty"`
	Micros   int64  `json:"us"` // time the stage took, in microseconds
}

// Entry is what the gate records for one call. It never holds file
// contents, arguments or results, only their sizes and SHA-256 hashes.
type Entry struct {
	CallID   string  `json:"call_id,omitempty"`
	Session  string  `json:"session,omitempty"`
	Tool     string  `json:"tool"`
	Role     string  `json:"role,omitempty"`
	Mode     string  `json:"mode,omitempty"`
	Decision string  `json:"decision"` // the gate's final decision
	Code     string  `json:"code,omitempty"`
	Rule     string  `json:"rule,omitempty"`
	Stages   []Stage `json:"stages,omitempty"`

	ArgsBytes    int    `json:"args_bytes"`
	ArgsSHA256   string `json:"args_sha256,omitempty"` // lower-case hex, or empty
	ResultBytes  int    `json:"result_bytes"`
	ResultSHA256 string `json:"result_sha256,omitempty"` // lower-case hex, or empty

	// Note is free text. It passes Options.Redact before it is written.
	Note string `json:"note,omitempty"`
}

// Record is one line of the log.
type Record struct {
	Seq   uint64    `json:"seq"`  // 1, 2, 3, ... without gaps
	Time  time.Time `json:"time"` // when it was appended, UTC
	Prev  string    `json:"prev"` // Hash of the record before; "" for seq 1
	Entry Entry     `json:"entry"`
	Hash  string    `json:"hash"` // hex SHA-256 over the canonical JSON of {seq,time,prev,entry}
}

// SyncMode chooses when a record is made durable.
type SyncMode int

const (
	// GroupCommit writes each record at once and fsyncs within
	// GroupWindow, many records per fsync. The default.
	GroupCommit SyncMode = iota
	// EveryRecord returns from Append only once the record is fsynced and
	// the head file names it.
	EveryRecord
)

func (m SyncMode) String() string {
	switch m {
	case GroupCommit:
		return "group-commit"
	case EveryRecord:
		return "every-record"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// Options configures a Log. A nil *Options, and every zero field, means
// the default.
type Options struct {
	Sync SyncMode
	// GroupWindow is how long the GroupCommit syncer waits for more
	// records before it fsyncs; DefaultGroupWindow when zero, at most
	// MaxGroupWindow. Unused by EveryRecord.
	GroupWindow time.Duration
	// MaxBatch is the most records this Log may have written but not yet
	// synced: when that many wait, the syncer starts without waiting out
	// the window, and further Appends wait for it. DefaultMaxBatch when
	// zero.
	MaxBatch int
	// Redact, when set, is called on a copy of every Entry before it is
	// checked, hashed and written: the place where a redactor scrubs Note
	// and anything else. It is called from the goroutines that call
	// Append, so it must be safe for concurrent use.
	Redact func(*Entry)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// LockWait is how long one Append (or Open, or a head update) waits
	// for the log's lock while other writers hold it; past it, it fails
	// with ErrLocked and the Log stays usable. DefaultLockWait when zero,
	// at most MaxLockWait. Writers hold the lock for microseconds: a
	// long wait means one is stuck (stopped, or on a hung disk).
	LockWait time.Duration

	// syncFile replaces f.Sync, for tests that make a sync fail.
	syncFile func(f *os.File) error
}

// Log is an open audit log. It is safe for concurrent use.
type Log struct {
	path     string
	f        *os.File
	mode     SyncMode
	window   time.Duration
	maxBatch uint64
	redact   func(*Entry)
	now      func() time.Time
	syncFile func(*os.File) error
	lockWait time.Duration

	kick   chan struct{} // records are waiting: sync within the window
	urgent chan struct{} // someone waits: sync now
	quit   chan struct{} // closed by Close: the syncer stops
	done   chan struct{} // closed by the syncer when it has stopped

	mu       sync.Mutex
	cond     *sync.Cond // on mu: synced advanced, err set or closed
	seq      uint64     // last record of the log as this Log last saw it
	hash     string     // its hash
	end      int64      // file offset just past it
	synced   uint64     // last record fsynced and named by the head file
	unsynced uint64     // records this Log wrote and no sync has covered yet
	err      error      // first write or sync failure; sticky
	closed   bool
	buf      []byte // line being built; reused
	// held: this Log holds the file's lock, from its first record after a
	// sync until the syncer has synced it (see write).
	held bool

	// abandoned, when set, is closed once a wait for the lock that ran
	// out has ended: see lock.
	abandoned chan struct{}
}

// entryBufs holds the buffers Append encodes entries in, so that a record
// costs no allocation for its entry's JSON.
var entryBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledEntryBytes is the largest entry buffer kept for reuse; a rare
// huge entry (a long Note) is not held on to.
const maxPooledEntryBytes = 16 << 10

// DefaultLockWait is the default of Options.LockWait.
const DefaultLockWait = 10 * time.Second

// MaxLockWait bounds Options.LockWait.
const MaxLockWait = time.Minute

// lock takes the log file's lock, waiting up to LockWait while other
// writers hold it. l.mu must be held (or the Log not yet shared): two
// flocks through one file descriptor would share one lock.
func (l *Log) lock() error {
	if l.abandoned == nil {
		if err := lockFile(l.f, false); !errors.Is(err, ErrLocked) {
			return err
		}
	}
	timer := time.NewTimer(l.lockWait)
	defer timer.Stop()
	if l.abandoned != nil {
		select {
		case <-l.abandoned:
			l.abandoned = nil
		case <-timer.C:
			return ErrLocked
		}
	}
	// A blocking flock cannot be cancelled: it runs in a goroutine of its
	// own, and if the wait runs out first it lets the lock go as soon as
	// it has it. The next lock waits for that first.
	got := make(chan error, 1)
	go func() { got <- lockFile(l.f, true) }()
	select {
	case err := <-got:
		return err
	case <-timer.C:
		ended := make(chan struct{})
		go func() {
			if <-got == nil {
				unlockFile(l.f)
			}
			close(ended)
		}()
		l.abandoned = ended
		return ErrLocked
	}
}

// lockFailed says why lock failed, and what to look at.
func (l *Log) lockFailed(err error) error {
	if errors.Is(err, ErrLocked) {
		return fmt.Errorf("audit: %s: waited %v for the lock; is another airlock process stuck (stopped, or on a hung disk)?: %w", l.path, l.lockWait, err)
	}
	return fmt.Errorf("audit: %s: locking the log: %w", l.path, err)
}

// unlock lets the lock go. Unlocking an open file does not fail; should
// it, the next writer waits out its LockWait and reports ErrLocked.
func (l *Log) unlock() { unlockFile(l.f) }

// release lets the lock that write took go, if this Log holds it. l.mu
// must be held.
func (l *Log) release() {
	if l.held {
		l.unlock()
		l.held = false
	}
}

// HeadPath is the head file of the log at path.
func HeadPath(path string) string { return path + ".head" }

// Open opens the log at path to append to it, creating the file (mode
// 0600) and its directory (0700) when they do not exist. An existing log
// is continued only if its last record verifies and agrees with the head
// file; otherwise Open refuses with ErrTailUnverified, and Verify tells
// which record is wrong. Any number of Logs may have a file open at once.
func Open(path string, opts *Options) (*Log, error) {
	l, err := openFile(path, opts)
	if err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

// openFile is Open without the syncer: it decides, deterministically,
// whether the log at path can be continued.
func openFile(path string, opts *Options) (*Log, error) {
	l, err := configure(path, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: creating the log's directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: opening the log: %w", err)
	}
	l.f = f
	if err := l.lock(); err != nil {
		f.Close()
		return nil, l.lockFailed(err)
	}
	err = l.resume()
	l.unlock()
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func configure(path string, o *Options) (*Log, error) {
	if o == nil {
		o = &Options{}
	}
	l := &Log{
		path:     path,
		mode:     o.Sync,
		window:   o.GroupWindow,
		redact:   o.Redact,
		now:      o.Now,
		syncFile: o.syncFile,
		lockWait: o.LockWait,
		kick:     make(chan struct{}, 1),
		urgent:   make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.cond = sync.NewCond(&l.mu)
	switch {
	case o.Sync != GroupCommit && o.Sync != EveryRecord:
		return nil, fmt.Errorf("audit: Options.Sync: unknown %v: %w", o.Sync, ErrInvalidOptions)
	case o.GroupWindow < 0 || o.GroupWindow > MaxGroupWindow:
		return nil, fmt.Errorf("audit: Options.GroupWindow %v: want 0 to MaxGroupWindow (%v): %w", o.GroupWindow, MaxGroupWindow, ErrInvalidOptions)
	case o.LockWait < 0 || o.LockWait > MaxLockWait:
		return nil, fmt.Errorf("audit: Options.LockWait %v: want 0 to MaxLockWait (%v): %w", o.LockWait, MaxLockWait, ErrInvalidOptions)
	case o.MaxBatch < 0:
		return nil, fmt.Errorf("audit: Options.MaxBatch %d is negative: %w", o.MaxBatch, ErrInvalidOptions)
	}
	if l.window == 0 {
		l.window = DefaultGroupWindow
	}
	if l.mode == EveryRecord {
		l.window = 0
	}
	if l.lockWait == 0 {
		l.lockWait = DefaultLockWait
	}
	l.maxBatch = uint64(o.MaxBatch)
	if l.maxBatch == 0 {
		l.maxBatch = DefaultMaxBatch
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.syncFile == nil {
		l.syncFile = (*os.File).Sync
	}
	return l, nil
}

// resume reads where the chain stands: the head file and the log's tail,
// which must agree. A new log gets a head file naming seq 0. A line cut
// short at the end is cut off. The lock must be held.
func (l *Log) resume() error {
	h, ok, err := readHead(HeadPath(l.path))
	if err != nil {
		return l.refuse("%v", err)
	}
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, end, err := lastLine(l.f, st.Size())
	if err != nil {
		return l.refuse("%v", err)
	}
	switch {
	case !ok && st.Size() == 0:
		if err := writeHead(HeadPath(l.path), head{}); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			return err
		}
	case !ok:
		return l.refuse("the head file %s is missing, so records cut from the end could not be told", HeadPath(l.path))
	case end == 0 && h.Seq > 0:
		return l.refuse("the log holds no record but its head file names seq %d: the log was truncated", h.Seq)
	case end > 0:
		last, err := checkTail(l.f, end, h)
		if err != nil {
			return l.refuse("%v", err)
		}
		l.seq, l.hash, l.synced = last.Seq, last.Hash, h.Seq
	}
	if err := l.cut(end, st.Size()); err != nil {
		return err
	}
	if l.seq > h.Seq {
		// Records written by a writer that has not synced them yet, or
		// stopped first: make them durable and name them now.
		if err := l.syncFile(l.f); err != nil {
			return fmt.Errorf("audit: syncing %s: %w", l.path, err)
		}
		if err := writeHead(HeadPath(l.path), head{Seq: l.seq, Hash: l.hash}); err != nil {
			return err
		}
		l.synced = l.seq
	}
	return nil
}

// cut truncates the log to end, the end of its last complete line, when
// it is longer (size): what follows is a line cut short by a writer that
// died in the middle of an append. The lock must be held.
func (l *Log) cut(end, size int64) error {
	if end < size {
		if err := l.f.Truncate(end); err != nil {
			return fmt.Errorf("audit: cutting the incomplete last line of %s: %w", l.path, err)
		}
	}
	l.end = end
	return nil
}

func (l *Log) refuse(format string, args ...any) error {
	return fmt.Errorf("audit: refusing to append to %s: %s; `airlock audit verify %s` tells which record: %w",
		l.path, fmt.Sprintf(format, args...), l.path, ErrTailUnverified)
}

// Append adds a record for e and returns it. Options.Redact is applied to
// a copy of e first; e itself is not changed (the record returned may share
// e.Stages when nothing changed them). Records are written in seq
// order whatever the number of goroutines and writers appending. The
// record is in the file when Append returns; in EveryRecord mode it is on
// disk too, and named by the head file.
func (l *Log) Append(e Entry) (Record, error) {
	if l == nil || l.cond == nil {
		return Record{}, ErrClosed
	}
	if l.redact != nil || !stagesValidUTF8(e.Stages) {
		// Redact and cleanEntry may change the stages: change a copy, not
		// the caller's. Otherwise the record shares them, unchanged.
		e.Stages = slices.Clone(e.Stages)
	}
	if l.redact != nil {
		// A copy the hook may keep: e itself stays on the stack when
		// there is no hook.
		r := e
		l.redact(&r)
		e = r
	}
	cleanEntry(&e)
	if err := checkEntry(&e); err != nil {
		return Record{}, err
	}
	eb := entryBufs.Get().(*[]byte)
	defer entryBufs.Put(eb)
	entry := appendEntry((*eb)[:0], &e)
	if cap(entry) <= maxPooledEntryBytes {
		*eb = entry
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for l.err == nil && !l.closed && l.unsynced >= l.maxBatch {
		signal(l.urgent)
		l.cond.Wait()
	}
	if l.closed {
		return Record{}, ErrClosed
	}
	if l.err != nil {
		return Record{}, l.err
	}
	rec, err := l.write(e, entry)
	if err != nil {
		return Record{}, err
	}
	if l.mode == GroupCommit {
		signal(l.kick)
		return rec, nil
	}
	signal(l.urgent)
	for l.synced < rec.Seq && l.err == nil {
		l.cond.Wait()
	}
	if l.synced < rec.Seq {
		return Record{}, l.err
	}
	return rec, nil
}

// write chains a record of e onto the last record of the log and writes
// it, holding the lock, so that no other writer comes between. The lock is
// kept until the syncer has synced the record (within GroupWindow and an
// fsync), so that a busy writer takes it once a window rather than once a
// record, and need not look at the tail again; another writer waits that
// long at most. l.mu must be held.
func (l *Log) write(e Entry, entry []byte) (rec Record, err error) {
	if !l.held {
		if err := l.lock(); err != nil {
			return Record{}, l.lockFailed(err)
		}
		l.held = true
		defer func() {
			if err != nil {
				l.release()
			}
		}()
		// No other writer can append while this Log holds the lock: only
		// a newly taken lock needs to find where the log ends now.
		if err := l.catchUp(); err != nil {
			return Record{}, err
		}
	}
	if l.seq == math.MaxUint64 {
		return Record{}, fmt.Errorf("audit: %s: seq is at its maximum; start a new log", l.path)
	}
	rec = Record{Seq: l.seq + 1, Time: l.now().UTC().Round(0), Prev: l.hash, Entry: e}
	line, hash, err := encodeRecord(l.buf[:0], rec.Seq, rec.Time, rec.Prev, entry)
	if err != nil {
		return Record{}, err
	}
	l.buf = line
	if len(line) > MaxRecordBytes {
		return Record{}, fmt.Errorf("audit: record of %d bytes, over %d: %w", len(line), MaxRecordBytes, ErrRecordTooLarge)
	}
	if _, err := l.f.Write(line); err != nil {
		// The file may now end in part of a line, which the next writer
		// cuts; this Log, which may not know where the file ends, stops.
		l.err = fmt.Errorf("audit: writing %s: %w", l.path, err)
		l.cond.Broadcast()
		return Record{}, l.err
	}
	rec.Hash = hash
	l.seq, l.hash, l.end = rec.Seq, hash, l.end+int64(len(line))
	l.unsynced++
	return rec, nil
}

// catchUp finds where the log ends now. If it has grown since this Log's
// last record, other writers appended: the next record follows the last
// of theirs. A line cut short at the end is cut off. The lock must be
// held.
func (l *Log) catchUp() error {
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if st.Size() == l.end {
		return nil
	}
	line, end, err := lastLine(l.f, st.Size())
	if err != nil {
		return l.refuse("%v", err)
	}
	switch {
	case end < l.end:
		return l.refuse("the log ends at byte %d, before this writer's last record, which ended at byte %d: it was truncated", end, l.end)
	case end > l.end:
		seq, hash, err := tailRecord(line)
		if err != nil {
			return l.refuse("the last line, another writer's, %v", err)
		}
		if seq <= l.seq {
			return l.refuse("the last record, another writer's, is seq %d, not past seq %d", seq, l.seq)
		}
		l.seq, l.hash = seq, hash
	}
	return l.cut(end, st.Size())
}

// Flush returns the first write or sync failure the Log met, if any. It
// has nothing else to do: every record is in the file when Append
// returns, safe from a crash of the process.
func (l *Log) Flush() error {
	if l == nil || l.cond == nil {
		return ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Sync makes every record this Log appended so far durable, and the head
// file name the last (or a later one), before it returns.
func (l *Log) Sync() error {
	if l == nil || l.cond == nil {
		return ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	target := l.seq
	signal(l.urgent)
	for l.synced < target && l.err == nil {
		l.cond.Wait()
	}
	if l.synced < target {
		return l.err
	}
	return nil
}

// Head returns the seq and hash of the last record of the log as this Log
// last saw it (its own last record, or a later one of another writer):
// what a verifier elsewhere can keep to anchor the chain.
func (l *Log) Head() (seq uint64, hash string) {
	if l == nil || l.cond == nil {
		return 0, ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.hash
}

// Close syncs every record appended, writes the head file and closes the
// log. It returns the first write or sync error the Log met, even one an
// Append already reported.
func (l *Log) Close() error {
	if l == nil || l.cond == nil {
		return ErrClosed
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.quit)
	<-l.done
	l.syncNow() // Appends waiting in EveryRecord mode are woken by it
	l.mu.Lock()
	err := l.err
	l.cond.Broadcast()
	l.mu.Unlock()
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("audit: closing %s: %w", l.path, cerr)
	}
	return err
}

// run is the syncer. It waits for records, gathers them for the group
// window (unless someone waits), and syncs them in one go.
func (l *Log) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		now := false
		select {
		case <-l.quit:
			return
		case <-l.urgent:
			now = true
		case <-l.kick:
		}
		if !now && l.window > 0 {
			timer.Reset(l.window)
			select {
			case <-timer.C:
			case <-l.urgent:
				timer.Stop()
			case <-l.quit:
				timer.Stop()
				return // Close syncs
			}
		}
		l.syncNow()
	}
}

// syncNow fsyncs the log and has the head file name the last record this
// Log saw before it: its own last, or a later one of another writer,
// which the fsync covers too. Only the syncer calls it, and Close once the
// syncer has stopped.
func (l *Log) syncNow() {
	// Whoever signalled before this point wrote before it: this sync
	// covers them, so their signals need no second one.
	drain(l.kick)
	drain(l.urgent)
	l.mu.Lock()
	if l.err != nil || l.seq == l.synced {
		l.release()
		l.mu.Unlock()
		return
	}
	h, n := head{Seq: l.seq, Hash: l.hash}, l.unsynced
	l.mu.Unlock()

	// The fsyncs, of the log and of the new head file, without the lock.
	var tmp string
	err := l.syncFile(l.f)
	if err != nil {
		err = fmt.Errorf("audit: syncing %s: %w", l.path, err)
	} else {
		tmp, err = newHead(HeadPath(l.path), h)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		err = l.nameHead(tmp, h)
	}
	// Records written since the fsync began are synced by the next
	// round, which takes the lock again if it was let go here.
	l.release()
	if err != nil {
		if l.err == nil {
			l.err = err
		}
	} else {
		l.synced, l.unsynced = h.Seq, l.unsynced-n
	}
	l.cond.Broadcast()
}

// nameHead renames tmp, a head file naming h, over the head file, unless
// that names h or a later record already: other writers update it too,
// and it must never go back. l.mu must be held.
func (l *Log) nameHead(tmp string, h head) error {
	if !l.held {
		if err := l.lock(); err != nil {
			os.Remove(tmp)
			return l.lockFailed(err)
		}
		defer l.unlock()
	}
	cur, ok, err := readHead(HeadPath(l.path))
	switch {
	case err != nil:
		err = l.refuse("%v", err)
	case ok && cur.Seq >= h.Seq:
	default:
		if err = os.Rename(tmp, HeadPath(l.path)); err == nil {
			return nil
		}
		err = fmt.Errorf("audit: writing the head file: %w", err)
	}
	os.Remove(tmp)
	return err
}

// signal wakes the syncer without blocking; one pending signal is enough.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}
