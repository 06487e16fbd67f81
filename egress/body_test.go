package egress

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"io"
	"strings"
	"testing"
)

// TestReadBodyEmptyBlocks: a deflate stream of empty blocks yields nothing
// while it is read; the wire cap ends it.
func TestReadBodyEmptyBlocks(t *testing.T) {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write([]byte("x"))
	for buf.Len() < int(maxWire(1000))+10_000 {
		zw.Flush() // each Flush writes an empty stored block
	}
	zw.Close()
	_, _, e := readBody(&buf, "deflate", 1000, DefaultMaxDecodeRatio)
	if e == nil || e.Code != CodeTooLarge {
		t.Fatalf("got %v, want %s", e, CodeTooLarge)
	}
}

func TestReadBodyEncodings(t *testing.T) {
	var def bytes.Buffer
	zw := zlib.NewWriter(&def)
	io.WriteString(zw, "deflated text")
	zw.Close()
	got, cut, e := readBody(&def, "Deflate", 100, DefaultMaxDecodeRatio)
	if e != nil || string(got) != "deflated text" || cut {
		t.Fatalf("deflate: %q %v %v", got, cut, e)
	}
	// Raw deflate without the zlib wrapper is refused as corrupt.
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.DefaultCompression)
	io.WriteString(fw, "raw")
	fw.Close()
	if _, _, e := readBody(&raw, "deflate", 100, DefaultMaxDecodeRatio); e == nil || e.Code != CodeConnectionFailed {
		t.Fatalf("raw deflate: %v", e)
	}
	for _, enc := range []string{"gzip, gzip", "compress", "zstd"} {
		if _, _, e := readBody(strings.NewReader("x"), enc, 100, DefaultMaxDecodeRatio); e == nil || e.Code != CodeContentType {
			t.Errorf("%q: %v", enc, e)
		}
	}
	if _, _, e := readBody(strings.NewReader("not gzip"), "gzip", 100, DefaultMaxDecodeRatio); e == nil || e.Code != CodeConnectionFailed {
		t.Errorf("corrupt gzip: %v", e)
	}
}
