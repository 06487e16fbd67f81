package egress

import (
	"bytes"
	"io"
)

// maskWriter masks every injected credential value in a stream it passes
// on, a value split across writes included: it holds back the last
// longest-value-minus-one bytes until more arrive or Close. Memory stays
// bounded by the longest value plus one write.
type maskWriter struct {
	w      io.Writer
	values [][]byte
	hold   int // the longest value's length, less one
	buf    []byte
	err    error
}

func newMaskWriter(w io.Writer, values []string) *maskWriter {
	m := &maskWriter{w: w}
	for _, v := range values {
		if len(v) >= MinMaskedValueLength {
			m.values = append(m.values, []byte(v))
			m.hold = max(m.hold, len(v)-1)
		}
	}
	return m
}

func (m *maskWriter) Write(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	m.buf = append(m.buf, p...)
	m.flush(len(m.buf) - m.hold)
	return len(p), m.err
}

// Close writes what was held back.
func (m *maskWriter) Close() error {
	m.flush(len(m.buf))
	return m.err
}

// flush writes buf up to cut, masked. A value that starts before cut ends
// within buf (cut leaves room for the longest), so it is masked whole; the
// rest waits.
func (m *maskWriter) flush(cut int) {
	if cut <= 0 || m.err != nil {
		return
	}
	var out []byte
	i := 0
	for i < cut {
		at, n := -1, 0
		for _, v := range m.values {
			if j := bytes.Index(m.buf[i:], v); j >= 0 && (at < 0 || j < at) {
				at, n = j, len(v)
			}
		}
		if at < 0 || i+at >= cut {
			out = append(out, m.buf[i:cut]...)
			i = cut
			break
		}
		out = append(out, m.buf[i:i+at]...)
		out = append(out, Masked...)
		i += at + n
	}
	_, m.err = m.w.Write(out)
	m.buf = append(m.buf[:0], m.buf[i:]...)
}
