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
// the model can read the hint and repair the call. When the gate asks for
// approval, Options.Approve (if set) asks a person, through MCP elicitation
// for instance (see ElicitApproval), and an approved call is run again.
//
//	g, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws})
//	err := mcp.ServeStdio(ctx, g, os.Stdin, os.Stdout, &mcp.Options{Version: version})
//
//	h := &mcp.HTTPOptions{Addr: "127.0.0.1:8731", Tokens: map[string]string{token: "operator"}}
//	handler, _ := mcp.NewHTTPHandler(g, nil, h)
//	err = mcp.ListenAndServe(ctx, handler, h)
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
	"airlock.dev/airlock/tool"
)

// DefaultApprovalTimeout bounds how long Options.Approve may wait for a
// person before the call is left unapproved.
const DefaultApprovalTimeout = 5 * time.Minute

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
	// Approve, when set, is called when the gate answers
	// approval_required; the result carries the ask and, when the gate
	// has an approvals store, the pending approval (res.Approval). It gets
	// the MCP session so that it can use elicitation (see ElicitApproval),
	// and returns true when a person approved; recording that decision
	// where the gate will find it (the approvals store) is its job. The
	// call it gets carries the gate's call id, and an approved call is
	// run again, once, with that same id. An error counts as not
	// approved. It must return when ctx is done.
	Approve func(ctx context.Context, ss *sdk.ServerSession, call tool.Call, res tool.Result) (approved bool, err error)
	// ApprovalTimeout bounds one Approve; zero means DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// MaxMessageBytes bounds one inbound stdio line; zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// GateFor, when set, gives the gate a session's calls go through, for
	// a gate that depends on the session (the client's first root as the
	// workspace). The gate given to NewServer then only lists the tools.
	// An error refuses the call with its message.
	GateFor func(ctx context.Context, ss *sdk.ServerSession) (*gate.Gate, error)
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// NewServer returns an MCP server that lists every tool of g with its
// bounded schema and runs every tools/call through g.Call.
func NewServer(g *gate.Gate, opts *Options) *sdk.Server {
	return newServer(g, opts, false)
}

// server is the state the tool handlers share.
type server struct {
	gate *gate.Gate
	opts Options
	// tokenRoles says the role comes from the bearer token of the HTTP
	// request; a call without one is refused (fail closed).
	tokenRoles bool
	// ids holds the ids given to sessions whose transport has none (the
	// in-memory transport), so that all calls of a session share one.
	ids sync.Map // *sdk.ServerSession -> string
	// steps counts each session's tool calls: the step that keys a call
	// in the idempotency ledger, so that the same call made again later
	// in a session runs again, while the re-run of an approved call (the
	// same step) does not. A session's counter goes when the session
	// ends, so that the map holds only live sessions.
	steps sync.Map // session id -> *atomic.Int64
}

// nextStep returns the session's next step, from 1.
func (s *server) nextStep(ss *sdk.ServerSession, session string) int64 {
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
	return n.(*atomic.Int64).Add(1)
}

func newServer(g *gate.Gate, opts *Options, tokenRoles bool) *sdk.Server {
	s := &server{gate: g, opts: opts.withDefaults(), tokenRoles: tokenRoles}
	srv := sdk.NewServer(&sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version}, &sdk.ServerOptions{
		Logger:       s.opts.Logger,
		Instructions: s.opts.Instructions,
		// No logging capability: the server has nothing to log to clients.
		Capabilities: &sdk.ServerCapabilities{},
	})
	for _, t := range g.Tools() {
		s.addTool(srv, t)
	}
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
	read := t.Effect == tool.EffectRead
	destructive := t.Effect == tool.EffectWrite
	openWorld := t.Effect == tool.EffectExternal
	srv.AddTool(&sdk.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.Schema, // json.RawMessage: shown exactly as the gate validates it
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    read,
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}, s.handle)
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
	role, ok := s.role(req)
	if !ok {
		return errorResult(tool.Result{Decision: "deny", Error: &tool.Error{Code: tool.CodeInternal,
			Message: "the caller's role could not be established from its token",
			Hint:    "Tell the operator: the MCP server is misconfigured"}}), nil
	}
	session := s.sessionID(req.Session)
	call := tool.Call{
		Tool:    req.Params.Name,
		Args:    args,
		Session: session,
		Step:    s.nextStep(req.Session, session),
		Role:    role,
		Mode:    s.opts.Mode,
	}
	g := s.gate
	if s.opts.GateFor != nil {
		var err error
		if g, err = s.opts.GateFor(ctx, req.Session); err != nil {
			return errorResult(tool.Result{Decision: "deny", Error: &tool.Error{Code: tool.CodeInternal,
				Message: err.Error(), Hint: "Tell the operator: start airlock with --workspace DIR"}}), nil
		}
	}
	res := callGate(ctx, g, call)
	if res.Error != nil && res.Error.Code == tool.CodeApprovalRequired && s.opts.Approve != nil {
		res = s.approve(ctx, g, req.Session, call, res)
	}
	if res.Error != nil {
		s.opts.Logger.Debug("mcp: call refused", "tool", call.Tool, "code", res.Error.Code, "call_id", res.CallID)
		return errorResult(res), nil
	}
	return &sdk.CallToolResult{
		Meta:    resultMeta(res),
		Content: []sdk.Content{&sdk.TextContent{Text: res.Content}},
	}, nil
}

// approve asks Options.Approve about a call the gate parked, and runs the
// same call again, with the gate's call id, once a person approved it.
// Anything but a clear yes returns the approval_required result.
func (s *server) approve(ctx context.Context, g *gate.Gate, ss *sdk.ServerSession, call tool.Call, res tool.Result) tool.Result {
	if call.ID == "" {
		call.ID = res.CallID
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.ApprovalTimeout)
	approved, err := s.opts.Approve(actx, ss, call, res)
	cancel()
	if err != nil {
		s.opts.Logger.Warn("mcp: approval failed", "tool", call.Tool, "call_id", call.ID, "error", err)
		return res
	}
	s.opts.Logger.Info("mcp: approval", "tool", call.Tool, "call_id", call.ID, "approved", approved)
	if !approved {
		return res
	}
	return g.Call(ctx, call)
}

// roleExtraKey is where the HTTP door puts the token's role in the SDK's
// TokenInfo.Extra.
const roleExtraKey = "airlock.dev/role"

// role returns the caller's role: the token's on HTTP with tokens, else
// Options.Role.
func (s *server) role(req *sdk.CallToolRequest) (string, bool) {
	if !s.tokenRoles {
		return s.opts.Role, true
	}
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return "", false
	}
	role, ok := req.Extra.TokenInfo.Extra[roleExtraKey].(string)
	return role, ok && role != ""
}

// sessionID returns the MCP session id, or one of airlock's own for a
// transport that has none.
func (s *server) sessionID(ss *sdk.ServerSession) string {
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

// refusal is the structuredContent of a refused call.
type refusal struct {
	Code       tool.Code        `json:"code"`
	Message    string           `json:"message"`
	Hint       string           `json:"hint"`
	Violations []tool.Violation `json:"violations,omitempty"`
	Decision   string           `json:"decision"`
	Rule       string           `json:"rule,omitempty"`
	// ApprovalID names the pending approval of an approval_required call.
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

// MaxElicitArgBytes bounds the arguments ElicitApproval shows a person;
// longer arguments are cut, and the message says so.
const MaxElicitArgBytes = 2048

// ErrNoElicitation is returned by ElicitApproval when the client did not
// declare the elicitation capability: nobody can be asked.
var ErrNoElicitation = errors.New("mcp: the client does not support elicitation")

// approveSchema is the form shown to the person: one yes/no question.
var approveSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean",` +
	`"title":"Approve this call","description":"Run the call once, as shown","default":false}},"required":["approve"]}`)

// ElicitApproval asks the person at the MCP client, through elicitation,
// whether the parked call may run. It is a ready Options.Approve for
// clients that support elicitation. Only an accepted form with approve set
// to true approves; a decline, a cancel or anything else does not.
//
// It needs a session on a protocol version before 2026-07-28: from that
// version on, a server may not send requests while it serves one (the SDK
// refuses, SEP-2322), and the call stays unapproved.
func ElicitApproval(ctx context.Context, ss *sdk.ServerSession, call tool.Call, res tool.Result) (bool, error) {
	if ss == nil {
		return false, ErrNoElicitation
	}
	if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false, ErrNoElicitation
	}
	r, err := ss.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: approvalMessage(call, res), RequestedSchema: approveSchema})
	if err != nil {
		return false, fmt.Errorf("mcp: asking for approval: %w", err)
	}
	yes, _ := r.Content["approve"].(bool)
	return r.Action == "accept" && yes, nil
}

func approvalMessage(call tool.Call, res tool.Result) string {
	args := string(call.Args)
	if len(args) > MaxElicitArgBytes {
		args = strings.ToValidUTF8(args[:MaxElicitArgBytes], "") + fmt.Sprintf(" ... (cut at MaxElicitArgBytes = %d of %d bytes)", MaxElicitArgBytes, len(call.Args))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "airlock asks for your approval to run %s", call.Tool)
	if res.Error != nil && res.Error.Message != "" {
		fmt.Fprintf(&b, ": %s", res.Error.Message)
	}
	if res.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", res.Rule)
	}
	fmt.Fprintf(&b, ".\nArguments: %s\nCall id: %s", args, call.ID)
	if res.Approval != nil {
		fmt.Fprintf(&b, "\nApproval id: %s", res.Approval.ID)
	}
	return b.String()
}
