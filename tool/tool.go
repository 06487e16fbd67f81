// Package tool defines what every door and guard of airlock shares: a Tool,
// a Call that proposes to run it, the Result the caller sees, the error
// value a refusal carries, and the Registry of tools. It does no I/O.
//
// A refusal or a tool failure is a Result whose Error is set: a stable Code,
// a message that is safe to show a model, and one concrete repair Hint.
// A Go error is reserved for runtime faults, which the gate turns into a
// tool_failed Result without showing their text.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Risk is how much harm a tool can do. The zero Risk is invalid, so a tool
// that forgot to say is refused at registration.
type Risk uint8

const (
	RiskLow Risk = iota + 1
	RiskMedium
	RiskHigh
)

var riskNames = [...]string{RiskLow: "low", RiskMedium: "medium", RiskHigh: "high"}

func (r Risk) String() string {
	if r >= RiskLow && r <= RiskHigh {
		return riskNames[r]
	}
	return fmt.Sprintf("Risk(%d)", uint8(r))
}

// ParseRisk parses "low", "medium" or "high".
func ParseRisk(s string) (Risk, error) {
	for r := RiskLow; r <= RiskHigh; r++ {
		if riskNames[r] == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown risk %q: want low, medium or high", s)
}

// MarshalText writes the risk's name.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Effect is what a tool changes. The zero Effect is invalid.
type Effect uint8

const (
	EffectRead     Effect = iota + 1 // reads only
	EffectWrite                      // changes the workspace
	EffectExternal                   // acts outside the workspace: network, money, messages
)

var effectNames = [...]string{EffectRead: "read", EffectWrite: "write", EffectExternal: "external"}

func (e Effect) String() string {
	if e >= EffectRead && e <= EffectExternal {
		return effectNames[e]
	}
	return fmt.Sprintf("Effect(%d)", uint8(e))
}

// ParseEffect parses "read", "write" or "external".
func ParseEffect(s string) (Effect, error) {
	for e := EffectRead; e <= EffectExternal; e++ {
		if effectNames[e] == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("unknown effect %q: want read, write or external", s)
}

// MarshalText writes the effect's name.
func (e Effect) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// Class names the kind of external effect a tool has, for the decisions
// that depend on it (the taint of a session that read untrusted content
// names it in its reason; the policy loosens that ask per tool). The zero
// Class is a tool that says nothing more than its Effect.
type Class string

const (
	ClassEgress  Class = "egress"  // fetches from or sends to a network host
	ClassPayment Class = "payment" // moves money: pays, transfers, refunds
	ClassSend    Class = "send"    // sends a message: mail, chat, SMS, a post
)

// IsExternal reports whether a tool of this effect and class acts
// outside the workspace: its effect is external, or it declares a class.
func IsExternal(e Effect, c Class) bool { return e == EffectExternal || c != "" }

// Valid says whether c is the zero Class or one of the named ones.
func (c Class) Valid() bool {
	switch c {
	case "", ClassEgress, ClassPayment, ClassSend:
		return true
	}
	return false
}

// Executor runs a call whose arguments the gate has already validated
// against the tool's schema and whose guards have passed. It returns a
// Result, with Error set for a failure the model may repair, or a Go error
// for a runtime fault. It runs in the gate's goroutine and must return
// promptly once ctx is done: the call's deadline is carried by ctx.
type Executor func(ctx context.Context, call *Call) (Result, error)

// Tool is one capability offered to a model.
type Tool struct {
	Name        string
	Description string
	// Server names the upstream MCP server a gateway tool comes from
	// (the policy's rules see it as server); "" for airlock's own tools.
	Server string
	// Schema is the bounded JSON Schema (2020-12) of the arguments: an
	// object with no additional properties, every string with maxLength,
	// every array with maxItems, every number with bounds. It is also what
	// the model is shown.
	Schema json.RawMessage
	Risk   Risk
	Effect Effect
	// Class is the kind of external effect (payment, send, egress). A
	// payment or send tool has Effect EffectExternal; a tool of another
	// effect that can also reach the network (run_command with an egress
	// proxy) declares ClassEgress. Either way the gate treats its calls as
	// external effects where that matters (a tainted session).
	Class Class
	// PathArgs names the top-level string arguments that are workspace
	// paths; the gate resolves them inside the workspace before anything
	// runs.
	PathArgs []string
	// ContentArgs names the top-level string arguments whose text a
	// write tool puts into the file its PathArgs name: the gate reads
	// them for directives a host runs (protect.CheckContent).
	ContentArgs []string
	// GlobArgs names the top-level string arguments that are glob
	// patterns over the workspace; the gate judges each as Glob will
	// (workspace.CheckGlob: absolute, "..", StateDir, malformed) before
	// anything runs, so that a check answers what the call would.
	GlobArgs []string
	// CommandArg names the top-level string argument that is one shell
	// command line; the gate judges it with the command policy (on its
	// syntax tree) before anything runs.
	CommandArg string
	// URLArgs names the top-level string arguments that are URLs; the gate
	// checks each against the egress policy, as written and resolving no
	// name, before anything runs.
	URLArgs []string
	// Untrusted says the tool's output comes from outside airlock's trust
	// (files, commands, the web): the gate scans it for injected
	// instructions, remembers the values it brings into the session, and,
	// where the door talks to a model, wraps it in an envelope.
	Untrusted bool
	// Fallback names a tool the agent loop calls instead, with the same
	// arguments and through the whole gate, when this one fails
	// transiently (see IsTransient). The gate checks at start-up that it
	// is registered and takes the same arguments.
	Fallback string
	Run      Executor
	// Held, for a tool whose results carry Changes, reopens the changes
	// an earlier run of the same call left held under a person's approval
	// (Changes.Hold): a Result with those Changes and the content that run
	// gave, so that approving them applies what the person reviewed and
	// runs nothing again.
	Held func(ctx context.Context, c *Call, approvalID string) (Result, error)
}

// Changes are what a call changed on a copy-on-write view of the
// workspace, not yet applied: the gate ends them with exactly one of
// Apply, Hold or Discard, by the mode and by what they do.
type Changes interface {
	// Summary is one line: what was added, modified and deleted.
	Summary() string
	// Destroys: the changes delete or replace something that was in the
	// workspace (the mode's destroy decision governs them).
	Destroys() bool
	// OverLimit says why keeping the changes' old versions for rollback
	// is past a snapshot limit ("" within them): such changes wait on a
	// person in every mode.
	OverLimit() string
	// Diff is the unified diff a person reviews, bounded.
	Diff() string
	// Apply makes the changes in the workspace, their old versions kept
	// for rollback, and returns a line saying what it did.
	Apply(ctx context.Context) (string, error)
	// Hold keeps the changes, unapplied, for the approval id, with the
	// content the call's result gives once they are applied.
	Hold(approvalID string, content string) error
	// Discard forgets them: the workspace stays as it was.
	Discard() error
}

// IsTransient says whether a call that failed with code may succeed if
// made again, or made to a fallback tool: it ran out of time or its
// runtime failed, rather than being refused or wrong.
func IsTransient(code Code) bool {
	switch code {
	case CodeDeadlineExceeded, CodeToolFailed, CodeSandboxUnavailable,
		"egress_timeout", "egress_connection_failed", "egress_unresolvable":
		return true
	}
	return false
}

// Call is a proposal to run a tool, whichever door it came in by.
type Call struct {
	ID      string          `json:"id,omitempty"` // set by the gate when empty
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Session string          `json:"session,omitempty"`
	Role    string          `json:"role,omitempty"` // viewer, operator or admin
	Mode    string          `json:"mode,omitempty"` // read-only, ask, auto-edit or auto
	// IdempotencyKey is the caller's own key for a call with side
	// effects: a repeat under the same key returns the stored result and
	// runs nothing. Without one the gate keys the call by session, step,
	// tool and canonical arguments.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Step is the call's step in its session (the agent loop's), part of
	// the key when there is no IdempotencyKey.
	Step int64 `json:"step,omitempty"`
	// Approval names the approval an earlier attempt of this same call
	// was parked under (Result.Approval.ID), when a door asked a person
	// and makes the call again with their answer: if that approval was
	// denied the call ends with approval_denied, and while it is pending
	// it is named again instead of a new one being parked. It approves
	// nothing: the gate uses it only when it was parked for this very
	// call (the same binding hash).
	Approval string `json:"approval,omitempty"`

	// Set by the gate for the executor of a call with side effects:
	// Retry when an earlier attempt may have had its effect (its owner
	// crashed mid-call), and UpstreamKey, the same in every attempt, for a
	// tool to send a remote API as that API's own idempotency key.
	Retry       bool   `json:"-"`
	UpstreamKey string `json:"-"`
	// Tainted is set by the gate when the session has taken in untrusted
	// content: an executor that would follow a destination it learns
	// while it runs (a redirect to another host) must hand it back
	// instead, so that the gate judges it as a call of its own.
	Tainted bool `json:"-"`
	// Goal is the user's goal for the session (the agent loop sets it):
	// a medium- or high-risk call whose arguments carry a sensitive token
	// the goal never mentions asks first.
	Goal string `json:"-"`
}

// Provenance says where a result's content came from, so that later stages
// can tell trusted from untrusted content.
type Provenance struct {
	Tool   string `json:"tool"`
	Source string `json:"source,omitempty"` // such as "workspace:notes/a.txt", "faq:refunds", "calc"
}

// Result is what the caller, and so the model, sees of a call.
type Result struct {
	Content    string     `json:"content"`
	Error      *Error     `json:"error,omitempty"`
	Provenance Provenance `json:"provenance"`
	Decision   string     `json:"decision,omitempty"` // the gate's: allow, deny or ask
	Rule       string     `json:"rule,omitempty"`     // the rule that decided, if any
	CallID     string     `json:"call_id,omitempty"`
	Session    string     `json:"session,omitempty"`
	// Approval is the pending approval an approval_required result waits
	// on: approving it lets the same call, and only that call, run once.
	// An approval_denied result names the approval a person denied.
	Approval *ApprovalRequest `json:"approval,omitempty"`
	// Replayed says the result is the one stored when the same call ran
	// before (the idempotency ledger): nothing ran this time.
	Replayed bool `json:"replayed,omitempty"`
	// Retry says an earlier attempt of this call may have had its effect
	// (its owner crashed, or it failed and is tried again).
	Retry bool `json:"retry,omitempty"`
	// Scan is the injection scanner's verdict on untrusted content; nil
	// for a tool whose output is trusted. Flagged content is still
	// delivered, marked.
	Scan *Scan `json:"scan,omitempty"`
	// Redacted counts the secrets and personal data masked in Content.
	Redacted int `json:"redacted,omitempty"`
	// Structured is Content as one JSON object, for programs (an MCP
	// result's structuredContent), when the tool has such a form: only
	// values the tool computed itself, for the gate's redaction and
	// envelopes apply to Content alone. Nil means the door makes its own
	// object around Content.
	Structured json.RawMessage `json:"-"`
	// IsError says the tool ran and reports, in its own words in
	// Content, that it failed (an upstream MCP tool's isError result):
	// the gate handles that content like any result's (redaction, scan,
	// envelope), and a door shows it as a tool error.
	IsError bool `json:"is_error,omitempty"`
	// Changes, set by a tool that ran on a copy-on-write view of the
	// workspace, are its changes not yet applied: the gate applies, holds
	// or discards them before the caller sees the result.
	Changes Changes `json:"-"`
}

// Scan is what the injection scanner found in a result.
type Scan struct {
	Score   float64  `json:"score"`
	Flagged bool     `json:"flagged"`
	Signals []string `json:"signals,omitempty"` // the signal names, sorted
}

// ApprovalRequest names a pending approval and the exact call it is for.
type ApprovalRequest struct {
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"` // canonical JSON
	Expires time.Time       `json:"expires"`
	// Diff is, for changes a command made and that wait on the approval,
	// the unified diff of what approving them applies.
	Diff string `json:"diff,omitempty"`
}

// OK reports whether the call succeeded.
func (r *Result) OK() bool { return r.Error == nil }

// Fail returns a Result carrying an error value.
func Fail(code Code, message, hint string) Result {
	return Result{Error: &Error{Code: code, Message: message, Hint: hint}}
}

// Error is a refusal or failure as a value. It is also a Go error, so that
// packages below the gate can return it through error-typed APIs.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
	// Violations lists every schema violation of invalid_arguments, so the
	// model can repair them all at once.
	Violations []Violation `json:"violations,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, hint, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Hint: hint}
}

// Violation is one schema violation at a JSON pointer into the arguments.
type Violation struct {
	Pointer string `json:"pointer"` // "" is the whole arguments object
	Message string `json:"message"`
}

// namePattern is what a tool name may look like: what the model APIs
// accept for a function's name (OpenAI's and Anthropic's
// ^[a-zA-Z0-9_-]{1,64}$), starting with a letter. An upstream MCP tool,
// whose name may also hold dots or be longer, is offered only when its
// gateway name fits.
var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// ValidName reports whether name may be a tool's name.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Registry holds the tools by name. Register everything at start-up; after
// that a Registry is read-only and safe for concurrent use.
type Registry struct {
	tools map[string]*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

// Register adds a tool. It refuses a tool with an invalid name, a missing
// risk, effect, schema or executor, or a name already taken.
func (r *Registry) Register(t Tool) error {
	switch {
	case !namePattern.MatchString(t.Name):
		return fmt.Errorf("tool name %q: want letters, digits, _ and -, starting with a letter, at most 64", t.Name)
	case r.tools[t.Name] != nil:
		return fmt.Errorf("tool %q is already registered", t.Name)
	case t.Risk < RiskLow || t.Risk > RiskHigh:
		return fmt.Errorf("tool %q: risk must be low, medium or high", t.Name)
	case t.Effect < EffectRead || t.Effect > EffectExternal:
		return fmt.Errorf("tool %q: effect must be read, write or external", t.Name)
	case !t.Class.Valid():
		return fmt.Errorf("tool %q: class %q is not egress, payment or send", t.Name, t.Class)
	case (t.Class == ClassPayment || t.Class == ClassSend) && t.Effect != EffectExternal:
		return fmt.Errorf("tool %q: class %s is an external effect; declare Effect external", t.Name, t.Class)
	case len(t.Schema) == 0:
		return fmt.Errorf("tool %q has no input schema", t.Name)
	case t.Run == nil:
		return fmt.Errorf("tool %q has no executor", t.Name)
	case strings.TrimSpace(t.Description) == "":
		return fmt.Errorf("tool %q has no description", t.Name)
	}
	t.PathArgs = slices.Clone(t.PathArgs)
	t.GlobArgs = slices.Clone(t.GlobArgs)
	t.ContentArgs = slices.Clone(t.ContentArgs)
	t.URLArgs = slices.Clone(t.URLArgs)
	r.tools[t.Name] = &t
	return nil
}

// Lookup returns the tool with the given name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// List returns the tools sorted by name.
func (r *Registry) List() []*Tool {
	out := make([]*Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}
