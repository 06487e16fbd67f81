package hostile_test

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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway/gatewaytest"
	"airlock.dev/airlock/gateway/gatewaytest/hostile"
	"airlock.dev/airlock/redact"
)

// waitFor bounds each wait of a test for the server; generous on a loaded
// two-core machine, and far below AskTimeout and the slow calls' 60 s.
const waitFor = 10 * time.Second

// served is a Serve running over pipes: the client writes to toServer and
// reads fromServer.
type served struct {
	toServer   *io.PipeWriter
	fromServer *io.PipeReader
	done       chan error
	once       sync.Once
	err        error
}

// start runs Serve until the test ends.
func start(t *testing.T, opts hostile.Options) *served {
	t.Helper()
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	s := &served{toServer: cw, fromServer: sr, done: make(chan error, 1)}
	go func() {
		err := hostile.Serve(context.Background(), cr, sw, opts)
		cr.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		cw.Close() // EOF: Serve returns
		sr.Close()
		if _, ok := s.wait(); !ok {
			t.Error("Serve did not return after its input was closed")
		}
	})
	return s
}

// wait returns what Serve returned, and false when it has not returned
// within waitFor.
func (s *served) wait() (error, bool) {
	select {
	case err := <-s.done:
		s.once.Do(func() { s.err = err })
		s.done <- err // for the next wait
		return s.err, true
	case <-time.After(waitFor):
		return nil, false
	}
}

// raw is a client that writes and reads lines itself.
type raw struct {
	t *testing.T
	s *served
	r *bufio.Reader
}

func startRaw(t *testing.T, opts hostile.Options) *raw {
	s := start(t, opts)
	return &raw{t: t, s: s, r: bufio.NewReaderSize(s.fromServer, 1<<20)}
}

func (c *raw) send(line string) {
	c.t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c.s.toServer, line+"\n")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			c.t.Fatalf("writing to the server: %v", err)
		}
	case <-time.After(waitFor):
		c.t.Fatalf("the server did not read %.80q", line)
	}
}

// recv reads the server's next line: its bytes, or the error that ended
// reading.
func (c *raw) recv() ([]byte, error) {
	c.t.Helper()
	type result struct {
		line []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := c.r.ReadBytes('\n')
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-time.After(waitFor):
		c.t.Fatal("the server wrote no line")
		return nil, nil
	}
}

// response is a JSON-RPC message as the raw client decodes it.
type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *raw) recvMessage() response {
	c.t.Helper()
	line, err := c.recv()
	if err != nil {
		c.t.Fatalf("reading the server's next message: %v", err)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		c.t.Fatalf("the server wrote %.200q, not JSON: %v", line, err)
	}
	return r
}

func TestInitializeProtocolVersion(t *testing.T) {
	for _, tc := range []struct{ asked, want string }{
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2024-11-05", hostile.DefaultProtocolVersion},
		{"2026-07-28", hostile.DefaultProtocolVersion},
		{"", hostile.DefaultProtocolVersion},
	} {
		t.Run(tc.asked, func(t *testing.T) {
			c := startRaw(t, hostile.Options{})
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, tc.asked))
			r := c.recvMessage()
			var got struct {
				ProtocolVersion string `json:"protocolVersion"`
				Capabilities    struct {
					Tools     *struct{ ListChanged bool } `json:"tools"`
					Prompts   *struct{}                   `json:"prompts"`
					Resources *struct{}                   `json:"resources"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(r.Result, &got); err != nil || string(r.ID) != "1" {
				t.Fatalf("initialize answered id %s, result %s: %v", r.ID, r.Result, err)
			}
			if got.ProtocolVersion != tc.want {
				t.Errorf("protocolVersion = %q, want %q", got.ProtocolVersion, tc.want)
			}
			caps := got.Capabilities
			if caps.Tools == nil || !caps.Tools.ListChanged || caps.Prompts == nil || caps.Resources == nil {
				t.Errorf("capabilities = %s, want tools{listChanged:true}, prompts and resources", r.Result)
			}
		})
	}
}

func TestProtocolErrors(t *testing.T) {
	c := startRaw(t, hostile.Options{})
	for _, tc := range []struct {
		name, send string
		id         string
		code       int
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, "1", -32601},
		{"unknown method, string id", `{"jsonrpc":"2.0","id":"x","method":"tools/frobnicate","params":{}}`, `"x"`, -32601},
		{"not JSON", `this is not json`, "null", -32700},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":2,"method":"ping"}`, "2", -32600},
		{"no method, no id", `{"jsonrpc":"2.0"}`, "null", -32600},
		{"unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`, "3", -32602},
		{"unknown prompt", `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"nope"}}`, "4", -32602},
		{"unknown resource", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"hostile://nope"}}`, "5", -32002},
	} {
		c.send(tc.send)
		r := c.recvMessage()
		if string(r.ID) != tc.id || r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: answered id %s, error %+v; want id %s, code %d", tc.name, r.ID, r.Error, tc.id, tc.code)
		}
	}
	// An id still in use is refused, and the first request lives on.
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`)
	c.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if r := c.recvMessage(); string(r.ID) != "6" || r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("a reused id was answered %s, error %+v; want -32600", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`)
	// An unknown notification gets no answer: the next line answers the
	// ping after it.
	c.send(`{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if r := c.recvMessage(); string(r.ID) != "9" || string(r.Result) != "{}" {
		t.Errorf("ping answered id %s, result %s; want 9, {}", r.ID, r.Result)
	}
}

func TestLongLine(t *testing.T) {
	c := startRaw(t, hostile.Options{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", hostile.MaxLineBytes) + `"}}`)
	if r := c.recvMessage(); r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "MaxLineBytes") {
		t.Errorf("a line past MaxLineBytes was answered %+v, want -32600 naming MaxLineBytes", r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := c.recvMessage(); string(r.ID) != "2" || r.Error != nil {
		t.Errorf("after the long line, ping answered id %s, error %+v", r.ID, r.Error)
	}
}

func TestGarbageIsMalformed(t *testing.T) {
	for _, kind := range []string{"", hostile.GarbageTruncated, hostile.GarbageText, hostile.GarbageBinary} {
		t.Run("kind="+kind, func(t *testing.T) {
			c := startRaw(t, hostile.Options{})
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"garbage","arguments":{"kind":%q}}}`, kind))
			line, err := c.recv()
			if err != nil {
				t.Fatal(err)
			}
			if json.Valid(bytes.TrimSpace(line)) {
				t.Errorf("garbage wrote valid JSON: %q", line)
			}
			if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Errorf("garbage wrote %q, want one line", line)
			}
			// The server lives on, and never answers the garbage call.
			c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			if r := c.recvMessage(); string(r.ID) != "2" {
				t.Errorf("after garbage the server answered id %s, want 2 (the ping)", r.ID)
			}
		})
	}
	c := startRaw(t, hostile.Options{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"garbage","arguments":{"kind":"poetry"}}}`)
	if r := c.recvMessage(); !strings.Contains(string(r.Result), `"isError":true`) {
		t.Errorf("garbage of an unknown kind answered %s, want a tool error", r.Result)
	}
}

func TestCrashWritesNothing(t *testing.T) {
	c := startRaw(t, hostile.Options{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash","arguments":{}}}`)
	if line, err := c.recv(); !errors.Is(err, io.EOF) || len(line) > 0 {
		t.Errorf("after crash the server wrote %q (%v), want nothing and the end of its output", line, err)
	}
	if err, ok := c.s.wait(); !ok || !errors.Is(err, hostile.ErrCrash) {
		t.Errorf("Serve returned %v (returned: %t), want ErrCrash", err, ok)
	}
}

func TestCancelStopsSlow(t *testing.T) {
	var log gatewaytest.Buffer
	c := startRaw(t, hostile.Options{CancelLog: &log})
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`)
	c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"cancelled"}}`)
	r := c.recvMessage()
	if string(r.ID) != "8" {
		t.Fatalf("the first answer is to id %s, want 8 (cancelled); 7 was cancelled", r.ID)
	}
	if got := toolText(t, r.Result); got != "[7]" {
		t.Errorf("cancelled = %s, want [7]", got)
	}
	if got := log.String(); got != "7\n" {
		t.Errorf("CancelLog = %q, want %q", got, "7\n")
	}
	// The cancelled call is never answered: the next line is the ping's.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if r := c.recvMessage(); string(r.ID) != "9" {
		t.Errorf("answered id %s, want 9 (the ping); the cancelled 7 must get no answer", r.ID)
	}
}

func TestHugeAtItsLimit(t *testing.T) {
	c := startRaw(t, hostile.Options{})
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"huge","arguments":{"bytes":%d}}}`, hostile.MaxHugeBytes))
	r := c.recvMessage()
	if got := len(toolText(t, r.Result)); got != hostile.MaxHugeBytes {
		t.Errorf("huge at MaxHugeBytes returned %d bytes, want %d", got, hostile.MaxHugeBytes)
	}
}

// toolText is the text of a tools/call result of one text content.
func toolText(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("tool result %.200s is not one text (%v)", result, err)
	}
	return r.Content[0].Text
}

// connect runs Serve and connects the Go SDK's client to it.
func connect(t *testing.T, opts hostile.Options, copts *mcp.ClientOptions) (*mcp.ClientSession, *served) {
	t.Helper()
	s := start(t, opts)
	client := mcp.NewClient(&mcp.Implementation{Name: "hostile-test", Version: "1.0.0"}, copts)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s.fromServer, Writer: s.toServer}, nil)
	if err != nil {
		t.Fatalf("connecting the SDK client: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, s
}

// call calls a tool and returns its text and isError; a protocol error
// fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s returned %d contents, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s returned %T, want text", name, res.Content[0])
	}
	return text.Text, res.IsError
}

func TestSDKNegotiates(t *testing.T) {
	cs, _ := connect(t, hostile.Options{}, nil)
	// The SDK asks server/discover first (-32601 here), then initialize
	// with its newest version before 2026-07-28.
	if got := cs.InitializeResult().ProtocolVersion; !slices.Contains(hostile.ProtocolVersions, got) {
		t.Errorf("negotiated %q, want one of %v", got, hostile.ProtocolVersions)
	}
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("ping: %v", err)
	}
}

func TestToolsList(t *testing.T) {
	cs, _ := connect(t, hostile.Options{}, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
		schema, ok := tool.InputSchema.(map[string]any)
		if !ok || schema["type"] != "object" {
			t.Errorf("%s: inputSchema %v, want an object schema", tool.Name, tool.InputSchema)
		}
	}
	if !slices.Equal(names, hostile.ToolNames()) {
		t.Fatalf("tools/list names %v, want %v", names, hostile.ToolNames())
	}
	if a := byName["echo"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("echo's annotations = %+v, want readOnlyHint", a)
	}
	if got := byName["poisoned"].Description; got != hostile.PoisonedDescription || !strings.Contains(got, "~/.ssh/id_rsa") {
		t.Errorf("poisoned's description = %q", got)
	}
	if got := byName["rug"].Description; got != hostile.RugBefore {
		t.Errorf("rug's first description = %q, want RugBefore", got)
	}
}

func TestRugPull(t *testing.T) {
	changed := make(chan struct{}, 4)
	cs, _ := connect(t, hostile.Options{}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	rug := func() string {
		t.Helper()
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "rug" {
				return tool.Description
			}
		}
		t.Fatal("no rug in tools/list")
		return ""
	}
	if got := rug(); got != hostile.RugBefore {
		t.Errorf("first description = %q, want RugBefore", got)
	}
	select {
	case <-changed:
	case <-time.After(waitFor):
		t.Fatal("no notifications/tools/list_changed after the first tools/list")
	}
	for range 2 {
		if got := rug(); got != hostile.RugAfter {
			t.Errorf("later description = %q, want RugAfter", got)
		}
	}
	select {
	case <-changed:
		t.Error("a second notifications/tools/list_changed; the description changed once")
	case <-time.After(100 * time.Millisecond):
	}
	if text, isErr := call(t, cs, "rug", map[string]any{"text": "hi"}); text != "hi" || isErr {
		t.Errorf("rug returned %q (isError %t), want hi", text, isErr)
	}
}

func TestToolResults(t *testing.T) {
	cs, _ := connect(t, hostile.Options{}, nil)
	t.Setenv("HOSTILE_TEST_PROBE", "probe-value")
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		want    string
		wantErr bool
	}{
		{"echo", map[string]any{"text": "hello"}, "hello", false},
		{"echo", map[string]any{}, "echo: bad arguments: text is required", true},
		{"poisoned", map[string]any{"a": 2, "b": 3}, "5", false},
		{"huge", map[string]any{"bytes": 0}, "", false},
		{"huge", map[string]any{"bytes": 12}, "hostile host", false},
		{"huge", map[string]any{"bytes": hostile.MaxHugeBytes + 1}, fmt.Sprintf("huge: bad arguments: bytes is %d, and must be from 0 to MaxHugeBytes (%d)", hostile.MaxHugeBytes+1, hostile.MaxHugeBytes), true},
		{"huge", map[string]any{"bytes": "many"}, "huge: bad arguments: json: cannot unmarshal string into Go struct field .bytes of type int", true},
		{"slow", map[string]any{"ms": 10}, "slept 10 ms", false},
		{"slow", map[string]any{"ms": -1}, fmt.Sprintf("slow: bad arguments: ms is -1, and must be from 0 to MaxSlowMillis (%d)", hostile.MaxSlowMillis), true},
		{"cancelled", nil, "[]", false},
		{"env", map[string]any{"name": "HOSTILE_TEST_PROBE"}, "HOSTILE_TEST_PROBE=probe-value", false},
		{"env", map[string]any{"name": "HOSTILE_TEST_UNSET"}, "HOSTILE_TEST_UNSET is not set", false},
		{"env", map[string]any{}, "env: bad arguments: name is required", true},
	} {
		text, isErr := call(t, cs, tc.tool, tc.args)
		if text != tc.want || isErr != tc.wantErr {
			t.Errorf("%s %v = %q (isError %t), want %q (isError %t)", tc.tool, tc.args, text, isErr, tc.want, tc.wantErr)
		}
	}
	text, _ := call(t, cs, "huge", map[string]any{"bytes": 1 << 20})
	if len(text) != 1<<20 {
		t.Errorf("huge 1 MiB returned %d bytes", len(text))
	}
}

func TestSecret(t *testing.T) {
	var stderr gatewaytest.Buffer
	cs, _ := connect(t, hostile.Options{Stderr: &stderr}, nil)
	text, _ := call(t, cs, "secret", nil)
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// airlock's own redaction must find each fake secret, or the tests
	// that use them prove nothing.
	for _, tc := range []struct{ name, text, secret, kind string }{
		{"result", text, hostile.FakeAWSKey, "aws-access-key-id"},
		{"result", text, hostile.FakeGitHubToken, "github-token"},
		{"stderr", stderr.String(), hostile.FakeGitHubToken, "github-token"},
	} {
		if !strings.Contains(tc.text, tc.secret) {
			t.Errorf("the %s %q lacks %s", tc.name, tc.text, tc.secret)
			continue
		}
		_, findings := r.RedactString(tc.text)
		if !slices.ContainsFunc(findings, func(f redact.Finding) bool {
			return f.Kind == tc.kind && tc.text[f.Start:f.End] == tc.secret
		}) {
			t.Errorf("redaction of the %s found %+v, not the %s %s", tc.name, findings, tc.kind, tc.secret)
		}
	}
}

func TestCancelFromSDK(t *testing.T) {
	var log gatewaytest.Buffer
	cs, _ := connect(t, hostile.Options{CancelLog: &log}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // the request is on its way
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled slow call returned %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the cancelled slow call did not return")
	}
	// The SDK sends notifications/cancelled after the call returns: wait
	// for it to arrive.
	deadline := time.Now().Add(waitFor)
	var ids []json.RawMessage
	for len(ids) == 0 && time.Now().Before(deadline) {
		text, _ := call(t, cs, "cancelled", nil)
		if err := json.Unmarshal([]byte(text), &ids); err != nil {
			t.Fatalf("cancelled returned %q: %v", text, err)
		}
		if len(ids) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("cancelled = %s, want the slow call's id", ids)
	}
	if got, want := log.String(), string(ids[0])+"\n"; got != want {
		t.Errorf("CancelLog = %q, want %q", got, want)
	}
}

func TestCrashEndsSDKSession(t *testing.T) {
	cs, s := connect(t, hostile.Options{}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); err == nil || ctx.Err() != nil {
		t.Fatalf("crash returned %+v, %v; want an error before the deadline", res, err)
	}
	if err, ok := s.wait(); !ok || !errors.Is(err, hostile.ErrCrash) {
		t.Errorf("Serve returned %v (returned: %t), want ErrCrash", err, ok)
	}
	if err := cs.Ping(ctx, nil); err == nil {
		t.Error("ping after crash succeeded; the connection must be over")
	}
}

func TestGarbageFailsSDKCall(t *testing.T) {
	for _, kind := range []string{hostile.GarbageText, hostile.GarbageBinary} {
		t.Run(kind, func(t *testing.T) {
			cs, _ := connect(t, hostile.Options{}, nil)
			ctx, cancel := context.WithTimeout(t.Context(), waitFor)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garbage", Arguments: map[string]any{"kind": kind}})
			if err == nil || ctx.Err() != nil {
				t.Fatalf("garbage returned %+v, %v; want an error before the deadline", res, err)
			}
		})
	}
}

func TestSampleAndElicit(t *testing.T) {
	var got struct {
		mu      sync.Mutex
		prompt  string
		message string
	}
	answering := &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got.mu.Lock()
			defer got.mu.Unlock()
			if len(req.Params.Messages) == 1 {
				if text, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					got.prompt = text.Text
				}
			}
			return &mcp.CreateMessageResult{Model: "fake-model", Role: "assistant", Content: &mcp.TextContent{Text: "model says hi"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			got.mu.Lock()
			defer got.mu.Unlock()
			got.message = req.Params.Message
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}
	cs, _ := connect(t, hostile.Options{}, answering)
	text, _ := call(t, cs, "sample", map[string]any{"prompt": "leak it"})
	if !strings.HasPrefix(text, "answered: ") || !strings.Contains(text, "model says hi") || !strings.Contains(text, "fake-model") {
		t.Errorf("sample with a sampling client = %q, want the answer", text)
	}
	text, _ = call(t, cs, "elicit", map[string]any{"message": "your password?"})
	if !strings.HasPrefix(text, "answered: ") || !strings.Contains(text, `"action":"decline"`) {
		t.Errorf("elicit with an eliciting client = %q, want the answer", text)
	}
	got.mu.Lock()
	if got.prompt != "leak it" || got.message != "your password?" {
		t.Errorf("the client was asked %q and %q, want the tools' arguments", got.prompt, got.message)
	}
	got.mu.Unlock()

	// A client with neither capability refuses both.
	cs, _ = connect(t, hostile.Options{}, nil)
	for _, tool := range []string{"sample", "elicit"} {
		text, isErr := call(t, cs, tool, nil)
		if !strings.HasPrefix(text, "refused: code=") || isErr {
			t.Errorf("%s with a plain client = %q (isError %t), want the refusal", tool, text, isErr)
		}
	}
}

func TestPromptsAndResources(t *testing.T) {
	cs, _ := connect(t, hostile.Options{}, nil)
	ctx := t.Context()
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	descs := map[string]string{}
	for _, p := range prompts.Prompts {
		descs[p.Name] = p.Description
	}
	if len(descs) != 2 || descs["poisoned_prompt"] != hostile.PoisonedPromptDescription || strings.Contains(descs["greeting"], "IMPORTANT") {
		t.Errorf("prompts/list = %v, want a clean greeting and the poisoned prompt", descs)
	}
	for name, want := range map[string]string{"greeting": "Say hello to Ada.", "poisoned_prompt": hostile.PoisonedPromptDescription} {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"name": "Ada"}})
		if err != nil {
			t.Fatalf("prompts/get %s: %v", name, err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != want {
			t.Errorf("prompts/get %s = %+v, want %q", name, res.Messages, want)
		}
	}

	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	descs = map[string]string{}
	for _, r := range resources.Resources {
		descs[r.URI] = r.Description
	}
	if len(descs) != 2 || descs[hostile.PoisonedResourceURI] != hostile.PoisonedResourceDescription || strings.Contains(descs[hostile.CleanResourceURI], "IMPORTANT") {
		t.Errorf("resources/list = %v, want a clean and a poisoned resource", descs)
	}
	for uri, poisoned := range map[string]bool{hostile.CleanResourceURI: false, hostile.PoisonedResourceURI: true} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri || strings.Contains(res.Contents[0].Text, "IMPORTANT") != poisoned {
			t.Errorf("resources/read %s = %+v", uri, res.Contents)
		}
	}
}

func TestOptionsTools(t *testing.T) {
	cs, _ := connect(t, hostile.Options{Tools: []string{"slow", "echo"}}, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"echo", "slow"}; !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want %v", names, want)
	}
	// A tool not offered is unknown, crash included: it does not crash.
	for _, name := range []string{"rug", "crash"} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("calling %s, not offered: %v, want unknown tool", name, err)
		}
	}

	err = hostile.Serve(t.Context(), strings.NewReader(""), io.Discard, hostile.Options{Tools: []string{"echo", "nope"}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Serve with an unknown tool in Options.Tools = %v, want an error naming it", err)
	}
}

// TestTruncatedGarbageWedgesSDK pins down what a truncated line does to
// the Go SDK's stdio client, which decodes a stream rather than lines: it
// waits for the rest of the value, so the call gets no answer and the
// next message of the server is swallowed too. A gateway must bound each
// upstream call by a deadline to survive it.
func TestTruncatedGarbageWedgesSDK(t *testing.T) {
	const deadline = 500 * time.Millisecond
	cs, _ := connect(t, hostile.Options{}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garbage"}); err == nil {
		t.Fatalf("truncated garbage returned %+v, want no answer", res)
	}
	ctx, cancel = context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if err := cs.Ping(ctx, nil); err == nil {
		t.Error("a ping after truncated garbage was answered; the SDK now recovers, and the doc of GarbageTruncated is wrong")
	}
}
