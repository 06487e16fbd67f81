package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/tool"
)

// TestDefaultCompiles keeps the embedded policy unbroken, so that Default
// never panics.
func TestDefaultCompiles(t *testing.T) {
	if _, err := builtin(); err != nil {
		t.Fatal(err)
	}
	p := Default()
	if p != Default() {
		t.Error("Default compiles more than once")
	}
	if g, w := p.DefaultMode(), "ask"; g != w || g != DefaultMode {
		t.Errorf("DefaultMode: got %q, want %q and the constant %q", g, w, DefaultMode)
	}
	if len(p.c.rules) == 0 || p.c.rules[0].id != "high-risk-asks" {
		t.Errorf("the built-in rules do not start with high-risk-asks")
	}
	if len(p.c.rules) > MaxRules {
		t.Errorf("%d built-in rules, over MaxRules", len(p.c.rules))
	}
}

// TestBuiltinErrors feeds broken variants of the built-in file to the
// compiler that reads it.
func TestBuiltinErrors(t *testing.T) {
	good := string(defaultYAML)
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"unknown top-level key", "default_mode: ask", "default_mode: ask\nextra: 1", `unknown key "extra"`},
		{"bad default mode", "default_mode: ask", "default_mode: nope", `default_mode "nope" is not one of the modes`},
		{"default mode not DefaultMode", "default_mode: ask", "default_mode: auto", `default_mode "auto" is not DefaultMode ("ask")`},
		{"bad max risk", "admin: {max_risk: high}", "admin: {max_risk: huge}", `role "admin": max_risk`},
		{"bad role name", "admin: {max_risk: high}", "Admin: {max_risk: high}", `role "Admin"`},
		{"no default role", "operator: {max_risk: medium}", "op: {max_risk: medium}", `no role "operator"`},
		{"unknown role field", "admin: {max_risk: high}", "admin: {max_risk: high, extra: 1}", "field extra not found"},
		{"bad mode action", "auto: {read: allow, write: allow, external: allow, destroy: allow}", "auto: {read: allow, write: allow, external: maybe, destroy: allow}", `mode "auto": external`},
		{"missing mode action", "auto: {read: allow, write: allow, external: allow, destroy: allow}", "auto: {read: allow, write: allow, destroy: allow}", `mode "auto": external`},
		{"missing destroy", "auto: {read: allow, write: allow, external: allow, destroy: allow}", "auto: {read: allow, write: allow, external: allow}", `mode "auto": destroy`},
		{"destroy looser than write", "ask: {read: allow, write: ask, external: ask, destroy: ask}", "ask: {read: allow, write: ask, external: ask, destroy: allow}", `mode "ask": destroy allow is looser than its write ask`},
		{"no roles", "roles:", "roles: {}\nx-roles:", `unknown key "x-roles"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			if src == good {
				t.Fatalf("%q is not in default.yaml", tt.from)
			}
			_, err := compileBuiltin([]byte(src), "default.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// ruleSrc writes one rule in block style.
func ruleSrc(id, when, decision string) string {
	return fmt.Sprintf("  - id: %s\n    when: %s\n    decision: %s\n    message: m\n    hint: h\n", id, when, decision)
}

func TestParseErrors(t *testing.T) {
	many := "rules:\n"
	for i := range MaxRules + 1 {
		many += ruleSrc(fmt.Sprintf("r%d", i), "'true'", "deny")
	}
	tests := []struct {
		name     string
		src      string
		wantLine int
		want     string
	}{
		{"bad YAML", "rules: [\n", 1, "not valid YAML"},
		{"bad YAML indentation", "rules:\n  - id: a\n   when: x\n", 1, "not valid YAML"},
		{"two documents", "rules: []\n---\nrules: []\n", 2, "more than one YAML document"},
		{"not a mapping", "- a\n- b\n", 1, "must be a mapping"},
		{"roles", "roles:\n  viewer: {max_risk: high}\n", 1, `key "roles" is not allowed: a policy file adds rules on top of the built-in policy`},
		{"modes", "version: 1\nmodes: {}\n", 2, `key "modes" is not allowed`},
		{"default mode", "default_mode: auto\nrules: []\n", 1, `key "default_mode" is not allowed`},
		{"an unknown key", "rules: []\nrule: []\n", 2, `key "rule" is not allowed`},
		{"version 2", "version: 2\nrules: []\n", 1, "version 2 is not supported"},
		{"version a string", "version: one\n", 1, "not a valid policy file"},
		{"rules not a list", "rules: {id: a}\n", 1, "rules must be a list"},
		{"a rule not a mapping", "rules:\n  - a\n", 2, "rule 1 must be a mapping"},
		{"an unknown rule field", "rules:\n  - id: a\n    when: 'true'\n    decison: deny\n", 4, `rule 1: unknown field "decison"`},
		{"a duplicate field", "rules:\n  - id: a\n    id: b\n", 3, `mapping key "id" already defined`},
		{"a field of the wrong type", "rules:\n  - id: a\n    when: [x]\n", 3, "cannot unmarshal"},
		{"no id", "rules:\n  - when: 'true'\n    decision: deny\n", 2, "rule 1: no id"},
		{"a bad id", "rules:\n" + ruleSrc("Bad_Id", "'true'", "deny"), 2, `id "Bad_Id"`},
		{"a long id", "rules:\n" + ruleSrc(strings.Repeat("a", MaxIDLength+1), "'true'", "deny"), 2, "MaxIDLength"},
		{"a reserved id", "rules:\n" + ruleSrc("role-bound", "'true'", "deny"), 2, "reserved"},
		{"a built-in id", "rules:\n" + ruleSrc("high-risk-asks", "'true'", "deny"), 2, "already taken by a rule of builtin"},
		{"a duplicate id", "rules:\n" + ruleSrc("a", "'true'", "deny") + ruleSrc("a", "'false'", "ask"), 7, "used by an earlier rule"},
		{"no decision", "rules:\n  - id: a\n    when: 'true'\n", 2, "no decision"},
		{"a bad decision", "rules:\n" + ruleSrc("a", "'true'", "block"), 4, `unknown decision "block"`},
		{"no message", "rules:\n  - id: a\n    when: 'true'\n    decision: deny\n    hint: h\n", 2, "needs a message"},
		{"no hint", "rules:\n  - id: a\n    when: 'true'\n    decision: ask\n    message: m\n", 2, "a rule with decision ask needs a hint"},
		{"a long message", "rules:\n  - id: a\n    when: 'true'\n    decision: allow\n    message: " + strings.Repeat("m", MaxTextLength+1) + "\n", 5, "MaxTextLength"},
		{"no condition", "rules:\n  - id: a\n    decision: allow\n", 2, `write when: "true"`},
		{"an empty condition", "rules:\n  - id: a\n    when: ''\n    decision: allow\n", 3, "no condition"},
		{"a long condition", "rules:\n" + ruleSrc("a", "'"+strings.Repeat("true && ", MaxConditionLength/8)+"true'", "deny"), 3, "MaxConditionLength"},
		{"a deep condition", "rules:\n" + ruleSrc("a", strings.Repeat("(", MaxConditionNesting+1)+"true"+strings.Repeat(")", MaxConditionNesting+1), "deny"), 3, "does not compile"},
		{"bad CEL", "rules:\n" + ruleSrc("a", "'tool =='", "deny"), 3, "does not compile"},
		{"an undeclared variable", "rules:\n" + ruleSrc("a", "'user == \"x\"'", "deny"), 3, "undeclared reference"},
		{"an unknown function", "rules:\n" + ruleSrc("a", "'shell(tool)'", "deny"), 3, "does not compile"},
		{"a string condition", "rules:\n" + ruleSrc("a", "tool", "deny"), 3, "of type string: want bool"},
		{"a dyn condition", "rules:\n" + ruleSrc("a", "args.flag", "deny"), 3, "of type dyn: want bool"},
		{"an int condition", "rules:\n" + ruleSrc("a", "'1 + 2'", "deny"), 3, "of type int: want bool"},
		{"a bad regular expression", "rules:\n" + ruleSrc("a", `'tool.matches("(")'`, "deny"), 3, "condition"},
		{"too many rules", many, 1, fmt.Sprintf("%d rules: a file may hold at most MaxRules (%d)", MaxRules+1, MaxRules)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src), "bad.yaml")
			if err == nil {
				t.Fatalf("no error; effective policy:\n%s", p.Effective())
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %T %v, want a *ParseError", err, err)
			}
			if pe.File != "bad.yaml" || pe.Line != tt.wantLine {
				t.Errorf("at %s:%d, want bad.yaml:%d (%v)", pe.File, pe.Line, tt.wantLine, err)
			}
			wantPrefix := fmt.Sprintf("bad.yaml:%d: ", tt.wantLine)
			if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want %q...%q", err, wantPrefix, tt.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	exactly := "rules:\n"
	for i := range MaxRules {
		exactly += ruleSrc(fmt.Sprintf("r%d", i), "'false'", "deny")
	}
	tests := []struct {
		name      string
		src       string
		wantRules int // the file's
	}{
		{"empty", "", 0},
		{"a comment", "# nothing yet\n", 0},
		{"null", "~\n", 0},
		{"version only", "version: 1\n", 0},
		{"no rules", "rules:\n", 0},
		{"an empty list", "rules: []\n", 0},
		{"flow style", "rules: [{id: a, when: 'true', decision: allow}]\n", 1},
		{"an allow without texts", "rules:\n  - id: a\n    when: tool == 'x'\n    decision: allow\n", 1},
		{"a multi-line condition", "rules:\n  - id: a\n    when: >\n      tool == 'x' &&\n      has(args.y)\n    decision: deny\n    message: m\n    hint: h\n", 1},
		{"a condition at the length limit", "rules:\n" + ruleSrc("a", "'"+strings.Repeat(" ", MaxConditionLength-4)+"true'", "deny"), 1},
		{"exactly MaxRules", exactly, MaxRules},
	}
	builtinRules := len(Default().c.rules)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src), "ok.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if g, w := len(p.c.rules), builtinRules+tt.wantRules; g != w {
				t.Errorf("got %d rules, want %d", g, w)
			}
			if g, w := p.DefaultMode(), "ask"; g != w {
				t.Errorf("DefaultMode: got %q, want %q", g, w)
			}
		})
	}
}

// TestParseLeavesDefault checks that parsing a file does not change the
// default policy, which every parsed policy shares.
func TestParseLeavesDefault(t *testing.T) {
	before := string(Default().Effective())
	p := rulesPolicy(t, "rules:\n"+ruleSrc("deny-all", "'true'", "deny"))
	in := Input{Tool: "t", Risk: tool.RiskLow, Effect: tool.EffectRead}
	if g, w := got(p.Decide(context.Background(), in)), deny("deny-all"); g != w {
		t.Errorf("parsed: got %v, want %v", g, w)
	}
	if g, w := got(Default().Decide(context.Background(), in)), allow("mode:ask"); g != w {
		t.Errorf("default: got %v, want %v", g, w)
	}
	if after := string(Default().Effective()); after != before {
		t.Errorf("the default policy changed:\n%s", after)
	}
	// Two files on the same base do not see each other's rules.
	q := rulesPolicy(t, "rules:\n"+ruleSrc("deny-all", "'false'", "deny"))
	if g, w := got(q.Decide(context.Background(), in)), allow("mode:ask"); g != w {
		t.Errorf("second file: got %v, want %v", g, w)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	path := write("policy.yaml", "version: 1\nrules:\n"+ruleSrc("no-x", "tool == 'x'", "deny"))
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Decide(context.Background(), Input{Tool: "x", Risk: tool.RiskLow, Effect: tool.EffectRead})
	if g, w := got(d), deny("no-x"); g != w {
		t.Errorf("got %v, want %v", g, w)
	}
	if !strings.Contains(string(p.Effective()), "source: "+path) {
		t.Errorf("Effective does not name %s:\n%s", path, p.Effective())
	}

	bad := write("bad.yaml", "rules:\n  - id: a\n    when: 'true'\n    decision: nope\n")
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":4: ") {
		t.Errorf("got %v, want an error at %s:4", err, bad)
	}

	big := write("big.yaml", "# "+strings.Repeat("x", MaxFileSize)+"\n")
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "MaxFileSize") {
		t.Errorf("got %v, want an error naming MaxFileSize", err)
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want os.ErrNotExist", err)
	}
}

// effectiveYAML is the shape Effective writes.
type effectiveYAML struct {
	Version     int                          `yaml:"version"`
	DefaultMode string                       `yaml:"default_mode"`
	Roles       map[string]map[string]string `yaml:"roles"`
	Modes       map[string]map[string]string `yaml:"modes"`
	Rules       []map[string]string          `yaml:"rules"`
}

func TestEffective(t *testing.T) {
	src := "rules:\n" +
		ruleSrc("no-x", `'tool == "x" && args.n > 2'`, "deny") +
		"  - id: quoted\n    when: \"true\"\n    decision: allow\n    message: 'yes: \"quoted\" # not a comment'\n" +
		"  - id: multi\n    when: |\n      tool == 'y' ||\n      tool == 'z'\n    decision: ask\n    message: m\n    hint: h\n"
	p := rulesPolicy(t, src)
	out := p.Effective()

	var e effectiveYAML
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("Effective is not valid YAML: %v\n%s", err, out)
	}
	want := effectiveYAML{
		Version:     1,
		DefaultMode: "ask",
		Roles: map[string]map[string]string{
			"viewer": {"max_risk": "low"}, "operator": {"max_risk": "medium"}, "admin": {"max_risk": "high"},
		},
		Modes: map[string]map[string]string{
			"read-only": {"read": "allow", "write": "deny", "external": "deny", "destroy": "deny"},
			"ask":       {"read": "allow", "write": "ask", "external": "ask", "destroy": "ask"},
			"auto-edit": {"read": "allow", "write": "allow", "external": "ask", "destroy": "ask"},
			"auto":      {"read": "allow", "write": "allow", "external": "allow", "destroy": "allow"},
		},
		Rules: []map[string]string{
			{"id": "high-risk-asks", "source": "builtin", "when": `risk == "high"`, "decision": "ask",
				"message": Default().c.rules[0].message, "hint": Default().c.rules[0].hint},
			{"id": "no-x", "source": "test.yaml", "when": `tool == "x" && args.n > 2`, "decision": "deny", "message": "m", "hint": "h"},
			{"id": "quoted", "source": "test.yaml", "when": "true", "decision": "allow", "message": `yes: "quoted" # not a comment`},
			{"id": "multi", "source": "test.yaml", "when": "tool == 'y' ||\ntool == 'z'\n", "decision": "ask", "message": "m", "hint": "h"},
		},
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got %+v\nwant %+v\n%s", e, want, out)
	}

	// The rules, cut out of the output, parse again as a policy file to
	// the same effective policy.
	var rules struct {
		Rules []ruleYAML `yaml:"rules"`
	}
	var file []ruleYAML
	if err := yaml.Unmarshal(out, &rules); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules.Rules {
		if r.ID != "high-risk-asks" {
			file = append(file, r)
		}
	}
	again, err := yaml.Marshal(map[string]any{"rules": file})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(again, "test.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, again)
	}
	if g, w := string(q.Effective()), string(out); g != w {
		t.Errorf("round trip:\ngot  %s\nwant %s", g, w)
	}

	// The caller may modify what Effective returns.
	out[0] = 'X'
	if p.Effective()[0] == 'X' {
		t.Error("Effective returns the policy's own buffer")
	}
}

// FuzzParse checks that no file makes Parse panic, and that whatever it
// accepts decides without panicking and shows as valid YAML.
func FuzzParse(f *testing.F) {
	f.Add([]byte("rules:\n" + ruleSrc("a", "'true'", "deny")))
	f.Add([]byte("version: 1\nrules: [{id: a, when: 'args.x > 1', decision: ask, message: m, hint: h}]\n"))
	f.Add([]byte("roles: {viewer: {max_risk: high}}\n"))
	f.Add([]byte("rules:\n  - &a {id: a}\n  - *a\n"))
	if src, err := os.ReadFile("testdata/ten-rules.yaml"); err == nil {
		f.Add(src)
	}
	in := Input{Tool: "t", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "auto", Args: map[string]any{"x": 2.0}}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		p.Decide(context.Background(), in)
		var v any
		if err := yaml.Unmarshal(p.Effective(), &v); err != nil {
			t.Errorf("Effective is not YAML: %v", err)
		}
	})
}

// TestParseReportsEveryProblem: a file with several problems gets all of
// them in one error, each with its line and the rule it is about, so that
// a check need not be run once per mistake: first what is wrong with the
// file's shape, then each rule in order, then the other sections.
func TestParseReportsEveryProblem(t *testing.T) {
	src := "rules:\n" +
		ruleSrc("good", "'true'", "deny") + // 2-6
		"  - id: a\n    when: 'tool =='\n    decision: deny\n    message: m\n    hint: h\n" + // 7-11: CEL
		"  - id: b\n    when: 'true'\n    decison: deny\n" + // 12-14: unknown field, then no decision
		"  - id: Bad_Id\n    when: 'true'\n    decision: block\n    message: m\n    hint: h\n" + // 15-19
		"untrusted:\n  on_flagged: sometimes\n" + // 20-21
		"extra: 1\n" // 22
	_, err := Parse([]byte(src), "bad.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`bad.yaml:14: rule 3: unknown field "decison"`,
		`bad.yaml:22: key "extra" is not allowed`,
		`bad.yaml:8: rule "a": the condition does not compile`,
		`bad.yaml:12: rule "b": no decision`,
		`bad.yaml:15: rule 4: id "Bad_Id"`,
		`bad.yaml:17: rule 4: unknown decision "block"`,
		`bad.yaml:20: untrusted.on_flagged "sometimes"`,
	}
	msg := err.Error()
	at := 0
	for _, w := range want {
		i := strings.Index(msg[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\nin:\n%s", w, msg)
		}
		at += i + len(w)
	}
	if strings.Contains(msg, `rule "good"`) {
		t.Errorf("the good rule is reported:\n%s", msg)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 14 {
		t.Errorf("the first *ParseError is not the first problem: %v", pe)
	}
}
