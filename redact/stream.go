package redact

import (
	"io"
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
// Text is written only once MaxSecretBytes more of it have been read (or at
// the end), so a secret split across reads, up to MaxSecretBytes long, is
// seen whole.
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
		empty := 0
		for !eof && len(buf) < cap(buf) {
			n, err := src.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return err
			}
			if n == 0 && !eof {
				if empty++; empty >= MaxEmptyReads {
					return io.ErrNoProgress
				}
			}
		}
		cut := len(buf)
		if !eof {
			cut = len(buf) - MaxSecretBytes
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
