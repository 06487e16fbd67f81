package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"airlock.dev/airlock/command"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/protect"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

func (g *Gate) decode(_ context.Context, c *call) outcome {
	e, ok := g.tools[c.Tool]
	if !ok {
		return endCall(denied, &tool.Error{Code: tool.CodeUnknownTool, Message: fmt.Sprintf("there is no tool named %q", truncate(c.Tool, 64)),
			Hint: "Call one of the tools listed for this session"})
	}
	c.entry = e
	return passOn(passed)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (g *Gate) validate(_ context.Context, c *call) outcome {
	args, err := c.entry.schema.Decode(c.Args)
	if err != nil {
		return endCall(denied, err)
	}
	c.args = plainNumbers(args).(map[string]any)
	return passOn(passed)
}

// plainNumbers turns the validated arguments' json.Number values into
// int64 where they are integers, else float64, the types policy rules
// compare.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// authorize asks the policy. Its decision is the call's verdict, a deny
// included, which the policy's rule names.
func (g *Gate) authorize(ctx context.Context, c *call) outcome {
	t := c.entry.tool
	d := g.opts.Policy.Decide(ctx, policy.Input{
		Tool: t.Name, Server: t.Server, Risk: t.Risk, Effect: t.Effect,
		Role: c.Role, Mode: c.Mode, Session: c.Session, Args: c.args,
	})
	c.verdict = d
	switch d.Action {
	case policy.Allow:
		return passOn(allowed)
	case policy.Ask:
		return passOn(asked) // the approval stage ends it, after the guards have had their say
	}
	return endCall(denied, decisionError(d))
}

func decisionError(d policy.Decision) *tool.Error {
	code := d.Code
	if code == "" {
		code = tool.CodeDenied
	}
	return &tool.Error{Code: code, Message: d.Reason, Hint: d.Hint}
}

func (g *Gate) guards(ctx context.Context, c *call) outcome {
	t := c.entry.tool
	for _, name := range t.PathArgs {
		p, ok := c.args[name].(string)
		if !ok {
			continue // optional and absent: the schema decided it may be
		}
		canon, end := g.inWorkspace(p, (*workspace.Workspace).Resolve)
		if end != nil {
			return endCall(denied, end)
		}
		c.paths = append(c.paths, canon)
		if t.Effect == tool.EffectWrite {
			if end := g.protectedGuard(c, canon, g.opts.Protected.Check(canon)); end != nil {
				return endCall(denied, end)
			}
			for _, arg := range t.ContentArgs {
				if text, ok := c.args[arg].(string); ok {
					if end := g.protectedGuard(c, canon, protect.CheckContent(canon, text)); end != nil {
						return endCall(denied, end)
					}
				}
			}
		}
	}
	for _, name := range t.GlobArgs {
		if p, ok := c.args[name].(string); ok {
			if _, end := g.inWorkspace(p, (*workspace.Workspace).CheckGlob); end != nil {
				return endCall(denied, end)
			}
		}
	}
	if t.CommandArg != "" {
		if end := g.commandGuard(c); end != nil {
			return endCall(denied, end)
		}
	}
	for _, name := range t.URLArgs {
		if end := g.urlGuard(ctx, c, name); end != nil {
			return endCall(denied, end)
		}
	}
	if c.verdict.Action == policy.Ask {
		return passOn(asked)
	}
	return passOn(passed)
}

// protectedGuard applies d, what package protect makes of a write to
// the canonical workspace path canon (Options.Protected's Check, or
// protect.CheckContent): airlock's own files are denied
// (deny:protected-file), whatever the mode; files a host later runs by
// itself (.git/, .envrc, Makefile, ...) and content it runs (a
// //go:generate line) ask (ask:host-executed-file), in every mode.
func (g *Gate) protectedGuard(c *call, canon string, d protect.Decision) *tool.Error {
	switch d.Verdict {
	case protect.Allow:
		return nil
	case protect.Ask:
		if c.verdict.Action == policy.Allow {
			c.verdict = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: d.Rule,
				Reason: fmt.Sprintf("writing %s: %s", canon, d.Reason), Hint: d.Hint}
		}
		return nil
	}
	c.verdict = policy.Decision{Action: policy.Deny, Code: tool.CodeDenied, Rule: d.Rule,
		Reason: fmt.Sprintf("writing %s: %s", canon, d.Reason), Hint: d.Hint}
	return decisionError(c.verdict)
}

// inWorkspace judges a path or glob pattern argument with judge
// (Resolve or CheckGlob), the workspace's own judgment, which the tool's
// executor meets again. A refusal is the workspace's; with no workspace,
// or an error that is not a refusal, it is path_outside_workspace.
func (g *Gate) inWorkspace(arg string, judge func(*workspace.Workspace, string) (string, error)) (string, *tool.Error) {
	if g.opts.Workspace == nil {
		return "", &tool.Error{Code: tool.CodePathOutside, Message: "no workspace is configured for file tools",
			Hint: "Start airlock with --workspace DIR"}
	}
	out, err := judge(g.opts.Workspace, arg)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			return "", te
		}
		return "", &tool.Error{Code: tool.CodePathOutside, Message: "the path could not be resolved inside the workspace",
			Hint: "Use a relative path inside the workspace"}
	}
	return out, nil
}

// URLRule names the egress guard's refusals.
const URLRule = "egress"

// urlGuard checks one URL argument against the egress policy as written
// (scheme, port, host, an IP literal as an address). It resolves nothing:
// the call may not run at all. The client resolves the host and checks
// every address when the call runs, at dial time.
func (g *Gate) urlGuard(ctx context.Context, c *call, name string) *tool.Error {
	u, ok := c.args[name].(string)
	if !ok {
		return nil // optional and absent: the schema decided it may be
	}
	var end *tool.Error
	if g.opts.Egress == nil {
		end = &tool.Error{Code: tool.CodeDenied, Message: "no egress policy is configured, so no URL may be fetched",
			Hint: "Start airlock with its egress policy"}
	} else if err := g.opts.Egress.Check(ctx, u); err != nil {
		if !errors.As(err, &end) {
			end = &tool.Error{Code: tool.CodeDenied, Message: "the URL could not be checked", Hint: "Give a plain public http or https URL"}
		}
	}
	if end != nil {
		c.verdict = policy.Decision{Action: policy.Deny, Code: end.Code, Rule: URLRule, Reason: end.Message, Hint: end.Hint}
	}
	return end
}

// commandGuard judges a command line on its syntax tree. Its deny or ask
// stands; its allow leaves the call to the mode, so that run_command asks
// in ask mode and runs in auto-edit and auto.
func (g *Gate) commandGuard(c *call) *tool.Error {
	line, _ := c.args[c.entry.tool.CommandArg].(string)
	var opts command.Options
	if ws := g.opts.Workspace; ws != nil {
		opts.Exists = ws.Exists
	} // else every path written over is taken to exist
	d := g.opts.Commands.Check(line, &opts) // a nil policy denies
	switch d.Verdict {
	case command.Allow:
		if d.Destroys && c.verdict.Action == policy.Allow && (c.entry.tool.Held == nil || !c.execute) {
			// A command's changes cannot be rolled back: the mode's
			// destroy decision (auto-edit asks) governs what it deletes,
			// truncates or writes over. A tool that runs commands on a
			// copy-on-write view (Held set) is judged instead on what
			// the command did, by the review stage; a check of it, which
			// runs nothing, answers what the syntax says it would do.
			dd := g.opts.Policy.Destroy(c.Mode)
			who := d.Name
			if who == "" {
				who = "the command"
			}
			dd.Reason = fmt.Sprintf("%s deletes, truncates or writes over files in the workspace; %s", who, dd.Reason)
			if dd.Action == policy.Deny {
				c.verdict = dd
				return decisionError(dd)
			}
			if dd.Action == policy.Ask {
				c.verdict = dd
			}
		}
		return nil
	case command.Ask:
		ask := policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: d.Rule, Reason: d.Message, Hint: d.Hint}
		switch {
		case c.verdict.Action == policy.Allow && d.Reviewable && c.entry.tool.Held != nil && c.execute:
			// Deleting the workspace or git's data loss, on a
			// copy-on-write view: it runs, and the review stage puts what
			// it did, as a diff, to a person before any of it lands (a
			// check, which runs nothing, answers that it asks).
			c.reviewAsk = &ask
		case c.verdict.Action == policy.Allow:
			c.verdict = ask
		case c.verdict.Action == policy.Ask:
			// The mode asks anyway; the person asked should read the
			// command policy's own, more specific, reason.
			c.verdict.Rule, c.verdict.Hint = d.Rule, d.Hint
			c.verdict.Reason = d.Message + "; " + c.verdict.Reason
		}
		return nil
	}
	c.verdict = policy.Decision{Action: policy.Deny, Code: tool.Code(d.Code), Rule: d.Rule, Reason: d.Message, Hint: d.Hint}
	return &tool.Error{Code: tool.Code(d.Code), Message: d.Message, Hint: d.Hint}
}
