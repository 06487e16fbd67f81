// Package redact finds secrets and personal data in text and masks them,
// naming what each mask hides: "token ghp_..." becomes
// "token [REDACTED:github-token]".
//
// What it finds: provider tokens (GitHub, GitLab, Slack, Stripe, OpenAI,
// Anthropic, AWS, Google, npm, PyPI, Twilio, SendGrid and more), private
// keys (PEM, OpenSSH, PGP, also JSON-escaped) and service-account key ids,
// JWTs, Bearer and Basic credentials, passwords in URLs, JDBC, ODBC and
// ADO.NET connection strings, password and *_SECRET / *_TOKEN / *_KEY
// assignments in .env, YAML, JSON, XML and Python, JS/TS, Ruby and Go code
// (gated by entropy and by what the name and value look like), passwords
// on the command lines of tools known to take them (curl -u, mysql -p,
// sshpass -p, ...), an AWS secret key next to its key id even with no
// label, and the personal-data classes email, phone, card-number (Luhn)
// and ssn, each of which Options.Disable can switch off. Placeholders
// ("<your-token>", "changeme", ${VAR}), references (os.environ["X"]),
// expressions (input()), UUIDs, git SHAs, lockfile and image hashes, public
// keys and certificates are left alone: none of them can leak a secret.
//
// The rules live in rules.yaml, embedded and compiled once by New. One pass
// of a keyword automaton (Aho-Corasick) finds where any rule may apply; each
// rule then checks only the few bytes around its keyword, so adding rules
// does not add passes over the text. A Redactor is safe for concurrent use.
//
// A Finding carries a kind and byte offsets, never the secret. Stream masks
// a reader into a writer in bounded memory and still catches a secret that
// straddles two reads.
//
//	r, err := redact.New(nil)
//	out, findings := r.RedactString(`GITHUB_TOKEN=ghp_...`)
package redact

import (
	"fmt"
	"regexp"
	"slices"
)

// Limits. Each is fixed at compile time except the stream window, which
// Options.StreamWindow sets.
const (
	// MaxSecretBytes is the longest single secret one finding covers: a
	// private-key block longer than this is masked from its header for
	// this many bytes. Stream keeps this much text ahead of what it writes.
	MaxSecretBytes = 16 << 10
	// MaxContextBytes is how far either side of a keyword a line rule
	// looks (an assignment's name, "aws" before a secret key).
	MaxContextBytes = 256
	// DefaultStreamWindow is the bytes Stream reads before it masks and
	// writes; its memory is about this plus MaxSecretBytes plus
	// StreamLookback.
	DefaultStreamWindow = 64 << 10
	// MinStreamWindow is the smallest window Options.StreamWindow accepts.
	MinStreamWindow = 16
	// MaxAllowEntries bounds Allow.Values plus Allow.Patterns.
	MaxAllowEntries = 10_000
)

// Code is a stable snake_case error code.
type Code string

const (
	CodeInvalidRule   Code = "invalid_rule"    // the rule file does not compile (a bug in airlock, or a custom file)
	CodeInvalidOption Code = "invalid_option"  // an Options field is out of range or names an unknown kind
	CodeInvalidAllow  Code = "invalid_allow"   // an allowlist pattern is not a valid regular expression, or the list is too long
	CodeInputTooLarge Code = "input_too_large" // an input is over a documented size limit
)

// Error is a refusal: a stable code, a message, and a hint that says what
// to do next.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func errorf(code Code, hint, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Hint: hint}
}

// Options tune a Redactor. A nil *Options, and every zero field, means the
// default: every rule on, nothing allowlisted, DefaultStreamWindow.
type Options struct {
	// Disable switches kinds off by name ("email", "phone"), or the whole
	// personal-data class with "pii". Unknown names are refused, so a typo
	// does not leave a class silently on.
	Disable []string `yaml:"disable" json:"disable,omitempty"`
	// Allow lists known false positives.
	Allow Allowlist `yaml:"allow" json:"allow"`
	// StreamWindow is the bytes Stream reads before it masks and writes.
	StreamWindow int `yaml:"stream_window" json:"stream_window,omitempty"`
}

// Allowlist names values that are never masked: Values match a found value
// exactly; Patterns are RE2 regular expressions that must match the whole
// found value. A card number is tried both as written and as its digits
// alone, so "4242424242424242" also allows "4242 4242 4242 4242" and
// "4242-4242-4242-4242".
type Allowlist struct {
	Values   []string `yaml:"values" json:"values,omitempty"`
	Patterns []string `yaml:"patterns" json:"patterns,omitempty"`
}

// TestCardNumbers are card numbers that payment providers publish for
// testing (Stripe, Adyen, Braintree, PayPal and others use these). They
// are masked by default like any Luhn-valid number: a redactor cannot tell
// a test log from a production one, and a reader cannot either. Where
// they are known to be harmless, allowlist them: Options.Allow.Values =
// redact.TestCardNumbers, or the same digits under redact.allow.values in
// a policy file.
var TestCardNumbers = []string{
	"4242424242424242", "4111111111111111", "4000056655665556", "4012888888881881", "4222222222222",
	"5555555555554444", "5105105105105100", "5200828282828210", "2223003122003222", "2221000000000009",
	"378282246310005", "371449635398431", "378734493671000",
	"6011111111111117", "6011000990139424", "6011981111111113",
	"3530111333300000", "3566002020360505",
	"30569309025904", "38520000023237", "36227206271667",
	"6200000000000005",
}

// Finding is one masked span: its kind and byte offsets [Start, End) into
// the input. It never holds the secret.
type Finding struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Redactor finds and masks secrets. Build one with New and share it.
type Redactor struct {
	rules    []*rule
	byWord   [][]int // keyword index → rule indexes
	pre      *prefilter
	numeric  map[string]bool // numeric PII kinds switched on
	email    bool
	allowVal map[string]bool
	allowRe  []*regexp.Regexp
	window   int
}

// New compiles the shipped rules with the options. It fails only on bad
// options; the error is an *Error.
func New(opts *Options) (*Redactor, error) {
	rules, err := shippedRules()
	if err != nil {
		return nil, err
	}
	return build(rules, opts, nil)
}

// build makes a Redactor of the rules that use allows (nil: all of them);
// tests use it to try one rule alone.
func build(rules []*rule, opts *Options, use func(*rule) bool) (*Redactor, error) {
	if opts == nil {
		opts = &Options{}
	}
	known := map[string]bool{"pii": true}
	for _, r := range rules {
		known[r.kind] = true
	}
	off := map[string]bool{}
	for _, k := range opts.Disable {
		if !known[k] {
			return nil, errorf(CodeInvalidOption, "Use a kind from redact.Kinds(), or \"pii\" for every personal-data kind", "Disable names an unknown kind %q", k)
		}
		off[k] = true
	}
	if opts.StreamWindow != 0 && opts.StreamWindow < MinStreamWindow {
		return nil, errorf(CodeInvalidOption, fmt.Sprintf("Set StreamWindow to 0 for the default or at least %d", MinStreamWindow), "StreamWindow %d is below the minimum", opts.StreamWindow)
	}
	if n := len(opts.Allow.Values) + len(opts.Allow.Patterns); n > MaxAllowEntries {
		return nil, errorf(CodeInvalidAllow, fmt.Sprintf("Keep the allowlist to at most %d entries", MaxAllowEntries), "the allowlist has %d entries", n)
	}
	rd := &Redactor{numeric: map[string]bool{}, allowVal: map[string]bool{}, window: opts.StreamWindow}
	if rd.window == 0 {
		rd.window = DefaultStreamWindow
	}
	for _, v := range opts.Allow.Values {
		rd.allowVal[v] = true
	}
	for _, p := range opts.Allow.Patterns {
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			return nil, errorf(CodeInvalidAllow, "Write allowlist patterns in RE2 syntax (https://github.com/google/re2/wiki/Syntax)", "allowlist pattern %q does not compile: %v", p, err)
		}
		rd.allowRe = append(rd.allowRe, re)
	}
	var words []string
	index := map[string]int{}
	for _, r := range rules {
		if off[r.kind] || (r.class != "" && off[r.class]) || use != nil && !use(r) {
			continue
		}
		switch {
		case r.check == "numeric":
			rd.numeric[r.kind] = true
			continue
		case r.check == "email":
			rd.email = true
		}
		ri := len(rd.rules)
		rd.rules = append(rd.rules, r)
		for _, k := range r.keywords {
			wi, ok := index[k]
			if !ok {
				wi = len(words)
				index[k] = wi
				words = append(words, k)
				rd.byWord = append(rd.byWord, nil)
			}
			rd.byWord[wi] = append(rd.byWord[wi], ri)
		}
	}
	rd.pre = newPrefilter(words)
	return rd, nil
}

// Find reports every secret in text, in order, without overlaps.
func (rd *Redactor) Find(text []byte) []Finding {
	var out []Finding
	for _, f := range rd.find(text) {
		out = append(out, f.Finding)
	}
	return out
}

// Redact returns text with every finding replaced by [REDACTED:kind], and
// the findings, whose offsets are into text.
func (rd *Redactor) Redact(text []byte) ([]byte, []Finding) {
	fs := rd.Find(text)
	if len(fs) == 0 {
		return slices.Clone(text), nil
	}
	out := make([]byte, 0, len(text))
	pos := 0
	for _, f := range fs {
		out = append(out, text[pos:f.Start]...)
		out = appendMask(out, f.Kind)
		pos = f.End
	}
	return append(out, text[pos:]...), fs
}

// RedactString is Redact for a string.
func (rd *Redactor) RedactString(s string) (string, []Finding) {
	out, fs := rd.Redact([]byte(s))
	return string(out), fs
}

// Mask is the text that replaces a secret of the kind.
func Mask(kind string) string { return "[REDACTED:" + kind + "]" }

func appendMask(b []byte, kind string) []byte {
	b = append(b, "[REDACTED:"...)
	b = append(b, kind...)
	return append(b, ']')
}
