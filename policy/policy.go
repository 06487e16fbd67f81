// Package policy decides whether a tool call may run: allow, deny, or ask a
// person first. It is the authorize stage of the gate.
//
// Three things decide, from the coarsest to the finest:
//
//   - the caller's role bounds the risk it may run at all (viewer: low,
//     operator: up to medium, admin: everything); above the bound is a deny;
//   - the session's mode gives a decision by the tool's effect (read, write,
//     external): read-only, ask (the default), auto-edit, auto;
//   - rules, whose conditions are CEL expressions over the call, tighten
//     that decision: deny beats ask, ask beats allow, so no rule can loosen
//     what the mode or another rule decided.
//
// The role and mode tables and the built-in rules live in default.yaml,
// embedded in the binary. A policy file only adds rules on top of it:
//
//	version: 1
//	rules:
//	  - id: no-force-push
//	    when: tool == "run_command" && has(args.command) && args.command.contains("push --force")
//	    decision: deny
//	    message: force pushes are not allowed
//	    hint: Push without --force, or open a pull request
//
// Conditions are compiled once, when the policy is parsed, and each
// evaluation is bounded by MaxRuleCost. A condition that fails to evaluate
// (a missing argument, the cost limit) denies the call: the policy fails
// closed, so guard an argument that may be absent with has(args.name).
// Numbers compare across int and double, as JSON arguments arrive as
// doubles. The zero Policy, like a nil *Policy, denies every call.
//
//	p, err := policy.Load("airlock-policy.yaml")
//	d := p.Decide(ctx, policy.Input{Tool: "write_file", Risk: tool.RiskMedium,
//		Effect: tool.EffectWrite, Mode: "auto-edit", Args: args})
//	// d.Action == policy.Allow, d.Rule == "mode:auto-edit"
//
// A Policy is immutable once parsed and safe for concurrent use.
package policy

import (
	"airlock.dev/airlock/command"
	"airlock.dev/airlock/protect"

	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"airlock.dev/airlock/tool"
)

// Limits. Each bounds what a policy file can make the gate do, and tripping
// one is a parse error that names it.
const (
	// MaxRules is the most rules one policy file may hold (the built-in
	// file is held to it too), so that a decision costs at most a bounded
	// number of evaluations.
	MaxRules = 256
	// MaxConditionLength is the most bytes in a rule's when condition.
	MaxConditionLength = 4096
	// MaxConditionNesting is the deepest a condition's syntax may nest
	// (parentheses, calls, operators), enforced by the CEL parser.
	MaxConditionNesting = 64
	// MaxRuleCost bounds the work of one evaluation of one condition, in
	// CEL's cost units (about one per operation, one per list element
	// visited). A condition that goes over it on some arguments denies
	// the call.
	MaxRuleCost = 10000
	// MaxFileSize is the most bytes a policy file may hold.
	MaxFileSize = 1 << 20
	// MaxIDLength is the most bytes in a rule id.
	MaxIDLength = 64
	// MaxTextLength is the most bytes in a rule's message or hint.
	MaxTextLength = 1024
)

// DefaultRole is the role of a call that names none.
const DefaultRole = "operator"

// DefaultMode is the mode of a call that names none. It is the built-in
// policy's default_mode, which must agree with it; the method of the same
// name reads it from a compiled Policy.
const DefaultMode = "ask"

// Builtin is the source of the rules of the embedded default policy, as
// Effective shows it.
const Builtin = "builtin"

// Action is what a decision lets happen. The zero Action denies.
type Action uint8

const (
	Deny  Action = iota // the call does not run
	Ask                 // the call runs once a person approves it
	Allow               // the call runs
)

var actionNames = [...]string{Deny: "deny", Ask: "ask", Allow: "allow"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// ParseAction parses "deny", "ask" or "allow".
func ParseAction(s string) (Action, error) {
	for a, name := range actionNames {
		if name == s {
			return Action(a), nil
		}
	}
	return Deny, fmt.Errorf("unknown decision %q: want deny, ask or allow", s)
}

// Decision is the policy's answer for one call.
type Decision struct {
	Action Action
	// Code is the error code a refusal carries: tool.CodeDenied,
	// tool.CodeApprovalRequired, tool.CodeRoleNotAllowed,
	// tool.CodeInvalidCall, tool.CodePolicyError or tool.CodeInternal.
	// It is empty when the Action is Allow.
	Code tool.Code
	// Reason says why, in words safe to show a model; Hint is one concrete
	// thing the caller can do about it.
	Reason, Hint string
	// Rule names what decided: a rule id, "mode:<mode>", "role-bound",
	// "unknown-role", "unknown-mode", "invalid-tool" or "no-policy".
	Rule string
	// Cause is the evaluation error behind tool.CodePolicyError, for the
	// audit log. Its text is not meant for the model.
	Cause error
}

// Input is what the policy knows of a call.
type Input struct {
	Tool string
	// Server is the upstream MCP server a gateway tool comes from; ""
	// for airlock's own tools.
	Server string
	Risk   tool.Risk
	Effect tool.Effect
	Role   string // "" means DefaultRole
	Mode   string // "" means the policy's DefaultMode
	// Session is the session's id, for rules that single one out.
	Session string
	// Args are the decoded, validated arguments. Decide only reads them.
	Args map[string]any
}

// Policy is a compiled policy: the built-in tables and rules, plus the
// rules of at most one policy file. The zero Policy denies every call.
type Policy struct {
	c *compiled
}

//go:embed default.yaml
var defaultYAML []byte

// builtin compiles the embedded policy once; every Policy shares its
// tables and its compiled rules, which are never modified.
var builtin = sync.OnceValues(func() (*Policy, error) {
	c, err := compileBuiltin(defaultYAML, "default.yaml ("+Builtin+")")
	if err != nil {
		return nil, err
	}
	return &Policy{c: c}, nil
})

// Default returns the embedded default policy. It panics only if the
// embedded file is broken, which a test rules out.
func Default() *Policy {
	p, err := builtin()
	if err != nil {
		panic("policy: the embedded default policy is broken: " + err.Error())
	}
	return p
}

// Parse returns the default policy with the rules of data on top. name is
// the file's name, used in errors and as the rules' source. data may hold
// only "rules" and an optional "version: 1"; the role and mode tables are
// the built-in ones. The error is a *ParseError, or one for each problem
// the file has, joined (errors.Join; errors.As finds the first): what is
// wrong with the file's shape first, then each rule in order.
func Parse(data []byte, name string) (*Policy, error) {
	base, err := builtin()
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "policy"
	}
	c, err := base.c.withFile(data, name)
	if err != nil {
		return nil, err
	}
	return &Policy{c: c}, nil
}

// Load reads the policy file at path and parses it as Parse does. A file
// over MaxFileSize is refused before it is read in full.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: reading %s: %w", path, err)
	}
	return Parse(data, path)
}

// DefaultMode returns the mode a call that names none runs in: "ask" for
// the built-in policy, "" for the zero Policy.
func (p *Policy) DefaultMode() string {
	if p == nil || p.c == nil {
		return ""
	}
	return p.c.defaultMode
}

// Effective returns the effective policy as YAML: the default mode, the
// role and mode tables, and every rule in evaluation order with its source
// ("builtin" or the policy file's name). The caller may modify the result.
func (p *Policy) Effective() []byte {
	if p == nil || p.c == nil {
		return []byte("# no policy is loaded: every call is denied\n{}\n")
	}
	return append([]byte(nil), p.c.effective...)
}

// Commands returns the command policy that judges shell command lines:
// the built-in rules plus the policy file's commands section (deny, ask
// and allow lists; see command.Config). The zero Policy returns nil, which
// denies every command.
func (p *Policy) Commands() *command.Policy {
	if p == nil || p.c == nil {
		return nil
	}
	return p.c.commands
}

// Protected returns the list of workspace files no tool may write freely:
// the built-in list (protect.Default) with the policy file's protected
// section applied. The command policy (Commands) already checks against
// it; the file tools' gate calls its Check for every path it writes. The
// zero Policy returns nil, which protect reads as its defaults.
func (p *Policy) Protected() *protect.List {
	if p == nil || p.c == nil {
		return nil
	}
	return p.c.protected
}

// RedactAllow lists a policy file's known false positives of the
// redactor: exact values, and RE2 patterns that must match a whole found
// value (the redact.allow section).
type RedactAllow struct {
	Values   []string `yaml:"values"`
	Patterns []string `yaml:"patterns"`
}

// MaxRedactAllow bounds the entries of redact.allow.
const MaxRedactAllow = 10_000

// RedactAllow returns the policy file's redact.allow section; empty for
// the built-in policy.
func (p *Policy) RedactAllow() RedactAllow {
	if p == nil || p.c == nil {
		return RedactAllow{}
	}
	return p.c.redactAllow
}

// OnFlagged is what the policy file's untrusted.on_flagged makes of
// content the injection scanner flags: "" to deliver it marked (the
// default), "ask" to make every later side effect of the session ask, or
// "deny" to withhold it.
func (p *Policy) OnFlagged() string {
	if p == nil || p.c == nil {
		return ""
	}
	return p.c.onFlagged
}

// TaintedEgress is the policy file's untrusted.tainted_egress section: the
// hosts and tools to which a session that took in untrusted content may
// still send without a person's approval (the gate's ask:tainted-egress).
// It loosens that ask only; the mode and the rules still decide.
//
//	untrusted:
//	  tainted_egress:
//	    allow_hosts: [docs.python.org, "*.corp.example"]
//	    allow_tools: [post_build_status]
type TaintedEgress struct {
	// AllowHosts are host names, each exact or "*." and a suffix that
	// matches that name's subdomains (not the name itself).
	AllowHosts []string `yaml:"allow_hosts"`
	// AllowTools are tool names whose calls never ask for the taint.
	AllowTools []string `yaml:"allow_tools"`
}

// MaxTaintedEgress bounds the entries of untrusted.tainted_egress.
const MaxTaintedEgress = 1024

// hostPattern is what an allow_hosts entry may be: a lower-case host
// name, or "*." and one.
var hostPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// problems lists what is wrong with the section, each said so that the
// author can fix it.
func (t TaintedEgress) problems() []string {
	var out []string
	if n := len(t.AllowHosts) + len(t.AllowTools); n > MaxTaintedEgress {
		out = append(out, fmt.Sprintf("%d entries, over MaxTaintedEgress (%d)", n, MaxTaintedEgress))
	}
	for _, h := range t.AllowHosts {
		switch {
		case h == "*" || h == "*.":
			out = append(out, fmt.Sprintf("allow_hosts %q would let a tainted session send anywhere; name the hosts", h))
		case len(h) > 253 || !hostPattern.MatchString(h):
			out = append(out, fmt.Sprintf("allow_hosts %q: want a lower-case host name, or *. and one", h))
		case !strings.Contains(strings.TrimPrefix(h, "*."), "."):
			out = append(out, fmt.Sprintf("allow_hosts %q: a pattern over a whole top-level domain is too wide; name a domain under it", h))
		}
	}
	for _, name := range t.AllowTools {
		if !tool.ValidName(name) {
			out = append(out, fmt.Sprintf("allow_tools %q is not a tool name", name))
		}
	}
	return out
}

// AllowsHost reports whether host (a name or an address, any case) is
// one the section lets a tainted session reach.
func (t TaintedEgress) AllowsHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range t.AllowHosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// AllowsTool reports whether the section names the tool.
func (t TaintedEgress) AllowsTool(name string) bool { return slices.Contains(t.AllowTools, name) }

// TaintedEgress returns the policy file's untrusted.tainted_egress
// section; empty (nothing loosened) for the built-in policy.
func (p *Policy) TaintedEgress() TaintedEgress {
	if p == nil || p.c == nil {
		return TaintedEgress{}
	}
	return p.c.tainted
}

// Destroy is the mode's decision for a call the guards found to delete,
// truncate or overwrite files in the workspace where nothing can roll it
// back (a command the command policy marks Destroys): the built-in
// modes' destroy column. It never loosens a decision; the gate applies
// it to a call that is otherwise allowed. An unknown mode is denied.
func (p *Policy) Destroy(mode string) Decision {
	if p == nil || p.c == nil {
		return Decision{Action: Deny, Code: tool.CodeDenied, Reason: "no policy is loaded", Hint: "Load a policy"}
	}
	m := p.c.modes[mode]
	if m == nil {
		return p.c.unknownMode(mode)
	}
	return m.destroy
}

// Decide returns the decision for one call. It is safe for concurrent use;
// beyond evaluating the rules' conditions it does not allocate, except to
// describe an unknown role or mode or a failed rule.
//
// The order: an unknown role or mode is refused; a risk above the role's
// bound is denied; the mode gives a decision by effect; then every rule is
// evaluated in order and the most severe outcome wins. When a rule and the
// mode reach the same outcome, the rule names it, being the more specific;
// among rules, the first in order does. A rule that fails to evaluate
// denies the call with tool.CodePolicyError.
func (p *Policy) Decide(ctx context.Context, in Input) Decision {
	if p == nil || p.c == nil {
		return noPolicy
	}
	return p.c.decide(ctx, &in)
}

// Lists reports whether a caller of in.Role is shown the tool that in
// describes (its name, server, risk and effect; Args and Session are not
// read): its role's bound allows the tool's risk, and no rule that depends
// only on the tool, the role and the mode denies it. A rule over the
// arguments or the session may still deny a call of it; a mode that
// denies its effect still shows it, since a person may change the mode.
func (p *Policy) Lists(ctx context.Context, in Input) bool {
	if p == nil || p.c == nil {
		return false
	}
	in.Args, in.Session = nil, ""
	if in.Mode == "" || p.c.modes[in.Mode] == nil {
		in.Mode = p.c.defaultMode
	}
	d := p.c.decideOn(ctx, &in, true)
	return d.Action != Deny || d.Rule == "mode:"+in.Mode
}

// noPolicy is the decision of the zero Policy.
var noPolicy = Decision{
	Action: Deny,
	Code:   tool.CodeDenied,
	Reason: "no policy is loaded, so every call is denied",
	Hint:   "Ask an administrator to start airlock with a policy",
	Rule:   "no-policy",
}
