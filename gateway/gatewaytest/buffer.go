package gatewaytest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe to write from several goroutines: an
// upstream's stderr, a gateway's log.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
