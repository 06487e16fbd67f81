package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// approval lets an asked call run only when a person approved exactly this
// call (tool and canonical arguments) and the approval has not been used or
// expired, or a remembered approval of this call's shape is in force for
// its session or workspace; otherwise it parks the call as a pending
// approval and ends it with approval_required, naming the approval. A
// check parks nothing and uses nothing.
func (g *Gate) approval(ctx context.Context, c *call) outcome {
	// Changes an earlier run of this call left held, once a person
	// approved them, are applied whatever the mode would ask.
	if out := g.heldApproval(ctx, c); out.end != nil || c.held != "" {
		if c.held != "" {
			c.verdict.Action = policy.Allow
		}
		return out
	}
	if c.verdict.Action != policy.Ask {
		return passOn(passed)
	}
	e := decisionError(c.verdict)
	e.Code = tool.CodeApprovalRequired
	if g.opts.Approvals == nil || !c.execute {
		return endCall(asked, e)
	}
	args, err := canon.JSON(c.Args)
	if err != nil { // validated JSON always has a canonical form
		return endCall(failed, internalError("the arguments could not be put in canonical form"))
	}
	hash := g.approvalHash(c, args)
	now := time.Now()
	a, ok, err := g.opts.Approvals.ConsumeApproval(ctx, c.Tool, hash, now)
	if err != nil {
		c.note = err.Error()
		return endCall(failed, internalError("the approvals store failed"))
	}
	if ok {
		c.note = "approved by " + a.DecidedBy + " as approval " + a.ID
		c.verdict.Action, c.personApproved = policy.Allow, true
		return passOn(allowed)
	}
	for _, scope := range []store.Scope{store.ScopeSession, store.ScopeWorkspace} {
		h := g.scopeHash(c, args, scope)
		if h == "" { // no such scope here (a gate with no workspace): nothing to look up
			continue
		}
		r, ok, err := g.opts.Approvals.UseRemembered(ctx, scope, c.Tool, h, now)
		if err != nil {
			c.note = err.Error()
			return endCall(failed, internalError("the approvals store failed"))
		}
		if ok {
			c.note = fmt.Sprintf("approved by %s as remembered approval %s (scope %s, use %d)", r.ApprovedBy, r.ID, r.Scope, r.Uses)
			c.verdict.Action, c.personApproved = policy.Allow, true
			return passOn(allowed)
		}
	}
	if c.Approval != "" {
		if out := g.earlierApproval(ctx, c, hash, e); out.end != nil {
			return out
		}
	}
	ttl := g.opts.ApprovalTTL
	if ttl <= 0 {
		ttl = store.DefaultApprovalTTL
	}
	req := store.Approval{
		ID: newID(), Tool: c.Tool, Args: args, ArgsHash: hash,
		SessionHash:   g.scopeHash(c, args, store.ScopeSession),
		WorkspaceHash: g.scopeHash(c, args, store.ScopeWorkspace),
		Session:       c.Session, Role: c.Role, Mode: c.Mode, Rule: c.verdict.Rule, Reason: c.verdict.Reason,
		Status: store.StatusPending, Created: now, Expires: now.Add(ttl),
	}
	if err := g.opts.Approvals.CreateApproval(ctx, req); err != nil {
		c.note = err.Error()
		return endCall(failed, internalError("the approvals store failed"))
	}
	c.approval = &tool.ApprovalRequest{ID: req.ID, Tool: req.Tool, Args: req.Args, Expires: req.Expires}
	e.Message += " (approval " + req.ID + " is pending)"
	e.Hint = pendingHint(req.ID)
	return endCall(asked, e)
}

// Labels that set the hash of each scope of remembered approval apart from
// every other hash the key makes.
const (
	sessionScopeLabel   = "airlock remembered approval: session"
	workspaceScopeLabel = "airlock remembered approval: workspace"
)

// scopeHash is what a remembered approval of scope is found by: what
// approvalHash binds, and the rule that asked, so that an approval given
// when one rule asked does not answer another (a session that read flagged
// content asks of its own); for store.ScopeWorkspace the workspace
// directory in place of the session. It is "" for a scope that cannot be
// remembered: store.ScopeWorkspace with no workspace, or store.ScopeOnce.
func (g *Gate) scopeHash(c *call, args []byte, scope store.Scope) string {
	var parts []string
	switch {
	case scope == store.ScopeSession:
		parts = []string{sessionScopeLabel, c.Session}
	case scope == store.ScopeWorkspace && g.opts.Workspace != nil:
		parts = []string{workspaceScopeLabel, g.opts.Workspace.Dir()}
	default:
		return ""
	}
	parts = append(parts, c.Tool, string(args), c.Role, c.Mode, c.verdict.Rule)
	return canon.Bind(g.opts.ApprovalKey, append(parts, c.paths...)...)
}

// earlierApproval answers a call that names the approval an earlier
// attempt of it was parked under (tool.Call.Approval): denied ends it
// with approval_denied, pending names that approval again (parked, the
// error value of the ask, with its ID). It ends nothing, passing the zero
// outcome, when the approval is not this call's, or has expired or been
// used: the call is then parked anew.
func (g *Gate) earlierApproval(ctx context.Context, c *call, hash string, parked *tool.Error) outcome {
	a, err := g.opts.Approvals.Approval(ctx, c.Approval, time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return outcome{}
	case err != nil:
		c.note = err.Error()
		return endCall(failed, internalError("the approvals store failed"))
	case a.Tool != c.Tool || a.ArgsHash != hash:
		return outcome{}
	case a.Status == store.StatusDenied:
		c.approval = &tool.ApprovalRequest{ID: a.ID, Tool: a.Tool, Args: a.Args, Expires: a.Expires}
		c.note = "denied by " + a.DecidedBy + " as approval " + a.ID
		c.verdict = policy.Decision{Action: policy.Deny, Code: tool.CodeApprovalDenied, Rule: c.verdict.Rule}
		return endCall(denied, &tool.Error{Code: tool.CodeApprovalDenied,
			Message: "a person was asked to approve this call and did not (approval " + a.ID + " is denied); nothing ran",
			Hint:    "Do not make the same call again: ask the user how to go on, or reach the goal another way"})
	case a.Status == store.StatusPending:
		c.approval = &tool.ApprovalRequest{ID: a.ID, Tool: a.Tool, Args: a.Args, Expires: a.Expires}
		parked.Message += " (approval " + a.ID + " is pending)"
		parked.Hint = pendingHint(a.ID)
		return endCall(asked, parked)
	}
	return outcome{}
}

// pendingHint is the hint of a call parked as a pending approval.
func pendingHint(id string) string {
	return "A person approves it with `airlock approve " + id + "`; then make the same call again in the same session " +
		"(approved with --remember session or --remember workspace, the same call runs again in this session, or in this workspace, without asking)"
}

// approvalHash is what an approval is found by: the tool, the canonical
// arguments, the session, role and mode, and the workspace paths the
// arguments resolved to, so that an approval lets only this call run, in
// this session, on these files. Keyed with Options.ApprovalKey, it cannot
// be forged by whoever can write the store but not read the key.
func (g *Gate) approvalHash(c *call, args []byte) string {
	parts := append([]string{c.Tool, string(args), c.Session, c.Role, c.Mode}, c.paths...)
	return canon.Bind(g.opts.ApprovalKey, parts...)
}
