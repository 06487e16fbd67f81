package egress

import (
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/tool"
)

// ratioSlack is how many decoded bytes a compressed body may yield before
// the ratio is judged: a tiny response legitimately decodes to many times
// its size.
const ratioSlack = 64 << 10

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader refuses to yield more than ratio decoded bytes per wire
// byte, past ratioSlack.
type ratioReader struct {
	r     io.Reader
	wire  *countingReader
	ratio int64
	n     int64
}

var errBomb = errors.New("decompression ratio over the limit")

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.n > ratioSlack && r.n > r.ratio*r.wire.n {
		return n, errBomb
	}
	return n, err
}

// maxWire is how many bytes of a compressed body may arrive for limit
// decoded bytes: more means a stream that yields (almost) nothing, such as
// one of empty deflate blocks, and is refused.
func maxWire(limit int64) int64 { return 2*limit + ratioSlack }

// readBody reads at most limit decoded bytes of body, decoding the one
// content coding encoding names. It reports whether more was there.
func readBody(body io.Reader, encoding string, limit, ratio int64) ([]byte, bool, *tool.Error) {
	wire := &countingReader{r: io.LimitReader(body, maxWire(limit)+1)}
	var dec io.Reader = wire
	enc := strings.ToLower(strings.TrimSpace(encoding))
	switch enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, false, corrupt(enc)
		}
		zr.Multistream(false) // one member: a stream of many could hide a bomb in the rest
		dec = zr
	case "deflate":
		zr, err := zlib.NewReader(wire)
		if err != nil {
			return nil, false, corrupt(enc)
		}
		dec = zr
	default:
		return nil, false, &tool.Error{Code: CodeContentType,
			Message: fmt.Sprintf("the response is encoded as %q, which egress does not decode (only gzip and deflate, one layer)", truncate(encoding, 32)),
			Hint:    "Fetch a resource served uncompressed or gzip-compressed"}
	}
	if dec != wire {
		dec = &ratioReader{r: dec, wire: wire, ratio: ratio}
	}
	buf, err := io.ReadAll(io.LimitReader(dec, limit+1))
	if wire.n > maxWire(limit) {
		return nil, false, &tool.Error{Code: CodeTooLarge,
			Message: fmt.Sprintf("the compressed response sent over %d bytes and decoded to only %d", maxWire(limit), len(buf)),
			Hint:    "Do not fetch this resource again"}
	}
	switch {
	case errors.Is(err, errBomb):
		return nil, false, &tool.Error{Code: CodeTooLarge,
			Message: fmt.Sprintf("the compressed response expands more than %d times (MaxDecodeRatio): a decompression bomb?", ratio),
			Hint:    "Do not fetch this resource again"}
	case err != nil && len(buf) == 0:
		if dec != wire {
			return nil, false, corrupt(enc)
		}
		return nil, false, readFailed(err)
	case err != nil && isTimeout(err):
		return nil, false, timeoutError("reading the response")
	case err != nil:
		// A body cut short still shows what arrived, marked as cut.
		return buf, true, nil
	}
	if int64(len(buf)) > limit {
		return buf[:limit], true, nil
	}
	return buf, false, nil
}

func corrupt(enc string) *tool.Error {
	return &tool.Error{Code: CodeConnectionFailed, Message: fmt.Sprintf("the response's %s encoding is corrupt", enc),
		Hint: "The server sent a broken response; try another resource"}
}

func readFailed(err error) *tool.Error {
	if isTimeout(err) {
		return timeoutError("reading the response")
	}
	return &tool.Error{Code: CodeConnectionFailed, Message: "the response could not be read: " + truncate(err.Error(), 120),
		Hint: "Try again later, or fetch another resource"}
}

// text turns body bytes into text: invalid UTF-8 is replaced, and a rune
// cut at the end by the size limit is dropped.
func text(b []byte, truncated bool) string {
	if truncated {
		j := len(b) - 1
		for j > 0 && j > len(b)-utf8.UTFMax && !utf8.RuneStart(b[j]) {
			j--
		}
		if j >= 0 && !utf8.FullRune(b[j:]) {
			b = b[:j]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// mediaTypeAllowed reports whether the Content-Type value's media type
// matches one of the patterns.
func mediaTypeAllowed(contentType string, patterns []string) (string, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.Contains(mt, "/") {
		return "", false
	}
	for _, p := range patterns {
		p = strings.ToLower(p)
		typ, sub, _ := strings.Cut(p, "/")
		mtyp, msub, _ := strings.Cut(mt, "/")
		switch {
		case p == mt:
			return mt, true
		case sub == "*" && typ == mtyp:
			return mt, true
		case strings.HasPrefix(sub, "*+") && typ == mtyp && strings.HasSuffix(msub, sub[1:]):
			return mt, true
		}
	}
	return mt, false
}
