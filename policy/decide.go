package policy

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"airlock.dev/airlock/tool"
)

// maxEcho is the most bytes of an unknown role or mode name that a
// decision repeats back.
const maxEcho = 64

func (c *compiled) decide(ctx context.Context, in *Input) Decision {
	return c.decideOn(ctx, in, false)
}

// decideOn decides; shapeOnly leaves out the rules that read the
// arguments or the session, for a decision about a tool rather than a call.
func (c *compiled) decideOn(ctx context.Context, in *Input, shapeOnly bool) Decision {
	roleName := in.Role
	if roleName == "" {
		roleName = DefaultRole
	}
	r, ok := c.roles[roleName]
	if !ok {
		return Decision{Action: Deny, Code: tool.CodeInvalidCall, Reason: "unknown role " + echo(in.Role), Hint: c.roleHint, Rule: "unknown-role"}
	}
	modeName := in.Mode
	if modeName == "" {
		modeName = c.defaultMode
	}
	m, ok := c.modes[modeName]
	if !ok {
		return c.unknownMode(in.Mode)
	}
	switch {
	case in.Risk < tool.RiskLow || in.Risk > tool.RiskHigh:
		return invalidRisk
	case in.Effect < tool.EffectRead || in.Effect > tool.EffectExternal:
		return invalidEffect
	case in.Risk > r.maxRisk:
		return r.bound[in.Risk]
	}

	base := &m.byEffect[in.Effect]
	if len(c.rules) == 0 {
		return *base
	}
	if ctx == nil {
		ctx = context.Background()
	}
	vars := &activation{
		in:     in,
		risk:   riskVals[in.Risk],
		effect: effectVals[in.Effect],
		role:   r.val,
		mode:   m.val,
	}
	// Every rule is evaluated until one denies: a deny is the most severe
	// outcome, and the first one in order names it.
	var best *Decision
	for _, rl := range c.rules {
		if shapeOnly && !rl.shapeOnly {
			continue
		}
		hit, err := rl.evalShape(ctx, vars, roleName, modeName)
		if err != nil {
			return rl.fail(err)
		}
		if !hit {
			continue
		}
		if rl.action == Deny {
			return rl.decision
		}
		if best == nil || rl.action < best.Action {
			best = &rl.decision
		}
	}
	if best != nil && best.Action <= base.Action {
		return *best
	}
	return *base
}

var (
	invalidRisk = Decision{
		Action: Deny, Code: tool.CodeInternal, Rule: "invalid-tool",
		Reason: "the tool has no valid risk level, so the call is denied",
		Hint:   "Register the tool with risk low, medium or high",
	}
	invalidEffect = Decision{
		Action: Deny, Code: tool.CodeInternal, Rule: "invalid-tool",
		Reason: "the tool has no valid effect, so the call is denied",
		Hint:   "Register the tool with effect read, write or external",
	}
)

// echo quotes a caller's name for a message, cut to maxEcho bytes.
func echo(s string) string {
	if len(s) > maxEcho {
		return strconv.Quote(s[:maxEcho]) + "..."
	}
	return strconv.Quote(s)
}

// evalShape is eval, remembered per call shape for a shape-only rule.
// Errors are never remembered: a failing rule fails every call.
func (r *rule) evalShape(ctx context.Context, vars *activation, role, mode string) (bool, error) {
	if !r.shapeOnly {
		return r.eval(ctx, vars)
	}
	k := shape{tool: vars.in.Tool, server: vars.in.Server, risk: vars.in.Risk, effect: vars.in.Effect, role: role, mode: mode}
	if hit, ok := r.memo.Load(k); ok {
		return hit.(bool), nil
	}
	hit, err := r.eval(ctx, vars)
	if err == nil && r.memoLen.Load() < MaxMemo {
		if _, loaded := r.memo.LoadOrStore(k, hit); !loaded {
			r.memoLen.Add(1)
		}
	}
	return hit, err
}

// eval reports whether the rule's condition holds. A panic below it is
// turned into an error, so that a broken rule denies instead of crashing
// the gate.
func (r *rule) eval(ctx context.Context, vars *activation) (hit bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			hit, err = false, fmt.Errorf("panic in evaluation: %v", p)
		}
	}()
	var out ref.Val
	if ctx.Done() == nil {
		// A context that is never cancelled needs no watching, and
		// watching one costs a cancellable context per evaluation.
		out, _, err = r.prg.Eval(vars)
	} else {
		out, _, err = r.prg.ContextEval(ctx, vars)
	}
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}

// fail is the decision for a rule whose condition did not evaluate.
func (r *rule) fail(err error) Decision {
	d := r.failed
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		d = r.overCost
	}
	d.Cause = fmt.Errorf("policy rule %q: %w", r.id, err)
	return d
}

// The values of risk and effect, converted once.
var (
	riskVals   = [...]ref.Val{0: types.String(""), tool.RiskLow: types.String("low"), tool.RiskMedium: types.String("medium"), tool.RiskHigh: types.String("high")}
	effectVals = [...]ref.Val{0: types.String(""), tool.EffectRead: types.String("read"), tool.EffectWrite: types.String("write"), tool.EffectExternal: types.String("external")}
	noArgs     = map[string]any{}
)

// activation hands a condition the call's variables. Each is converted
// to a CEL value once per decision, when a condition first reads it; an
// activation serves one decision and is not shared.
type activation struct {
	in                       *Input
	risk, effect, role, mode ref.Val
	tool, server, session    ref.Val // nil until first read
	args                     ref.Val
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "tool":
		if a.tool == nil {
			a.tool = types.String(a.in.Tool)
		}
		return a.tool, true
	case "server":
		if a.server == nil {
			a.server = types.String(a.in.Server)
		}
		return a.server, true
	case "risk":
		return a.risk, true
	case "effect":
		return a.effect, true
	case "role":
		return a.role, true
	case "mode":
		return a.mode, true
	case "session":
		if a.session == nil {
			a.session = types.String(a.in.Session)
		}
		return a.session, true
	case "args":
		if a.args == nil {
			args := a.in.Args
			if args == nil {
				args = noArgs
			}
			a.args = types.DefaultTypeAdapter.NativeToValue(args)
		}
		return a.args, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// unknownMode is the decision for a mode the policy does not have.
func (c *compiled) unknownMode(mode string) Decision {
	return Decision{Action: Deny, Code: tool.CodeInvalidCall, Reason: "unknown mode " + echo(mode), Hint: c.modeHint, Rule: "unknown-mode"}
}
