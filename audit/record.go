package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// hashLen is the length of a hex SHA-256.
const hashLen = 2 * sha256.Size

// encodeRecord appends the record's line, newline included, to b and
// returns it with the record's hash. entry is the entry's JSON.
func encodeRecord(b []byte, seq uint64, t time.Time, prev string, entry []byte) (line []byte, hash string, err error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"time":"`...)
	b, err = t.AppendText(b)
	if err != nil {
		return nil, "", fmt.Errorf("audit: record time: %w", err)
	}
	b = append(b, `","prev":"`...)
	b = append(b, prev...)
	b = append(b, `","entry":`...)
	b = append(b, entry...)
	b = append(b, '}')
	sum := sha256.Sum256(b)
	b = append(b[:len(b)-1], `,"hash":"`...)
	at := len(b)
	b = hex.AppendEncode(b, sum[:])
	hash = string(b[at:])
	b = append(b, "\"}\n"...)
	return b, hash, nil
}

// cleanEntry replaces each byte of invalid UTF-8 in e's strings with
// U+FFFD, as encoding/json would on the way out, so that the record
// returned, the line written and the line read back all say the same.
func cleanEntry(e *Entry) {
	for _, s := range []*string{&e.CallID, &e.Session, &e.Tool, &e.Role, &e.Mode,
		&e.Decision, &e.Code, &e.Rule, &e.ArgsSHA256, &e.ResultSHA256, &e.Note} {
		*s = validUTF8(*s)
	}
	if stagesValidUTF8(e.Stages) {
		return // nothing to change; the stages may be the caller's
	}
	for i := range e.Stages {
		st := &e.Stages[i]
		st.Name, st.Decision, st.Code = validUTF8(st.Name), validUTF8(st.Decision), validUTF8(st.Code)
	}
}

// stagesValidUTF8 reports whether every string of the stages is valid
// UTF-8, so that cleanEntry leaves them as they are.
func stagesValidUTF8(stages []Stage) bool {
	for i := range stages {
		st := &stages[i]
		if !utf8.ValidString(st.Name) || !utf8.ValidString(st.Decision) || !utf8.ValidString(st.Code) {
			return false
		}
	}
	return true
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // one RuneError per invalid byte
		b.WriteRune(r)
	}
	return b.String()
}

// checkEntry refuses what the log must not hold: sizes below zero, hashes
// that are not hashes (contents passed by mistake), stages without a name
// or with an unknown decision.
func checkEntry(e *Entry) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("audit: %s: %w", fmt.Sprintf(format, args...), ErrInvalidEntry)
	}
	switch {
	case e.ArgsBytes < 0 || e.ResultBytes < 0:
		return bad("negative size")
	case e.ArgsSHA256 != "" && !isHash(e.ArgsSHA256):
		return bad("ArgsSHA256 is not a lower-case hex SHA-256")
	case e.ResultSHA256 != "" && !isHash(e.ResultSHA256):
		return bad("ResultSHA256 is not a lower-case hex SHA-256")
	}
	for i, st := range e.Stages {
		switch {
		case st.Name == "":
			return bad("stage %d has no name", i)
		case !slices.Contains(stageDecisions, st.Decision):
			return bad("stage %q: decision %q, want one of %s", st.Name, st.Decision, strings.Join(stageDecisions, ", "))
		case st.Micros < 0:
			return bad("stage %q: negative duration", st.Name)
		}
	}
	return nil
}

func isHash(s string) bool {
	if len(s) != hashLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parsed is one line read back.
type parsed struct {
	Record
	// sum is the hash of the record's content; hashOK reports whether
	// Hash is that.
	sum    string
	hashOK bool
}

// rawRecord decodes a line; pointers tell a missing member from a zero one.
type rawRecord struct {
	Seq   *uint64         `json:"seq"`
	Time  *time.Time      `json:"time"`
	Prev  *string         `json:"prev"`
	Entry json.RawMessage `json:"entry"`
	Hash  *string         `json:"hash"`
}

// parseRecord reads one line (without its newline). An error means the
// line is malformed: not a record in the form the log writes. A record
// whose content does not match its hash is not an error: hashOK is false.
func parseRecord(line []byte) (*parsed, error) {
	var raw rawRecord
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, fmt.Errorf("not a record: %w", err)
	}
	var missing []string
	for _, m := range []struct {
		name string
		nil  bool
	}{{"seq", raw.Seq == nil}, {"time", raw.Time == nil}, {"prev", raw.Prev == nil}, {"entry", raw.Entry == nil}, {"hash", raw.Hash == nil}} {
		if m.nil {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	p := &parsed{Record: Record{Seq: *raw.Seq, Time: *raw.Time, Prev: *raw.Prev, Hash: *raw.Hash}}
	switch {
	case p.Seq == 0:
		return nil, errors.New("seq 0: seqs start at 1")
	case !isHash(p.Hash):
		return nil, errors.New("hash is not a lower-case hex SHA-256")
	case p.Prev != "" && !isHash(p.Prev):
		return nil, errors.New("prev is neither empty nor a lower-case hex SHA-256")
	case bytes.Equal(raw.Entry, []byte("null")):
		return nil, errors.New("entry is null")
	}
	if err := json.Unmarshal(raw.Entry, &p.Entry); err != nil {
		return nil, fmt.Errorf("entry: %w", err)
	}
	entry, err := json.Marshal(&p.Entry)
	if err != nil {
		return nil, fmt.Errorf("entry: %w", err)
	}
	want, hash, err := encodeRecord(nil, p.Seq, p.Time, p.Prev, entry)
	if err != nil {
		return nil, err
	}
	p.sum, p.hashOK = hash, hash == p.Hash
	if p.hashOK && !bytes.Equal(line, want[:len(want)-1]) {
		// Same content, other bytes: unknown members, or spacing,
		// escapes, member order or duplicate members differ from what the
		// log writes.
		if err := strictDecode(line, &rawRecord{}); err != nil {
			return nil, err
		}
		if err := strictDecode(raw.Entry, &Entry{}); err != nil {
			return nil, fmt.Errorf("entry: %w", err)
		}
		return nil, errors.New("not in the canonical form the log writes")
	}
	return p, nil
}

// strictDecode decodes one JSON value that fills data, refusing unknown
// members.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a record: %w", err)
	}
	if dec.InputOffset() != int64(len(data)) {
		return errors.New("not a record: data after the JSON object")
	}
	return nil
}

// head is what the head file holds: the last record synced.
type head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// maxHeadBytes bounds what is read of a head file; a real one is under 100.
const maxHeadBytes = 256

// readHead reads the head file for Open. ok is false when it does not
// exist; an error says it exists and cannot be used.
func readHead(path string) (h head, ok bool, err error) {
	data, ok, err := readHeadBytes(path)
	if err != nil || !ok {
		return head{}, false, err
	}
	h, err = parseHead(data)
	if err != nil {
		return head{}, false, fmt.Errorf("the head file %s is malformed: %v", path, err)
	}
	return h, true, nil
}

// readHeadBytes reads at most maxHeadBytes+1 bytes of the head file.
func readHeadBytes(path string) (data []byte, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("audit: reading the head file: %w", err)
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, maxHeadBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("audit: reading the head file: %w", err)
	}
	return data, true, nil
}

func parseHead(data []byte) (head, error) {
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok || len(data) > maxHeadBytes {
		return head{}, errors.New("not one line")
	}
	var raw struct {
		Seq  *uint64 `json:"seq"`
		Hash *string `json:"hash"`
	}
	if err := strictDecode(line, &raw); err != nil {
		return head{}, err
	}
	if raw.Seq == nil || raw.Hash == nil {
		return head{}, errors.New("missing seq or hash")
	}
	h := head{Seq: *raw.Seq, Hash: *raw.Hash}
	if (h.Seq == 0) != (h.Hash == "") || h.Hash != "" && !isHash(h.Hash) {
		return head{}, errors.New("hash is not a lower-case hex SHA-256 (empty for seq 0)")
	}
	if !bytes.Equal(data, h.encode()) {
		return head{}, errors.New("not in the canonical form the log writes")
	}
	return h, nil
}

func (h head) encode() []byte {
	b := append([]byte(`{"seq":`), strconv.FormatUint(h.Seq, 10)...)
	b = append(b, `,"hash":"`...)
	b = append(b, h.Hash...)
	return append(b, "\"}\n"...)
}

// writeHead replaces the head file atomically: see newHead.
func writeHead(path string, h head) error {
	tmp, err := newHead(path, h)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit: writing the head file: %w", err)
	}
	return nil
}

// newHead writes h to a new temporary file beside the head file at path,
// fsynced, and returns its name: renamed over the head file, it replaces
// it atomically. Each writer has a file of its own, so that only the
// rename needs the log's lock. The directory is not fsynced each time: a
// rename lost to a power cut leaves an older head, which names an earlier
// record and so still verifies.
func newHead(path string, h head) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("audit: writing the head file: %w", err)
	}
	_, err = f.Write(h.encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("audit: writing the head file: %w", err)
	}
	return f.Name(), nil
}

// syncDir makes a new file's name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: syncing the log's directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: syncing the log's directory: %w", err)
	}
	return nil
}

// checkTail reads the log backwards from end, the end of its last
// complete line, until it reaches the record the head file names,
// checking each record's hash and its link to the next, and returns the
// last record. Any doubt is an error: this is what Open appends to.
func checkTail(f *os.File, end int64, h head) (*parsed, error) {
	tr := &tailReader{f: f, start: end}
	var newest, next *parsed
	for {
		line, off, err := tr.prev()
		if err != nil {
			return nil, err
		}
		if line == nil {
			// Reached the start of the file.
			if next == nil {
				return nil, errors.New("the log holds no record")
			}
			if next.Seq != 1 || next.Prev != "" {
				return nil, fmt.Errorf("the log starts at seq %d: the records before it are missing", next.Seq)
			}
			return newest, nil
		}
		p, err := parseRecord(line)
		if err != nil {
			return nil, fmt.Errorf("the line at byte offset %d is malformed: %v", off, err)
		}
		if !p.hashOK {
			return nil, fmt.Errorf("seq %d (byte offset %d) does not match its hash: it was edited", p.Seq, off)
		}
		if next == nil {
			newest = p
		} else if p.Seq+1 != next.Seq || p.Hash != next.Prev {
			return nil, fmt.Errorf("seq %d (byte offset %d) is not the record seq %d names as prev", p.Seq, off, next.Seq)
		}
		switch {
		case p.Seq < h.Seq:
			return nil, fmt.Errorf("the log ends at seq %d but its head file names seq %d: records were cut from the end", p.Seq, h.Seq)
		case p.Seq == h.Seq && p.Hash != h.Hash:
			return nil, fmt.Errorf("seq %d is not the record the head file names: it was replaced", p.Seq)
		case p.Seq == h.Seq:
			return newest, nil
		}
		next = p
	}
}

// lastLine returns the last complete line of the file's first size bytes,
// without its newline (nil when there is none), and end, the offset just
// past it: the end of the complete lines. Bytes after end are a line cut
// short by a writer that died in the middle of an append.
func lastLine(f *os.File, size int64) (line []byte, end int64, err error) {
	t := &tailReader{f: f, start: size}
	for {
		if i := bytes.LastIndexByte(t.buf, '\n'); i >= 0 {
			end = t.start + int64(i+1) // before prev moves t.start
			t.buf = t.buf[:i+1]
			line, _, err = t.prev()
			return line, end, err
		}
		if t.start == 0 {
			return nil, 0, nil
		}
		if err := t.more(); err != nil {
			return nil, 0, err
		}
	}
}

// tailRecord reads the seq and hash of the last record of the log, which
// another writer appended: what chaining onto it takes, and cheap, since
// an Append does it holding the lock. It checks the line's two ends are
// in the form the log writes and its hash is that of its content, as the
// package doc defines it; Verify checks the rest.
func tailRecord(line []byte) (seq uint64, hash string, err error) {
	const hashMember, end = `,"hash":"`, `"}`
	body := len(line) - len(hashMember) - hashLen - len(end) // where the hash member starts
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok || body < 0 || !bytes.HasPrefix(line[body:], []byte(hashMember)) || !bytes.HasSuffix(line, []byte(end)) {
		return 0, "", errors.New("is not a record in the form the log writes")
	}
	digits, _, _ := bytes.Cut(rest, []byte(","))
	seq, err = strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, "", errors.New("has no seq")
	}
	sum := sha256.New()
	sum.Write(line[:body])
	sum.Write([]byte("}"))
	hash = string(line[body+len(hashMember) : len(line)-len(end)])
	if hex.EncodeToString(sum.Sum(nil)) != hash {
		return 0, "", fmt.Errorf("(seq %d) does not match its hash: it was edited", seq)
	}
	return seq, hash, nil
}

// tailReader returns a file's lines from the last to the first.
type tailReader struct {
	f     *os.File
	start int64  // file offset of buf[0]
	buf   []byte // the unread part of the file's end, ending in '\n'
}

// tailChunk is the least tailReader reads at a time: a few records, since
// an Append reads the last record another writer appended.
const tailChunk = 4 << 10

// prev returns the line before those already returned, without its
// newline, and its offset; nil at the start of the file.
func (t *tailReader) prev() ([]byte, int64, error) {
	for {
		if len(t.buf) > 0 {
			if i := bytes.LastIndexByte(t.buf[:len(t.buf)-1], '\n'); i >= 0 || t.start == 0 {
				line := t.buf[i+1 : len(t.buf)-1]
				t.buf = t.buf[:i+1]
				return line, t.start + int64(i+1), nil
			}
		} else if t.start == 0 {
			return nil, 0, nil
		}
		if err := t.more(); err != nil {
			return nil, 0, err
		}
	}
}

// more reads the part of the file before buf: at least tailChunk, and as
// much as buf holds, so that a long line costs reads in proportion.
func (t *tailReader) more() error {
	if len(t.buf) > MaxRecordBytes {
		return fmt.Errorf("a line before byte offset %d is longer than MaxRecordBytes", t.start+int64(len(t.buf)))
	}
	n := min(int64(max(tailChunk, len(t.buf))), t.start)
	grown := make([]byte, int(n)+len(t.buf))
	if _, err := t.f.ReadAt(grown[:n], t.start-n); err != nil {
		return fmt.Errorf("reading the log: %v", err)
	}
	copy(grown[n:], t.buf)
	t.buf, t.start = grown, t.start-n
	return nil
}
