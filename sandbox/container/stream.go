package container

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// demux splits the engine's multiplexed attach stream (a container
// without a TTY) into stdout and stderr. Each frame is an 8-byte header,
// [stream, 0, 0, 0, size as big-endian uint32], then size bytes. The
// payload is copied through, never held whole, so a frame's claimed size
// costs nothing until its bytes arrive. It returns nil at a clean end of
// the stream, between frames.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var h [8]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("attach stream: frame header: %w", err)
		}
		var w io.Writer
		switch h[0] {
		case 0, 1: // stdin echoed (never asked for) is treated as stdout
			w = stdout
		case 2:
			w = stderr
		default:
			return fmt.Errorf("attach stream: unknown stream %d in a frame header", h[0])
		}
		n := int64(binary.BigEndian.Uint32(h[4:]))
		if m, err := io.CopyN(w, r, n); err != nil {
			return fmt.Errorf("attach stream: frame of %d bytes ended after %d: %w", n, m, err)
		}
	}
}
