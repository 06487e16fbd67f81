package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// Codes of the error values the loop itself gives the planner.
const (
	CodeRepeatedCall tool.Code = "repeated_call"  // the same call (tool and canonical arguments) already ran, and nothing changed since
	CodeTooManyCalls tool.Code = "too_many_calls" // the answer proposed more calls than Limits.MaxCallsPerStep
	CodeReaderFailed tool.Code = "reader_failed"  // the quarantined reader could not read the document
	CodeDeniedByUser tool.Code = "denied_by_user" // a person denied the parked call
)

// checkpointVersion is the shape of state in a checkpoint.
const checkpointVersion = 2

// state is one run's whole state: what a checkpoint holds.
type state struct {
	Version int    `json:"version"`
	Session string `json:"session"`
	Goal    string `json:"goal"`
	Role    string `json:"role,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Models and Prices are what the run plans with (Options.Models and
	// Prices), for a resume in another process.
	Models []string         `json:"models,omitempty"`
	Prices model.PriceTable `json:"prices,omitempty"`
	// Messages is the conversation after the goal, trimmed with it.
	Messages []model.Message `json:"messages"`
	Trimmed  int             `json:"trimmed,omitempty"`
	// Pending are the calls of the current step not yet answered; a
	// parked run's first one waits for Approval.
	Pending  []model.ToolCall `json:"pending,omitempty"`
	Approval string           `json:"approval,omitempty"`
	Step     int64            `json:"step"`
	// Tokens and Cost are what this run spent; Charged is the part of
	// Cost written to the store, in whole micro-dollars rounded up.
	Tokens  int64         `json:"tokens"`
	Cost    model.PicoUSD `json:"cost"`
	Charged int64         `json:"charged_micro_usd"`
	// Unpriced names the models that answered with no known price: Cost
	// leaves their answers out, so the run's cost is unknown.
	Unpriced  []string `json:"unpriced,omitempty"`
	Attempts  int      `json:"attempts"`
	Fallbacks int      `json:"fallbacks"`
	Denials   int      `json:"denials"`
	Model     string   `json:"model,omitempty"`
	// LastEstimate and LastInput are the last model call's input tokens
	// as estimated and as reported, which calibrate the next reservation.
	LastEstimate int64 `json:"last_estimate,omitempty"`
	LastInput    int64 `json:"last_input,omitempty"`
	// Ran holds the calls run since the last call that changed anything;
	// Refused the calls refused as repeats.
	Ran     map[string]bool `json:"ran,omitempty"`
	Refused map[string]bool `json:"refused,omitempty"`
	Todo    []todoItem      `json:"todo,omitempty"`
	Scratch string          `json:"scratch,omitempty"`
}

// errKilled and errDeadline are the causes a run's context ends with.
var (
	errKilled   = errors.New("agent: killed")
	errDeadline = errors.New("agent: deadline")
)

// ending is how a run ends, built where the reason is found.
type ending struct {
	reason   Reason
	answer   string
	detail   string
	question string
}

// Run starts a session on goal and drives it to its end. session is the
// session's id (NewSession when empty); it must not have run before. The
// error is for input refused before anything ran.
func (a *Agent) Run(ctx context.Context, session, goal string) (*Summary, error) {
	if session == "" {
		session = NewSession()
	}
	if err := store.ValidSessionID(session); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	switch {
	case strings.TrimSpace(goal) == "":
		return nil, errors.New("agent: the goal is empty; say what the run should do")
	case len(goal) > MaxGoalBytes:
		return nil, fmt.Errorf("agent: the goal is %d bytes, over the limit of %d (MaxGoalBytes)", len(goal), MaxGoalBytes)
	case !utf8.ValidString(goal):
		return nil, errors.New("agent: the goal is not valid UTF-8")
	}
	if a.opts.Runs != nil {
		if _, err := a.opts.Runs.Run(ctx, session); err == nil {
			return nil, fmt.Errorf("agent: session %q has run before; resume it (airlock resume %s) or start a new one", session, session)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("agent: reading the run's checkpoint: %w", err)
		}
	}
	st := &state{Version: checkpointVersion, Session: session, Goal: goal, Role: a.opts.Role, Mode: a.opts.Mode,
		Models: a.opts.Models, Prices: a.opts.Prices, Ran: map[string]bool{}, Refused: map[string]bool{}}
	// The goal's values are the user's: the session's provenance, which
	// the gate keeps in the store, has them from here on.
	if err := a.opts.Gate.ObserveUser(ctx, session, goal); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return a.drive(ctx, st), nil
}

// Resume continues a session parked on an approval, in this process or
// another: once approved, the parked call is made again (the gate lets it
// run once); once denied or expired, the planner is told so. A run whose
// approval is still pending ends again with waiting_approval.
func (a *Agent) Resume(ctx context.Context, session string) (*Summary, error) {
	if a.opts.Runs == nil || a.opts.Approvals == nil {
		return nil, errors.New("agent: resuming needs Options.Runs and Options.Approvals")
	}
	r, err := a.opts.Runs.Run(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("agent: session %q has no run to resume", session)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: reading the run's checkpoint: %w", err)
	}
	if r.State != store.RunWaitingApproval {
		return nil, fmt.Errorf("agent: session %q is %s, not waiting for an approval; only a parked run resumes", session, r.State)
	}
	st := &state{}
	if err := json.Unmarshal(r.Checkpoint, st); err != nil || st.Version != checkpointVersion || st.Session != session || len(st.Pending) == 0 {
		return nil, fmt.Errorf("agent: session %q's checkpoint is not one this version can resume", session)
	}
	// From here on the run plans with this agent's models and prices,
	// which its next checkpoint records.
	st.Models, st.Prices = a.opts.Models, a.opts.Prices
	if st.Ran == nil {
		st.Ran = map[string]bool{}
	}
	if st.Refused == nil {
		st.Refused = map[string]bool{}
	}
	ap, err := a.opts.Approvals.Approval(ctx, st.Approval, a.opts.Now())
	if err != nil {
		return nil, fmt.Errorf("agent: reading approval %s: %w", st.Approval, err)
	}
	switch ap.Status {
	case store.StatusPending:
		return a.summary(st, ending{reason: ReasonWaitingApproval, detail: "approval " + ap.ID + " is still pending"}), nil
	case store.StatusApproved:
		// The parked call is made again below; the gate consumes the approval.
	default:
		st.Denials++
		a.answer(st, st.Pending[0], deniedResult(ap.Status))
		st.Pending = st.Pending[1:]
	}
	st.Approval = ""
	return a.drive(ctx, st), nil
}

// Setup is what a run started with that its checkpoint keeps: the
// planner's model specs (Options.Models) and the prices.
type Setup struct {
	Models []string
	Prices model.PriceTable
}

// SavedSetup reads the setup of session's run from its checkpoint, so that
// a resume can build the same planner without being told the models again.
// Models is empty for a run that named none (a scripted one).
func SavedSetup(ctx context.Context, runs store.Runs, session string) (Setup, error) {
	r, err := runs.Run(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return Setup{}, fmt.Errorf("agent: session %q has no run to resume", session)
	}
	if err != nil {
		return Setup{}, fmt.Errorf("agent: reading the run's checkpoint: %w", err)
	}
	var st state
	if err := json.Unmarshal(r.Checkpoint, &st); err != nil || st.Version != checkpointVersion {
		return Setup{}, fmt.Errorf("agent: session %q's checkpoint is not one this version can resume", session)
	}
	return Setup{Models: st.Models, Prices: st.Prices}, nil
}

func deniedResult(status store.Status) toolOutput {
	msg := "a person denied this call"
	if status != store.StatusDenied {
		msg = "nobody approved this call in time (its approval is " + string(status) + ")"
	}
	return errorOutput(&tool.Error{Code: CodeDeniedByUser, Message: msg,
		Hint: "Do not make this call again; finish with what you have, or take another way that needs no approval"})
}

// drive runs steps until the run ends.
func (a *Agent) drive(parent context.Context, st *state) *Summary {
	ctx, cancel := context.WithTimeoutCause(parent, a.lim.Deadline, errDeadline)
	defer cancel()
	ctx, kill := context.WithCancelCause(ctx)
	defer kill(nil)
	// The kill switch ends the run's context, and so a tool call in
	// flight too: the sandbox kills the command's whole tree when its
	// context ends.
	defer store.WatchKill(ctx, a.opts.Sessions, st.Session, a.lim.KillPoll, func(bool) { kill(errKilled) })()
	a.save(ctx, st, store.RunRunning)
	for {
		if len(st.Pending) > 0 {
			if end := a.runPending(ctx, st); end != nil {
				return a.finish(ctx, st, *end)
			}
			a.save(ctx, st, store.RunRunning)
			continue
		}
		if end := stopped(ctx); end != nil {
			return a.finish(ctx, st, *end)
		}
		req := &model.Request{Messages: a.messages(st), Tools: a.defs}
		resp, end := a.complete(ctx, st, a.opts.Planner, req, a.lim.AnswerTokens, func() *ending { return a.chargeStep(ctx, st) })
		if end != nil {
			return a.finish(ctx, st, *end)
		}
		st.Messages = append(st.Messages, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			return a.finish(ctx, st, ending{reason: ReasonFinished, answer: resp.Text})
		}
		st.Pending = resp.ToolCalls
	}
}

// chargeStep counts a step against the session's budget in the store,
// which also reads the kill switch.
func (a *Agent) chargeStep(ctx context.Context, st *state) *ending {
	s, err := a.opts.Sessions.ChargeSession(ctx, st.Session, store.Charge{Steps: 1, MaxSteps: int64(a.lim.MaxSteps)}, a.opts.Now())
	switch {
	case errors.Is(err, store.ErrKilled):
		return &ending{reason: ReasonKilled, detail: err.Error()}
	case errors.Is(err, store.ErrOverBudget):
		return &ending{reason: ReasonMaxSteps, detail: fmt.Sprintf("the session has taken its %d steps (Limits.MaxSteps)", a.lim.MaxSteps)}
	case err != nil:
		if end := stopped(ctx); end != nil {
			return end
		}
		return &ending{reason: ReasonDegraded, detail: "the session store failed: " + err.Error()}
	}
	st.Step = s.Step
	return nil
}

// stopped says whether the run's context ended, and why.
func stopped(ctx context.Context) *ending {
	if ctx.Err() == nil {
		return nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errKilled):
		return &ending{reason: ReasonKilled, detail: "the kill switch was set (airlock kill)"}
	case errors.Is(cause, errDeadline):
		return &ending{reason: ReasonDeadline, detail: "the run passed its deadline (Limits.Deadline)"}
	default:
		return &ending{reason: ReasonDeadline, detail: "the run was stopped: " + cause.Error()}
	}
}

// runPending answers the current step's calls in order. A call that ends
// the run (finish, a park, a kill) stops it there; a parked call stays
// first in Pending.
func (a *Agent) runPending(ctx context.Context, st *state) *ending {
	if len(st.Pending) > a.lim.MaxCallsPerStep {
		for _, tc := range st.Pending[a.lim.MaxCallsPerStep:] {
			st.Denials++
			a.answer(st, tc, errorOutput(&tool.Error{Code: CodeTooManyCalls,
				Message: fmt.Sprintf("one answer may propose at most %d calls (Limits.MaxCallsPerStep); this one was not made", a.lim.MaxCallsPerStep),
				Hint:    "Propose fewer calls at once; make this one in a later step if it is still needed"}))
		}
		st.Pending = st.Pending[:a.lim.MaxCallsPerStep]
	}
	for len(st.Pending) > 0 {
		tc := st.Pending[0]
		out, end := a.call(ctx, st, tc)
		if end != nil {
			return end
		}
		a.answer(st, tc, out)
		st.Pending = st.Pending[1:]
	}
	return nil
}

// toolOutput is what the planner is told of one call.
type toolOutput struct {
	text  string
	isErr bool
}

func errorOutput(e *tool.Error) toolOutput {
	b, _ := json.Marshal(struct {
		Error *tool.Error `json:"error"`
	}{e})
	return toolOutput{text: string(b), isErr: true}
}

// answer appends the tool result message of tc.
func (a *Agent) answer(st *state, tc model.ToolCall, out toolOutput) {
	st.Messages = append(st.Messages, model.ToolResult(tc.ID, clip(out.text, MaxResultBytes), out.isErr))
}

// clip keeps the head and the tail of s within max bytes, saying what it
// cut: the tail holds an envelope's closing tag.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const tail = 512
	note := fmt.Sprintf("\n[... %d bytes cut to keep within %d (agent.MaxResultBytes) ...]\n", len(s)-max, max)
	head := max - tail - len(note)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + note + s[t:]
}

// callKey is a call's identity for the repetition guard: the tool and its
// canonical arguments (the raw text when they are not JSON).
func callKey(tc model.ToolCall) string {
	args, err := canon.JSON(tc.Args)
	if err != nil {
		args = tc.Args
	}
	return tc.Name + "\x00" + string(args)
}

// call makes one proposed call: a planning tool in process, anything else
// through the gate.
func (a *Agent) call(ctx context.Context, st *state, tc model.ToolCall) (toolOutput, *ending) {
	if planningTools[tc.Name] {
		return a.planning(ctx, st, tc)
	}
	key := callKey(tc)
	if st.Ran[key] {
		if st.Refused[key] {
			return toolOutput{}, &ending{reason: ReasonRepetition,
				detail: fmt.Sprintf("%s was proposed again with the same arguments after being refused as a repeat", tc.Name)}
		}
		st.Refused[key] = true
		st.Denials++
		a.event(Event{Type: EventNote, Step: st.Step, Tool: tc.Name, Code: string(CodeRepeatedCall), Text: "a repeated call was refused"})
		return errorOutput(&tool.Error{Code: CodeRepeatedCall,
			Message: tc.Name + " already ran with exactly these arguments, and nothing has changed since; it would give the same result",
			Hint:    "Use the earlier result, or change the arguments; proposing it again ends the run"}), nil
	}
	res, end := a.gateCall(ctx, st, tc.Name, tc.Args)
	if end != nil {
		return toolOutput{}, end
	}
	if res.Error != nil && tool.IsTransient(res.Error.Code) {
		if t := a.tools[tc.Name]; t != nil && t.Fallback != "" {
			a.event(Event{Type: EventNote, Step: st.Step, Tool: tc.Name, Code: string(res.Error.Code), Text: "failed transiently; calling its fallback " + t.Fallback})
			first := res.Error.Code
			if res, end = a.gateCall(ctx, st, t.Fallback, tc.Args); end != nil {
				return toolOutput{}, end
			}
			if res.Error == nil {
				res.Content = fmt.Sprintf("[%s failed (%s); this is the answer of its fallback tool %s]\n%s", tc.Name, first, t.Fallback, res.Content)
			}
		}
	}
	if res.Error != nil && res.Error.Code == tool.CodeApprovalRequired && res.Approval != nil {
		return a.approval(ctx, st, tc, res)
	}
	return a.output(ctx, st, tc, key, res)
}

// gateCall runs one call through the gate under the tool timeout, and
// notices a kill or the deadline that ended it.
func (a *Agent) gateCall(ctx context.Context, st *state, name string, args json.RawMessage) (tool.Result, *ending) {
	a.event(Event{Type: EventToolStart, Step: st.Step, Tool: name})
	cctx, cancel := context.WithTimeout(ctx, a.lim.ToolTimeout)
	res := a.opts.Gate.Call(cctx, tool.Call{Tool: name, Args: args, Session: st.Session, Role: st.Role, Mode: st.Mode,
		Step: st.Step, Goal: st.Goal}) // the user's words alone: never the model's own scratchpad or todo list
	cancel()
	ev := Event{Type: EventTool, Step: st.Step, Tool: name, Decision: res.Decision}
	if res.Error != nil {
		ev.Code = string(res.Error.Code)
	}
	a.event(ev)
	if end := stopped(ctx); end != nil {
		return res, end
	}
	if res.Error != nil && res.Error.Code == tool.CodeKilled {
		return res, &ending{reason: ReasonKilled, detail: res.Error.Message}
	}
	return res, nil
}

// output turns a gate result into what the planner is told, keeping the
// repetition guard and the provenance record up to date.
func (a *Agent) output(ctx context.Context, st *state, tc model.ToolCall, key string, res tool.Result) (toolOutput, *ending) {
	t := a.tools[tc.Name]
	if res.Error != nil {
		if res.Decision == "deny" || res.Decision == "ask" {
			st.Denials++
		}
		if !tool.IsTransient(res.Error.Code) {
			st.Ran[key] = true // the same arguments would be refused the same way
		}
		return errorOutput(res.Error), nil
	}
	if t != nil && t.Effect != tool.EffectRead {
		// The world changed: any earlier call may now answer differently.
		clear(st.Ran)
		clear(st.Refused)
	}
	st.Ran[key] = true
	if a.quarantine[tc.Name] {
		return a.read(ctx, st, tc.Name, res)
	}
	return toolOutput{text: res.Content}, nil
}

// approval handles a call the gate parked: ask a person now when there is
// one at a terminal, else park the run.
func (a *Agent) approval(ctx context.Context, st *state, tc model.ToolCall, res tool.Result) (toolOutput, *ending) {
	req := res.Approval
	a.event(Event{Type: EventApproval, Step: st.Step, Tool: tc.Name, Approval: req.ID, Text: res.Error.Message})
	if a.opts.Approve == nil {
		st.Approval = req.ID
		if err := a.save(ctx, st, store.RunWaitingApproval); err != nil {
			return toolOutput{}, &ending{reason: ReasonDegraded, detail: "the call waits for approval " + req.ID + ", but the run could not be parked to resume later: " + err.Error()}
		}
		return toolOutput{}, &ending{reason: ReasonWaitingApproval, detail: res.Error.Message}
	}
	ok, err := a.opts.Approve(ctx, req, res.Error.Message)
	if end := stopped(ctx); end != nil {
		return toolOutput{}, end
	}
	if err != nil {
		return toolOutput{}, &ending{reason: ReasonDegraded, detail: "asking for approval failed: " + err.Error()}
	}
	if _, err := a.opts.Approvals.DecideApproval(ctx, req.ID, ok, a.opts.Decider, a.opts.Now()); err != nil {
		return toolOutput{}, &ending{reason: ReasonDegraded, detail: "recording the approval failed: " + err.Error()}
	}
	if !ok {
		st.Denials++
		return deniedResult(store.StatusDenied), nil
	}
	res, end := a.gateCall(ctx, st, tc.Name, tc.Args)
	if end != nil {
		return toolOutput{}, end
	}
	return a.output(ctx, st, tc, callKey(tc), res)
}

// complete makes one model call within the token and cost budget: the
// call is reserved first (its input by estimate, scaled by how far the
// last estimate fell short of the provider's count, and its answer at
// maxAnswer, both at the reserve price) and its answer shrunk to what is
// left; it is not made at all when fewer than MinAnswerTokens fit. What it
// spent is charged to the session after. A budget can be passed only by
// an input the estimate undercounts: at the first call, or when a
// request grows by text the model's tokenizer splits finer than before.
//
// before, when not nil, runs once the reservation holds and before the
// call is made; an ending it returns ends the run instead.
func (a *Agent) complete(ctx context.Context, st *state, c model.Client, req *model.Request, maxAnswer int, before func() *ending) (*model.Response, *ending) {
	est := EstimateTokens(req.Messages, req.Tools)
	in := est
	if st.LastEstimate > 0 && st.LastInput > st.LastEstimate {
		// The provider counted more than the estimate last time: scale
		// this one the same way, so that a reservation keeps up with the
		// model's own tokenizer.
		in = est * st.LastInput / st.LastEstimate
	}
	answer := int64(maxAnswer)
	if a.lim.MaxTokens > 0 {
		answer = min(answer, a.lim.MaxTokens-st.Tokens-in)
	}
	if a.lim.MaxCost > 0 && a.reserve.Output > 0 {
		left := a.lim.MaxCost - st.Cost - model.PicoUSD(in)*a.reserve.Input
		answer = min(answer, int64(left/a.reserve.Output))
	}
	if a.lim.MaxCost > 0 && len(st.Unpriced) > 0 {
		return nil, &ending{reason: ReasonBudget, detail: fmt.Sprintf("no price is known for %s, so the money budget (Limits.MaxCost) cannot be kept", strings.Join(st.Unpriced, ", "))}
	}
	if answer < MinAnswerTokens {
		what := fmt.Sprintf("tokens: %d spent of %d (Limits.MaxTokens), and the next call needs about %d", st.Tokens, a.lim.MaxTokens, in+MinAnswerTokens)
		if a.lim.MaxCost > 0 && a.reserve.Output > 0 && (a.lim.MaxTokens <= 0 || a.lim.MaxTokens-st.Tokens-in >= MinAnswerTokens) {
			what = fmt.Sprintf("money: $%s spent of $%s (Limits.MaxCost), and the next call is reserved at more than what is left", st.Cost, a.lim.MaxCost)
		}
		return nil, &ending{reason: ReasonBudget, detail: "the budget cannot cover another model call; " + what}
	}
	if before != nil {
		if end := before(); end != nil {
			return nil, end
		}
	}
	r := *req
	r.MaxTokens = int(answer)
	resp, err := c.Complete(ctx, &r)
	if err != nil {
		if end := stopped(ctx); end != nil {
			return nil, end
		}
		return nil, &ending{reason: ReasonDegraded, detail: err.Error()}
	}
	a.account(ctx, st, resp)
	if resp.Usage.InputTokens > 0 {
		st.LastEstimate, st.LastInput = est, resp.Usage.InputTokens
	}
	if !resp.Success {
		detail := "every model failed"
		if resp.Reason != nil {
			detail = resp.Reason.Error()
		}
		return nil, &ending{reason: ReasonDegraded, answer: resp.Text, detail: detail}
	}
	return resp, nil
}

// account adds a model answer's tokens, cost and badge to the run, and
// charges the session with them (unbounded: they are spent already; the
// reservation is what keeps within the budget).
func (a *Agent) account(ctx context.Context, st *state, resp *model.Response) {
	used := resp.Usage.InputTokens + resp.Usage.OutputTokens
	st.Tokens += used
	c, priced := a.cost(resp)
	switch {
	case !priced:
		if name := pricedName(resp); !slices.Contains(st.Unpriced, name) {
			st.Unpriced = append(st.Unpriced, name)
		}
	case st.Cost > math.MaxInt64-c:
		// Saturating: an unbounded run that priced an overflow keeps the
		// largest cost rather than wrapping to a negative one.
		st.Cost = math.MaxInt64
	default:
		st.Cost += c
	}
	st.Attempts += resp.Badge.Attempts
	st.Fallbacks += len(resp.Badge.Fallbacks)
	if resp.Badge.Model != "" {
		st.Model = resp.Badge.Model
	}
	micro := (int64(st.Cost) + 999_999) / 1_000_000
	charge := store.Charge{Tokens: used, MicroUSD: micro - st.Charged}
	if _, err := a.opts.Sessions.ChargeSession(context.WithoutCancel(ctx), st.Session, charge, a.opts.Now()); err == nil {
		st.Charged = micro
	}
	cost := USD{Amount: c, Known: priced}
	a.event(Event{Type: EventModel, Step: st.Step, Model: resp.Badge.Model, Attempts: resp.Badge.Attempts,
		Fallbacks: len(resp.Badge.Fallbacks), Tokens: used, CostUSD: &cost})
}

// cost prices an answer by the model the provider named, else by the
// chain entry's model. ok is false when neither has a price: the cost is
// then unknown, never guessed.
func (a *Agent) cost(resp *model.Response) (c model.PicoUSD, ok bool) {
	p, ok := a.opts.Prices.Lookup(resp.Model)
	if !ok {
		if sp, err := model.ParseSpec(resp.Badge.Model); err == nil {
			p, ok = a.opts.Prices.Lookup(sp.Model)
		}
	}
	if !ok {
		return 0, false
	}
	c, err := p.Cost(resp.Usage)
	if err != nil {
		return model.PicoUSD(math.MaxInt64 / 4), true // beyond any budget: the run ends
	}
	return c, true
}

// pricedName is the name a price for resp's model is given under (the
// chain entry's model, as --price takes it), else the provider's name.
func pricedName(resp *model.Response) string {
	if sp, err := model.ParseSpec(resp.Badge.Model); err == nil {
		return sp.Model
	}
	if resp.Model != "" {
		return resp.Model
	}
	return "(unnamed model)"
}

// finish ends the run: the checkpoint records it, and the summary says it.
func (a *Agent) finish(ctx context.Context, st *state, end ending) *Summary {
	if end.reason != ReasonWaitingApproval {
		a.save(ctx, st, store.RunEnded)
	}
	return a.summary(st, end)
}

func (a *Agent) summary(st *state, end ending) *Summary {
	s := &Summary{Type: "summary", Success: end.reason == ReasonFinished, Answer: end.answer, Model: st.Model,
		Steps: st.Step, Attempts: st.Attempts, Fallbacks: st.Fallbacks, Denials: st.Denials, Tokens: st.Tokens,
		Cost: st.Cost, CostUSD: USD{Amount: st.Cost, Known: len(st.Unpriced) == 0}, Unpriced: st.Unpriced, Session: st.Session, Reason: end.reason, Detail: end.detail, Question: end.question}
	if end.reason == ReasonWaitingApproval {
		s.Approval = st.Approval
	}
	return s
}

// save writes the checkpoint; it outlives the run's context, so that a
// killed or timed-out run still records how it ended. A run with no Runs
// store keeps none.
func (a *Agent) save(ctx context.Context, st *state, rs store.RunState) error {
	if a.opts.Runs == nil {
		if rs == store.RunWaitingApproval {
			return errors.New("no run store is configured (Options.Runs)")
		}
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	r := store.Run{Session: st.Session, State: rs, Checkpoint: b, Updated: a.opts.Now()}
	if rs == store.RunWaitingApproval {
		r.Approval = st.Approval
	}
	if err := a.opts.Runs.SaveRun(context.WithoutCancel(ctx), r); err != nil {
		a.event(Event{Type: EventNote, Step: st.Step, Text: "the checkpoint could not be saved: " + err.Error()})
		return err
	}
	return nil
}

func (a *Agent) event(e Event) {
	if a.opts.OnEvent != nil {
		a.opts.OnEvent(e)
	}
}
