package mcp

// Approval questions. When the gate parks a call as a pending approval,
// the handler does not send elicitation/create itself: from protocol
// 2026-07-28 a server may not send a request while it serves one, and
// must instead answer the call with input requests and a request state
// (multi-round-trip requests, SEP-2322). So the handler always answers
// that way, on every protocol version:
//
//   - a client on 2026-07-28 or later asks the person and makes the call
//     again with their answer (inputResponses) and the state as it was;
//   - for an older client the SDK's own middleware asks (elicitation/create,
//     within Options.ApprovalTimeout) and calls the handler again, in the
//     same request, the same way.
//
// Either way the second call comes back to answered, which checks the
// state, records the answer with Options.Decide and makes the call
// through the gate again, naming the approval: approved, it runs once;
// declined or dismissed, it ends with approval_denied.
//
// The state comes back from the client, so it is signed: an HMAC under a
// key that is random per server binds it to the approval, the gate's call
// id, session and step, the tool, the canonical arguments, the caller's
// role and token, and the approval's expiry. A client that edits any of
// it, or sends it with other arguments, is refused; it cannot approve one
// call with the answer to another.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/tool"
)

// MaxElicitArgBytes bounds the arguments an approval question shows a
// person; longer arguments are cut, and the message says so.
const MaxElicitArgBytes = 2048

// MaxRequestStateBytes bounds the request state a client sends back; the
// states this server issues are a few hundred bytes.
const MaxRequestStateBytes = 4096

// stateKeyBytes is the size of the key request states are signed with.
const stateKeyBytes = 32

// approvalInput is the id of the approval question among a result's
// input requests.
const approvalInput = "airlock.dev/approval"

// stateLabel separates the MAC of a request state from any other use of
// the same construction.
const stateLabel = "airlock.dev/mcp/request-state/v1"

// approveSchema is the form shown to the person: one yes/no question.
var approveSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean",` +
	`"title":"Approve this call","description":"Run the call once, as shown","default":false}},"required":["approve"]}`)

// question is what the receiving middleware learns of an approval
// question the handler asked: the pending result to answer with if
// nobody can be asked.
type question struct {
	pending *tool.Result
}

type questionKey struct{}

// canElicit reports whether the client declared form elicitation (an
// empty elicitation capability, before 2025-11-25, means form).
func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// requestState is what an approval question's request state binds.
type requestState struct {
	Approval  string `json:"approval"`
	CallID    string `json:"call_id"`
	Session   string `json:"session"`
	Step      int64  `json:"step"`
	Tool      string `json:"tool"`
	Args      string `json:"args"` // hex SHA-256 of the canonical arguments
	Role      string `json:"role"`
	Principal string `json:"principal,omitempty"`
	Expires   int64  `json:"expires"` // Unix seconds: the approval's own expiry
}

// ask answers a call the gate parked with an approval question: the
// input request and the signed state of the call.
func (s *server) ask(ctx context.Context, call tool.Call, res tool.Result, who caller) (*sdk.CallToolResult, error) {
	argsHash, err := hashArgs(call.Args)
	if err != nil { // the gate validated them: they have a canonical form
		return toolResult(res), nil
	}
	st := requestState{
		Approval: res.Approval.ID, CallID: call.ID, Session: call.Session, Step: call.Step,
		Tool: call.Tool, Args: argsHash, Role: who.role, Principal: who.principal,
		Expires: res.Approval.Expires.Unix(),
	}
	if q, ok := ctx.Value(questionKey{}).(*question); ok {
		q.pending = &res
	}
	return &sdk.CallToolResult{
		Meta: resultMeta(res),
		InputRequests: sdk.InputRequestMap{approvalInput: &sdk.ElicitParams{
			Mode: "form", Message: approvalMessage(call, res), RequestedSchema: approveSchema,
		}},
		RequestState: s.sign(st),
	}, nil
}

// answered takes the second call of an approval question: the person's
// answer and the state. It records the answer and makes the call again,
// naming the approval, so that the gate runs it once or ends it with
// approval_denied.
func (s *server) answered(ctx context.Context, g *gate.Gate, req *sdk.CallToolRequest, args json.RawMessage, who caller) *sdk.CallToolResult {
	st, ok := s.verify(req.Params.RequestState)
	argsHash, err := hashArgs(args)
	if !ok || s.opts.Decide == nil || err != nil || st.Tool != req.Params.Name || st.Args != argsHash || st.Role != who.role || st.Principal != who.principal {
		s.opts.Logger.Warn("mcp: a call came back with a request state this server did not issue for it", "tool", req.Params.Name)
		return errorResult(tool.Result{Decision: "deny", Error: &tool.Error{Code: tool.CodeInvalidCall,
			Message: "the requestState does not belong to this call: it was changed, has expired, comes from another call or from before a restart",
			Hint:    "Make the call again without requestState and inputResponses"}})
	}
	// Only an answer is a decision: without one (a client that could not
	// ask) the approval stays pending, and the gate's call names it.
	if r, ok := req.Params.InputResponses[approvalInput].(*sdk.ElicitResult); ok && r != nil {
		yes, _ := r.Content["approve"].(bool)
		approve := r.Action == "accept" && yes
		if err := s.opts.Decide(ctx, req.Session, st.Approval, approve, "mcp-elicitation:"+st.Session); err != nil {
			// Already decided (by `airlock approve` meanwhile, or a
			// replay), or the store failed: the gate's call below says
			// where it stands.
			s.opts.Logger.Warn("mcp: recording the approval failed", "approval", st.Approval, "error", err)
		}
		s.opts.Logger.Info("mcp: approval", "tool", st.Tool, "call_id", st.CallID, "approval", st.Approval, "answer", r.Action, "approved", approve)
	}
	call := tool.Call{
		ID: st.CallID, Tool: st.Tool, Args: args, Session: st.Session, Step: st.Step,
		Role: st.Role, Mode: s.opts.Mode, Approval: st.Approval,
	}
	return toolResult(callGate(ctx, g, call))
}

// sign returns the request state of st: its JSON in base64url, a dot,
// and the hex HMAC of that under the server's key.
func (s *server) sign(st requestState) string {
	body, _ := json.Marshal(st) // strings and numbers: never fails
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + canon.Bind(s.stateKey, stateLabel, payload)
}

// verify checks a request state's signature, size and expiry, and
// returns what it binds.
func (s *server) verify(state string) (requestState, bool) {
	var st requestState
	if len(state) > MaxRequestStateBytes {
		return st, false
	}
	payload, mac, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(canon.Bind(s.stateKey, stateLabel, payload))) {
		return st, false
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &st) != nil {
		return st, false
	}
	return st, time.Now().Unix() < st.Expires
}

// hashArgs is the hex SHA-256 of the canonical form of a call's
// arguments: the same call in another key order or spacing hashes equal.
func hashArgs(args json.RawMessage) (string, error) {
	c, err := canon.JSON(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// approvalMessage is the question shown to the person: the tool, why the
// gate asks, the arguments (cut at MaxElicitArgBytes), and the ids.
func approvalMessage(call tool.Call, res tool.Result) string {
	args := string(call.Args)
	if len(args) > MaxElicitArgBytes {
		args = strings.ToValidUTF8(args[:MaxElicitArgBytes], "") + fmt.Sprintf(" ... (cut at MaxElicitArgBytes = %d of %d bytes)", MaxElicitArgBytes, len(call.Args))
	}
	var b strings.Builder
	if res.Approval != nil && res.Approval.Diff != "" {
		// The command ran on a copy of the workspace: what is approved is
		// applying its changes, shown whole (the gate bounds the diff).
		fmt.Fprintf(&b, "airlock asks for your approval to apply what %s changed", call.Tool)
	} else {
		fmt.Fprintf(&b, "airlock asks for your approval to run %s", call.Tool)
	}
	if res.Error != nil && res.Error.Message != "" {
		fmt.Fprintf(&b, ": %s", res.Error.Message)
	}
	if res.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", res.Rule)
	}
	fmt.Fprintf(&b, ".\nArguments: %s\nCall id: %s", args, call.ID)
	if res.Approval != nil {
		fmt.Fprintf(&b, "\nApproval id: %s", res.Approval.ID)
		if res.Approval.Diff != "" {
			fmt.Fprintf(&b, "\nChanges:\n%s", res.Approval.Diff)
		}
	}
	return b.String()
}
