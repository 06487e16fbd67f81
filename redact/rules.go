package redact

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// rulesYAML is the shipped rule set; see the comment at its top.
//
//go:embed rules.yaml
var rulesYAML []byte

// ruleSpec is one rule as written in rules.yaml.
type ruleSpec struct {
	Name     string   `yaml:"name"`
	Kind     string   `yaml:"kind"`
	Keywords []string `yaml:"keywords"`
	Anchor   string   `yaml:"anchor"`
	Pattern  string   `yaml:"pattern"`
	Group    string   `yaml:"group"`
	Check    string   `yaml:"check"`
	Entropy  float64  `yaml:"entropy"`
	Priority int      `yaml:"priority"`
	Class    string   `yaml:"class"`
	Back     int      `yaml:"back"`
	Open     string   `yaml:"open"`
	Flags    []string `yaml:"flags"`
}

// rule is a compiled ruleSpec.
type rule struct {
	name     string
	kind     string
	keywords []string
	line     bool // anchor: line
	re       *regexp.Regexp
	group    int // submatch index masked; 0 is the whole match
	keyGroup int // submatch index of an assignment's name, or -1
	check    string
	entropy  float64
	priority int
	class    string
	back     int  // line rules: bytes before the keyword searched
	flag     bool // an assignment rule for "--name value" rather than "name = value"
	anchored bool // the pattern matches only where its window starts
	// open matches, from the keyword to the end of the text read so far,
	// every beginning of a match that runs past a line end: while it
	// does, Stream holds the text back from the keyword (see Stream).
	open *regexp.Regexp
	// flags are a check: cli rule's parsed flag templates.
	flags []flagTemplate
}

// checks are the Go verifiers a rule may name.
var checks = map[string]bool{
	"": true, "pem": true, "url": true, "email": true, "jwt": true,
	"basic": true, "mixed": true, "numeric": true, "assignment": true,
	"element": true, "attribute": true, "cli": true, "aws-pair": true,
}

// parseRules reads and compiles a rule file. The shipped file is compiled by
// every New; a test keeps it valid.
func parseRules(src []byte) ([]ruleSpec, []*rule, error) {
	var file struct {
		Rules []ruleSpec `yaml:"rules"`
	}
	if err := yaml.Unmarshal(src, &file); err != nil {
		return nil, nil, errorf(CodeInvalidRule, "Fix the YAML syntax of the rule file", "the rule file is not valid YAML: %v", err)
	}
	var rules []*rule
	names := map[string]bool{}
	for i, s := range file.Rules {
		where := fmt.Sprintf("rule %d (%s)", i+1, s.Name)
		if !kindPattern.MatchString(s.Name) || names[s.Name] {
			return nil, nil, errorf(CodeInvalidRule, "Give each rule its own name in lower-case-with-dashes", "%s: name %q is missing, repeated or not lower-case-with-dashes", where, s.Name)
		}
		names[s.Name] = true
		if !kindPattern.MatchString(s.Kind) {
			return nil, nil, errorf(CodeInvalidRule, "Name each rule's kind in lower-case-with-dashes", "%s: kind %q is not lower-case-with-dashes", where, s.Kind)
		}
		if !checks[s.Check] {
			return nil, nil, errorf(CodeInvalidRule, "Use one of the checks listed in rules.go", "%s: unknown check %q", where, s.Check)
		}
		if s.Anchor != "" && s.Anchor != "keyword" && s.Anchor != "line" {
			return nil, nil, errorf(CodeInvalidRule, "Set anchor to keyword or line", "%s: unknown anchor %q", where, s.Anchor)
		}
		if s.Pattern == "" && s.Check == "" {
			return nil, nil, errorf(CodeInvalidRule, "Give the rule a pattern or a check", "%s: neither pattern nor check", where)
		}
		if len(s.Keywords) == 0 && s.Check != "numeric" {
			return nil, nil, errorf(CodeInvalidRule, "Give the rule at least one keyword, so the prefilter can find where it applies", "%s: no keywords", where)
		}
		for _, k := range s.Keywords {
			if k == "" || len(k) > MaxContextBytes {
				return nil, nil, errorf(CodeInvalidRule, "Use keywords of 1 to MaxContextBytes bytes", "%s: keyword %q is empty or too long", where, k)
			}
		}
		if (len(s.Flags) > 0) != (s.Check == "cli") {
			return nil, nil, errorf(CodeInvalidRule, "Give flags to check: cli rules, and only to them", "%s: flags and check %q do not go together", where, s.Check)
		}
		if (s.Check == "element" || s.Check == "attribute") && (s.Anchor != "line" || s.Pattern == "") {
			return nil, nil, errorf(CodeInvalidRule, "Give a check: element or attribute rule anchor: line and a pattern", "%s: check %s needs anchor: line and a pattern", where, s.Check)
		}
		r := &rule{name: s.Name, kind: s.Kind, keywords: s.Keywords, line: s.Anchor == "line" || s.Check == "cli", check: s.Check, entropy: s.Entropy, priority: s.Priority, class: s.Class, back: s.Back}
		for _, f := range s.Flags {
			ft, err := parseFlagTemplate(f)
			if err != nil {
				return nil, nil, errorf(CodeInvalidRule, "Write a flag as \"-p VALUE\", \"-pVALUE\", \"--password=VALUE\" or \"-u USER:VALUE\"", "%s: flag %q: %v", where, f, err)
			}
			r.flags = append(r.flags, ft)
		}
		if r.back <= 0 || r.back > MaxContextBytes {
			r.back = MaxContextBytes
		}
		r.flag = strings.Contains(s.Pattern, "--?")
		if s.Pattern != "" {
			src := s.Pattern
			if !r.line || r.check == "assignment" || r.check == "element" || r.check == "attribute" {
				// Matched where the keyword (or the name holding it)
				// starts, never searched for along the line.
				src = `^(?:` + src + `)`
				r.anchored = true
			}
			re, err := regexp.Compile(src)
			if err != nil {
				return nil, nil, errorf(CodeInvalidRule, "Fix the rule's regular expression (RE2 syntax)", "%s: %v", where, err)
			}
			r.re = re
			r.keyGroup = re.SubexpIndex("key")
			if s.Group != "" {
				r.group = re.SubexpIndex(s.Group)
				if r.group < 0 {
					return nil, nil, errorf(CodeInvalidRule, "Name a group the pattern defines, as (?P<secret>...)", "%s: no group %q in the pattern", where, s.Group)
				}
			}
		}
		if s.Open != "" {
			if r.line {
				return nil, nil, errorf(CodeInvalidRule, "Give open only to keyword rules; a line rule never crosses a line end", "%s: open on a line rule", where)
			}
			re, err := regexp.Compile(`^(?:` + s.Open + `)\z`)
			if err != nil {
				return nil, nil, errorf(CodeInvalidRule, "Fix the rule's open expression (RE2 syntax)", "%s: open: %v", where, err)
			}
			r.open = re
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, nil, errorf(CodeInvalidRule, "Give the rule file at least one rule", "the rule file has no rules")
	}
	return file.Rules, rules, nil
}

// shippedRules compiles rules.yaml once; compiled rules are read-only and
// shared by every Redactor.
var shippedRules = sync.OnceValues(func() ([]*rule, error) {
	_, rules, err := parseRules(rulesYAML)
	return rules, err
})

var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$`)

// Kinds lists every kind the shipped rules can report, in rule order, once
// each: the names Options.Disable accepts, besides the class "pii".
func Kinds() []string { return slices.Clone(shippedKinds()) }

var shippedKinds = sync.OnceValue(func() []string {
	rules, err := shippedRules()
	if err != nil {
		return nil
	}
	var kinds []string
	for _, r := range rules {
		if !slices.Contains(kinds, r.kind) {
			kinds = append(kinds, r.kind)
		}
	}
	return kinds
})

// PIIKinds are the kinds of the class "pii", which Options.Disable can
// switch off together or one by one.
var PIIKinds = []string{"email", "card-number", "ssn", "phone"}

func lower(s string) string { return strings.ToLower(s) }
