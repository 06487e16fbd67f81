package policy

import (
	"airlock.dev/airlock/command"
	"airlock.dev/airlock/protect"

	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/tool"
)

// ParseError is a policy file that cannot be compiled: the file, the line
// where the trouble is (0 when no line helps), what is wrong, and the
// underlying YAML or CEL error, if any.
type ParseError struct {
	File string
	Line int
	Msg  string
	Err  error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// compiled is an immutable, compiled policy.
type compiled struct {
	defaultMode string
	roles       map[string]*role
	roleOrder   []*role // by max risk, then name
	modes       map[string]*mode
	modeOrder   []*mode // as the built-in file lists them
	rules       []*rule // evaluation order: built-in first, then the file's
	roleHint    string  // lists the valid roles
	modeHint    string  // lists the valid modes
	effective   []byte
	commands    *command.Policy // the built-in command rules plus the file's commands section
	protected   *protect.List   // the built-in protected files plus the file's protected section
	redactAllow RedactAllow     // the file's redact.allow section
	onFlagged   string          // the file's untrusted.on_flagged: "", "ask" or "deny"
	tainted     TaintedEgress   // the file's untrusted.tainted_egress section
}

type role struct {
	name    string
	val     ref.Val // name, as a condition sees it
	maxRisk tool.Risk
	// bound holds the decision for each risk above maxRisk.
	bound [tool.RiskHigh + 1]Decision
}

type mode struct {
	name     string
	val      ref.Val // name, as a condition sees it
	byEffect [tool.EffectExternal + 1]Decision
	// destroy is the decision for a command that destroys workspace data
	// (Policy.Destroy).
	destroy Decision
}

type rule struct {
	id, when, source string
	action           Action
	message, hint    string
	prg              cel.Program
	decision         Decision // when the condition holds
	failed           Decision // when it fails to evaluate
	overCost         Decision // when it goes over MaxRuleCost

	// shapeOnly says the condition reads neither args nor session: its
	// outcome depends only on the call's shape (tool, server, risk,
	// effect, role, mode), so it is evaluated once per shape and remembered in memo.
	shapeOnly bool
	memo      sync.Map // shape -> bool
	memoLen   atomic.Int32
}

// MaxMemo bounds the shapes a rule remembers; past it, the rule is
// evaluated on every call.
const MaxMemo = 4096

// shape is what a shape-only rule's outcome depends on.
type shape struct {
	tool, server string
	risk         tool.Risk
	effect       tool.Effect
	role, mode   string
}

// The YAML form of a policy file. Decoding is strict, and the keys are
// also checked on the node tree first, to give errors with lines.
type fileYAML struct {
	Version     *int                `yaml:"version"`
	DefaultMode string              `yaml:"default_mode"`
	Roles       map[string]roleYAML `yaml:"roles"`
	Modes       map[string]modeYAML `yaml:"modes"`
	Rules       []ruleYAML          `yaml:"rules"`
	Commands    *command.Config     `yaml:"commands"`
	Protected   *protect.Config     `yaml:"protected"`
	Redact      *redactYAML         `yaml:"redact"`
	Untrusted   *untrustedYAML      `yaml:"untrusted"`
}

type untrustedYAML struct {
	OnFlagged     string        `yaml:"on_flagged"`
	TaintedEgress TaintedEgress `yaml:"tainted_egress"`
}

type redactYAML struct {
	Allow RedactAllow `yaml:"allow"`
}

type roleYAML struct {
	MaxRisk string `yaml:"max_risk"`
}

type modeYAML struct {
	Read     string `yaml:"read"`
	Write    string `yaml:"write"`
	External string `yaml:"external"`
	Destroy  string `yaml:"destroy"`
}

type ruleYAML struct {
	ID       string `yaml:"id"`
	When     string `yaml:"when"`
	Decision string `yaml:"decision"`
	Message  string `yaml:"message"`
	Hint     string `yaml:"hint"`
}

var (
	builtinKeys = []string{"version", "default_mode", "roles", "modes", "rules"}
	fileKeys    = []string{"version", "rules", "commands", "protected", "redact", "untrusted"}
	ruleKeys    = []string{"id", "when", "decision", "message", "hint"}
)

// namePattern is what a rule id, a role or a mode may be called.
var namePattern = regexp.MustCompile(`^[a-z0-9-]+$`)

// reserved are the names Decide gives its own decisions; no rule may take
// them, so that a Decision's Rule always says what decided.
var reserved = []string{"no-policy", "role-bound", "unknown-role", "unknown-mode", "invalid-tool"}

// doc is a decoded policy file, with the lines its errors point at.
type doc struct {
	file      fileYAML
	modeOrder []string
	lines     map[string]int // top-level key -> line
	ruleLines []ruleLines
}

type ruleLines struct {
	item int            // the rule's "-"
	keys map[string]int // field -> line
}

func (r ruleLines) at(key string) int {
	if l, ok := r.keys[key]; ok {
		return l
	}
	return r.item
}

// problems gathers what is wrong with a file, so that a check reports
// every problem at once rather than one per run.
type problems struct {
	errs  []error
	lines map[int]bool // lines with a problem already told
}

func (p *problems) add(err error) {
	p.errs = append(p.errs, err)
	var pe *ParseError
	if errors.As(err, &pe) && pe.Line > 0 {
		if p.lines == nil {
			p.lines = map[int]bool{}
		}
		p.lines[pe.Line] = true
	}
}

// err is nil, the one problem, or every problem joined in the order found.
func (p *problems) err() error {
	if len(p.errs) == 1 {
		return p.errs[0]
	}
	return errors.Join(p.errs...)
}

// readDoc decodes one policy file, adding what is wrong with it to probs.
// It returns nil when the file cannot be read any further (not YAML, not
// a mapping, too many rules); otherwise what it could decode. Only the
// built-in file may hold the tables; a user file holds rules.
func readDoc(data []byte, name string, isBuiltin bool, probs *problems) *doc {
	perr := func(line int, err error, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	fatal := func(err error) *doc {
		probs.add(err)
		return nil
	}
	if len(data) > MaxFileSize {
		return fatal(perr(0, nil, "the file is over MaxFileSize (%d bytes)", MaxFileSize))
	}
	d := &doc{lines: map[string]int{}}

	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err == io.EOF {
		return d // an empty file adds no rules
	} else if err != nil {
		return fatal(perr(yamlLine(err), err, "not valid YAML"))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return fatal(perr(extra.Line, nil, "the file holds more than one YAML document"))
	}
	top := &root
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return d
	}
	if top.Kind != yaml.MappingNode {
		return fatal(perr(top.Line, nil, "the file must be a mapping with a rules list"))
	}

	allowed := fileKeys
	if isBuiltin {
		allowed = builtinKeys
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if !slices.Contains(allowed, k.Value) {
			if isBuiltin {
				probs.add(perr(k.Line, nil, "unknown key %q: want %s", k.Value, strings.Join(allowed, ", ")))
			} else {
				probs.add(perr(k.Line, nil, "key %q is not allowed: a policy file adds rules on top of the built-in policy, so it may hold only version, rules, commands, protected, redact and untrusted", k.Value))
			}
			continue
		}
		d.lines[k.Value] = k.Line
		switch k.Value {
		case "modes":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					d.modeOrder = append(d.modeOrder, v.Content[j].Value)
				}
			}
		case "rules":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			if v.Kind != yaml.SequenceNode {
				probs.add(perr(v.Line, nil, "rules must be a list"))
				continue
			}
			if len(v.Content) > MaxRules {
				return fatal(perr(k.Line, nil, "%d rules: a file may hold at most MaxRules (%d)", len(v.Content), MaxRules))
			}
			for j, item := range v.Content {
				rl := ruleLines{item: item.Line, keys: map[string]int{}}
				d.ruleLines = append(d.ruleLines, rl)
				if item.Kind != yaml.MappingNode {
					probs.add(perr(item.Line, nil, "rule %d must be a mapping of %s", j+1, strings.Join(ruleKeys, ", ")))
					continue
				}
				for m := 0; m+1 < len(item.Content); m += 2 {
					key := item.Content[m]
					if !slices.Contains(ruleKeys, key.Value) {
						probs.add(perr(key.Line, nil, "rule %d: unknown field %q: want %s", j+1, key.Value, strings.Join(ruleKeys, ", ")))
						continue
					}
					rl.keys[key.Value] = key.Line
				}
			}
		}
	}

	// Decode strictly, which also refuses values of the wrong type and
	// duplicate keys. A type error does not stop the decoding: each is
	// told, unless its line already has a problem (an unknown key the
	// node checks above named better).
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&d.file); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return fatal(perr(yamlLine(err), err, "not a valid policy file"))
		}
		for _, msg := range te.Errors {
			if line := yamlLine(errors.New(msg)); !probs.lines[line] || line == 0 {
				probs.add(perr(line, errors.New(msg), "not a valid policy file"))
			}
		}
	}
	if v := d.file.Version; v != nil && *v != 1 {
		probs.add(perr(d.lines["version"], nil, "version %d is not supported: want 1", *v))
	}
	if len(d.file.Rules) != len(d.ruleLines) {
		// A rule that could not be decoded left the list: the rules no
		// longer line up with their lines, so none is compiled.
		if len(probs.errs) == 0 {
			probs.add(perr(d.lines["rules"], nil, "rules could not be read"))
		}
		d.file.Rules, d.ruleLines = nil, nil
	}
	return d
}

// yamlLine finds the line in a yaml.v3 error, which carries it only in its
// text ("yaml: line 3: ..."); 0 when there is none.
func yamlLine(err error) int {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, err := fmt.Sscanf(msg, "line %d:", &line); err != nil {
		return 0
	}
	return line
}

// compileBuiltin compiles the embedded policy: the tables and the
// built-in rules.
func compileBuiltin(data []byte, name string) (*compiled, error) {
	var probs problems
	d := readDoc(data, name, true, &probs)
	if len(probs.errs) > 0 {
		return nil, probs.err()
	}
	perr := func(key, format string, args ...any) error {
		return &ParseError{File: name, Line: d.lines[key], Msg: fmt.Sprintf(format, args...)}
	}
	f := &d.file
	c := &compiled{
		defaultMode: f.DefaultMode,
		roles:       map[string]*role{},
		modes:       map[string]*mode{},
	}

	if len(f.Roles) == 0 {
		return nil, perr("roles", "no roles")
	}
	for name, ry := range f.Roles {
		if !namePattern.MatchString(name) {
			return nil, perr("roles", "role %q: want lower case letters, digits and -", name)
		}
		risk, err := tool.ParseRisk(ry.MaxRisk)
		if err != nil {
			return nil, perr("roles", "role %q: max_risk: %v", name, err)
		}
		r := &role{name: name, val: types.String(name), maxRisk: risk}
		c.roles[name] = r
		c.roleOrder = append(c.roleOrder, r)
	}
	slices.SortFunc(c.roleOrder, func(a, b *role) int {
		if a.maxRisk != b.maxRisk {
			return int(a.maxRisk) - int(b.maxRisk)
		}
		return strings.Compare(a.name, b.name)
	})
	if c.roles[DefaultRole] == nil {
		return nil, perr("roles", "no role %q, the default role", DefaultRole)
	}

	if len(f.Modes) == 0 {
		return nil, perr("modes", "no modes")
	}
	for _, name := range d.modeOrder {
		my, ok := f.Modes[name]
		if !ok || c.modes[name] != nil {
			return nil, perr("modes", "mode %q could not be read", name)
		}
		if !namePattern.MatchString(name) {
			return nil, perr("modes", "mode %q: want lower case letters, digits and -", name)
		}
		m := &mode{name: name, val: types.String(name)}
		for e, s := range [...]string{tool.EffectRead: my.Read, tool.EffectWrite: my.Write, tool.EffectExternal: my.External} {
			if e == 0 {
				continue
			}
			a, err := ParseAction(s)
			if err != nil {
				return nil, perr("modes", "mode %q: %s: %v", name, tool.Effect(e), err)
			}
			m.byEffect[e].Action = a
		}
		a, err := ParseAction(my.Destroy)
		if err != nil {
			return nil, perr("modes", "mode %q: destroy: %v", name, err)
		}
		if a > m.byEffect[tool.EffectWrite].Action {
			return nil, perr("modes", "mode %q: destroy %s is looser than its write %s", name, a, m.byEffect[tool.EffectWrite].Action)
		}
		m.destroy.Action = a
		c.modes[name] = m
		c.modeOrder = append(c.modeOrder, m)
	}
	if c.modes[c.defaultMode] == nil {
		return nil, perr("default_mode", "default_mode %q is not one of the modes", c.defaultMode)
	}
	if c.defaultMode != DefaultMode {
		return nil, perr("default_mode", "default_mode %q is not DefaultMode (%q)", c.defaultMode, DefaultMode)
	}

	c.commands = command.Default()
	c.protected = protect.Default()
	c.describe()
	env, err := newEnv()
	if err != nil {
		return nil, &ParseError{File: name, Msg: "cannot set up CEL", Err: err}
	}
	if c.rules = compileRules(env, d, name, Builtin, nil, &probs); len(probs.errs) > 0 {
		return nil, probs.err()
	}
	c.effective = c.render()
	return c, nil
}

// withFile returns base with the rules of a policy file added after its
// own. base is not modified; the result shares its tables and rules.
func (base *compiled) withFile(data []byte, name string) (*compiled, error) {
	var probs problems
	d := readDoc(data, name, false, &probs)
	if d == nil {
		return nil, probs.err()
	}
	env, err := newEnv()
	if err != nil {
		return nil, &ParseError{File: name, Msg: "cannot set up CEL", Err: err}
	}
	rules := compileRules(env, d, name, name, base.rules, &probs)
	c := *base
	c.rules = append(slices.Clip(base.rules), rules...)
	if r := d.file.Redact; r != nil {
		if n := len(r.Allow.Values) + len(r.Allow.Patterns); n > MaxRedactAllow {
			probs.add(&ParseError{File: name, Line: d.lines["redact"], Msg: fmt.Sprintf("redact.allow has %d entries, over MaxRedactAllow (%d)", n, MaxRedactAllow)})
		}
		for _, pat := range r.Allow.Patterns {
			if _, err := regexp.Compile(pat); err != nil {
				probs.add(&ParseError{File: name, Line: d.lines["redact"], Msg: fmt.Sprintf("redact.allow.patterns: %q is not an RE2 expression", pat), Err: err})
			}
		}
		c.redactAllow = r.Allow
	}
	if u := d.file.Untrusted; u != nil {
		switch u.OnFlagged {
		case "deliver":
		case "ask", "deny":
			c.onFlagged = u.OnFlagged
		case "":
		default:
			probs.add(&ParseError{File: name, Line: d.lines["untrusted"], Msg: fmt.Sprintf("untrusted.on_flagged %q: want deliver, ask or deny", u.OnFlagged)})
		}
		for _, msg := range u.TaintedEgress.problems() {
			probs.add(&ParseError{File: name, Line: d.lines["untrusted"], Msg: "untrusted.tainted_egress: " + msg})
		}
		c.tainted = u.TaintedEgress
	}
	if d.file.Commands != nil {
		if c.commands, err = command.Compile(d.file.Commands); err != nil {
			probs.add(&ParseError{File: name, Line: d.lines["commands"], Msg: err.Error(), Err: err})
		}
	}
	if d.file.Protected != nil {
		if c.protected, err = protect.Compile(d.file.Protected); err != nil {
			probs.add(&ParseError{File: name, Line: d.lines["protected"], Msg: err.Error(), Err: err})
		} else if c.commands != nil {
			c.commands = c.commands.WithProtected(c.protected)
		}
	}
	if len(probs.errs) > 0 {
		return nil, probs.err()
	}
	c.effective = c.render()
	return &c, nil
}

// newEnv declares the variables a condition may use. Numbers compare
// across int, uint and double, because JSON arguments arrive as doubles.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("risk", cel.StringType),
		cel.Variable("effect", cel.StringType),
		cel.Variable("role", cel.StringType),
		cel.Variable("mode", cel.StringType),
		cel.Variable("session", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserRecursionLimit(MaxConditionNesting),
		cel.ParserExpressionSizeLimit(MaxConditionLength),
	)
}

// interruptEvery is how many comprehension iterations run between checks
// of the context.
const interruptEvery = 100

// compileRules checks and compiles the rules of d, in order, adding every
// problem to probs; a rule with a problem is left out. before are the
// rules already in the policy, whose ids a new rule may not take.
func compileRules(env *cel.Env, d *doc, file, source string, before []*rule, probs *problems) []*rule {
	seen := map[string]string{} // id -> where it was defined
	for _, r := range before {
		seen[r.id] = r.source
	}
	var out []*rule
	for i, ry := range d.file.Rules {
		lines := d.ruleLines[i]
		bad := false
		perr := func(key string, err error, format string, args ...any) {
			msg := fmt.Sprintf("rule %d", i+1)
			if namePattern.MatchString(ry.ID) && len(ry.ID) <= MaxIDLength {
				msg = fmt.Sprintf("rule %q", ry.ID)
			}
			probs.add(&ParseError{File: file, Line: lines.at(key), Msg: msg + ": " + fmt.Sprintf(format, args...), Err: err})
			bad = true
		}
		switch {
		case ry.ID == "":
			perr("id", nil, "no id")
		case len(ry.ID) > MaxIDLength:
			perr("id", nil, "the id is over MaxIDLength (%d bytes)", MaxIDLength)
		case !namePattern.MatchString(ry.ID):
			perr("id", nil, "id %q: want lower case letters, digits and -", ry.ID)
		case slices.Contains(reserved, ry.ID):
			perr("id", nil, "the id is reserved for the policy's own decisions")
		default:
			if where, dup := seen[ry.ID]; dup {
				if where == source {
					perr("id", nil, "the id is used by an earlier rule")
				} else {
					perr("id", nil, "the id is already taken by a rule of %s", where)
				}
			}
			seen[ry.ID] = source
		}

		action, err := ParseAction(ry.Decision)
		switch {
		case ry.Decision == "":
			perr("decision", nil, "no decision: want deny, ask or allow")
		case err != nil:
			perr("decision", nil, "%v", err)
		case action != Allow:
			if strings.TrimSpace(ry.Message) == "" {
				perr("message", nil, "a rule with decision %s needs a message saying why", action)
			}
			if strings.TrimSpace(ry.Hint) == "" {
				perr("hint", nil, "a rule with decision %s needs a hint saying what to do instead", action)
			}
		}
		if len(ry.Message) > MaxTextLength {
			perr("message", nil, "the message is over MaxTextLength (%d bytes)", MaxTextLength)
		}
		if len(ry.Hint) > MaxTextLength {
			perr("hint", nil, "the hint is over MaxTextLength (%d bytes)", MaxTextLength)
		}

		var prg cel.Program
		var ast *cel.Ast
		switch {
		case strings.TrimSpace(ry.When) == "":
			perr("when", nil, `no condition: write when: "true" to match every call`)
		case len(ry.When) > MaxConditionLength:
			perr("when", nil, "the condition is over MaxConditionLength (%d bytes)", MaxConditionLength)
		default:
			var iss *cel.Issues
			ast, iss = env.Compile(ry.When)
			if iss.Err() != nil {
				perr("when", iss.Err(), "the condition does not compile")
				break
			}
			if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
				perr("when", nil, "the condition is of type %s: want bool", t)
				break
			}
			prg, err = env.Program(ast,
				cel.CostLimit(MaxRuleCost),
				cel.InterruptCheckFrequency(interruptEvery),
				cel.EvalOptions(cel.OptOptimize),
			)
			if err != nil {
				perr("when", err, "the condition cannot be prepared")
			}
		}
		if bad {
			continue
		}

		r := &rule{
			id: ry.ID, when: ry.When, source: source, action: action,
			message: ry.Message, hint: ry.Hint, prg: prg, shapeOnly: true,
		}
		for _, ref := range ast.NativeRep().ReferenceMap() {
			if ref.Name == "args" || ref.Name == "session" {
				r.shapeOnly = false
			}
		}
		r.decision = Decision{Action: action, Reason: r.message, Hint: r.hint, Rule: r.id}
		switch action {
		case Deny:
			r.decision.Code = tool.CodeDenied
		case Ask:
			r.decision.Code = tool.CodeApprovalRequired
		}
		r.failed = Decision{
			Action: Deny,
			Code:   tool.CodePolicyError,
			Reason: fmt.Sprintf("policy rule %q could not be evaluated on this call, so the call is denied", r.id),
			Hint:   fmt.Sprintf("This is a fault in the policy, not in the call: ask an administrator to fix rule %q", r.id),
			Rule:   r.id,
		}
		r.overCost = Decision{
			Action: Deny,
			Code:   tool.CodePolicyError,
			Reason: fmt.Sprintf("policy rule %q went over MaxRuleCost (%d) on these arguments, so the call is denied", r.id, MaxRuleCost),
			Hint:   fmt.Sprintf("Make the arguments smaller, or ask an administrator to simplify rule %q", r.id),
			Rule:   r.id,
		}
		out = append(out, r)
	}
	return out
}

// describe writes the texts of the table decisions once, so that Decide
// only copies them.
func (c *compiled) describe() {
	var roleNames, modeNames []string
	for _, r := range c.roleOrder {
		roleNames = append(roleNames, r.name)
	}
	for _, m := range c.modeOrder {
		modeNames = append(modeNames, m.name)
	}
	c.roleHint = "Use one of the roles: " + strings.Join(roleNames, ", ")
	c.modeHint = "Use one of the modes: " + strings.Join(modeNames, ", ")

	for _, r := range c.roleOrder {
		for risk := r.maxRisk + 1; risk <= tool.RiskHigh; risk++ {
			hint := fmt.Sprintf("No role may run %s-risk tools", risk)
			for _, need := range c.roleOrder {
				if need.maxRisk >= risk {
					hint = fmt.Sprintf("This tool needs role %s: a caller with role %s must make the call", need.name, need.name)
					break
				}
			}
			r.bound[risk] = Decision{
				Action: Deny,
				Code:   tool.CodeRoleNotAllowed,
				Reason: fmt.Sprintf("role %s may run tools up to %s risk; this tool is %s risk", r.name, r.maxRisk, risk),
				Hint:   hint,
				Rule:   "role-bound",
			}
		}
	}

	for _, m := range c.modeOrder {
		for e := tool.EffectRead; e <= tool.EffectExternal; e++ {
			runs, free := modesWhere(c.modeOrder, func(o *mode) Action { return o.byEffect[e].Action })
			describe(&m.byEffect[e], m.name, fmt.Sprintf("%s tools", e), "", "Wait for a person to approve the call", runs, free)
		}
		runs, free := modesWhere(c.modeOrder, func(o *mode) Action { return o.destroy.Action })
		describe(&m.destroy, m.name, "commands that delete, truncate or overwrite files in the workspace",
			": a command's changes cannot be rolled back",
			"Wait for a person to approve the command; or make the change with write_file or edit_file, which the session can roll back",
			runs, free)
	}
}

// modesWhere lists the modes whose action (by of) is not a deny, and
// those where it is an allow, in order.
func modesWhere(all []*mode, of func(*mode) Action) (runs, free []string) {
	for _, o := range all {
		if a := of(o); a != Deny {
			runs = append(runs, o.name)
			if a == Allow {
				free = append(free, o.name)
			}
		}
	}
	return runs, free
}

// describe fills in the rule, reason, code and hint of d, mode's decision
// for what (its Action set): an ask says why after "approves the call"
// (askWhy) and how to go on (askHint), naming the modes that run it
// without approval (free); a deny names the modes that run it at all
// (runs).
func describe(d *Decision, mode, what, askWhy, askHint string, runs, free []string) {
	d.Rule = "mode:" + mode
	switch d.Action {
	case Allow:
		d.Reason = fmt.Sprintf("mode %s runs %s", mode, what)
	case Ask:
		d.Code = tool.CodeApprovalRequired
		d.Reason = fmt.Sprintf("mode %s runs %s only once a person approves the call%s", mode, what, askWhy)
		d.Hint = askHint
		if len(free) > 0 {
			d.Hint += fmt.Sprintf("; in mode %s it would run without approval", orList(free))
		}
	case Deny:
		d.Code = tool.CodeDenied
		d.Reason = fmt.Sprintf("mode %s does not run %s", mode, what)
		d.Hint = fmt.Sprintf("No mode runs %s", what)
		if len(runs) > 0 {
			d.Hint = fmt.Sprintf("A person can switch the session to mode %s, where %s can run", orList(runs), what)
		}
	}
}

// orList writes "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
