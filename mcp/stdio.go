package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/schema"
)

// DefaultMaxMessageBytes bounds one inbound stdio line: the gate's largest
// arguments (schema.DefaultMaxArgBytes) and room for the JSON-RPC envelope
// around them. A longer line is read to its end, discarded and answered
// with an invalid-request error naming this limit.
const DefaultMaxMessageBytes = schema.DefaultMaxArgBytes + 64<<10

// StdioDrainTimeout bounds how long the stdio door goes on answering the
// requests it has read once the client has closed its input: a client
// that writes its requests and closes stdin (a script, a pipe) still gets
// every answer, and one that never gets an answer does not hold the
// process for longer than this.
const StdioDrainTimeout = time.Minute

// readBufferBytes is the stdio read buffer; lines longer than it are
// gathered chunk by chunk, up to MaxMessageBytes.
const readBufferBytes = 64 << 10

// ServeStdio serves one MCP session over newline-delimited JSON-RPC on in
// and out. It returns nil when the client closes in, or its end of out
// (EPIPE), and ctx.Err() when ctx is cancelled; none of these is logged
// as an error, for each is how a session normally ends. Out is written
// one whole message at a time; it is not closed. In is closed when the
// session ends, if it is an io.Closer.
func ServeStdio(ctx context.Context, g *gate.Gate, in io.Reader, out io.Writer, opts *Options) error {
	o := opts.withDefaults()
	srv := NewServer(g, &o)
	t := &stdioTransport{in: in, out: out, maxBytes: o.MaxMessageBytes, log: o.Logger}
	// Not srv.Run, which logs a cancelled ctx as an error.
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		ss.Close()
		<-ended
		return ctx.Err()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// stdioTransport is a sdk.Transport over a reader and a writer that,
// unlike the SDK's, survives bad input: see stdioConn.
type stdioTransport struct {
	in       io.Reader
	out      io.Writer
	maxBytes int
	log      *slog.Logger
}

func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{
		id:       rand.Text(),
		in:       t.in,
		out:      t.out,
		maxBytes: t.maxBytes,
		log:      t.log,
		msgs:     make(chan jsonrpc.Message),
		eof:      make(chan struct{}),
		done:     make(chan struct{}),
		pending:  map[jsonrpc.ID]int{},
		answered: make(chan struct{}, 1),
	}
	go c.readLoop()
	return c, nil
}

// stdioConn is one stdio session. A goroutine reads lines; a line that is
// a JSON-RPC message goes to Read, and any other line is answered at once
// with a JSON-RPC error and skipped, so that one bad line never ends the
// session. Writes are serialized, one message per line.
type stdioConn struct {
	id       string
	in       io.Reader
	maxBytes int
	log      *slog.Logger

	wmu sync.Mutex // guards out
	out io.Writer

	msgs    chan jsonrpc.Message // decoded messages, to Read
	eof     chan struct{}        // closed when readLoop has ended
	readErr error                // why readLoop ended; set before eof is closed

	// pending counts, by id, the requests handed to Read and not yet
	// answered through Write; answered is signalled at each answer.
	pmu      sync.Mutex
	pending  map[jsonrpc.ID]int
	answered chan struct{} // one pending signal

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

func (c *stdioConn) SessionID() string { return c.id }

// Read returns the next message. It returns io.EOF once the input has
// ended and every request read has been answered (for at most
// StdioDrainTimeout), or once the connection is closed.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.msgs:
		return m, nil
	case <-c.eof:
		c.drain(ctx)
		if c.readErr == nil {
			return nil, io.EOF
		}
		return nil, c.readErr
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write writes one message as one line.
func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return sdk.ErrConnectionClosed
	default:
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("mcp: encoding a message: %w", err)
	}
	err = c.writeLine(data)
	if errors.Is(err, syscall.EPIPE) {
		// The client closed its end (it was killed): the session is over,
		// as at the end of its input, which the SDK does not report.
		c.Close()
		err = fmt.Errorf("mcp: the client closed its end of the output: %w", io.EOF)
	}
	if r, ok := m.(*jsonrpc.Response); ok {
		c.pmu.Lock()
		if n := c.pending[r.ID]; n > 1 {
			c.pending[r.ID] = n - 1
		} else {
			delete(c.pending, r.ID)
		}
		c.pmu.Unlock()
		signal(c.answered)
	}
	return err
}

// drain waits, after the input has ended, until every request read has
// been answered, for at most StdioDrainTimeout.
func (c *stdioConn) drain(ctx context.Context) {
	deadline := time.NewTimer(StdioDrainTimeout)
	defer deadline.Stop()
	for {
		c.pmu.Lock()
		n := len(c.pending)
		c.pmu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-deadline.C:
			c.log.Warn("mcp: the input ended with requests unanswered", "requests", n, "waited", StdioDrainTimeout)
			return
		case <-c.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// signal sets c's one pending signal, if it is not set.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
	_, err := c.out.Write(line)
	return err
}

// Close ends the session. The input is closed, if it can be, so that
// readLoop stops; a reader that cannot be closed (a terminal) leaves the
// goroutine blocked until the process ends, which is harmless.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		if cl, ok := c.in.(io.Closer); ok {
			cl.Close()
		}
	})
	return nil
}

// readLoop reads newline-delimited lines of at most maxBytes bytes (the
// newline and a carriage return before it not counted) and hands each
// message to Read. A longer line is discarded to its end; a blank line is
// skipped.
func (c *stdioConn) readLoop() {
	defer close(c.eof)
	br := bufio.NewReaderSize(c.in, readBufferBytes)
	var line []byte
	oversize := false
	for {
		chunk, err := br.ReadSlice('\n')
		content := len(line) + len(bytes.TrimRight(chunk, "\r\n"))
		switch {
		case oversize:
		case content > c.maxBytes:
			oversize, line = true, nil
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			c.readErr = err
			return
		}
		// A whole line, or the last bytes before the end of the input.
		if oversize {
			c.reply(nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("the message is longer than MaxMessageBytes (%d bytes); it was discarded", c.maxBytes))
		} else if len(bytes.TrimSpace(line)) > 0 && !c.deliver(line) {
			c.readErr = io.EOF
			return
		}
		line, oversize = nil, false
		if err != nil {
			c.readErr = io.EOF
			return
		}
	}
}

// deliver decodes one line and hands it to Read, or answers it with an
// error. It returns false once the connection is closed.
func (c *stdioConn) deliver(line []byte) bool {
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		if !json.Valid(line) {
			c.reply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		} else {
			c.reply(lineID(line), jsonrpc.CodeInvalidRequest, "invalid request: the line is not a JSON-RPC 2.0 message")
		}
		return true
	}
	if r, ok := m.(*jsonrpc.Request); ok {
		c.pmu.Lock()
		switch {
		case r.ID.IsValid():
			c.pending[r.ID]++
		case r.Method == "notifications/cancelled":
			// A cancelled request gets no answer: do not wait for one.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					delete(c.pending, id)
				}
			}
		}
		c.pmu.Unlock()
	}
	select {
	case c.msgs <- m:
		return true
	case <-c.done:
		return false
	}
}

// lineID returns the id of a JSON object that failed to decode as a
// message, if it has a valid one (a string or a number), else nil.
func lineID(line []byte) any {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil {
		return nil
	}
	id, err := jsonrpc.MakeID(v.ID)
	if err != nil || !id.IsValid() {
		return nil
	}
	return id.Raw()
}

// errorReply is a JSON-RPC error response written by the transport itself.
// It is marshaled here rather than with jsonrpc.EncodeMessage, which
// leaves out a null id; the specification wants "id": null when the
// request's id is unknown.
type errorReply struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// reply writes an error response for a line the session cannot take.
func (c *stdioConn) reply(id any, code int64, message string) {
	data, err := json.Marshal(errorReply{JSONRPC: "2.0", ID: id, Error: &jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		err = c.writeLine(data)
	}
	if err != nil {
		c.log.Warn("mcp: writing an error reply", "error", err)
	}
	c.log.Debug("mcp: bad input line", "code", code, "message", message)
}
