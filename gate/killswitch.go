package gate

import (
	"context"
	"time"

	"airlock.dev/airlock/tool"
)

// KillPoll is how often the kill switch is read while a call executes:
// work in flight (a sandboxed command, a fetch) stops within about this
// long of airlock kill, whichever process or replica set it.
const KillPoll = 200 * time.Millisecond

// loop refuses a call in a killed session, or while every session is
// killed. The step, token, cost and time budgets are charged per step by
// the agent loop, which alone knows what a step is.
func (g *Gate) loop(ctx context.Context, c *call) outcome {
	if g.opts.Sessions == nil || !c.execute {
		return passOn(skipped)
	}
	// One read of the session gives its kill flags, and refreshes the
	// provenance cache on the way; the intent stage may have read it
	// already.
	if c.state == nil {
		st, err := g.prov.session(c.Session).refresh(ctx, g.opts.Sessions, c.Session)
		if err != nil {
			c.note = err.Error()
			return endCall(failed, internalError("the session store failed"))
		}
		c.state = &st
	}
	all := c.state.KillAll
	killed := all || c.state.Session.Killed
	if killed {
		return endCall(denied, KilledError(all))
	}
	return passOn(passed)
}

// killedCause is the cause of a context the kill switch ended.
type killedCause struct{ all bool }

func (k *killedCause) Error() string { return KilledError(k.all).Message }

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
