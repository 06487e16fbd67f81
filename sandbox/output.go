package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
)

// ReadOnlyEntries returns the ReadOnlyDirs that exist in the host
// workspace ws as a directory or a regular file: what a backend binds
// read-only over itself. A link, or nothing, is left alone (the command
// cannot follow a link out of the workspace it sees).
func ReadOnlyEntries(ws string) []string {
	var out []string
	for _, p := range ReadOnlyDirs {
		fi, err := os.Lstat(path.Join(ws, p))
		if err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			out = append(out, p)
		}
	}
	return out
}

// CommandEnv returns the whole environment a backend gives a command:
// env, each entry checked to be KEY=value, plus HOME=/tmp and
// PATH=DefaultPath where env sets neither.
func CommandEnv(env []string) ([]string, error) {
	var home, pathSet bool
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Invalid(fmt.Sprintf("Env entry %q is not KEY=value", kv), "write each entry as KEY=value with a non-empty KEY")
		}
		switch k {
		case "HOME":
			home = true
		case "PATH":
			pathSet = true
		}
		out = append(out, kv)
	}
	if !home {
		out = append(out, "HOME=/tmp")
	}
	if !pathSet {
		out = append(out, "PATH="+DefaultPath)
	}
	return out, nil
}

// Capped is the writer a backend collects a command's stdout or stderr
// in: it keeps the first Max bytes and calls OnOver once past them. It
// never fails a write, so the command is not stopped by a broken pipe
// before the backend's kill reaches it. It is safe for concurrent use.
type Capped struct {
	Max    int64
	OnOver func()

	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
	once sync.Once
}

func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.Max - int64(c.buf.Len())
	over := int64(len(p)) > room
	if over {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
	} else {
		c.buf.Write(p)
	}
	c.mu.Unlock()
	if over && c.OnOver != nil {
		c.once.Do(c.OnOver)
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (c *Capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes()
}

// Over reports whether more than Max bytes were written.
func (c *Capped) Over() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.over
}
