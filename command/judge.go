package command

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"airlock.dev/airlock/protect"
)

// finding is one reason for a verdict about one command.
type finding struct {
	v               Verdict
	rule, msg, hint string
	// soft is an ask that a policy file's allow entry for the command
	// loosens, as it loosens the ask of the command's name.
	soft bool
}

// cmd is one simple command being judged, after its name is resolved.
type cmd struct {
	c       *checker
	name    string // resolved: "rm" for /bin/rm, the path itself for ./x
	args    []arg  // args[0] is the command word as written
	f       *frame
	trusted bool      // the name is not a program outside the system's directories
	cls     finding   // what the name says (ask:network, allow:inspect, ...)
	extra   []finding // what the arguments say (paths outside, ...), in order
	done    bool      // a handler reported for itself; finish does nothing
	step    int       // which command of the check this is, for what it destroys
}

// systemDirs hold the programs whose names the rules know; /usr/bin/rm is
// rm, while /opt/x/ls may be anything.
var systemDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/sbin": true, "/usr/sbin": true,
	"/usr/local/bin": true, "/usr/local/sbin": true,
}

// simple judges one simple command: args[0] is its name as written.
func (c *checker) simple(args []arg, f *frame) {
	if c.stop || len(args) == 0 {
		return
	}
	c.count++
	if c.count > MaxCommands {
		c.limit(f, CodeTooComplex, "MaxCommands",
			fmt.Sprintf("the script runs more than %d commands (MaxCommands)", MaxCommands),
			"Split the work into several shorter commands")
		return
	}
	a0 := args[0]
	if !a0.exact() {
		c.found(f, Deny, "deny:dynamic-command", "", display(a0.text, args), dynamicWhy(a0),
			"Write the command's name literally, as in rm -r build, not through variables, substitutions, braces or globs")
		return
	}
	name, trusted := a0.lit, true
	if strings.Contains(name, "/") && strings.HasPrefix(path.Clean(name), "/") {
		dir, base := path.Split(path.Clean(name))
		name, trusted = base, systemDirs[strings.TrimSuffix(dir, "/")]
		if base == "" {
			name = a0.lit
		}
	}
	if c.argChecks(args, name, display(name, args), f) {
		return
	}
	if w := evaluatedSubscript(name, args); w != "" {
		c.found(f, Deny, "deny:dynamic-command", name, display(name, args),
			"the name "+w+" holds an array subscript that bash evaluates, running whatever command it holds",
			"Use a plain variable name, with no [ ] subscript holding $ or a backquote")
		return
	}
	x := &cmd{c: c, name: name, args: args, f: f, trusted: trusted, step: c.count}
	switch {
	case strings.Contains(name, "/"):
		// ./x, bin/x, ~/x: a program of the workspace or elsewhere, whose
		// name means nothing to the rules.
		x.set(Ask, "ask:unknown", name+" is a program the policy does not know",
			"Ask the user to approve it, or to add it to the commands policy")
	case !f.noFuncs && c.funcs[name] != nil:
		if f.fn == name && (f.pipeline || f.background) {
			c.found(f, Deny, "deny:fork-bomb", name, display(name, args),
				"the function "+name+" starts copies of itself in a pipeline or in the background: a fork bomb",
				"Do not make a function start itself; run the work once")
			return
		}
		// The body was judged where it was declared; a call from another
		// directory judges it again there. A function runs in the
		// caller's shell, so its cd stays.
		if fn := c.funcs[name]; fn.walked && !fn.active {
			if fn.dir == c.cwd {
				c.cwd = fn.after
			} else {
				body := *f
				body.fn, body.pipeline, body.background, body.piped, body.fed = name, false, false, false, ""
				fn.active = true
				c.stmt(fn.body, body)
				fn.active = false
				if c.stop {
					return
				}
			}
		}
		x.cls = finding{v: Allow, rule: "allow:function"}
	default:
		if h, ok := handlers[name]; ok {
			h(x)
		} else {
			x.classify()
		}
	}
	if !x.done {
		x.finish()
	}
}

func dynamicWhy(a arg) string {
	switch {
	case a.braces:
		return "the command's name comes from a brace expansion (" + a.text + "), so what runs is only known when it runs"
	case a.glob:
		return "the command's name is a glob (" + a.text + "), so what runs depends on the files present"
	}
	return "the command's name is only known when it runs (" + a.text + ")"
}

// finish combines what the name and the arguments say with the policy
// file's entries, and reports the command's decision.
func (x *cmd) finish() {
	c := x.c
	shown := display(x.name, x.args)
	if !x.trusted {
		shown = display(x.args[0].lit, x.args)
	}
	var deny, ask, allow *entry
	for _, key := range x.keys() {
		for _, e := range c.p.user[key] {
			switch e.verdict {
			case Deny:
				if deny == nil {
					deny = e
				}
			case Ask:
				if ask == nil {
					ask = e
				}
			case Allow:
				if allow == nil {
					allow = e
				}
			}
		}
	}
	if deny != nil {
		c.found(x.f, Deny, deny.id, x.name, shown, deny.message(shown), deny.hint)
		return
	}
	cls := x.cls
	if allow != nil && cls.v == Ask {
		cls = finding{v: Allow, rule: allow.id}
	}
	final := cls
	for _, e := range x.extra {
		if e.soft && allow != nil {
			continue
		}
		if e.v.severer(final.v) {
			final = e
		}
	}
	if ask != nil && final.v == Allow {
		final = finding{v: Ask, rule: ask.id, msg: ask.message(shown), hint: ask.hint}
	}
	if final.v == Allow && !x.trusted && allow == nil {
		final = finding{v: Ask, rule: "ask:unknown", msg: "runs " + x.args[0].lit + ", not the system's " + x.name,
			hint: "Call " + x.name + " by its name, or ask the user to approve this program"}
	}
	c.found(x.f, final.v, final.rule, x.name, shown, final.msg, final.hint)
}

// keys are the names a policy file entry may give this command: the name,
// and the name with its subcommand ("git push").
func (x *cmd) keys() []string {
	if sub := x.sub(); sub != "" {
		return []string{x.name, x.name + " " + sub}
	}
	return []string{x.name}
}

// sub is the command's subcommand: its first operand, past the options
// (and, for git, past the global options that take a value).
func (x *cmd) sub() string {
	spec := optSpec{stop: true}
	if x.name == "git" {
		spec.short, spec.long = "Cc", []string{"--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
	}
	p := parseOpts(x.args, 1, spec)
	if p.end < len(x.args) && x.args[p.end].exact() {
		return x.args[p.end].lit
	}
	return ""
}

func (x *cmd) set(v Verdict, rule, msg, hint string) {
	x.cls = finding{v: v, rule: rule, msg: msg, hint: hint}
}

func (x *cmd) add(v Verdict, rule, msg, hint string) {
	x.extra = append(x.extra, finding{v: v, rule: rule, msg: msg, hint: hint})
}

// inner judges the command a wrapper runs, args[from:]. The wrapper itself
// is allowed: what it runs decides.
func (x *cmd) inner(from int, noFuncs bool) {
	x.set(Allow, "allow:wrapper", "", "")
	if from >= len(x.args) {
		return
	}
	f := *x.f
	f.noFuncs = noFuncs
	x.c.simple(x.args[from:], &f)
}

// nestedScript judges a literal script a command runs: sh -c SCRIPT, trap
// SCRIPT.
func (x *cmd) nestedScript(a arg, what string) {
	if !a.exact() {
		x.set(Deny, "deny:dynamic-command", what+" is only known when it runs ("+a.text+")",
			"Give the script literally, in single quotes")
		return
	}
	if x.f.depth+1 > MaxDepth {
		x.done = true
		x.c.limit(x.f, CodeTooComplex, "MaxDepth",
			fmt.Sprintf("scripts nest more than %d deep (MaxDepth)", MaxDepth),
			"Run the inner command directly instead of wrapping it in more shells")
		return
	}
	x.set(Allow, "allow:wrapper", "", "")
	restore := x.c.keepCwd()
	x.c.script(a.lit, x.f.depth+1, x.f.pos)
	restore()
}

// pathUse is what a command does to a path, for checkPath.
type pathUse uint8

const (
	writes  pathUse = iota // creates or writes it
	changes                // changes it in place: modes, owners, a repository
	deletes                // deletes it or wipes what it holds
)

// checkPath adds what writing to, changing or deleting the path a means:
// outside the workspace and /tmp it is denied; inside, a protected file
// (protect.List) is denied or asked about, and deleting the whole
// workspace is asked about.
func (x *cmd) checkPath(a arg, use pathUse) {
	pl, shown := x.c.locate(a)
	verb := "write to"
	if use != writes {
		verb = "delete or change"
	}
	if pl == inside {
		x.insidePath(a, use, verb)
	}
	if use == deletes {
		x.destroy(a)
	}
	switch pl {
	case outside:
		hint := "Write only inside the workspace (" + x.c.ws + ") or /tmp"
		if use != writes {
			hint = "Delete or change only paths inside the workspace (" + x.c.ws + ")"
		}
		x.add(Deny, "deny:destructive-outside",
			fmt.Sprintf("%s would %s %s, outside the workspace", x.name, verb, shown), hint)
	case unknown:
		if use != writes {
			x.add(Deny, "deny:destructive-outside",
				fmt.Sprintf("%s would %s %s, which is only known when it runs", x.name, verb, shown),
				"Name the paths literally, inside the workspace, as in rm -r build")
		} else {
			x.add(Ask, "ask:dynamic-path",
				fmt.Sprintf("%s would %s %s, which is only known when it runs", x.name, verb, shown),
				"Name the paths literally, inside the workspace")
		}
	}
}

// insidePath checks a path known to be inside the workspace against the
// protected list, and a deletion against the whole workspace. A glob is
// checked as every name it could match: sed -i x * edits a Makefile.
func (x *cmd) insidePath(a arg, use pathUse, verb string) {
	if a.braces {
		for _, alt := range a.alts {
			x.insidePath(alt, use, verb)
		}
		return
	}
	if a.dyn {
		return
	}
	p := a.path
	if a.glob {
		p = a.pattern
	}
	abs, ok := x.c.resolve(p)
	if !ok || !within(abs, x.c.ws) {
		return
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, x.c.ws), "/")
	if whole := abs == x.c.ws && use == deletes || a.glob && path.Dir(abs) == x.c.ws && use != changes && coversAll(path.Base(abs)); whole {
		x.extra = append(x.extra, finding{v: Ask, rule: "ask:workspace-delete", soft: true,
			msg:  fmt.Sprintf("%s would %s %s: everything in the workspace", x.name, verb, a.text),
			hint: "Name the files or directories to delete, as in rm -rf build dist; or ask the user to approve clearing the workspace"})
	}
	var d protect.Decision
	if a.glob {
		d = x.c.p.protected.CheckPattern(rel)
	} else {
		d = x.c.p.protected.Check(rel)
	}
	// Deleting what a glob matches takes a host's files away, which runs
	// nothing; a named one (rm -rf .git) is still asked about.
	if d.Verdict == protect.Ask && use == deletes && a.glob {
		return
	}
	if d.Verdict != protect.Allow {
		v := Ask
		if d.Verdict == protect.Deny {
			v = Deny
		}
		x.add(v, d.Rule, fmt.Sprintf("%s would %s %s: %s", x.name, verb, show(abs), d.Reason), d.Hint)
	}
}

// coversAll reports whether a glob, as the last component of a path,
// matches every name the shell would give it: every plain name (*, ?*) or
// every dotted one (.*). It is tried on a set of names of each kind.
func coversAll(base string) bool {
	all := func(names ...string) bool {
		for _, n := range names {
			if !globMatches(base, n) {
				return false
			}
		}
		return true
	}
	return all("a", "Z", "0", "_", "-x", "file.txt", "Makefile", "x~", "\u00e9") || all(".a", ".git", ".env", ".Z")
}

func (x *cmd) checkPaths(idx []int, use pathUse) {
	for _, i := range idx {
		x.checkPath(x.args[i], use)
	}
}

// redirect checks where a redirection reads or writes.
func (c *checker) redirect(r *syntax.Redirect, name string, f *frame) {
	if r.Hdoc != nil {
		c.nested(r.Hdoc, f)
	}
	if r.Word == nil {
		return
	}
	c.nested(r.Word, f)
	if c.stop {
		return
	}
	var write, over bool // over: it truncates or writes over the file
	switch r.Op {
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob:
		write = true
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob, syntax.RdrInOut:
		write, over = true, true
	case syntax.RdrIn:
	case syntax.DplIn, syntax.DplOut:
		if l := r.Word.Lit(); l == "-" || isFD(strings.TrimSuffix(l, "-")) {
			return
		}
		write = r.Op == syntax.DplOut
		over = write // >&file is &>file
	default: // here-documents and here-strings: their words hold no path
		return
	}
	a := c.wordArg(r.Word)
	op := r.Op.String()
	shown := op + " " + a.text
	if c.argChecks([]arg{a}, name, shown, f) {
		return
	}
	if !write {
		return
	}
	x := &cmd{c: c, name: name, args: []arg{{text: name}, a}, f: f}
	if name == "" {
		x.name = "the redirection"
	}
	x.checkPath(a, writes)
	if over {
		c.redirs++
		x.step = -c.redirs
		x.destroy(a)
	}
	for _, e := range x.extra {
		c.found(f, e.v, e.rule, name, shown, strings.Replace(e.msg, x.name+" would write to", "the redirection "+op+" would write to", 1), e.hint)
	}
}

func isFD(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
