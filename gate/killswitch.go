package gate

import (
	"context"
	"errors"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// loop refuses a call in a killed session, or while every session is
// killed. The step, token, cost and time budgets are charged per step by
// the agent loop, which alone knows what a step is.
func (g *Gate) loop(ctx context.Context, c *call) outcome {
	if g.opts.Sessions == nil || !c.execute {
		return passOn(skipped)
	}
	all, err := g.opts.Sessions.KillAll(ctx)
	if err != nil {
		c.note = err.Error()
		return endCall(failed, internalError("the session store failed"))
	}
	killed := all
	if !killed {
		s, err := g.opts.Sessions.Session(ctx, c.Session)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			c.note = err.Error()
			return endCall(failed, internalError("the session store failed"))
		default:
			killed = s.Killed
		}
	}
	if killed {
		return endCall(denied, KilledError(all))
	}
	return passOn(passed)
}

// KilledError is the error value of a call or run stopped by the kill
// switch; all says whether every session was killed, or this one.
func KilledError(all bool) *tool.Error {
	which := "this session was killed"
	if all {
		which = "every session was killed"
	}
	return &tool.Error{Code: tool.CodeKilled, Message: which + " (airlock kill); nothing more runs in it",
		Hint: "Stop: a person stopped this work. Start a new session once the kill is lifted (airlock kill --clear)"}
}
