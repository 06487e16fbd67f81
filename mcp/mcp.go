// Package mcp is airlock's Model Context Protocol door: it offers the gate's
// tools to any MCP client, over stdio (one session per process, for desktop
// and IDE agents) or over Streamable HTTP (many sessions, behind bearer
// tokens and roles).
//
// The package decides nothing itself. tools/list shows each tool with the
// bounded schema the gate validates against; every tools/call becomes one
// tool.Call that goes through (*gate.Gate).Call, with its arguments exactly
// as received. A refusal is a tool result with isError set and the error
// value both as text and as structuredContent, never a JSON-RPC error, so
// the model can read the hint and repair the call; a result also carries
// its content as an object in structuredContent. When the gate parks a
// call as a pending approval and Options.Decide is set, the person at a
// client that can elicit is asked, on every protocol version (see
// approval.go), and the call runs once if they approve or ends with
// approval_denied if they do not.
//
//	g, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Audit: log,
//		Ledger: led, Redactor: rd, Sessions: db, Approvals: db, ApprovalKey: key})
//	err := mcp.ServeStdio(ctx, g, os.Stdin, os.Stdout, &mcp.Options{Version: version})
//
//	h := &mcp.HTTPOptions{Addr: "127.0.0.1:8731", Tokens: map[string]string{token: "operator"}}
//	handler, _ := mcp.NewHTTPHandler(g, nil, h)
//	err = mcp.ListenAndServe(ctx, handler, h)
//
// Over HTTP, one session's requests may go to any of several replicas
// (HTTPOptions.Replicas): the SDK then serves each request statelessly,
// and airlock keeps the session itself, as an Mcp-Session-Id signed with a
// key every replica shares (HTTPOptions.SessionKey) and bound to the
// caller's token; a session's steps, approvals, ledger, provenance and
// kill switch are in the store the replicas share (Options.Sessions, the
// gate's store). A client before protocol 2026-07-28 is then never asked
// for approval (a stateless server sends no requests): its call ends
// approval_required. replicas.go says more.
//
//	opts := &mcp.Options{Sessions: db} // the store every replica opens
//	h := &mcp.HTTPOptions{Addr: ":8731", Tokens: tokens, Replicas: true, SessionKey: sharedKey}
//	handler, _ := mcp.NewHTTPHandler(g, opts, h)
//
// The stdio transport is airlock's own: unlike the SDK's, a malformed or
// oversized line is answered with a JSON-RPC error and the session goes on.
// The HTTP handler checks Host, Origin, the bearer token and the body size
// before the SDK reads a byte of the request.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// DefaultApprovalTimeout bounds how long the server waits for a person's
// answer to an approval question it sends itself (clients before protocol
// 2026-07-28) before the call is left pending.
const DefaultApprovalTimeout = 5 * time.Minute

// The concurrency limits of one server: past them a call is answered at
// once with the busy code, never queued, so that a client that floods a
// server cannot make it hold unbounded work or memory. Each replica
// counts its own.
const (
	// DefaultMaxCalls bounds the calls running at once, all sessions
	// together.
	DefaultMaxCalls = 64
	// DefaultMaxSessionCalls bounds the calls of one session running at
	// once: a model's parallel tool calls fit, a runaway loop does not
	// crowd out other sessions.
	DefaultMaxSessionCalls = 8
)

// Meta keys airlock sets in the _meta of every tool result, so that a
// client can refer to the call (in an approval, in the audit log).
const (
	MetaCallID  = "airlock.dev/call_id"
	MetaSession = "airlock.dev/session"
)

// Options configures the MCP server. A nil *Options is all defaults.
type Options struct {
	// Name and Version are the server's implementation info; "" means
	// "airlock" and "dev".
	Name, Version string
	// Role is the caller's role on stdio, and on HTTP when no tokens are
	// configured; "" means policy.DefaultRole. With tokens, HTTP takes the
	// role from the token.
	Role string
	// Mode is the session mode of every call; "" means the policy's default.
	Mode string
	// Instructions go to the client in the initialize result, for its
	// model's system prompt: airlock gives untrusted.Instructions, which
	// say how to read the envelopes around untrusted tool results.
	Instructions string
	// Decide, when set, lets the person at the client answer the gate's
	// asks: a call the gate parks as a pending approval is put to them
	// through elicitation (when the client declared it), and Decide
	// records their answer where the gate finds it, as `airlock approve`
	// and `airlock deny` do (store.Approvals.DecideApproval); by names the
	// decider for the record. The call is then made again with the gate's
	// call id: it runs once if approved, and ends with approval_denied
	// otherwise. Without Decide, or with a client that cannot elicit, the
	// result is approval_required, naming the pending approval.
	Decide func(ctx context.Context, ss *sdk.ServerSession, approvalID string, approve bool, by string) error
	// ApprovalTimeout bounds the wait for a person's answer when the
	// server asks itself (clients before protocol 2026-07-28; a newer
	// client asks and calls again, within the approval's lifetime); zero
	// means DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// MaxCalls and MaxSessionCalls bound the calls running at once, in
	// all and per session; zero means DefaultMaxCalls and
	// DefaultMaxSessionCalls.
	MaxCalls, MaxSessionCalls int
	// MaxMessageBytes bounds one inbound stdio line; zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Sessions, when set, holds each session's step counter: the step
	// that keys a call in the idempotency ledger is the session's next
	// (store.Sessions.ChargeSession), so that every process sharing the
	// store (replicas, see HTTPOptions.Replicas) counts one session's
	// steps together, and a killed session's call is refused before it
	// reaches the gate. Nil keeps the counter in this process's memory,
	// for as long as the session lives here: enough for one process that
	// holds its sessions whole (stdio, tests, a program embedding the
	// server).
	Sessions store.Sessions
	// GateFor, when set, gives the gate a session's calls go through, for
	// a gate that depends on the session (the client's first root as the
	// workspace). The gate given to NewServer then only lists the tools.
	// An error refuses the call with its message.
	GateFor func(ctx context.Context, ss *sdk.ServerSession) (*gate.Gate, error)
	// Visible, when set, says whether tools/list shows a tool, beside the
	// caller's role: the gateway hides an upstream tool whose definition
	// changed or was flagged. A hidden tool's call still goes to the gate.
	Visible func(name string) bool
	// Upstream, when set, adds its prompts and resources (the gateway's
	// upstream servers'); what they return goes through the gate's TakeIn
	// (upstream.go).
	Upstream Upstream
}

// withDefaults returns a copy of opts with every zero field filled in.
func (opts *Options) withDefaults() Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "airlock"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Role == "" {
		o.Role = policy.DefaultRole
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = DefaultApprovalTimeout
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxSessionCalls <= 0 {
		o.MaxSessionCalls = DefaultMaxSessionCalls
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// NewServer returns an MCP server that lists every tool of g with its
// bounded schema and runs every tools/call through g.Call.
func NewServer(g *gate.Gate, opts *Options) *sdk.Server {
	return newServer(g, opts, false, nil)
}

// server is the state the tool handlers share.
type server struct {
	gate *gate.Gate
	opts Options
	// tokenRoles says the role comes from the bearer token of the HTTP
	// request; a call without one is refused (fail closed).
	tokenRoles bool
	// tools are the names tools/list shows; a call of any other name
	// goes to the gate too, which refuses it as a tool result.
	tools map[string]*tool.Tool
	// stateKey signs the request state of an approval question (see
	// approval.go): random per server, so a state from another process,
	// or made up by a client, is refused; with HTTPOptions.Replicas the
	// SessionKey every replica shares, so that the answer may reach any.
	stateKey []byte
	// ids holds the ids given to sessions whose transport has none (the
	// in-memory transport), so that all calls of a session share one.
	ids sync.Map // *sdk.ServerSession -> string
	// steps counts each session's tool calls when Options.Sessions is
	// nil: the step that keys a call in the idempotency ledger, so that
	// the same call made again later in a session runs again, while the
	// re-run of an approved call (the same step) does not. A session's
	// counter goes when the session ends, so that the map holds only
	// live sessions.
	steps sync.Map // session id -> *atomic.Int64
	// running counts the calls running now: in all, and per session.
	running busy
}

// nextStep returns the session's next step, from 1: charged to the
// session in Options.Sessions when set, else counted in memory. A call
// it cannot give a step to gets the error value to answer with: killed
// when the session (or every session) is killed, internal_error when the
// store fails, so that no call runs with a step that may repeat.
func (s *server) nextStep(ctx context.Context, ss *sdk.ServerSession, session string) (int64, *tool.Error) {
	if s.opts.Sessions != nil {
		st, err := s.opts.Sessions.ChargeSession(ctx, session, store.Charge{Steps: 1}, time.Now())
		if errors.Is(err, store.ErrKilled) {
			_, all, _ := store.Killed(ctx, s.opts.Sessions, session)
			return 0, gate.KilledError(all)
		}
		if err != nil {
			s.opts.Logger.Error("mcp: the session store failed; the call did not run", "session", session, "error", err)
			return 0, &tool.Error{Code: tool.CodeInternal, Message: "the session store failed; the call did not run",
				Hint: "Make the call again in a moment; tell the operator if it keeps failing"}
		}
		return st.Step, nil
	}
	n, ok := s.steps.Load(session)
	if !ok { // the session's first call: only then make its counter
		var loaded bool
		n, loaded = s.steps.LoadOrStore(session, new(atomic.Int64))
		if !loaded && ss != nil {
			go func() {
				ss.Wait()
				s.steps.Delete(session)
			}()
		}
	}
	return n.(*atomic.Int64).Add(1), nil
}

// newServer returns the server; stateKey signs request states, and nil
// means a random one.
func newServer(g *gate.Gate, opts *Options, tokenRoles bool, stateKey []byte) *sdk.Server {
	s := &server{gate: g, opts: opts.withDefaults(), tokenRoles: tokenRoles, tools: map[string]*tool.Tool{}, stateKey: stateKey}
	if s.stateKey == nil {
		s.stateKey = make([]byte, stateKeyBytes)
		rand.Read(s.stateKey) // never fails (crypto/rand, Go 1.24 and later)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version}, &sdk.ServerOptions{
		Logger:       quietCancels(s.opts.Logger),
		Instructions: s.opts.Instructions,
		// No logging capability: the server has nothing to log to clients.
		Capabilities: &sdk.ServerCapabilities{},
	})
	for _, t := range g.Tools() {
		s.addTool(srv, t)
	}
	if s.opts.Upstream != nil {
		s.addUpstream(srv)
	}
	// Added after the SDK's own multi-round-trip middleware, so around it.
	srv.AddReceivingMiddleware(s.receive)
	srv.AddSendingMiddleware(s.send)
	return srv
}

// addTool registers t with the SDK. The SDK panics on a schema that is
// not an object; the gate has already refused such a tool, but a panic
// here is still turned into a logged error and the tool left out.
func (s *server) addTool(srv *sdk.Server, t *tool.Tool) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("mcp: tool left out", "tool", t.Name, "error", fmt.Sprint(p))
		}
	}()
	shown, err := clientSchema(t.Schema)
	if err != nil {
		s.opts.Logger.Error("mcp: tool left out", "tool", t.Name, "error", err)
		return
	}
	read := t.Effect == tool.EffectRead
	destructive := t.Effect == tool.EffectWrite
	openWorld := t.Effect == tool.EffectExternal
	srv.AddTool(&sdk.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: shown,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    read,
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}, s.handle)
	s.tools[t.Name] = t
}

// receive is the server's receiving middleware. A tools/call of a tool
// that is not listed goes to the gate like any other, so that it is a
// tool result (unknown_tool) and audited, where the SDK would answer a
// JSON-RPC error. Around every tools/call it keeps the approval question
// the handler asked, if any: when the SDK, asking it for a client before
// 2026-07-28, fails to get an answer, the call ends pending rather than
// with a JSON-RPC error.
func (s *server) receive(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/list" {
			res, err := next(ctx, method, req)
			if list, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				return s.list(ctx, req, list), nil
			}
			return res, err
		}
		call, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if s.tools[call.Params.Name] == nil {
			return s.handle(ctx, call)
		}
		q := new(question)
		res, err := next(context.WithValue(ctx, questionKey{}, q), method, req)
		if err != nil && q.pending != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("mcp: asking for approval failed; the call stays pending", "tool", q.pending.Approval.Tool,
				"approval", q.pending.Approval.ID, "error", err)
			return toolResult(*q.pending), nil
		}
		return res, err
	}
}

// send is the server's sending middleware: it bounds the wait for the
// answer to an approval question the server sends itself.
func (s *server) send(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "elicitation/create" {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.opts.ApprovalTimeout)
			defer cancel()
		}
		return next(ctx, method, req)
	}
}

// handle runs one tools/call through the gate. It returns a Go error only
// for a request that is not a tool call at all; every refusal is a result.
func (s *server) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req == nil || req.Params == nil {
		return nil, errors.New("tools/call without params")
	}
	args := json.RawMessage(req.Params.Arguments)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if rr, ok := replicaFromContext(ctx); ok {
		// A replica's call lasts as long as its HTTP request (replicas.go).
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(rr.http, cancel)()
	}
	who, ok := s.caller(req)
	if !ok {
		return errorResult(tool.Result{Decision: "deny", Error: &tool.Error{Code: tool.CodeInternal,
			Message: "the caller's role could not be established from its token",
			Hint:    "Tell the operator: the MCP server is misconfigured"}}), nil
	}
	session := s.sessionID(ctx, req.Session)
	if !s.running.enter(session, s.opts.MaxCalls, s.opts.MaxSessionCalls) {
		return errorResult(tool.Result{Decision: "deny", Session: session, Error: busyError(s.opts.MaxCalls, s.opts.MaxSessionCalls)}), nil
	}
	defer s.running.leave(session)
	g := s.gate
	if s.opts.GateFor != nil {
		var err error
		if g, err = s.opts.GateFor(ctx, req.Session); err != nil {
			return errorResult(tool.Result{Decision: "deny", Error: &tool.Error{Code: tool.CodeInternal,
				Message: err.Error(), Hint: "Tell the operator: start airlock with --workspace DIR"}}), nil
		}
	}
	if req.Params.RequestState != "" || req.Params.InputResponses != nil {
		return s.answered(ctx, g, req, args, who), nil
	}
	step, refused := s.nextStep(ctx, req.Session, session)
	if refused != nil {
		return errorResult(tool.Result{Decision: "deny", Session: session, Error: refused}), nil
	}
	call := tool.Call{
		Tool:    req.Params.Name,
		Args:    args,
		Session: session,
		Step:    step,
		Role:    who.role,
		Mode:    s.opts.Mode,
	}
	res := callGate(context.WithValue(ctx, clientKey{}, req.Session), g, call)
	if res.Error != nil && res.Error.Code == tool.CodeApprovalRequired && res.Approval != nil &&
		s.opts.Decide != nil && canElicit(req.Session) {
		call.ID = res.CallID
		return s.ask(ctx, call, res, who)
	}
	if res.Error != nil {
		s.opts.Logger.Debug("mcp: call refused", "tool", call.Tool, "code", res.Error.Code, "call_id", res.CallID)
	}
	return toolResult(res), nil
}

// roleExtraKey is where the HTTP door puts the token's role in the SDK's
// TokenInfo.Extra.
const roleExtraKey = "airlock.dev/role"

// caller is who makes a call: its role, and on HTTP with tokens the
// token's user id, which an approval question is bound to.
type caller struct {
	role, principal string
}

// caller returns the caller: the token's role on HTTP with tokens, else
// Options.Role.
func (s *server) caller(req sdk.Request) (caller, bool) {
	if !s.tokenRoles {
		return caller{role: s.opts.Role}, true
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return caller{}, false
	}
	role, ok := extra.TokenInfo.Extra[roleExtraKey].(string)
	return caller{role: role, principal: extra.TokenInfo.UserID}, ok && role != ""
}

// list filters a tools/list result to the tools the caller may see: those
// its role may call (gate.Lists), and that Options.Visible shows.
func (s *server) list(ctx context.Context, req sdk.Request, res *sdk.ListToolsResult) *sdk.ListToolsResult {
	who, ok := s.caller(req)
	out := *res
	out.Tools = nil
	if !ok {
		return &out
	}
	for _, t := range res.Tools {
		gt, known := s.tools[t.Name]
		if !known || !s.gate.Lists(ctx, gt, who.role, s.opts.Mode) || (s.opts.Visible != nil && !s.opts.Visible(t.Name)) {
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	return &out
}

// sessionID returns the session id the replica layer verified
// (HTTPOptions.Replicas), else the MCP session id, else one of airlock's
// own for a transport that has none.
func (s *server) sessionID(ctx context.Context, ss *sdk.ServerSession) string {
	if rr, ok := replicaFromContext(ctx); ok {
		return rr.session
	}
	if ss == nil {
		return ""
	}
	if id := ss.ID(); id != "" {
		return id
	}
	if id, ok := s.ids.Load(ss); ok {
		return id.(string)
	}
	id, loaded := s.ids.LoadOrStore(ss, rand.Text())
	if !loaded {
		go func() {
			ss.Wait()
			s.ids.Delete(ss)
		}()
	}
	return id.(string)
}

// toolResult turns what the gate answered into an MCP tool result.
func toolResult(res tool.Result) *sdk.CallToolResult {
	if res.Error != nil {
		return errorResult(res)
	}
	return &sdk.CallToolResult{
		Meta:              resultMeta(res),
		Content:           []sdk.Content{&sdk.TextContent{Text: res.Content}},
		StructuredContent: structured(res),
		IsError:           res.IsError,
	}
}

// output is the structuredContent of a result whose tool has no object
// form of its own: the text the model reads, and where it came from.
type output struct {
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
}

// structured is a successful result as one JSON object. Clients that
// find no structuredContent parse the text as JSON when they can (Gemini
// CLI), and a bare number or string is not the object they want; so
// every result has one: the tool's own (calculate's value, float and
// exactness), else the text with its source.
func structured(res tool.Result) any {
	if len(res.Structured) > 0 && res.Structured[0] == '{' && json.Valid(res.Structured) {
		return res.Structured
	}
	return output{Text: res.Content, Source: res.Provenance.Source}
}

// refusal is the structuredContent of a refused call.
type refusal struct {
	Code       tool.Code        `json:"code"`
	Message    string           `json:"message"`
	Hint       string           `json:"hint"`
	Violations []tool.Violation `json:"violations,omitempty"`
	Decision   string           `json:"decision"`
	Rule       string           `json:"rule,omitempty"`
	// ApprovalID names the approval of an approval_required or
	// approval_denied call.
	ApprovalID string `json:"approval_id,omitempty"`
}

// errorResult turns a refused call into a tool result with isError set:
// the error value as text for the model and as structuredContent for
// programs.
func errorResult(res tool.Result) *sdk.CallToolResult {
	e := res.Error
	var approvalID string
	if res.Approval != nil {
		approvalID = res.Approval.ID
	}
	return &sdk.CallToolResult{
		Meta:    resultMeta(res),
		Content: []sdk.Content{&sdk.TextContent{Text: errorText(e)}},
		StructuredContent: refusal{
			Code: e.Code, Message: e.Message, Hint: e.Hint, Violations: e.Violations,
			Decision: res.Decision, Rule: res.Rule, ApprovalID: approvalID,
		},
		IsError: true,
	}
}

// errorText is "CODE: MESSAGE. Hint: HINT", then one line per violation.
func errorText(e *tool.Error) string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if msg := strings.TrimRight(e.Message, ". "); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	b.WriteString(".")
	if e.Hint != "" {
		b.WriteString(" Hint: ")
		b.WriteString(e.Hint)
	}
	for _, v := range e.Violations {
		ptr := v.Pointer
		if ptr == "" {
			ptr = "(arguments)"
		}
		fmt.Fprintf(&b, "\n- %s: %s", ptr, v.Message)
	}
	return b.String()
}

func resultMeta(res tool.Result) sdk.Meta {
	m := sdk.Meta{}
	if res.CallID != "" {
		m[MetaCallID] = res.CallID
	}
	if res.Session != "" {
		m[MetaSession] = res.Session
	}
	return m
}

// quietCancels wraps the SDK's logger so that a session or request that
// ends because its context was cancelled (the client went away, the
// process is stopping) is logged at debug level, not as an error: it is
// how sessions normally end, and clients show a server's error lines to
// the person (Codex CLI does).
func quietCancels(l *slog.Logger) *slog.Logger {
	return slog.New(cancelQuieter{l.Handler()})
}

type cancelQuieter struct{ slog.Handler }

func (h cancelQuieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && cancelled(r) {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h cancelQuieter) WithAttrs(as []slog.Attr) slog.Handler {
	return cancelQuieter{h.Handler.WithAttrs(as)}
}

func (h cancelQuieter) WithGroup(name string) slog.Handler {
	return cancelQuieter{h.Handler.WithGroup(name)}
}

// cancelled reports whether a record is about a context.Canceled: an
// error attribute that is one, or a message that ends in its text (the
// SDK formats some errors into the message).
func cancelled(r slog.Record) bool {
	found := strings.HasSuffix(r.Message, context.Canceled.Error())
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
			found = true
		}
		return !found
	})
	return found
}
