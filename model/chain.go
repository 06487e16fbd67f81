package model

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Entry is one model of a chain.
type Entry struct {
	// Name is what the badge shows, such as "openai:gpt-4o-mini"; unique
	// within a chain. It is also the key of the model's circuit breaker.
	Name string
	// Provider keys the concurrency and rate limits: entries with the same
	// Provider share them. New sets it to the provider and base URL.
	Provider string
	Client   Client
}

// MaxChainModels is the most models one chain may hold.
const MaxChainModels = 16

// DefaultDegradedText is the safe default answer of a chain whose models
// all failed: it proposes no tool call and claims nothing done, so a loop
// that shows it or stores it does no harm.
const DefaultDegradedText = "No language model could answer just now, so nothing was done. Please try again later."

// Options configures a Chain. A nil *Options, or a zero field, means the
// default.
type Options struct {
	Policy  *Policy
	Breaker *BreakerOptions
	// Limits are per provider (Entry.Provider); a provider not listed gets
	// DefaultLimits, and a nil DefaultLimits means the package defaults.
	Limits        map[string]*Limits
	DefaultLimits *Limits
	// DegradedText replaces DefaultDegradedText.
	DegradedText string
	// Now is the clock of the breakers (time.Now when nil).
	Now func() time.Time
}

// Chain asks its models in order, each under the retry policy, its
// provider's limits and its own circuit breaker, and degrades to a safe
// default answer when all fail. It is safe for concurrent use and
// implements Client.
type Chain struct {
	entries  []Entry
	breakers []*breaker
	limiters []*limiter
	policy   Policy
	degraded string
}

// NewChain builds a chain of the entries, the first being the primary.
func NewChain(entries []Entry, opts *Options) (*Chain, error) {
	if len(entries) == 0 {
		return nil, newError(CodeInvalidRequest, nil, "a chain needs at least one model")
	}
	if len(entries) > MaxChainModels {
		return nil, newError(CodeInvalidRequest, nil, "a chain holds at most %d models (MaxChainModels); %d were given", MaxChainModels, len(entries))
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	c := &Chain{policy: o.Policy.withDefaults(), degraded: DefaultDegradedText}
	if o.DegradedText != "" {
		c.degraded = o.DegradedText
	}
	seen := map[string]bool{}
	byProvider := map[string]*limiter{}
	for i, e := range entries {
		switch {
		case e.Client == nil:
			return nil, newError(CodeInvalidRequest, nil, "model %d (%q) has no Client", i, e.Name)
		case e.Name == "":
			return nil, newError(CodeInvalidRequest, nil, "model %d has no Name", i)
		case seen[e.Name]:
			return nil, newError(CodeInvalidRequest, nil, "model %q is listed twice", e.Name)
		}
		seen[e.Name] = true
		l, ok := byProvider[e.Provider]
		if !ok {
			lim := o.DefaultLimits
			if pl, ok := o.Limits[e.Provider]; ok {
				lim = pl
			}
			l = newLimiter(lim)
			byProvider[e.Provider] = l
		}
		c.entries = append(c.entries, e)
		c.breakers = append(c.breakers, newBreaker(o.Breaker, now))
		c.limiters = append(c.limiters, l)
	}
	return c, nil
}

// Breaker returns the state of the named model's breaker.
func (c *Chain) Breaker(name string) (BreakerState, bool) {
	for i, e := range c.entries {
		if e.Name == name {
			return c.breakers[i].State(), true
		}
	}
	return 0, false
}

// Complete asks the models in order until one answers. The error is
// non-nil only when ctx is done (it is then an *Error with code canceled
// that wraps ctx.Err()); every other failure, an invalid request
// included, is a Response with Success false, the safe default text, no
// tool calls, and a Reason whose Attempts list what each model said.
func (c *Chain) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, canceled(err)
	}
	if err := checkRequest(req); err != nil {
		return c.degrade(err, Badge{}), nil
	}
	dctx, cancel := context.WithTimeout(ctx, c.policy.Deadline)
	defer cancel()

	var badge Badge
	var failures []*Error
	for i, e := range c.entries {
		resp, attempts, ferr := c.tryModel(dctx, i, req)
		badge.Attempts += attempts
		if ferr == nil {
			badge.Model = e.Name
			resp.Badge = badge
			resp.Success, resp.Reason = true, nil
			return resp, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, canceled(err)
		}
		ferr.Model = e.Name
		failures = append(failures, ferr)
		badge.Fallbacks = append(badge.Fallbacks, Fallback{From: e.Name, Reason: ferr.Code})
		if ferr.Code == CodeDeadlineExceeded {
			break // no time is left for the rest of the chain
		}
	}
	reason := newError(CodeAllModelsFailed, nil, "all %d models failed; the first said: %s", len(failures), failures[0].Message)
	if last := failures[len(failures)-1]; last.Code == CodeDeadlineExceeded {
		reason = newError(CodeDeadlineExceeded, nil, "the call ran past its deadline of %s (Policy.Deadline) after %d attempts", c.policy.Deadline, badge.Attempts)
	}
	reason.Attempts = failures
	return c.degrade(reason, badge), nil
}

func (c *Chain) degrade(reason *Error, badge Badge) *Response {
	return &Response{Text: c.degraded, StopReason: StopDegraded, Success: false, Reason: reason, Badge: badge}
}

func canceled(err error) *Error {
	return newError(CodeCanceled, err, "the caller's context is done: %v", err)
}

// tryModel asks model i up to MaxAttempts times. It returns the answer,
// or the failure that ended its turn, and how many attempts were sent.
func (c *Chain) tryModel(ctx context.Context, i int, req *Request) (*Response, int, *Error) {
	p, br, lim, cl := &c.policy, c.breakers[i], c.limiters[i], c.entries[i].Client
	attempts := 0
	var last *Error
	for n := range p.MaxAttempts {
		if !br.allow() {
			e := newError(CodeCircuitOpen, last, "the model's circuit breaker is open after repeated failures")
			if last != nil {
				e.Message += "; the last said: " + last.Message
			}
			return nil, attempts, e
		}
		release, err := lim.acquire(ctx)
		if err != nil {
			br.abandon()
			return nil, attempts, ctxFailure(ctx, p.Deadline, attempts)
		}
		resp, ferr := c.attempt(ctx, cl, req)
		release()
		attempts++
		if ferr == nil {
			br.record(true, true)
			return resp, attempts, nil
		}
		if ctx.Err() != nil {
			br.abandon()
			return nil, attempts, ctxFailure(ctx, p.Deadline, attempts)
		}
		br.record(false, ferr.health())
		last = ferr
		if !ferr.Retryable() || n == p.MaxAttempts-1 {
			return nil, attempts, ferr
		}
		wait := p.backoff(n)
		if ferr.hasRetryAfter {
			if ferr.RetryAfter > p.MaxRetryAfter {
				e := newError(CodeRetryAfterTooLong, ferr, "the provider asked to wait %s, over the %s honoured (Policy.MaxRetryAfter)", ferr.RetryAfter, p.MaxRetryAfter)
				e.Status, e.RetryAfter = ferr.Status, ferr.RetryAfter
				return nil, attempts, e
			}
			wait = ferr.RetryAfter
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return nil, attempts, ctxFailure(ctx, p.Deadline, attempts)
		}
	}
	return nil, attempts, last // not reached: the loop returns on its last turn
}

// attempt sends one attempt under the attempt timeout. A panic in the
// client is an internal_error here, not a crash of the caller.
func (c *Chain) attempt(ctx context.Context, cl Client, req *Request) (resp *Response, ferr *Error) {
	actx, cancel := context.WithTimeout(ctx, c.policy.AttemptTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			resp, ferr = nil, newError(CodeInternal, fmt.Errorf("panic: %v", r), "the model client panicked")
		}
	}()
	resp, err := cl.Complete(actx, req)
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		// Whatever the client made of it, the attempt's own timer fired.
		return nil, newError(CodeAttemptTimeout, err, "the attempt ran past %s (Policy.AttemptTimeout)", c.policy.AttemptTimeout)
	case err != nil:
		return nil, asError(err)
	case resp == nil:
		return nil, newError(CodeMalformedResponse, nil, "the client returned no response and no error")
	}
	return resp, nil
}

// ctxFailure says why ctx ended: the chain's own deadline, or the caller.
func ctxFailure(ctx context.Context, deadline time.Duration, attempts int) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return newError(CodeDeadlineExceeded, ctx.Err(), "the call ran past its deadline of %s (Policy.Deadline) after %d attempts of this model", deadline, attempts)
	}
	return canceled(ctx.Err())
}

// checkRequest enforces the Request limits before anything is sent.
func checkRequest(req *Request) *Error {
	switch {
	case req == nil:
		return newError(CodeInvalidRequest, nil, "the request is nil")
	case len(req.Messages) == 0:
		return newError(CodeInvalidRequest, nil, "the request has no messages")
	case len(req.Messages) > MaxMessages:
		return newError(CodeInvalidRequest, nil, "the request has %d messages, over the limit of %d (MaxMessages)", len(req.Messages), MaxMessages)
	case len(req.Tools) > MaxTools:
		return newError(CodeInvalidRequest, nil, "the request has %d tools, over the limit of %d (MaxTools)", len(req.Tools), MaxTools)
	case req.MaxTokens < 0 || req.MaxTokens > MaxRequestMaxTokens:
		return newError(CodeInvalidRequest, nil, "MaxTokens is %d; it must be between 0 (the default) and %d (MaxRequestMaxTokens)", req.MaxTokens, MaxRequestMaxTokens)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		case RoleTool:
			if m.ToolCallID == "" {
				return newError(CodeInvalidRequest, nil, "message %d is a tool result with no ToolCallID", i)
			}
		default:
			return newError(CodeInvalidRequest, nil, "message %d has unknown role %q", i, m.Role)
		}
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return newError(CodeInvalidRequest, nil, "tool %d has no name", i)
		}
	}
	return nil
}
