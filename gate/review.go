package gate

import (
	"context"
	"fmt"
	"time"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// ReviewRule is the rule an approval names when a command's changes wait
// on a person: the command ran on a copy-on-write view, and what it
// deleted or replaced is shown to them as a diff before anything reaches
// the workspace.
const ReviewRule = "review:destroy"

// reviewLabel sets the hash an approval of held changes is found by apart
// from that of an approval to run the call.
const reviewLabel = "airlock approval: held changes"

// reviewHash is approvalHash for the changes a call left held.
func (g *Gate) reviewHash(c *call, args []byte) string {
	parts := append([]string{reviewLabel, c.Tool, string(args), c.Session, c.Role, c.Mode}, c.paths...)
	return canon.Bind(g.opts.ApprovalKey, parts...)
}

// heldApproval looks, for a call whose tool can hold its changes, for an
// approval a person gave to changes an earlier run of the same call left
// held: the call then applies those (executeStage reopens them) instead of
// running again, in any mode. A call naming an approval of held changes a person
// denied ends with approval_denied, and one still pending is named again.
func (g *Gate) heldApproval(ctx context.Context, c *call) outcome {
	if c.entry.tool.Held == nil || g.opts.Approvals == nil || !c.execute {
		return passOn(passed)
	}
	args, err := canon.JSON(c.Args)
	if err != nil {
		return endCall(failed, internalError("the arguments could not be put in canonical form"))
	}
	hash := g.reviewHash(c, args)
	a, ok, err := g.opts.Approvals.ConsumeApproval(ctx, c.Tool, hash, time.Now())
	if err != nil {
		c.note = err.Error()
		return endCall(failed, internalError("the approvals store failed"))
	}
	if ok {
		c.note = "held changes approved by " + a.DecidedBy + " as approval " + a.ID
		c.held, c.personApproved = a.ID, true
		return passOn(allowed)
	}
	if c.Approval != "" {
		parked := &tool.Error{Code: tool.CodeApprovalRequired, Message: "the command's changes wait on a person's review"}
		out := g.earlierApproval(ctx, c, hash, parked)
		if out.end != nil && out.end.Code == tool.CodeApprovalDenied {
			// Denied: the held changes are discarded now rather than
			// when Recover prunes them.
			if res, err := c.entry.tool.Held(ctx, &c.Call, c.Approval); err == nil && res.Changes != nil {
				res.Changes.Discard()
			}
		}
		if out.end != nil {
			return out
		}
	}
	return passOn(passed)
}

// review ends the changes a call made on a copy-on-write view: a person
// approved these changes, or (within the snapshot limits) the call, or
// the changes only add and rewrite, or the mode allows destroying:
// applied; past a snapshot limit, or the mode (or the command policy)
// asks: held, unapplied, for a person who sees the diff; the mode denies:
// discarded.
func (g *Gate) review(ctx context.Context, c *call) outcome {
	ch := c.result.Changes
	if ch == nil {
		return passOn(skipped)
	}
	c.result.Changes = nil
	d := policy.Decision{Action: policy.Allow}
	switch {
	case c.held != "": // a person approved these very changes
	case ch.OverLimit() != "":
		// Past a snapshot limit the changes could not all be undone: a
		// person who approved the command line has not seen that.
		d = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Reason: ch.OverLimit()}
	case c.personApproved:
	case c.reviewAsk != nil:
		d = *c.reviewAsk // the command policy asks in every mode
	case ch.Destroys():
		d = g.opts.Policy.Destroy(c.Mode)
	}
	switch d.Action {
	case policy.Deny:
		c.acted = false // nothing reached the workspace: a repeat may run again
		if err := ch.Discard(); err != nil {
			c.note = "discarding the changes: " + err.Error()
		}
		c.verdict = d
		c.verdict.Rule = ReviewRule
		e := decisionError(d)
		e.Message = fmt.Sprintf("the command's changes delete or replace files in the workspace, which mode %s does not allow; none were applied, the workspace is as it was (changes: %s): %s",
			c.Mode, ch.Summary(), d.Reason)
		return endCall(denied, e)
	case policy.Ask:
		c.acted = false // nothing reached the workspace yet: a repeat may apply it once approved
		return g.hold(ctx, c, ch, d)
	}
	line, err := ch.Apply(ctx)
	if err != nil {
		c.note = "applying the changes: " + err.Error()
		return endCall(failed, &tool.Error{Code: tool.CodeInternal,
			Message: "the command ran, but its changes could not all be applied to the workspace",
			Hint:    "Tell the operator: the next start of airlock finishes applying them (the audit log has the cause); do not run the command again"})
	}
	c.result.Content += "--- changes: " + line + "\n"
	return passOn(allowed)
}

// hold parks the call's changes for a person: an approval of the review
// rule, with the diff, and the changes kept unapplied under its id.
func (g *Gate) hold(ctx context.Context, c *call, ch tool.Changes, d policy.Decision) outcome {
	why := "they delete or replace files"
	switch {
	case ch.OverLimit() != "":
		why = ch.OverLimit()
	case c.reviewAsk != nil:
		why = c.reviewAsk.Reason
	}
	e := &tool.Error{Code: tool.CodeApprovalRequired,
		Message: fmt.Sprintf("the command ran on a copy of the workspace, and its changes wait on a person's review because %s; nothing reached the workspace (changes: %s)",
			why, ch.Summary())}
	if g.opts.Approvals == nil {
		ch.Discard()
		e.Message += "; with no approvals store they were discarded"
		e.Hint = "Run airlock with its approvals store, or in a mode that allows the changes"
		return endCall(asked, e)
	}
	args, err := canon.JSON(c.Args)
	if err != nil {
		ch.Discard()
		return endCall(failed, internalError("the arguments could not be put in canonical form"))
	}
	ttl := g.opts.ApprovalTTL
	if ttl <= 0 {
		ttl = store.DefaultApprovalTTL
	}
	now := time.Now()
	req := store.Approval{
		ID: newID(), Tool: c.Tool, Args: args, ArgsHash: g.reviewHash(c, args),
		Session: c.Session, Role: c.Role, Mode: c.Mode, Rule: ReviewRule, // the rule airlock approve knows held changes by
		Reason: "its changes wait on review: " + ch.Summary() + " (airlock diff --approval ID shows them)",
		Status: store.StatusPending, Created: now, Expires: now.Add(ttl),
	}
	if err := ch.Hold(req.ID, c.result.Content); err != nil {
		c.note = "holding the changes: " + err.Error()
		ch.Discard()
		return endCall(failed, internalError("the command's changes could not be kept for review; none were applied"))
	}
	if err := g.opts.Approvals.CreateApproval(ctx, req); err != nil {
		c.note = err.Error()
		return endCall(failed, internalError("the approvals store failed; the command's changes were not applied"))
	}
	c.verdict = d
	c.verdict.Rule = ReviewRule
	c.approval = &tool.ApprovalRequest{ID: req.ID, Tool: req.Tool, Args: req.Args, Expires: req.Expires, Diff: ch.Diff()}
	e.Message += " (approval " + req.ID + " is pending)"
	e.Hint = "A person reviews the changes (airlock diff --approval " + req.ID + ") and approves them with `airlock approve " + req.ID +
		"`, which applies them, or denies them; do not run the command again meanwhile (a client that asked the person itself applies them on their answer)"
	return endCall(asked, e)
}
