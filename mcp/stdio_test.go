package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
)

// pipes is a ServeStdio session driven over raw pipes.
type pipes struct {
	in     *io.PipeWriter // what the client writes
	out    *bufio.Reader  // what the server writes
	outR   *io.PipeReader
	served chan error
	cancel context.CancelFunc
}

func serveStdio(t *testing.T, f *fixture, opts *mcp.Options) *pipes {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipes{in: inW, out: bufio.NewReaderSize(outR, 1<<20), outR: outR, served: make(chan error, 1), cancel: cancel}
	go func() {
		p.served <- mcp.ServeStdio(ctx, f.gate, inR, outW, opts)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-p.served
	})
	return p
}

func (p *pipes) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line); err != nil {
		t.Fatalf("writing to the server: %v", err)
	}
}

// reply is one JSON-RPC response as read off the wire.
type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *pipes) recv(t *testing.T) reply {
	t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("reading from the server: %v", r.err)
		}
		var rep reply
		if err := json.Unmarshal([]byte(r.line), &rep); err != nil {
			t.Fatalf("server wrote %q: %v", r.line, err)
		}
		if rep.JSONRPC != "2.0" {
			t.Fatalf("server wrote %q: not JSON-RPC 2.0", r.line)
		}
		return rep
	case <-time.After(30 * time.Second):
		t.Fatal("no reply from the server in 30s")
	}
	return reply{}
}

// initialize runs the handshake on a legacy protocol version.
func (p *pipes) initialize(t *testing.T) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if r := p.recv(t); r.Error != nil || string(r.ID) != "0" {
		t.Fatalf("initialize: %+v", r)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
}

func calcLine(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"calculate","arguments":{"expression":"($100 + $250.75) * 20%"}}}` + "\n"
}

// calcText returns the text of a calculate result.
func calcText(t *testing.T, r reply) string {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("tools/call: error %+v", r.Error)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("tools/call result %s: %v", r.Result, err)
	}
	return res.Content[0].Text
}

// TestStdioSurvivesBadLines sends each bad line between valid calls: the
// bad line gets its JSON-RPC error, and the next call is answered.
func TestStdioSurvivesBadLines(t *testing.T) {
	const limit = 512
	f := newFixture(t)
	p := serveStdio(t, f, &mcp.Options{MaxMessageBytes: limit})
	p.initialize(t)
	atLimit := `{"jsonrpc":"2.0","id":"pad","method":"ping"` + strings.Repeat(" ", limit-len(`{"jsonrpc":"2.0","id":"pad","method":"ping"}`)) + `}`
	if len(atLimit) != limit {
		t.Fatalf("test line has %d bytes, want %d", len(atLimit), limit)
	}
	tests := []struct {
		name     string
		line     string
		wantID   string // the id of the reply; "" means no reply
		wantCode int64  // 0: a result
	}{
		{"not JSON", "{not json\n", "null", -32700},
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":` + "\n", "null", -32700},
		{"binary", "\x00\xff\xfe\n", "null", -32700},
		{"no version tag, with id", `{"id":5,"method":"ping"}` + "\n", "5", -32600},
		{"wrong version, string id", `{"jsonrpc":"1.0","id":"a","method":"ping"}` + "\n", `"a"`, -32600},
		{"invalid id type", `{"jsonrpc":"2.0","id":{},"method":"ping"}` + "\n", "null", -32600},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", "null", -32600},
		{"a number", "42\n", "null", -32600},
		{"oversize", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"` + strings.Repeat("a", 4*limit) + `"}}` + "\n", "null", -32600},
		{"oversize by one", atLimit + " \n", "null", -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"nope/nope"}` + "\n", "7", -32601},
		{"bad params", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"x"}` + "\n", "8", -32602},
		{"at the limit", atLimit + "\n", `"pad"`, 0},
		{"CRLF", `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\r\n", "9", 0},
		{"blank lines", "\n  \n\r\n", "", 0},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/nope"}` + "\n", "", 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(t, tt.line)
			if tt.wantID != "" {
				r := p.recv(t)
				if string(r.ID) != tt.wantID {
					t.Errorf("reply id = %s, want %s", r.ID, tt.wantID)
				}
				switch {
				case tt.wantCode == 0 && r.Error != nil:
					t.Errorf("error %+v, want a result", r.Error)
				case tt.wantCode != 0 && (r.Error == nil || r.Error.Code != tt.wantCode):
					t.Errorf("reply %+v, want error %d", r, tt.wantCode)
				}
				if strings.HasPrefix(tt.name, "oversize") && !strings.Contains(r.Error.Message, "MaxMessageBytes") {
					t.Errorf("oversize error %q does not name MaxMessageBytes", r.Error.Message)
				}
			}
			// The session still serves.
			id := fmt.Sprintf(`"after-%d"`, i)
			p.send(t, calcLine(id))
			r := p.recv(t)
			if string(r.ID) != id {
				t.Fatalf("reply id = %s, want %s: a reply too many or too few", r.ID, id)
			}
			if got := calcText(t, r); got != "70.15" {
				t.Errorf("calculate after the line = %q, want 70.15", got)
			}
		})
	}
	p.in.Close()
	if err := <-p.served; err != nil {
		t.Errorf("ServeStdio after the input closed = %v, want nil", err)
	}
	p.served <- nil // for the cleanup
}

// TestStdioArgumentsExactlyAsSent checks that the gate gets the arguments'
// bytes as they were on the wire, spacing and escapes included.
func TestStdioArgumentsExactlyAsSent(t *testing.T) {
	f := newFixture(t)
	p := serveStdio(t, f, nil)
	p.initialize(t)
	tests := []struct{ name, params, wantArgs string }{
		{"spacing and escapes", `{"name":"probe","arguments":{ "s" : "x\u0041\n" }}`, `{ "s" : "x\u0041\n" }`},
		{"absent", `{"name":"probe"}`, `{}`},
		{"empty object", `{"name":"probe","arguments":{}}`, `{}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := string(rune('1' + i))
			p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":`+tt.params+"}\n")
			r := p.recv(t)
			if r.Error != nil {
				t.Fatalf("error %+v", r.Error)
			}
			var res struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			json.Unmarshal(r.Result, &res)
			var seen probeSeen
			if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &seen) != nil {
				t.Fatalf("result %s", r.Result)
			}
			if seen.Args != tt.wantArgs {
				t.Errorf("gate got args %q, want %q", seen.Args, tt.wantArgs)
			}
			if seen.Session == "" || seen.Role != "operator" {
				t.Errorf("session %q, role %q: want an id and operator", seen.Session, seen.Role)
			}
		})
	}
}

// TestStdioWithSDKClient runs the SDK's own client over the pipes, on the
// latest protocol version and on the legacy handshake.
func TestStdioWithSDKClient(t *testing.T) {
	for _, version := range []string{"", legacyVersion} {
		t.Run("version "+version, func(t *testing.T) {
			f := newFixture(t)
			p := serveStdio(t, f, &mcp.Options{Mode: "read-only"})
			client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: p.outR, Writer: p.in},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(list.Tools) != len(f.gate.Tools()) {
				t.Fatalf("tools/list: %d tools, %v; want %d", len(list.Tools), err, len(f.gate.Tools()))
			}
			if got := text(callTool(t, cs, "calculate", map[string]any{"expression": "($100 + $250.75) * 20%"})); got != "70.15" {
				t.Errorf("calculate = %q, want 70.15", got)
			}
			res := callTool(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "x"})
			if sc := structured(t, res); !res.IsError || sc["code"] != "denied" {
				t.Errorf("write_file in read-only: %v", sc)
			}
			a := probe(t, callTool(t, cs, "probe", map[string]any{}))
			b := probe(t, callTool(t, cs, "probe", map[string]any{}))
			if a.Session == "" || a.Session != b.Session || a.Mode != "read-only" {
				t.Errorf("probe saw %+v then %+v: want one session id and mode read-only", a, b)
			}
		})
	}
}

func TestStdioCancel(t *testing.T) {
	f := newFixture(t)
	p := serveStdio(t, f, nil)
	p.initialize(t)
	p.cancel()
	if err := <-p.served; !errors.Is(err, context.Canceled) {
		t.Errorf("ServeStdio after cancel = %v, want context.Canceled", err)
	}
	p.served <- nil
}

// TestStdioAnswersAfterInputEnds: a client that writes its requests and
// closes its input at once (a script, a pipe) still gets every answer,
// and the session then ends.
func TestStdioAnswersAfterInputEnds(t *testing.T) {
	f := newFixture(t)
	p := serveStdio(t, f, nil)
	// The whole session in one write, the input closed right after it.
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		calcLine("1")+calcLine("2")+calcLine(`"three"`)+
		`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`+"\n")
	p.in.Close()
	got := map[string]bool{}
	for range 5 {
		r := p.recv(t)
		got[string(r.ID)] = true
		switch string(r.ID) {
		case "1", "2", `"three"`:
			if text := calcText(t, r); text != "70.15" {
				t.Errorf("call %s: %q, want 70.15", r.ID, text)
			}
		case "4":
			if r.Error == nil {
				t.Errorf("unknown method: %+v, want a JSON-RPC error", r)
			}
		}
	}
	for _, id := range []string{"0", "1", "2", `"three"`, "4"} {
		if !got[id] {
			t.Errorf("no answer to request %s after the input ended (answers: %v)", id, got)
		}
	}
	select {
	case err := <-p.served:
		if err != nil {
			t.Errorf("ServeStdio = %v, want nil once the input ended", err)
		}
		p.served <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end after its input ended and every request was answered")
	}
}

// lockedBuffer is a log destination the server and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStdioEndsQuietly: a session that ends because the process is
// stopping, or because the client closed its end of the output, logs no
// error: both are how sessions end, and a client shows the person the
// server's error lines.
func TestStdioEndsQuietly(t *testing.T) {
	f := newFixture(t)
	var logs lockedBuffer
	opts := &mcp.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}

	p := serveStdio(t, f, opts)
	p.initialize(t)
	p.cancel()
	if err := <-p.served; !errors.Is(err, context.Canceled) {
		t.Errorf("ServeStdio after cancel = %v, want context.Canceled", err)
	}
	p.served <- nil

	// A client that was killed: its end of the output is closed.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- mcp.ServeStdio(context.Background(), f.gate, inR, outW, opts) }()
	outR.Close()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio after the client closed its end = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end when its output was closed")
	}
	inW.Close()
	outW.Close()
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a normal end of session logged an error:\n%s", logs.String())
	}
}
