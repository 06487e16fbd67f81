// Package agent is the bounded loop: a planner proposes tool calls, the
// gate decides each, and the result, wrapped in its envelope, goes back to
// the planner, until the planner finishes or a bound ends the run.
//
// Every run ends with a Summary whose Reason says why, never with a panic
// or a bare error: finished, max_steps, repetition, budget, deadline,
// killed, needs_input, waiting_approval or degraded. The bounds are Limits:
// steps, tool calls per step, repeated calls, tokens and money (reserved
// before each model call), a wall-clock deadline, and a kill switch read
// from the store at every step and while tools run.
//
//	a, _ := agent.New(&agent.Options{Gate: g, Planner: chain, Sessions: db, Runs: db, Approvals: db})
//	sum := a.Run(ctx, "", "Sum the totals in invoices/*.csv")
//	fmt.Println(sum.Reason, sum.Answer)
//
// A planner is any model.Client: a model.Chain (function calling, with
// retries, fallbacks and degradation), or Scripted, a deterministic list
// of answers for tests and replay. The planning tools (todo, scratchpad,
// ask_user, finish) run in process; every other call goes through the gate.
// Documents from the tools named in Options.Quarantine are read by a
// quarantined reader, a model call with no tools whose answer is
// schema-validated data, so that the planner never reads their text.
//
// An ask parks the run in store.RunWaitingApproval with a checkpoint; an
// interactive run asks at once (Options.Approve), a headless one ends with
// reason waiting_approval, and Resume continues it, also in another
// process, once a person decided.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// Reason says why a run ended.
type Reason string

const (
	ReasonFinished        Reason = "finished"         // the planner gave its answer
	ReasonMaxSteps        Reason = "max_steps"        // the step budget is spent
	ReasonRepetition      Reason = "repetition"       // the planner insisted on a call already refused as a repeat
	ReasonBudget          Reason = "budget"           // the token or cost budget cannot cover another model call
	ReasonDeadline        Reason = "deadline"         // the run's wall-clock deadline passed
	ReasonKilled          Reason = "killed"           // the kill switch (airlock kill) stopped it
	ReasonNeedsInput      Reason = "needs_input"      // ask_user, with no one to ask; Summary.Question holds it
	ReasonWaitingApproval Reason = "waiting_approval" // parked on Summary.Approval; resume it once decided
	ReasonDegraded        Reason = "degraded"         // no model could answer, or the run could not go on
)

// Limits bound one run. A zero field means its default (the Default...
// constants); a field that may be unbounded says so.
type Limits struct {
	// MaxSteps is the most planner calls a session makes, resumes
	// included (the store counts them).
	MaxSteps int
	// MaxCallsPerStep is the most tool calls one planner answer may
	// propose; the rest are refused as error values.
	MaxCallsPerStep int
	// MaxTokens bounds the tokens the session spends, input and output;
	// negative means unbounded.
	MaxTokens int64
	// MaxCost bounds the money the session spends; zero means unbounded.
	MaxCost model.PicoUSD
	// Deadline bounds the run's wall-clock time.
	Deadline time.Duration
	// ToolTimeout bounds one tool call (the gate has its own, too).
	ToolTimeout time.Duration
	// AnswerTokens is the MaxTokens of each model call.
	AnswerTokens int
	// ContextTokens is the budget the planner's messages are trimmed to,
	// by estimate (EstimateTokens).
	ContextTokens int
	// KillPoll is how often the kill switch is read while a step runs.
	KillPoll time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxSteps        = 25
	DefaultMaxCallsPerStep = 8
	DefaultMaxTokens       = 500_000
	DefaultDeadline        = 10 * time.Minute
	DefaultToolTimeout     = gate.DefaultTimeout
	DefaultAnswerTokens    = model.DefaultMaxTokens
	DefaultContextTokens   = 64_000
	// DefaultKillPoll keeps a kill within a second of being set, command
	// kill included: the poll, then the sandbox's kill of the tree.
	DefaultKillPoll = 200 * time.Millisecond
)

// Hard bounds of Limits: a value past them is refused by New.
const (
	MaxMaxSteps        = 10_000
	MaxMaxCallsPerStep = 64
	MinAnswerTokens    = 16 // a call that cannot afford this many answer tokens is not made
	MinContextTokens   = 1_000
	// MaxResultBytes is the most of one tool result kept in the
	// conversation; a longer one keeps its head and tail, the cut said.
	MaxResultBytes = 32 << 10
	// MaxGoalBytes bounds the goal.
	MaxGoalBytes = 64 << 10
)

func (l Limits) withDefaults() (Limits, error) {
	orDefault(&l.MaxSteps, DefaultMaxSteps)
	orDefault(&l.MaxCallsPerStep, DefaultMaxCallsPerStep)
	orDefault(&l.AnswerTokens, DefaultAnswerTokens)
	orDefault(&l.ContextTokens, DefaultContextTokens)
	orDefault(&l.MaxTokens, DefaultMaxTokens)
	orDefault(&l.Deadline, DefaultDeadline)
	orDefault(&l.ToolTimeout, DefaultToolTimeout)
	orDefault(&l.KillPoll, DefaultKillPoll)
	switch {
	case l.MaxSteps < 1 || l.MaxSteps > MaxMaxSteps:
		return l, fmt.Errorf("agent: MaxSteps must be 1 to %d, not %d", MaxMaxSteps, l.MaxSteps)
	case l.MaxCallsPerStep < 1 || l.MaxCallsPerStep > MaxMaxCallsPerStep:
		return l, fmt.Errorf("agent: MaxCallsPerStep must be 1 to %d, not %d", MaxMaxCallsPerStep, l.MaxCallsPerStep)
	case l.AnswerTokens < MinAnswerTokens || l.AnswerTokens > model.MaxRequestMaxTokens:
		return l, fmt.Errorf("agent: AnswerTokens must be %d to %d, not %d", MinAnswerTokens, model.MaxRequestMaxTokens, l.AnswerTokens)
	case l.ContextTokens < MinContextTokens:
		return l, fmt.Errorf("agent: ContextTokens must be at least %d, not %d", MinContextTokens, l.ContextTokens)
	case l.MaxTokens > store.MaxCounter:
		return l, fmt.Errorf("agent: MaxTokens must be at most %d (store.MaxCounter)", int64(store.MaxCounter))
	case l.MaxCost < 0:
		return l, errors.New("agent: MaxCost must not be negative")
	case l.Deadline < 0 || l.ToolTimeout < 0 || l.KillPoll < 0:
		return l, errors.New("agent: durations must not be negative")
	}
	return l, nil
}

func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// Options configures an Agent.
type Options struct {
	// Gate decides and runs every tool call. Required.
	Gate *gate.Gate
	// Planner proposes the calls: a model.Chain, or Scripted. Required.
	Planner model.Client
	// Reader is the quarantined reader's model (Planner when nil). It is
	// called with no tools.
	Reader model.Client
	// Sessions charges steps, tokens and money, and holds the kill
	// switch. Required: a run with no durable budget is not bounded.
	Sessions store.Sessions
	// Runs keeps checkpoints, so that a paused run resumes in another
	// process. Nil: a run that parks on an approval cannot be resumed.
	Runs store.Runs
	// Approvals is where Approve's decision is written (required with
	// Approve).
	Approvals store.Approvals
	// Models are the planner's model specs (PROVIDER:MODEL[@BASE_URL]),
	// which the checkpoint keeps with Prices so that a run resumes with
	// the models and prices it started with (SavedSetup). A spec holds no
	// key (model.ParseSpec refuses userinfo); keys are never stored.
	Models []string
	// Prices turns usage into money; model.DefaultPrices() when nil.
	Prices model.PriceTable
	// ReservePrice is what a call is reserved at before it is made: the
	// dearest model the planner may fall back to. Zero means the dearest
	// price in Prices, so that a reservation never underestimates a known
	// model. An answer from a model missing from Prices has no known cost:
	// the summary's cost_usd is then null and names the model (Unpriced),
	// and a run with a money budget ends, as the budget cannot be kept.
	ReservePrice model.Price
	Limits       Limits
	// Role and Mode are the gate's, for every call of the run.
	Role, Mode string
	// Quarantine names the tools whose results are documents from outside
	// (DefaultQuarantine when nil; empty to read none quarantined).
	Quarantine []string
	// Ask answers ask_user on a terminal. Nil: the run ends with reason
	// needs_input.
	Ask func(ctx context.Context, question string) (string, error)
	// Approve asks a person about a parked call on a terminal and
	// returns the decision. Nil: the run ends with reason
	// waiting_approval.
	Approve func(ctx context.Context, req *tool.ApprovalRequest, reason string) (bool, error)
	// Decider names who decided through Approve, for the store.
	Decider string
	// OnEvent receives the run's progress, in order, from the run's
	// goroutine.
	OnEvent func(Event)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultQuarantine lists the tools read through the quarantined reader
// by default: pages from the web.
var DefaultQuarantine = []string{"web_fetch"}

// Agent runs sessions. It is safe for concurrent use; each Run is its own.
type Agent struct {
	opts       Options
	lim        Limits
	tools      map[string]*tool.Tool
	defs       []model.ToolDef
	quarantine map[string]bool
	reserve    model.Price
}

// New checks the options.
func New(opts *Options) (*Agent, error) {
	if opts == nil || opts.Gate == nil || opts.Planner == nil || opts.Sessions == nil {
		return nil, errors.New("agent: Options.Gate, Planner and Sessions are required")
	}
	if opts.Approve != nil && opts.Approvals == nil {
		return nil, errors.New("agent: Options.Approve needs Options.Approvals to record the decision")
	}
	a := &Agent{opts: *opts, tools: map[string]*tool.Tool{}, quarantine: map[string]bool{}}
	var err error
	if a.lim, err = opts.Limits.withDefaults(); err != nil {
		return nil, err
	}
	if a.opts.Reader == nil {
		a.opts.Reader = a.opts.Planner
	}
	if a.opts.Prices == nil {
		a.opts.Prices = model.DefaultPrices()
	}
	if a.opts.Now == nil {
		a.opts.Now = time.Now
	}
	a.reserve = opts.ReservePrice
	if a.reserve == (model.Price{}) {
		for _, p := range a.opts.Prices {
			a.reserve.Input = max(a.reserve.Input, p.Input)
			a.reserve.Output = max(a.reserve.Output, p.Output)
		}
	}
	q := opts.Quarantine
	if q == nil {
		q = DefaultQuarantine
	}
	for _, t := range opts.Gate.Tools() {
		if planningTools[t.Name] {
			return nil, fmt.Errorf("agent: the gate registers %q, a name the agent's planning tools take", t.Name)
		}
		a.tools[t.Name] = t
		a.defs = append(a.defs, model.ToolDef{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	for _, name := range q {
		if a.tools[name] == nil {
			continue // a quarantined tool this gate does not offer is never called
		}
		a.quarantine[name] = true
	}
	a.defs = append(a.defs, planningDefs()...)
	return a, nil
}

// Summary is how a run ended: the last line of `airlock run --json`.
type Summary struct {
	Type    string `json:"type"` // always "summary"
	Success bool   `json:"success"`
	Answer  string `json:"answer"`
	// Model is the model that gave the last answer.
	Model     string `json:"model"`
	Steps     int64  `json:"steps"`
	Attempts  int    `json:"attempts"`
	Fallbacks int    `json:"fallbacks"`
	// Denials counts the calls refused: by the gate, or by the loop's own
	// bounds (repeats, too many calls in a step).
	Denials int   `json:"denials"`
	Tokens  int64 `json:"tokens"`
	// Cost is what the answers of priced models cost; CostUSD is the
	// run's cost, unknown (null) when a model in Unpriced answered.
	Cost     model.PicoUSD `json:"-"`
	CostUSD  USD           `json:"cost_usd"`
	Unpriced []string      `json:"unpriced_models,omitempty"`
	Session  string        `json:"session"`
	Reason   Reason        `json:"reason"`
	// Detail says more about the reason, for a person.
	Detail string `json:"detail,omitempty"`
	// Approval is the approval a waiting run is parked on.
	Approval string `json:"approval,omitempty"`
	// Question is what ask_user asked, when the run ended needs_input.
	Question string `json:"question,omitempty"`
}

// USD is an amount of money that may be unknown: in JSON an exact number
// of dollars, or null when a price was missing. An unknown cost is never
// guessed.
type USD struct {
	Amount model.PicoUSD
	Known  bool
}

// KnownUSD is the known amount p.
func KnownUSD(p model.PicoUSD) USD { return USD{Amount: p, Known: true} }

func (u USD) MarshalJSON() ([]byte, error) {
	if !u.Known {
		return []byte("null"), nil
	}
	return []byte(u.Amount.String()), nil
}

// String writes the amount as dollars ($0.0042), or "unknown".
func (u USD) String() string {
	if !u.Known {
		return "unknown"
	}
	return "$" + u.Amount.String()
}

// Event is one line of a run's progress.
type Event struct {
	Type EventType `json:"type"`
	Step int64     `json:"step"`
	// Tool, Decision and Code describe a tool call (EventTool); Code is
	// the error value's, if any.
	Tool     string `json:"tool,omitempty"`
	Decision string `json:"decision,omitempty"`
	Code     string `json:"code,omitempty"`
	// Model and Attempts describe a model answer (EventModel).
	Model     string `json:"model,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	Fallbacks int    `json:"fallbacks,omitempty"`
	Tokens    int64  `json:"tokens,omitempty"`
	// CostUSD is what the answer cost (EventModel): null when the model
	// has no known price.
	CostUSD *USD `json:"cost_usd,omitempty"`
	// Approval names a parked call (EventApproval).
	Approval string `json:"approval,omitempty"`
	Text     string `json:"text,omitempty"`
}

// EventType names an Event.
type EventType string

const (
	EventModel     EventType = "model"      // the planner or reader answered
	EventToolStart EventType = "tool_start" // a tool call is about to run
	EventTool      EventType = "tool"       // a tool call's outcome
	EventApproval  EventType = "approval"   // a call waits for a person
	EventNote      EventType = "note"       // anything else worth a line: trims, fallbacks, repeats
)

// NewSession returns a fresh random session id.
func NewSession() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
