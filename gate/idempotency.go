package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/tool"
)

// idempotency keys a call with side effects in the ledger before it runs.
// A repeat of a completed call gets the stored result and runs nothing; a
// duplicate of one still running is refused with in_progress. A check
// keys nothing.
func (g *Gate) idempotency(ctx context.Context, c *call) outcome {
	if c.entry.tool.Effect == tool.EffectRead || g.opts.Ledger == nil || !c.execute {
		return passOn(skipped)
	}
	key, err := ledger.KeyFor(ledger.Call{Session: c.Session, Step: c.Step, Tool: c.Tool, Args: c.Args, IdempotencyKey: c.IdempotencyKey})
	if err != nil {
		return endCall(denied, asToolError(err, "the call could not be keyed"))
	}
	t, err := g.opts.Ledger.Acquire(ctx, key, g.opts.Owner)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			return endCall(denied, te)
		}
		c.note = err.Error()
		return endCall(failed, internalError("the idempotency ledger failed"))
	}
	if t.Outcome == ledger.Completed {
		var stored tool.Result
		if err := json.Unmarshal(t.Result, &stored); err != nil {
			c.note = "ledger: the stored result is unreadable: " + err.Error()
			return endCall(failed, internalError("the stored result of this call could not be read"))
		}
		c.result, c.replayed = stored, true
		c.note = "ledger: replayed the stored result of " + key.ID
		return passOn(replayed)
	}
	c.ticket = t
	c.Retry, c.UpstreamKey = t.Retry, t.UpstreamKey
	return passOn(passed)
}

// finishTicket records the outcome of a call that held a ledger key: its
// result when it succeeded, else a failure that may be tried again (an
// error value means the tool refused or could not act, a deadline that it
// may not have finished).
func (g *Gate) finishTicket(c *call) {
	t := c.ticket
	if t == nil {
		return
	}
	ctx := context.Background() // the outcome is recorded even past the call's deadline: the effect ran
	var err error
	if c.acted {
		// The effect happened, even if a later stage refused its result
		// (too large, withheld): a repeat gets this same answer and must
		// not run it again.
		stored, _ := json.Marshal(tool.Result{Content: c.result.Content, Error: c.result.Error, Provenance: c.result.Provenance})
		err = t.Complete(ctx, stored)
	} else {
		msg := "the call did not complete"
		if c.result.Error != nil {
			msg = string(c.result.Error.Code) + ": " + c.result.Error.Message
		}
		err = t.Fail(ctx, msg, true)
	}
	if err != nil {
		c.note = strings.TrimPrefix(c.note+"; ", "; ") + "ledger: recording the outcome failed: " + err.Error()
	}
}

func asToolError(err error, msg string) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	return internalError(msg)
}
