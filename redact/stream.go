package redact

import (
	"bytes"
	"io"
	"strings"
)

// StreamLookback is how much already-written text Stream keeps before the
// unwritten part, so that a line rule near the cut sees the same context as
// it would in one pass.
const StreamLookback = 4 * MaxContextBytes

// MaxEmptyReads is how many reads in a row may return no bytes and no error
// before Stream gives up with io.ErrNoProgress.
const MaxEmptyReads = 100

// Stream copies src to dst with every secret masked, in bounded memory: it
// holds about Options.StreamWindow + MaxSecretBytes + StreamLookback bytes.
// It writes as it reads, so that a live log piped through it shows each
// line when the line is complete, with the same result as one pass over
// the whole input:
//
//   - Text is written up to the end of the last complete line read. No
//     rule's match crosses a line end except a private key (check: pem)
//     and the rules with an open pattern (an AWS secret key whose value
//     follows on a later line); for those, the text from a keyword that
//     could still begin such a match is held back until the match is
//     decided: it is complete, or cannot be one, or MaxSecretBytes of
//     text after the keyword have been read.
//   - A line longer than the window is written once MaxSecretBytes more of
//     it have been read, so a secret split across reads, up to
//     MaxSecretBytes long, is seen whole.
func (rd *Redactor) Stream(dst io.Writer, src io.Reader) error {
	return rd.StreamFindings(dst, src, nil)
}

// StreamFindings is Stream that also calls fn, if not nil, with each
// finding, its offsets counted from the start of src.
func (rd *Redactor) StreamFindings(dst io.Writer, src io.Reader, fn func(Finding)) error {
	buf := make([]byte, 0, StreamLookback+rd.window+MaxSecretBytes)
	base, emitted := 0, 0 // src offset of buf[0]; bytes of buf already written
	eof := false
	var out []byte
	for {
		// One read that brings bytes, not a full buffer: on a pipe that
		// would wait for text that has not been written yet.
		read := len(buf)
		for empty := 0; !eof && len(buf) < cap(buf); {
			n, err := src.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return err
			}
			if n > 0 {
				break
			}
			if empty++; empty >= MaxEmptyReads && !eof {
				return io.ErrNoProgress
			}
		}
		if !eof && len(buf) < cap(buf) && bytes.IndexByte(buf[read:], '\n') < 0 {
			continue // no line ended: nothing more can be written yet
		}
		cut := rd.cut(buf, emitted, eof)
		if cut <= emitted {
			if eof {
				return nil // everything is written
			}
			continue // what ended is held back: read on
		}
		out = out[:0]
		pos := emitted
		for _, f := range rd.find(buf) {
			if f.Start < emitted {
				continue // written in the round before, with more context
			}
			if f.Start >= cut {
				break
			}
			out = append(out, buf[pos:f.Start]...)
			out = appendMask(out, f.Kind)
			pos = f.End
			cut = max(cut, f.End)
			if fn != nil {
				fn(Finding{Kind: f.Kind, Start: base + f.Start, End: base + f.End})
			}
		}
		if pos < cut {
			out = append(out, buf[pos:cut]...)
		}
		if _, err := dst.Write(out); err != nil {
			return err
		}
		if eof && cut == len(buf) {
			return nil
		}
		keep := max(0, cut-StreamLookback)
		n := copy(buf, buf[keep:])
		buf = buf[:n]
		base += keep
		emitted = cut - keep
	}
}

// cut is how much of buf may be written: all of it at the end of the
// input; else up to the last line end after emitted, but not past the
// start of a match that may still cross that line end; and, when buf is
// full, at least all but its last MaxSecretBytes, which no match starting
// earlier can reach into.
func (rd *Redactor) cut(buf []byte, emitted int, eof bool) int {
	if eof {
		return len(buf)
	}
	cut := emitted
	if i := bytes.LastIndexByte(buf[emitted:], '\n'); i >= 0 {
		cut = rd.holdBack(buf, emitted, emitted+i+1)
	}
	if len(buf) == cap(buf) {
		cut = max(cut, len(buf)-MaxSecretBytes)
	}
	return cut
}

// holdBack returns the first keyword in buf[from:to] that may still begin
// a match running past to (a line end), or to when there is none. A keyword
// never holds a line end, so every one starting before to ends there too.
func (rd *Redactor) holdBack(buf []byte, from, to int) int {
	held := to
	rd.pre.find(buf[from:to], func(h hit) {
		at := from + h.start
		if at >= held || len(buf)-at >= MaxSecretBytes {
			return // a later one, or a match that can read no further
		}
		for _, ri := range rd.byWord[h.word] {
			r := rd.rules[ri]
			if r.open != nil && r.open.Match(buf[at:]) || r.check == "pem" && pemOpen(buf, at) {
				held = at
				return
			}
		}
	})
	return held
}

// pemOpen says whether matchPEM at "-----BEGIN " could still give another
// answer once more text is read: the label is not complete yet, or it is a
// private key's and its end line is not complete yet.
func pemOpen(text []byte, at int) bool {
	const begin = "-----BEGIN "
	if !bytes.HasPrefix(text[at:], []byte(begin)) {
		return false // the keyword in another case: never a match
	}
	rest := text[at+len(begin):]
	end := bytes.Index(rest[:min(len(rest), 64)], []byte("-----"))
	if end < 0 {
		return len(rest) < 64
	}
	label := string(rest[:end])
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return false
	}
	body := rest[end+5:]
	i := bytes.Index(body, []byte("-----END "))
	if i < 0 {
		return true
	}
	tail := body[i+len("-----END "):]
	return bytes.Index(tail[:min(len(tail), 64)], []byte("-----")) < 0
}
