package clients_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxRequestBytes bounds one request body the scripted model reads; an
// agent's request with its tool list and history is well under 1 MiB.
const maxRequestBytes = 16 << 20

// step is one answer of the scripted model: a call of one of airlock's
// tools, or, with Tool empty, the closing text that ends the agent's turn.
type step struct {
	// Tool is airlock's name of the tool (read_file); the model calls it
	// by whatever name the agent gives it (mcp__airlock__read_file).
	Tool string
	// Args are the call's arguments, a JSON object.
	Args string
	// Before, when set, runs before the step is answered, with the tool
	// results the agent has sent back so far: the test acting between
	// two turns, as a person would (approving a parked call). It returns
	// errEndTurn to end the turn there instead; any other error fails
	// the test, and ends the turn too.
	Before func(results []toolResult) error
}

// errEndTurn, from a step's Before, ends the agent's turn with the
// closing text instead of the step's call.
var errEndTurn = errors.New("end the turn")

// toolResult is what the agent sent back to the model for one call: the
// content of a tool_result block (Anthropic) or a function_call_output
// item (OpenAI Responses), as text.
type toolResult struct {
	CallID  string
	Text    string
	IsError bool // Anthropic's is_error; the Responses API has none
}

// scriptedModel is a model server on loopback that speaks the wire APIs of
// the two agents, each streamed as server-sent events: Anthropic Messages
// (POST /v1/messages, Claude Code) and OpenAI Responses (POST
// /v1/responses, Codex). It answers from a script instead of a model, and
// records every request, so that the test reads what the agent actually
// sent back as the tools' results.
//
// A request whose tool list holds none of airlock's tools is one of the
// agent's side requests (a title for the session, say): it gets a short
// text and is otherwise ignored. Every other request is the conversation:
// its step is the number of the script's calls whose results it carries.
type scriptedModel struct {
	t     *testing.T
	steps []step
	URL   string // http://127.0.0.1:PORT

	mu       sync.Mutex
	results  []toolResult     // in the order the calls were made
	before   map[int]bool     // steps whose Before has run: true if it ended the turn
	paths    []string         // "METHOD PATH" of every request, in order
	problems []string         // what the server could not answer
	seen     map[string]bool  // call ids whose result is recorded
	extra    map[string]int64 // side requests, by path
}

// callID is the id of the script's step i; the agent echoes it with the
// result.
func callID(i int) string { return fmt.Sprintf("call_airlock_%d", i) }

// startModel serves the script on a free loopback port until the test
// ends.
func startModel(t *testing.T, steps []step) *scriptedModel {
	t.Helper()
	m := &scriptedModel{t: t, steps: steps, before: map[int]bool{}, seen: map[string]bool{}, extra: map[string]int64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	m.URL = "http://" + ln.Addr().String()
	return m
}

// Results returns what the agent sent back for each of the script's calls.
func (m *scriptedModel) Results() []toolResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]toolResult(nil), m.results...)
}

// Result returns the result of step i's call, and whether the agent sent
// one.
func (m *scriptedModel) Result(i int) (toolResult, bool) {
	for _, r := range m.Results() {
		if r.CallID == callID(i) {
			return r, true
		}
	}
	return toolResult{}, false
}

// Report says what the server saw, for a failing test's log.
func (m *scriptedModel) Report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "model server: requests %q; side requests %v\n", m.paths, m.extra)
	for i, r := range m.results {
		fmt.Fprintf(&b, "result %d (%s, is_error %v): %s\n", i, r.CallID, r.IsError, r.Text)
	}
	for _, p := range m.problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	return b.String()
}

// Problems lists the requests the server could not answer from the
// script; a passing run has none.
func (m *scriptedModel) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}

func (m *scriptedModel) problem(format string, args ...any) {
	m.mu.Lock()
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.paths = append(m.paths, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	body, err := readBody(r)
	if dbg := os.Getenv(envDebug); dbg != "" && err == nil {
		m.mu.Lock()
		name := fmt.Sprintf("%s-request-%02d.json", debugName(m.t), len(m.paths))
		m.mu.Unlock()
		os.WriteFile(filepath.Join(dbg, name), body, 0o600)
	}
	if err != nil {
		m.problem("%s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": len(body) / 4})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		m.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		m.responses(w, body)
	default:
		// Anything else is recorded and refused: a test that needs it
		// shows it in the report.
		m.problem("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// readBody reads a request body, gunzipped if it says so; any other
// encoding is refused, loudly.
func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(nil, r.Body, maxRequestBytes)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		z, err := gzip.NewReader(rd)
		if err != nil {
			return nil, err
		}
		rd = z
	default:
		return nil, fmt.Errorf("request body in Content-Encoding %q, which the scripted model does not read", enc)
	}
	return io.ReadAll(io.LimitReader(rd, maxRequestBytes))
}

// offeredTool is a tool as the agent offers it to the model: Claude Code
// names airlock's read_file mcp__airlock__read_file; Codex puts read_file
// in a namespace mcp__airlock (the Responses API's namespace tools), and
// the model calls it with both.
type offeredTool struct {
	Namespace, Name string
}

// next works out the conversation's step from the results a request
// carries, records those results, and runs the step's Before once. It
// returns the step and the agent's name of its tool; a step past the
// script, or a failed Before, is the closing text.
func (m *scriptedModel) next(offered []offeredTool, results []toolResult) (int, step, offeredTool) {
	m.mu.Lock()
	n := 0
	for _, r := range results {
		if !strings.HasPrefix(r.CallID, "call_airlock_") {
			continue
		}
		n++
		if !m.seen[r.CallID] {
			m.seen[r.CallID] = true
			m.results = append(m.results, r)
		}
	}
	if n >= len(m.steps) {
		m.mu.Unlock()
		return n, step{}, offeredTool{}
	}
	s := m.steps[n]
	ended, ran := m.before[n]
	done := append([]toolResult(nil), m.results...)
	m.mu.Unlock()
	if s.Before != nil && !ran {
		// Requests are answered one at a time (the agent waits for each),
		// so Before runs once per step.
		err := s.Before(done)
		if err != nil && !errors.Is(err, errEndTurn) {
			m.problem("before step %d: %v", n, err)
		}
		ended = err != nil
		m.mu.Lock()
		m.before[n] = ended
		m.mu.Unlock()
	}
	if ended {
		return n, step{}, offeredTool{}
	}
	if s.Tool == "" {
		return n, s, offeredTool{}
	}
	for _, o := range offered {
		if o == (offeredTool{Name: "mcp__airlock__" + s.Tool}) || o == (offeredTool{Namespace: "mcp__airlock", Name: s.Tool}) {
			return n, s, o
		}
	}
	m.problem("step %d: the agent offers no airlock tool %s; it offers %v", n, s.Tool, offered)
	return n, step{}, offeredTool{}
}

// offersAirlock says whether a request is the conversation: its tools
// include one of airlock's.
func offersAirlock(offered []offeredTool) bool {
	for _, o := range offered {
		if o.Namespace == "mcp__airlock" || strings.HasPrefix(o.Name, "mcp__airlock__") {
			return true
		}
	}
	return false
}

// closingText is the model's last answer, which ends the agent's turn.
const closingText = "Done."

// --- Anthropic Messages ---

type anthropicRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (m *scriptedModel) anthropic(w http.ResponseWriter, body []byte) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.problem("POST /v1/messages: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var offered []offeredTool
	for _, t := range req.Tools {
		offered = append(offered, offeredTool{Name: t.Name})
	}
	if !offersAirlock(offered) {
		m.sideRequest("/v1/messages")
		anthropicAnswer(w, req.Stream, nil, "", "", "ok")
		return
	}
	var results []toolResult
	for _, msg := range req.Messages {
		var blocks []anthropicBlock
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue // a plain string: no tool results
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results = append(results, toolResult{CallID: b.ToolUseID, Text: contentText(b.Content), IsError: b.IsError})
			}
		}
	}
	i, s, tool := m.next(offered, results)
	if tool.Name == "" {
		anthropicAnswer(w, req.Stream, nil, "", "", closingText)
		return
	}
	anthropicAnswer(w, req.Stream, json.RawMessage(s.Args), callID(i), tool.Name, "")
}

// anthropicAnswer writes one assistant message: a tool_use block when name
// is set, else text.
func anthropicAnswer(w http.ResponseWriter, stream bool, args json.RawMessage, id, name, text string) {
	stop := "end_turn"
	block := map[string]any{"type": "text", "text": text}
	if name != "" {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": id, "name": name, "input": args}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	msg := map[string]any{"id": "msg_" + id, "type": "message", "role": "assistant", "model": "scripted",
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		writeJSON(w, msg)
		return
	}
	sse := newSSE(w)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	sse.event("message_start", map[string]any{"type": "message_start", "message": start})
	if name != "" {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// --- OpenAI Responses ---

type responsesRequest struct {
	Tools []json.RawMessage `json:"tools"`
	Input []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
}

func (m *scriptedModel) responses(w http.ResponseWriter, body []byte) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.problem("POST /v1/responses: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var offered []offeredTool
	for _, t := range req.Tools {
		var tool struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(t, &tool) != nil {
			continue
		}
		if tool.Type == "namespace" {
			for _, f := range tool.Tools {
				offered = append(offered, offeredTool{Namespace: tool.Name, Name: f.Name})
			}
			continue
		}
		offered = append(offered, offeredTool{Name: tool.Name})
	}
	if !offersAirlock(offered) {
		m.sideRequest("/v1/responses")
		responsesAnswer(w, "", "", offeredTool{}, "ok")
		return
	}
	var results []toolResult
	for _, item := range req.Input {
		if item.Type == "function_call_output" {
			results = append(results, toolResult{CallID: item.CallID, Text: contentText(item.Output)})
		}
	}
	i, s, tool := m.next(offered, results)
	if tool.Name == "" {
		responsesAnswer(w, "", "", offeredTool{}, closingText)
		return
	}
	responsesAnswer(w, s.Args, callID(i), tool, "")
}

// responsesAnswer streams one response: a function_call item when
// tool.Name is set, else an assistant message.
func responsesAnswer(w http.ResponseWriter, args, id string, tool offeredTool, text string) {
	name := tool.Name
	item := map[string]any{"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	if name != "" {
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name,
			"arguments": args, "status": "completed"}
		if tool.Namespace != "" {
			item["namespace"] = tool.Namespace
		}
	}
	resp := map[string]any{"id": "resp_" + id, "object": "response", "status": "in_progress", "model": "scripted", "output": []any{}}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": resp})
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	if name == "" {
		sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_scripted",
			"output_index": 0, "content_index": 0, "delta": text})
	}
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	done := map[string]any{}
	for k, v := range resp {
		done[k] = v
	}
	done["status"], done["output"] = "completed", []any{item}
	done["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": done})
}

// --- shared ---

func (m *scriptedModel) sideRequest(path string) {
	m.mu.Lock()
	m.extra[path]++
	m.mu.Unlock()
}

// contentText flattens a tool result's content, a string or a list of
// blocks with text, into text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", name, b)
	s.w.Write(buf.Bytes())
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
