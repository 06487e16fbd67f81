package audit

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// The kinds of Problem.
const (
	// KindEdited: a record's content does not match its hash, or the
	// record was rewritten with a recomputed hash (the next record, or the
	// head file, names another).
	KindEdited = "edited"
	// KindDeleted: records are missing from the chain: seq jumps and the
	// next record's prev names one that is not there. Also the head file
	// missing (Line 0).
	KindDeleted = "deleted"
	// KindInserted: a record that is not part of the chain: its seq
	// repeats one already there, or its prev does not match the record
	// before.
	KindInserted = "inserted"
	// KindReordered: records of the chain out of seq order.
	KindReordered = "reordered"
	// KindTruncated: the head file names a later record than the log's
	// last: records were cut from the end.
	KindTruncated = "truncated"
	// KindMalformed: a line that is not a record in the form the log
	// writes (not JSON, missing or unknown members, too long, cut short),
	// or a head file that cannot be read as one (Line 0).
	KindMalformed = "malformed"
)

// Problem is one thing wrong with a log.
type Problem struct {
	// Line is the 1-based line of the log where the problem shows. 0 means
	// the head file; for truncated it is one past the last line.
	Line int `json:"line"`
	// Seq is the seq of the record at Line; for deleted and truncated it
	// is the first seq missing.
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"` // one of the Kind constants
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("head file: %s: %s", p.Kind, p.Message)
	}
	return fmt.Sprintf("line %d (seq %d): %s: %s", p.Line, p.Seq, p.Kind, p.Message)
}

// Report is what Verify found.
type Report struct {
	Records int    `json:"records"` // lines that are records, whether or not they belong
	Seq     uint64 `json:"seq"`     // seq of the last record of the chain
	Head    string `json:"head"`    // hash of the last record of the chain: the prev of the next
	// PastHead counts the chain's records after the one the head file
	// names: written by a writer that stopped before syncing them. They
	// verify as a chain, but records cut from among them could not be
	// told.
	PastHead int  `json:"past_head"`
	OK       bool `json:"ok"`
	// Problems, in line order (head file last). The first is the one that
	// matters; the rest may follow from it.
	Problems []Problem `json:"problems,omitempty"`
	// MoreProblems counts problems past MaxProblems, not listed.
	MoreProblems int `json:"more_problems,omitempty"`
}

// Verify reads the log at path and its head file and reports every
// record that is not where the chain says it should be, and how. An error
// means the log could not be read at all.
//
// It may run while Logs append: it reads the head file first, so the
// head names no record past what it then reads, but a record being
// written as it reads may show as a last line cut short (and, after a
// writer died in the middle of an append, a line being cut as it reads,
// as malformed).
func Verify(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	hp := HeadPath(path)
	data, ok, err := readHeadBytes(hp)
	if err != nil {
		return Report{}, err
	}
	rep, err := verify(f, data, ok, hp)
	if err != nil {
		return Report{}, fmt.Errorf("audit: reading %s: %w", path, err)
	}
	return rep, nil
}

// verify checks the log read from r against the head file's content
// (ok false: there is none), named hp in messages.
func verify(r io.Reader, data []byte, ok bool, hp string) (Report, error) {
	var err error
	v := &verifier{lr: lineReader{r: bufio.NewReaderSize(r, 64<<10)}}
	if ok {
		v.head, err = parseHead(data)
		if err != nil {
			v.problem(0, 0, KindMalformed, "the head file %s: %v", hp, err)
		}
		v.headOK = err == nil
	}

	for {
		it, more := v.next()
		if !more {
			break
		}
		if it.rec == nil {
			v.problem(it.line, 0, KindMalformed, "%s", it.bad)
			continue
		}
		v.rep.Records++
		v.check(it)
	}
	if v.err != nil {
		return Report{}, v.err
	}
	v.rep.Seq, v.rep.Head = v.seq, v.hash
	v.settleGaps()

	switch {
	case !ok:
		v.problem(0, 0, KindDeleted, "the head file %s is missing, so records cut from the end of the log could not be told", hp)
	case !v.headOK:
	case v.seq < v.head.Seq:
		v.problem(v.lr.no+1, v.seq+1, KindTruncated,
			"the log ends at seq %d but its head file names seq %d: %s cut from the end", v.seq, v.head.Seq, seqRange(v.seq+1, v.head.Seq, true))
	case v.atHead.line > 0 && v.atHead.hash != v.head.Hash:
		v.problem(v.atHead.line, v.head.Seq, KindEdited,
			"the head file names another hash for seq %d: the record was replaced", v.head.Seq)
	default:
		v.rep.PastHead = int(min(v.seq-v.head.Seq, math.MaxInt))
	}

	// Head file problems last: a line that is wrong matters more.
	key := func(p Problem) int {
		if p.Line == 0 {
			return math.MaxInt
		}
		return p.Line
	}
	slices.SortStableFunc(v.rep.Problems, func(a, b Problem) int { return cmp.Compare(key(a), key(b)) })
	v.rep.OK = len(v.rep.Problems) == 0 && v.rep.MoreProblems == 0
	return v.rep, nil
}

// verifier walks the log once, with a short look ahead where a record
// does not follow the one before: whether the next record follows this
// one or the one before tells which of them is out of place.
type verifier struct {
	lr    lineReader
	queue []item // read ahead, not yet checked
	err   error

	head   head
	headOK bool // the head file exists and is well formed

	// The chain so far: its last record.
	have     bool   // a record has been accepted
	seq      uint64 // its seq
	hash     string // its hash, as it claims
	computed string // the hash of its content, when that differs (edited)
	prev     string // its prev
	line     int    // its line
	flagged  bool   // a problem has been reported on it

	atHead struct { // the chain's record at the seq the head file names
		line int
		hash string
	}
	gaps  []gap
	early []early
	rep   Report
}

// item is one line: a record, or why it is not one.
type item struct {
	line int
	rec  *parsed
	bad  string
}

// gap is a jump in seq, reported as deleted unless the missing records
// turn up later, out of order.
type gap struct {
	problem int // index in rep.Problems
	lo, hi  uint64
	line    int            // line of the record after the gap
	seq     uint64         // its seq
	seen    map[uint64]int // missing seqs found later, and their lines
}

// early is a record of the chain met before its place: reported as
// inserted unless the gap it belongs in shows up later.
type early struct {
	problem int // index in rep.Problems
	line    int
	rec     *parsed
}

// maxLookahead is how many lines the verifier reads past a malformed line
// to find the next record when it needs one.
const maxLookahead = 16

func (v *verifier) next() (item, bool) {
	if len(v.queue) > 0 {
		it := v.queue[0]
		v.queue = v.queue[1:]
		return it, true
	}
	return v.read()
}

func (v *verifier) read() (item, bool) {
	if v.err != nil {
		return item{}, false
	}
	line, long, partial, err := v.lr.next()
	if err == io.EOF {
		return item{}, false
	}
	if err != nil {
		v.err = err
		return item{}, false
	}
	it := item{line: v.lr.no}
	switch {
	case long:
		it.bad = fmt.Sprintf("the line is longer than MaxRecordBytes (%d)", MaxRecordBytes)
	case partial:
		it.bad = "the last line has no newline: a write cut short"
	case len(line) == 0:
		it.bad = "empty line"
	default:
		if it.rec, err = parseRecord(line); err != nil {
			it.bad = err.Error()
		}
	}
	return it, true
}

// peek returns the next record not yet checked, if one is near; eof
// reports that the log has no more records.
func (v *verifier) peek() (n *item, eof bool) {
	for i := range v.queue {
		if v.queue[i].rec != nil {
			return &v.queue[i], false
		}
	}
	for len(v.queue) < maxLookahead {
		it, more := v.read()
		if !more {
			return nil, v.err == nil
		}
		v.queue = append(v.queue, it)
		if it.rec != nil {
			return &v.queue[len(v.queue)-1], false
		}
	}
	return nil, false
}

// take removes n, which peek returned, from the queue.
func (v *verifier) take(n *item) item {
	for i := range v.queue {
		if &v.queue[i] == n {
			it := v.queue[i]
			v.queue = slices.Delete(v.queue, i, i+1)
			return it
		}
	}
	return *n
}

// follows reports whether b is the record after a.
func follows(a, b *parsed) bool { return b.Seq == a.Seq+1 && b.Prev == a.Hash }

// fits reports whether r is the record after the chain's last.
func (v *verifier) fits(r *parsed) bool {
	return r.Seq == v.seq+1 && (r.Prev == v.hash || v.computed != "" && r.Prev == v.computed)
}

// continues reports whether the chain goes on from r: the next record
// follows it, or r is the last and the head file names it.
func (v *verifier) continues(r *parsed, n *item, eof bool) bool {
	if n != nil {
		return follows(r, n.rec)
	}
	return eof && v.headOK && v.head.Seq == r.Seq && v.head.Hash == r.Hash
}

// accept makes it the chain's last record, at seq.
func (v *verifier) accept(it item, seq uint64, flagged bool) {
	r := it.rec
	v.have, v.seq, v.hash, v.prev, v.line, v.flagged = true, seq, r.Hash, r.Prev, it.line, flagged
	v.computed = ""
	if !r.hashOK {
		v.computed = r.sum
	}
	if v.headOK && seq == v.head.Seq {
		v.atHead.line, v.atHead.hash = it.line, r.Hash
	}
}

// where names the chain's last record for a message.
func (v *verifier) where() string {
	if !v.have {
		return "the start of the log"
	}
	return fmt.Sprintf("seq %d (line %d)", v.seq, v.line)
}

// check places one record that parsed.
func (v *verifier) check(it item) {
	r := it.rec
	if r.hashOK && v.fits(r) {
		v.accept(it, r.Seq, false)
		return
	}
	if r.hashOK && r.Seq < v.seq && v.returns(it) {
		return
	}
	n, eof := v.peek()

	// The next record follows the chain as if r were not there: r is
	// extra, or the two are swapped.
	if n != nil && v.fits(n.rec) {
		if r.hashOK && follows(n.rec, r) {
			v.problem(it.line, r.Seq, KindReordered, "seq %d comes before seq %d (line %d)", r.Seq, n.rec.Seq, n.line)
			first := v.take(n)
			v.rep.Records++
			v.accept(first, first.rec.Seq, false)
			v.accept(it, r.Seq, true)
			return
		}
		i := v.problem(it.line, r.Seq, KindInserted, "not part of the chain: seq %d at line %d follows %s as if this line were not there",
			n.rec.Seq, n.line, v.where())
		if i >= 0 && r.hashOK && r.Seq > v.seq+1 {
			v.early = append(v.early, early{problem: i, line: it.line, rec: r})
		}
		return
	}

	if !r.hashOK {
		seq := r.Seq
		switch {
		case r.Prev == v.hash:
			seq = v.seq + 1 // in its place by prev, whatever its seq says
		case r.Seq == v.seq+1 || n != nil && follows(r, n.rec):
		default:
			v.problem(it.line, r.Seq, KindInserted, "its content does not match its hash and it is not part of the chain after %s", v.where())
			return
		}
		v.problem(it.line, r.Seq, KindEdited, "the record's content does not match its hash")
		v.accept(it, seq, true)
		return
	}

	switch {
	case r.Seq == v.seq+1: // in seq, but prev names another record
		if !v.continues(r, n, eof) {
			v.problem(it.line, r.Seq, KindInserted, "its prev is not the hash of %s", v.where())
			return
		}
		switch {
		case !v.have:
			v.problem(it.line, r.Seq, KindEdited, "seq 1 names a prev: the first record names none")
		case !v.flagged:
			v.problem(v.line, v.seq, KindEdited, "seq %d (line %d) names another record as its prev: this one was rewritten and its hash recomputed", r.Seq, it.line)
		}
		v.accept(it, r.Seq, false)

	case r.Seq > v.seq+1:
		lo, hi := v.seq+1, r.Seq-1
		if v.filled(lo, r) {
			v.accept(it, r.Seq, false)
			return
		}
		i := v.problem(it.line, lo, KindDeleted, "%s missing: seq %d follows %s", seqRange(lo, hi, true), r.Seq, v.where())
		if i >= 0 {
			v.gaps = append(v.gaps, gap{problem: i, lo: lo, hi: hi, line: it.line, seq: r.Seq})
		}
		v.accept(it, r.Seq, true)

	case v.have && r.Seq == v.seq && r.Prev == v.prev:
		// Two records claim one place: the one the chain goes on from
		// belongs; of two copies, the later is extra.
		if r.Hash != v.hash && v.continues(r, n, eof) {
			v.problem(v.line, v.seq, KindInserted, "a second record with seq %d: the chain goes on from the one at line %d", v.seq, it.line)
			v.accept(it, r.Seq, false)
		} else {
			v.problem(it.line, r.Seq, KindInserted, "a second record with seq %d (first at line %d)", r.Seq, v.line)
		}

	default: // seq goes back
		v.problem(it.line, r.Seq, KindInserted, "seq %d repeats or goes back: the chain is at %s", r.Seq, v.where())
	}
}

// returns reports whether it is one of the records missing from a gap
// before, turning up out of order, and notes it.
func (v *verifier) returns(it item) bool {
	for i := range v.gaps {
		g := &v.gaps[i]
		if it.rec.Seq < g.lo || it.rec.Seq > g.hi {
			continue
		}
		if _, dup := g.seen[it.rec.Seq]; dup {
			return false
		}
		if g.seen == nil {
			g.seen = map[uint64]int{}
		}
		g.seen[it.rec.Seq] = it.line
		return true
	}
	return false
}

// filled reports whether records met too early fill the gap from seq lo
// to r exactly, linked, and if so reports them as reordered.
func (v *verifier) filled(lo uint64, r *parsed) bool {
	var chain []int // indexes in v.early, from r back to lo
	want := r
	for want.Seq > lo {
		i := slices.IndexFunc(v.early, func(e early) bool { return follows(e.rec, want) })
		if i < 0 {
			return false
		}
		chain = append(chain, i)
		want = v.early[i].rec
	}
	if !v.fits(want) {
		return false
	}
	for _, i := range chain {
		e := v.early[i]
		v.rep.Problems[e.problem] = Problem{Line: e.line, Seq: e.rec.Seq, Kind: KindReordered,
			Message: fmt.Sprintf("seq %d comes too early: its place is after %s", e.rec.Seq, v.where())}
	}
	return true
}

// settleGaps turns a gap whose records all turned up later into a
// reordering, and notes those that partly did.
func (v *verifier) settleGaps() {
	for _, g := range v.gaps {
		if len(g.seen) == 0 {
			continue
		}
		first := math.MaxInt
		for _, line := range g.seen {
			first = min(first, line)
		}
		if uint64(len(g.seen)) == g.hi-g.lo+1 {
			v.rep.Problems[g.problem] = Problem{Line: g.line, Seq: g.seq, Kind: KindReordered,
				Message: fmt.Sprintf("seq %d comes before %s, which %s later (from line %d)", g.seq, seqRange(g.lo, g.hi, false), plural(g.lo, g.hi, "comes", "come"), first)}
			continue
		}
		v.problem(first, 0, KindReordered, "records of the gap before line %d turn up later, out of order", g.line)
	}
}

// problem records a problem and returns its index, or -1 past MaxProblems.
func (v *verifier) problem(line int, seq uint64, kind, format string, args ...any) int {
	if len(v.rep.Problems) >= MaxProblems {
		v.rep.MoreProblems++
		return -1
	}
	v.rep.Problems = append(v.rep.Problems, Problem{Line: line, Seq: seq, Kind: kind, Message: fmt.Sprintf(format, args...)})
	return len(v.rep.Problems) - 1
}

// seqRange names seqs lo to hi, with "is" or "are" after when verb is set.
func seqRange(lo, hi uint64, verb bool) string {
	r := fmt.Sprintf("seq %d", lo)
	if lo != hi {
		r = fmt.Sprintf("seq %d to %d", lo, hi)
	}
	if verb {
		r += " " + plural(lo, hi, "is", "are")
	}
	return r
}

func plural(lo, hi uint64, one, many string) string {
	if lo == hi {
		return one
	}
	return many
}

// lineReader reads a log's lines, numbering them from 1.
type lineReader struct {
	r   *bufio.Reader
	no  int
	buf []byte
}

// next returns the next line without its newline. long reports a line
// longer than MaxRecordBytes (its bytes are dropped); partial, a last line
// without a newline.
func (lr *lineReader) next() (line []byte, long, partial bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long && len(lr.buf)+len(chunk) <= MaxRecordBytes {
			lr.buf = append(lr.buf, chunk...)
		} else {
			long = true
		}
		switch {
		case err == nil:
			lr.no++
			if long {
				return nil, true, false, nil
			}
			return lr.buf[:len(lr.buf)-1], false, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			if len(lr.buf) == 0 && !long {
				return nil, false, false, io.EOF
			}
			lr.no++
			return lr.buf, long, true, nil
		default:
			return nil, false, false, err
		}
	}
}
