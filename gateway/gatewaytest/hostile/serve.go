package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// The JSON-RPC error codes the server answers with.
const (
	codeParseError       = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternalError    = -32603
	codeResourceNotFound = -32002 // MCP's code for an unknown resource URI
)

// message is any JSON-RPC 2.0 message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID, and Result or Error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object, and the error a method's handler
// returns to answer with one.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// errNoAnswer is returned by a handler that has written its own answer,
// or a malformed line instead of one.
var errNoAnswer = errors.New("answered already")

// server is the state of one connection.
type server struct {
	opts  Options
	tools []toolDef // the tools offered, in ToolNames' order

	writeMu sync.Mutex
	out     io.Writer
	dead    atomic.Bool // Serve has returned: nothing more is written

	mu        sync.Mutex
	inflight  map[string]context.CancelFunc // the client's requests being answered, by ID
	pending   map[string]chan *message      // the server's requests to the client, by ID
	nextID    int
	lists     int // tools/list requests answered
	cancelled []json.RawMessage
}

// Serve answers one client: it reads newline-delimited JSON-RPC messages
// from in and writes its own to out, until in ends (it returns nil), ctx
// is done (ctx.Err()), reading fails, or the crash tool is called
// (ErrCrash). Before it returns it closes out when out is an io.Closer,
// as a process's standard output closes when it exits, and waits for the
// requests it was answering to stop; it does not wait for a read of in
// that is blocked: the caller closes in.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	s, err := newServer(opts, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.dead.Store(true)
		if c, ok := out.(io.Closer); ok {
			_ = c.Close() // also ends a write blocked on a pipe
		}
		wg.Wait()
	}()

	lines := make(chan line)
	go readLines(ctx, in, lines)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l := <-lines:
			switch {
			case errors.Is(l.err, io.EOF):
				return nil
			case l.err != nil:
				return fmt.Errorf("hostile: reading the client's messages: %w", l.err)
			case l.tooLong:
				s.writeError(json.RawMessage("null"), codeInvalidRequest, fmt.Sprintf("a line longer than MaxLineBytes (%d)", MaxLineBytes))
			default:
				if err := s.handle(ctx, &wg, l.data); err != nil {
					return err
				}
			}
		}
	}
}

func newServer(opts Options, out io.Writer) (*server, error) {
	s := &server{
		opts:     opts,
		out:      out,
		inflight: map[string]context.CancelFunc{},
		pending:  map[string]chan *message{},
	}
	if opts.Tools == nil {
		s.tools = toolDefs
		return s, nil
	}
	for _, name := range opts.Tools {
		if !slices.Contains(ToolNames(), name) {
			return nil, fmt.Errorf("hostile: Options.Tools names %q, which is not a tool; the tools are %s", name, strings.Join(ToolNames(), ", "))
		}
	}
	for _, t := range toolDefs {
		if slices.Contains(opts.Tools, t.name) {
			s.tools = append(s.tools, t)
		}
	}
	return s, nil
}

// line is one line read from the client, or the error that ended reading.
type line struct {
	data    []byte
	tooLong bool
	err     error
}

// readLines sends each non-blank line of in, and then the error that
// ended it (io.EOF at its end), until ctx is done.
func readLines(ctx context.Context, in io.Reader, lines chan<- line) {
	send := func(l line) bool {
		select {
		case lines <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	r := bufio.NewReaderSize(in, MaxLineBytes)
	for {
		data, err := r.ReadSlice('\n')
		tooLong := false
		for errors.Is(err, bufio.ErrBufferFull) {
			tooLong = true
			_, err = r.ReadSlice('\n')
		}
		switch {
		case tooLong:
			if !send(line{tooLong: true}) {
				return
			}
		case len(bytes.TrimSpace(data)) > 0:
			if !send(line{data: bytes.Clone(data)}) {
				return
			}
		}
		if err != nil {
			send(line{err: err})
			return
		}
	}
}

// handle acts on one message. A request is answered in a goroutine of its
// own, so that a slow one or one waiting on the client does not hold up
// the rest; a call of crash returns ErrCrash at once.
func (s *server) handle(ctx context.Context, wg *sync.WaitGroup, data []byte) error {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		s.writeError(json.RawMessage("null"), codeParseError, "not JSON: "+err.Error())
		return nil
	}
	id := json.RawMessage("null")
	if len(m.ID) > 0 {
		id = m.ID
	}
	switch {
	case m.JSONRPC != "2.0":
		s.writeError(id, codeInvalidRequest, `not JSON-RPC 2.0: "jsonrpc" must be "2.0"`)
	case m.Method == "" && len(m.ID) > 0:
		s.deliver(&m)
	case m.Method == "":
		s.writeError(id, codeInvalidRequest, "a message with neither a method nor an id")
	case len(m.ID) == 0:
		s.notified(&m)
	case s.isCrash(&m):
		return ErrCrash
	default:
		key := idKey(m.ID)
		reqCtx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		_, reused := s.inflight[key]
		if !reused {
			s.inflight[key] = cancel
		}
		s.mu.Unlock()
		if reused {
			cancel()
			s.writeError(m.ID, codeInvalidRequest, "the id of a request still being answered")
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
				cancel()
			}()
			result, err := s.request(reqCtx, &m)
			var rerr *rpcError
			switch {
			case errors.Is(err, errNoAnswer):
			case reqCtx.Err() != nil:
				// Cancelled by the client, or Serve is ending: a
				// cancelled request gets no answer.
			case errors.As(err, &rerr):
				s.writeError(m.ID, rerr.Code, rerr.Message)
			case err != nil:
				s.writeError(m.ID, codeInternalError, err.Error())
			default:
				s.writeResult(m.ID, result)
			}
		}()
	}
	return nil
}

// isCrash reports whether m calls the crash tool, when it is offered.
func (s *server) isCrash(m *message) bool {
	if m.Method != "tools/call" || s.tool("crash") == nil {
		return false
	}
	var p struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(m.Params, &p) == nil && p.Name == "crash"
}

// notified acts on a notification from the client.
func (s *server) notified(m *message) {
	if m.Method != "notifications/cancelled" {
		return // notifications/initialized and the rest need nothing
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	key := idKey(p.RequestID)
	s.mu.Lock()
	if len(s.cancelled) < MaxCancelled {
		s.cancelled = append(s.cancelled, json.RawMessage(key))
	}
	cancel := s.inflight[key]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if s.opts.CancelLog != nil {
		_, _ = io.WriteString(s.opts.CancelLog, key+"\n")
	}
}

// deliver hands a response from the client to the request of the server
// that waits for it; a response to nothing is dropped.
func (s *server) deliver(m *message) {
	key := idKey(m.ID)
	s.mu.Lock()
	ch := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if ch != nil {
		ch <- m // buffered: the waiter may have gone
	}
}

// ask sends the client a request and waits for its response, for ctx to
// be done, or for AskTimeout. Once ctx is done it tells the client so with
// notifications/cancelled.
func (s *server) ask(ctx context.Context, method string, params any) (*message, error) {
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf(`"hostile-%d"`, s.nextID)
	ch := make(chan *message, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	s.write(&message{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: raw})
	ctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		s.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "the tool call ended"})
		return nil, ctx.Err()
	}
}

// idKey is the compact JSON of a request id: the key of the maps, and
// what the cancelled tool lists.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func (s *server) writeResult(id json.RawMessage, result any) {
	raw, err := json.Marshal(result)
	if err != nil {
		s.writeError(id, codeInternalError, err.Error())
		return
	}
	s.write(&message{JSONRPC: "2.0", ID: id, Result: raw})
}

func (s *server) writeError(id json.RawMessage, code int, msg string) {
	s.write(&message{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}})
}

func (s *server) notify(method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	s.write(&message{JSONRPC: "2.0", Method: method, Params: raw})
}

// write sends one message as one line.
func (s *server) write(m *message) {
	data, err := json.Marshal(m)
	if err != nil {
		return
	}
	s.writeRaw(append(data, '\n'))
}

// writeRaw writes whole lines, or nothing once Serve has returned. A
// failed write is not reported: the client has gone, and reading tells.
func (s *server) writeRaw(data []byte) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.dead.Load() {
		return
	}
	_, _ = s.out.Write(data)
}
