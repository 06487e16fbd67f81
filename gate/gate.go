// Package gate is the one pipeline every tool call passes, whichever door it
// came in by (CLI, MCP, HTTP, the agent loop, a Go program). It is the one
// package that knows all the guards.
//
// The stages run in the order of the stages table below. Each either passes
// the call on or ends it with a decision, and none can widen what an
// earlier stage decided: a denied or asked call never reaches its executor.
// Every call, whatever its outcome, is appended to the audit log with each
// stage's decision and timing.
//
// New fails closed: a gate has its audit log, exactly-once ledger,
// redactor, kill switch and approval key, or runs without one only when
// Options.Without names it (see Protections).
//
//	g, err := gate.New(registry, &gate.Options{Policy: policy.Default(), Workspace: ws, Audit: log,
//		Ledger: led, Redactor: rd, Sessions: db, Approvals: db, ApprovalKey: key})
//	res := g.Call(ctx, tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"2*21"}`)})
package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/command"
	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/protect"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/schema"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// DefaultTimeout is the deadline of one call, all stages included.
const DefaultTimeout = 30 * time.Second

// Options configures a Gate. Zero fields fail closed: with no policy
// nothing is allowed, with no workspace no path. The protections whose
// absence would not refuse anything (Audit, Ledger, Redactor, Sessions,
// ApprovalKey) must each be set or switched off by name in Without: New
// refuses Options that leave one out, a nil *Options included.
type Options struct {
	// Policy decides allow, deny or ask. Nil denies everything.
	Policy *policy.Policy
	// Workspace scopes the file tools. Nil refuses every call that has a
	// path argument.
	Workspace *workspace.Workspace
	// Audit receives one entry per call. Nil keeps no log, and needs
	// WithoutAudit.
	Audit *audit.Log
	// Timeout is the deadline of one call; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxArgBytes caps the raw arguments; zero means schema.DefaultMaxArgBytes.
	MaxArgBytes int
	// Approvals is where asked calls wait for a person, and where the
	// remembered approvals that let one run again are found. Nil ends
	// every ask with approval_required and nothing to approve.
	Approvals store.Approvals
	// ApprovalTTL is how long an approval waits and, once approved, how
	// long it stays usable; zero means store.DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// Protected lists the workspace files no tool may write freely:
	// airlock's own (the policy, credentials and config files, when they
	// lie in the workspace) are never written, and files a host later
	// runs by itself ask, in every mode. Nil is protect.Default(). The
	// command policy holds the same list for the writes of commands
	// (command.Policy.WithProtected).
	Protected *protect.List
	// Commands judges the command line of every tool with a CommandArg
	// (run_command). Nil refuses every such call.
	Commands *command.Policy
	// Ledger keeps every call with a write or external effect
	// exactly-once: keyed before it runs, its outcome recorded after, a
	// repeat answered with the stored result. Nil passes such calls
	// through unkeyed, and needs WithoutLedger.
	Ledger *ledger.Ledger
	// Owner names this process in the ledger's entries; a host and pid
	// when empty.
	Owner string
	// Redactor masks secrets and personal data in every result (content
	// and error messages) before it leaves the gate. Nil masks nothing
	// but Secrets, and needs WithoutRedactor.
	Redactor *redact.Redactor
	// Secrets are exact values airlock itself holds and must never show
	// (the credentials egress attaches per host): masked in every result
	// and error message, as SecretMask, whatever the Redactor finds.
	Secrets []string
	// Envelopes wraps the content of every untrusted tool's result
	// (tool.Tool.Untrusted) in an envelope with a random boundary that
	// names its source, for doors whose results go to a model (MCP, the
	// agent loop); their system prompt carries untrusted.Instructions.
	Envelopes bool
	// OnFlagged is what follows when the injection scanner flags
	// untrusted content: FlaggedDeliver (the default: delivered, marked in
	// Result.Scan), FlaggedAsk (delivered, and every later medium- or
	// high-risk call of the session asks first), or FlaggedDeny (withheld,
	// as an untrusted_content_flagged error value).
	OnFlagged FlagAction
	// Egress checks every URL argument (URLArgs) of a tool against the
	// egress policy, as written, before anything runs; *egress.Client is
	// one. Nil refuses every such call.
	Egress URLChecker
	// ApprovalKey keys the hash approvals are found by. Keep it where the
	// store is not (the CLI keeps it in the user's config directory, the
	// store in the workspace): an approval planted in the store, by a
	// repository that ships one, then matches no call. Empty leaves the
	// hash unkeyed, and needs WithoutApprovalKey.
	ApprovalKey []byte
	// Sessions is where the kill switch is read: a call in a killed
	// session, or while every session is killed (airlock kill), is refused
	// with code killed before it can run. Nil reads no kill switch, and
	// needs WithoutSessions.
	Sessions store.Sessions
	// Without names the protections this gate runs without, each on
	// purpose (a test, a gate that only lists its tools); see Protections.
	// Naming one that is also set is refused as ambiguous.
	Without Protections
}

// URLChecker judges a URL without fetching it: nil when it may be
// fetched, else the refusal (a *tool.Error with its own code). It must
// send nothing, not even a DNS query for the host: the gate runs it for
// calls that are only checked, asked or later denied, and a query's
// labels can carry data out. The addresses a name resolves to are the
// fetch's to judge, when it dials.
type URLChecker interface {
	Check(ctx context.Context, url string) error
}

// FlagAction is what a flag of the injection scanner turns into.
type FlagAction string

const (
	FlaggedDeliver FlagAction = ""
	FlaggedAsk     FlagAction = "ask"
	FlaggedDeny    FlagAction = "deny"
)

// Gate runs calls through the pipeline. It is safe for concurrent use.
type Gate struct {
	tools map[string]*entry
	opts  Options
	prov  provenances
}

// entry is a registered tool with its schema, compiled once.
type entry struct {
	tool   *tool.Tool
	schema *schema.Schema
}

// New compiles every tool's schema; a schema that is not strictly bounded
// is an error here, at start-up, not at the first call. It refuses, with
// a *ProtectionError, Options that leave a protection out without naming
// it in Options.Without.
func New(reg *tool.Registry, opts *Options) (*Gate, error) {
	g := &Gate{tools: map[string]*entry{}}
	if opts != nil {
		g.opts = *opts
	}
	if err := checkProtections(&g.opts); err != nil {
		return nil, err
	}
	if g.opts.Timeout <= 0 {
		g.opts.Timeout = DefaultTimeout
	}
	if g.opts.Owner == "" {
		host, _ := os.Hostname()
		g.opts.Owner = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	for _, t := range reg.List() {
		s, err := schema.Compile(t.Name, t.Schema, &schema.Options{MaxArgBytes: g.opts.MaxArgBytes})
		if err != nil {
			return nil, fmt.Errorf("gate: %w", err)
		}
		g.tools[t.Name] = &entry{tool: t, schema: s}
	}
	for _, e := range g.tools {
		if fb := e.tool.Fallback; fb != "" {
			f, ok := g.tools[fb]
			switch {
			case !ok || fb == e.tool.Name:
				return nil, fmt.Errorf("gate: tool %q names fallback %q, which is not another registered tool", e.tool.Name, fb)
			case string(f.tool.Schema) != string(e.tool.Schema):
				return nil, fmt.Errorf("gate: tool %q and its fallback %q take different arguments; a fallback is called with the same ones", e.tool.Name, fb)
			}
		}
	}
	return g, nil
}

// Tools returns the registered tools with the schemas models are shown.
func (g *Gate) Tools() []*tool.Tool {
	out := make([]*tool.Tool, 0, len(g.tools))
	for _, e := range g.tools {
		out = append(out, e.tool)
	}
	slices.SortFunc(out, func(a, b *tool.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lists reports whether a caller of role, in mode, is shown the tool t:
// the policy's bound for the role allows its risk and no rule over its
// shape denies it (policy.Lists).
func (g *Gate) Lists(ctx context.Context, t *tool.Tool, role, mode string) bool {
	return g.opts.Policy.Lists(ctx, policy.Input{Tool: t.Name, Server: t.Server, Risk: t.Risk, Effect: t.Effect, Role: role, Mode: mode})
}

// Call runs one call through every stage and returns what the caller sees.
func (g *Gate) Call(ctx context.Context, c tool.Call) tool.Result {
	return g.run(ctx, c, true)
}

// Check runs every stage but execution: the result carries the decision
// (allow, deny or ask) and, unless allowed, the error value, and nothing
// runs. It is still audited, as a check.
func (g *Gate) Check(ctx context.Context, c tool.Call) tool.Result {
	return g.run(ctx, c, false)
}

// call is one call's state as it moves through the stages.
type call struct {
	tool.Call
	execute  bool
	entry    *entry
	args     map[string]any // the decoded arguments, for policy and guards
	paths    []string       // canonical workspace paths of the path arguments
	verdict  policy.Decision
	result   tool.Result
	stages   []audit.Stage
	note     string                // internal detail for the audit log only
	ran      bool                  // the executor was reached
	approval *tool.ApprovalRequest // the approval an ask parked, if any
	ticket   *ledger.Ticket        // the ledger key this call holds while it runs
	acted    bool                  // the executor returned a result: the effect happened
	replayed bool                  // the result is the ledger's stored one
	state    *store.SessionState   // the session as the intent stage read it, if it did
	// personApproved: a person approved this call, or the changes it
	// left held, so the changes it makes are theirs to have asked for.
	personApproved bool
	held           string // the approval of held changes this call applies instead of running
	// reviewAsk is the command policy's ask that the review stage puts
	// to a person with the command's changes, instead of before it ran.
	reviewAsk *policy.Decision
}

// decision is what a stage decided about a call, as the audit log records
// it in audit.Stage.Decision: each is the audit constant of the same
// meaning, so the log's format is the audit package's alone.
type decision string

const (
	passed   decision = audit.DecisionPass   // passed the call on unchanged
	allowed  decision = audit.DecisionAllow  // allowed the call
	denied   decision = audit.DecisionDeny   // refused the call
	asked    decision = audit.DecisionAsk    // a person must approve the call first
	skipped  decision = audit.DecisionSkip   // did not apply to the call
	failed   decision = audit.DecisionError  // failed; the call did not go on
	replayed decision = audit.DecisionReplay // the ledger answered with the stored result
)

// outcome is what a stage made of a call: its decision, for the record,
// and, when the stage ends the call, end, the error value the caller
// sees. A nil end passes the call on to the next stage.
type outcome struct {
	decision decision
	end      *tool.Error
}

// passOn passes the call on to the next stage, having decided d.
func passOn(d decision) outcome { return outcome{decision: d} }

// endCall ends the call with the error value e, having decided d.
func endCall(d decision, e *tool.Error) outcome { return outcome{decision: d, end: e} }

// stage is one step of the pipeline.
type stage struct {
	name string // the stage's name in the audit log
	run  func(g *Gate, ctx context.Context, c *call) outcome
	// lastForCheck ends a check (Gate.Check) after this stage, before
	// anything runs.
	lastForCheck bool
}

// stages is the pipeline, in order. Stages that later work fills in pass
// through here, explicitly, so that their place is visible.
var stages = []stage{
	{name: "decode", run: (*Gate).decode},                               // size cap, known tool, JSON
	{name: "validate", run: (*Gate).validate},                           // the tool's bounded schema
	{name: "authorize", run: (*Gate).authorize},                         // role, risk, mode and rules
	{name: "guards", run: (*Gate).guards},                               // workspace paths and glob patterns, command lines, URLs as written
	{name: "intent", run: (*Gate).intent},                               // untrusted values, sensitive tokens off the goal
	{name: "loop", run: (*Gate).loop},                                   // the kill switch (budgets are the agent loop's, per step)
	{name: "approval", run: (*Gate).approval},                           // an ask runs once approved, or under a remembered approval, else parks as an approval
	{name: "idempotency", run: (*Gate).idempotency, lastForCheck: true}, // the exactly-once ledger
	{name: "execute", run: (*Gate).executeStage},                        // the executor, under the deadline
	{name: "review", run: (*Gate).review},                               // a command's changes: applied, held for a person with their diff, or discarded
	{name: "after", run: (*Gate).after},                                 // size cap, redaction, injection scan, envelopes
}

func (g *Gate) run(ctx context.Context, tc tool.Call, execute bool) tool.Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	c := &call{Call: tc, execute: execute, stages: make([]audit.Stage, 0, len(stages))}
	if c.ID == "" {
		c.ID = newID()
	}
	if c.Session == "" {
		c.Session = newID()
	}
	if c.Role == "" {
		c.Role = policy.DefaultRole
	}
	if c.Mode == "" {
		c.Mode = policy.DefaultMode
	}
	c.verdict = policy.Decision{Action: policy.Allow}
	t0 := start
	for _, s := range stages {
		out := s.run(g, ctx, c)
		if out.end == nil && ctx.Err() != nil {
			out = endCall(denied, g.contextError(ctx))
		}
		t1 := time.Now()
		rec := audit.Stage{Name: s.name, Decision: string(out.decision), Micros: t1.Sub(t0).Microseconds()}
		t0 = t1
		if out.end != nil {
			rec.Code = string(out.end.Code)
			c.stages = append(c.stages, rec)
			c.result = tool.Result{Error: out.end}
			if out.decision == denied && c.verdict.Action != policy.Deny {
				// A guard or check of its own ended the call, and no rule
				// decided it: a stage whose deny is a rule's (authorize,
				// the command and URL guards, a denied approval) set the
				// verdict itself.
				c.verdict = policy.Decision{Action: policy.Deny, Code: out.end.Code}
			}
			break
		}
		c.stages = append(c.stages, rec)
		if !execute && s.lastForCheck {
			break // a check stops before anything runs
		}
	}
	g.finishTicket(c)
	if c.result.Error != nil {
		e := *c.result.Error
		if rd := g.opts.Redactor; rd != nil {
			e.Message, _ = rd.RedactString(e.Message)
		}
		e.Message, _ = g.maskSecrets(e.Message)
		c.result.Error = &e
	}
	res := c.result
	res.Replayed = c.replayed
	res.Retry = c.Retry
	res.Decision = c.verdict.Action.String()
	res.Rule = c.verdict.Rule
	res.CallID, res.Session = c.ID, c.Session
	res.Approval = c.approval
	if res.Provenance.Tool == "" {
		res.Provenance.Tool = c.Tool
	}
	if err := g.record(c, &res); err != nil {
		// A call that cannot be audited must not look successful.
		res = tool.Result{Error: &tool.Error{Code: tool.CodeInternal,
			Message: "the call could not be written to the audit log",
			Hint:    "Tell the operator: airlock's audit log is failing"},
			Decision: res.Decision, CallID: c.ID, Session: c.Session, Provenance: res.Provenance}
	}
	return res
}

// contextError is the error value of a call whose context ended: the
// caller's cancel (a client that cancelled the request or went away) is
// not the call running out of time.
func (g *Gate) contextError(ctx context.Context) *tool.Error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return &tool.Error{Code: tool.CodeCancelled, Message: "the caller cancelled the call before it finished",
			Hint: "Make the call again if it is still wanted"}
	}
	return deadlineError(g.opts.Timeout)
}

func deadlineError(d time.Duration) *tool.Error {
	return &tool.Error{Code: tool.CodeDeadlineExceeded,
		Message: fmt.Sprintf("the call ran past its deadline of %s", d),
		Hint:    "Ask for less work in one call, such as a smaller file range or a narrower pattern"}
}

func internalError(msg string) *tool.Error {
	return &tool.Error{Code: tool.CodeInternal, Message: msg, Hint: "Try again; if it keeps failing, tell the operator"}
}

// newID returns a random 128-bit id in hex.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
