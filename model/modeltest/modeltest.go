// Package modeltest runs local fake model servers that speak the real
// OpenAI chat-completions and Anthropic messages wire formats (the JSON
// bodies, status codes and headers the APIs send, tool calls and usage
// included) and inject faults on request: 429 with Retry-After, 500, 529
// overloaded, hangs past any timeout, connection resets and malformed
// JSON. The model package's tests drive them through the official SDKs.
//
//	srv := modeltest.NewOpenAI(modeltest.Config{Faults: modeltest.Sequence(modeltest.Status(500))})
//	defer srv.Close()
//	spec := model.Spec{Provider: model.ProviderOpenAI, Model: "gpt-4o-mini", BaseURL: srv.BaseURL()}
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Kind is what the server does with one request.
type Kind int

const (
	KindOK        Kind = iota // answer with the Reply
	KindStatus                // answer with an API error of Fault.Status
	KindHang                  // send nothing until the client gives up (or MaxHang)
	KindReset                 // reset the TCP connection without a byte of answer
	KindMalformed             // a 200 whose JSON body is cut short
)

// MaxHang bounds a hang, so that a test whose client never times out
// still ends.
const MaxHang = 30 * time.Second

// MaxBody bounds a request body the servers read.
const MaxBody = 8 << 20

// Fault is the server's behaviour for one request.
type Fault struct {
	Kind   Kind
	Status int
	// Header is added to the answer (Retry-After, retry-after-ms).
	Header http.Header
	// Delay is waited before answering.
	Delay time.Duration
}

// OK answers normally.
func OK() Fault { return Fault{Kind: KindOK} }

// Status answers with the provider's error body for status.
func Status(status int) Fault { return Fault{Kind: KindStatus, Status: status} }

// RateLimited answers 429 with Retry-After set to retryAfter (seconds or
// an HTTP date); "" sends none.
func RateLimited(retryAfter string) Fault {
	f := Status(http.StatusTooManyRequests)
	if retryAfter != "" {
		f.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return f
}

// Overloaded answers 529, Anthropic's overloaded status.
func Overloaded() Fault { return Status(529) }

// Hang sends nothing until the client gives up.
func Hang() Fault { return Fault{Kind: KindHang} }

// Reset resets the connection.
func Reset() Fault { return Fault{Kind: KindReset} }

// Malformed answers 200 with a truncated JSON body.
func Malformed() Fault { return Fault{Kind: KindMalformed} }

// Sequence returns a plan that injects faults[n] into the n-th request
// (from 0) and answers normally after them.
func Sequence(faults ...Fault) func(n int) Fault {
	return func(n int) Fault {
		if n < len(faults) {
			return faults[n]
		}
		return OK()
	}
}

// Random returns a plan that, with probability p, injects one of faults
// chosen uniformly, and otherwise answers normally. It is seeded, so a
// test sees the same sequence each run, and safe for concurrent use.
func Random(seed uint64, p float64, faults ...Fault) func(n int) Fault {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(int) Fault {
		mu.Lock()
		defer mu.Unlock()
		if len(faults) == 0 || r.Float64() >= p {
			return OK()
		}
		return faults[r.IntN(len(faults))]
	}
}

// Call is a tool call the fake model makes.
type Call struct {
	ID   string
	Name string
	Args string // JSON text, as the model wrote it
}

// Reply is the fake model's answer.
type Reply struct {
	Text         string
	Calls        []Call
	Model        string // as reported; the requested model when empty
	InputTokens  int
	OutputTokens int
	// Stop overrides the stop reason the wire format carries
	// ("length", "max_tokens", ...).
	Stop string
}

// Config configures a server.
type Config struct {
	// Faults plans the n-th request's fault; nil answers all normally.
	Faults func(n int) Fault
	// Reply answers the n-th request, given its JSON body; nil answers
	// "ok" with 10 input and 2 output tokens.
	Reply func(n int, body []byte) Reply
}

// Server is a fake provider on a loopback port.
type Server struct {
	srv    *httptest.Server
	cfg    Config
	flavor string
	stop   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	requests [][]byte
	headers  []http.Header
	faults   []Kind
}

// NewOpenAI starts a fake chat-completions server; its base URL ends in /v1.
func NewOpenAI(cfg Config) *Server { return start(cfg, "openai") }

// NewAnthropic starts a fake messages server.
func NewAnthropic(cfg Config) *Server { return start(cfg, "anthropic") }

func start(cfg Config, flavor string) *Server {
	s := &Server{cfg: cfg, flavor: flavor, stop: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the base URL the provider's SDK expects.
func (s *Server) BaseURL() string {
	if s.flavor == "openai" {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Close ends every hang and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Count is how many requests have arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Request returns the n-th request's body and headers.
func (s *Server) Request(n int) ([]byte, http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[n], s.headers[n]
}

// Faults lists the fault kind each request met, in arrival order.
func (s *Server) Faults() []Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Kind(nil), s.faults...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	want := "/v1/chat/completions"
	if s.flavor == "anthropic" {
		want = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		s.apiError(w, http.StatusNotFound, nil)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody))
	if err != nil {
		return
	}
	fault := OK()
	s.mu.Lock()
	n := len(s.requests)
	if s.cfg.Faults != nil {
		fault = s.cfg.Faults(n)
	}
	s.requests = append(s.requests, body)
	s.headers = append(s.headers, r.Header.Clone())
	s.faults = append(s.faults, fault.Kind)
	s.mu.Unlock()

	if fault.Delay > 0 && !s.wait(r, fault.Delay) {
		return
	}
	for k, vs := range fault.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch fault.Kind {
	case KindStatus:
		s.apiError(w, fault.Status, body)
	case KindHang:
		s.wait(r, MaxHang)
	case KindReset:
		reset(w)
	case KindMalformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`)
	default:
		reply := Reply{Text: "ok", InputTokens: 10, OutputTokens: 2}
		if s.cfg.Reply != nil {
			reply = s.cfg.Reply(n, body)
		}
		if reply.Model == "" {
			var m struct{ Model string }
			json.Unmarshal(body, &m)
			reply.Model = m.Model
		}
		var out any
		if s.flavor == "openai" {
			out = openAIBody(n, reply)
			w.Header().Set("X-Request-Id", "req_"+strconv.Itoa(n))
		} else {
			out = anthropicBody(n, reply)
			w.Header().Set("Request-Id", "req_"+strconv.Itoa(n))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}
}

// wait waits d, or until the client or the server gives up; it reports
// whether d passed.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.stop:
	}
	return false
}

// reset closes the connection with SO_LINGER 0, which sends a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok { // not over HTTP/1; a bare 500 is the closest fault
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// apiError writes the provider's error body for status.
func (s *Server) apiError(w http.ResponseWriter, status int, _ []byte) {
	w.Header().Set("Content-Type", "application/json")
	var body any
	if s.flavor == "openai" {
		typ, code, msg := "server_error", any(nil), "The server had an error while processing your request. Sorry about that!"
		switch {
		case status == http.StatusTooManyRequests:
			typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
		case status == http.StatusUnauthorized:
			typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
		case status == http.StatusNotFound:
			typ, code, msg = "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
		case status >= 400 && status < 500:
			typ, msg = "invalid_request_error", "Invalid request."
		}
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
		w.Header().Set("X-Request-Id", "req_err")
	} else {
		typ, msg := "api_error", "Internal server error"
		switch {
		case status == 529:
			typ, msg = "overloaded_error", "Overloaded"
		case status == http.StatusTooManyRequests:
			typ, msg = "rate_limit_error", "Number of requests has exceeded your rate limit."
		case status == http.StatusUnauthorized:
			typ, msg = "authentication_error", "invalid x-api-key"
		case status == http.StatusForbidden:
			typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
		case status == http.StatusNotFound:
			typ, msg = "not_found_error", "The requested resource could not be found."
		case status == http.StatusRequestTimeout:
			typ, msg = "timeout_error", "Request timed out."
		case status >= 400 && status < 500:
			typ, msg = "invalid_request_error", "Invalid request."
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_err"}
		w.Header().Set("Request-Id", "req_err")
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// openAIBody is a chat.completion object as the API sends it.
func openAIBody(n int, r Reply) any {
	msg := map[string]any{"role": "assistant", "content": r.Text, "refusal": nil, "annotations": []any{}}
	finish := "stop"
	if len(r.Calls) > 0 {
		calls := make([]any, len(r.Calls))
		for i, c := range r.Calls {
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}}
		}
		msg["tool_calls"] = calls
		if r.Text == "" {
			msg["content"] = nil
		}
		finish = "tool_calls"
	}
	if r.Stop != "" {
		finish = r.Stop
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", n),
		"object":  "chat.completion",
		"created": 1741569952,
		"model":   r.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": r.InputTokens, "completion_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
		},
		"service_tier":       "default",
		"system_fingerprint": "fp_modeltest",
	}
}

// anthropicBody is a message object as the API sends it.
func anthropicBody(n int, r Reply) any {
	var content []any
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	stop := "end_turn"
	for _, c := range r.Calls {
		var input any = map[string]any{}
		if json.Valid([]byte(c.Args)) {
			input = json.RawMessage(c.Args)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if r.Stop != "" {
		stop = r.Stop
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_%04d", n),
		"type":          "message",
		"role":          "assistant",
		"model":         r.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard",
		},
	}
}
