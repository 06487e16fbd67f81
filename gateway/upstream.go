package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The backoff between starts of an upstream that failed to start or
// crashed: full jitter over an exponential ceiling, so that a server that
// crashes at once is not restarted in a tight loop, and many gateways do
// not restart theirs in step.
const (
	BackoffBase = 500 * time.Millisecond
	BackoffMax  = 30 * time.Second
	// HealthyAfter is how long a connection must live for the next
	// failure to count as the first again.
	HealthyAfter = time.Minute
)

// The bounds of what an upstream writes to its stderr, which goes to
// airlock's log, redacted.
const (
	// MaxStderrLine is the longest stderr line logged; the rest of it is
	// cut.
	MaxStderrLine = 4 << 10
	// MaxStderrLines is how many lines of one process's stderr are
	// logged; past it the rest is read and dropped, with one notice.
	MaxStderrLines = 10000
)

// StopGrace is how long a stdio upstream has to exit after its stdin is
// closed before its process group is killed.
const StopGrace = 2 * time.Second

// Version is the gateway's version, sent to upstreams in initialize.
var Version = "dev"

// upstream is one upstream server and its connection, made on demand: the
// first call or listing starts it, a crash ends the connection, and the
// next use starts it again once its backoff has passed.
type upstream struct {
	name string
	cfg  *Server
	env  []string    // a stdio server's environment, credentials included
	http http.Client // an HTTP server's client, credentials attached
	log  *slog.Logger
	// redact masks secrets in what the upstream writes to stderr.
	redact func(string) string
	// onListChanged is told when the upstream says its tools changed.
	onListChanged func(server string)
	// elicit, when the config relays elicitation, takes the upstream's
	// request to the person at the client of the call in flight.
	elicit func(ctx context.Context, server string, req *sdk.ElicitRequest) (*sdk.ElicitResult, error)

	mu       sync.Mutex
	cs       *sdk.ClientSession
	starting chan struct{} // closed when the start in progress ends; nil when none is
	closed   bool
	failures int
	retryAt  time.Time
	lastErr  error
	since    time.Time // when cs was connected
	// calls are the contexts of the calls waiting on the upstream now.
	calls map[context.Context]bool
}

// errUnavailable wraps why an upstream cannot be reached now.
type errUnavailable struct {
	server  string
	retryAt time.Time
	err     error
}

func (e *errUnavailable) Error() string {
	return fmt.Sprintf("the upstream server %s is unavailable: %v", e.server, e.err)
}

func (e *errUnavailable) Unwrap() error { return e.err }

// session returns the upstream's connection, starting it if there is none
// and its backoff has passed. Concurrent callers share one start.
func (u *upstream) session(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		u.mu.Lock()
		switch {
		case u.closed:
			u.mu.Unlock()
			return nil, &errUnavailable{server: u.name, err: errors.New("the gateway is closing")}
		case u.cs != nil:
			cs := u.cs
			u.mu.Unlock()
			return cs, nil
		case u.starting != nil:
			wait := u.starting
			u.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case time.Now().Before(u.retryAt):
			err := &errUnavailable{server: u.name, retryAt: u.retryAt, err: u.lastErr}
			u.mu.Unlock()
			return nil, err
		}
		done := make(chan struct{})
		u.starting = done
		u.mu.Unlock()

		cs, err := u.connect()

		u.mu.Lock()
		u.starting = nil
		close(done)
		if err != nil {
			u.failed(err)
			err := &errUnavailable{server: u.name, retryAt: u.retryAt, err: err}
			u.mu.Unlock()
			return nil, err
		}
		if u.closed {
			u.mu.Unlock()
			cs.Close()
			continue
		}
		u.cs, u.since = cs, time.Now()
		u.mu.Unlock()
		go u.watch(cs)
		return cs, nil
	}
}

// failed records a failed start or a crash, and sets the backoff. u.mu is
// held.
func (u *upstream) failed(err error) {
	if !u.since.IsZero() && time.Since(u.since) > HealthyAfter {
		u.failures = 0
	}
	u.failures++
	ceiling := BackoffBase << min(u.failures-1, 16)
	ceiling = min(ceiling, BackoffMax)
	u.retryAt = time.Now().Add(rand.N(ceiling) + 1)
	u.lastErr = err
	u.since = time.Time{}
	u.log.Warn("gateway: upstream failed", "server", u.name, "error", err, "retry_in", time.Until(u.retryAt).Round(time.Millisecond))
}

// watch waits for the connection to end, and forgets it when it does, so
// that the next use starts the upstream again.
func (u *upstream) watch(cs *sdk.ClientSession) {
	err := cs.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != cs {
		return
	}
	u.cs = nil
	if u.closed {
		return
	}
	if err == nil {
		err = errors.New("the connection ended")
	}
	u.failed(err)
}

// connect starts the upstream and initializes the MCP session, within the
// server's StartTimeout.
func (u *upstream) connect() (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), u.cfg.StartTimeout)
	defer cancel()
	opts := &sdk.ClientOptions{
		Logger:                     u.log,
		ToolListChangedHandler:     func(context.Context, *sdk.ToolListChangedRequest) { u.listChanged() },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { u.listChanged() },
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { u.listChanged() },
	}
	if u.cfg.Elicitation == Relay && u.elicit != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return u.elicit(ctx, u.name, req)
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "airlock-gateway", Version: Version}, opts)
	c.AddReceivingMiddleware(u.refuse)
	var t sdk.Transport
	if u.cfg.URL != "" {
		t = &sdk.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: &u.http, MaxRetries: -1}
	} else {
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = u.env
		cmd.Dir = u.cfg.Dir
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		p, err := startProc(cmd)
		if err != nil {
			return nil, err
		}
		go u.logStderr(stderr)
		t = &sdk.IOTransport{Reader: newLineReader(p.stdout), Writer: p, MaxLineLength: MaxMessageBytes + 1}
	}
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("it did not answer initialize within %s (start_timeout)", u.cfg.StartTimeout)
		}
		return nil, err
	}
	return cs, nil
}

// listChanged tells the gateway the upstream says its tools, prompts or
// resources changed.
func (u *upstream) listChanged() {
	if u.onListChanged != nil {
		u.onListChanged(u.name)
	}
}

// refuse is the client's receiving middleware: the upstream's requests
// the config does not let through are refused here, and logged, before
// the SDK sees them. Sampling is always refused: an upstream never
// drives the client's model. Elicitation is refused unless relayed.
func (u *upstream) refuse(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "sampling/createMessage":
			u.log.Warn("gateway: refused the upstream's sampling request", "server", u.name)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "airlock's gateway refuses sampling: an upstream server does not drive the client's model"}
		case "elicitation/create":
			if u.cfg.Elicitation != Relay || u.elicit == nil {
				u.log.Warn("gateway: refused the upstream's elicitation request", "server", u.name)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "airlock's gateway does not relay elicitation for this server (its config says elicitation: deny)"}
			}
		case "roots/list":
			// The gateway shares no roots: the upstream keeps to what its
			// own config gives it.
			return &sdk.ListRootsResult{Roots: []*sdk.Root{}}, nil
		}
		return next(ctx, method, req)
	}
}

// logStderr logs each line the upstream writes to stderr, redacted and
// bounded.
func (u *upstream) logStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, MaxStderrLine)
	for n := 0; ; n++ {
		line, err := readLine(br, MaxStderrLine)
		if line != "" && n < MaxStderrLines {
			u.log.Info("gateway: upstream stderr", "server", u.name, "line", u.redact(line))
		} else if n == MaxStderrLines {
			u.log.Warn("gateway: upstream stderr over MaxStderrLines; the rest is dropped", "server", u.name)
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line, keeping at most max bytes of it.
func readLine(br *bufio.Reader, max int) (string, error) {
	var b strings.Builder
	for {
		chunk, isPrefix, err := br.ReadLine()
		if b.Len() < max {
			b.Write(chunk[:min(len(chunk), max-b.Len())])
		}
		if err != nil || !isPrefix {
			return b.String(), err
		}
	}
}

// close ends the connection, if any, and refuses every later use.
func (u *upstream) close() {
	u.mu.Lock()
	u.closed = true
	cs := u.cs
	u.cs = nil
	u.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// stdioEnv is a stdio upstream's environment: a minimal one from
// airlock's own (what a command needs to be found and to run), then the
// config's variables, then the credentials'. airlock's other variables,
// its own secrets among them, never reach it.
func stdioEnv(s *Server, secrets map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	return env
}
