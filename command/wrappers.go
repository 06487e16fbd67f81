package command

import (
	"path"
	"strings"
)

// Wrappers: commands that run another command (env, nice, timeout, xargs,
// find -exec, busybox, sh -c, ...) and the interpreters. What they run is
// judged as a command of its own.

// wrapper judges the command after the wrapper's options.
func (x *cmd) wrapper(spec optSpec) {
	spec.stop = true
	p := parseOpts(x.args, 1, spec)
	x.inner(p.end, false)
}

func (x *cmd) env() {
	i := 1
	for ; i < len(x.args); i++ {
		a := x.args[i]
		s := a.lit
		if !a.exact() {
			break
		}
		switch {
		case s == "--":
			i++
			goto assigns
		case s == "-S" || strings.HasPrefix(s, "--split-string") || strings.HasPrefix(s, "-S"):
			x.set(Deny, "deny:dynamic-command", "env -S splits a string into a command, which hides what runs",
				"Give env the command's words one by one")
			return
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
			if s == "-C" || s == "--chdir" {
				// The inner command runs elsewhere; the shell stays.
				defer x.c.keepCwd()()
				dir := ""
				if i < len(x.args) && !x.args[i].dyn {
					dir, _ = x.c.resolve(x.args[i].path)
				}
				x.c.cwd = dir
			}
		case s == "-" || strings.HasPrefix(s, "-"):
		default:
			goto assigns
		}
	}
assigns:
	for ; i < len(x.args); i++ {
		a := x.args[i]
		name, _, ok := strings.Cut(a.lit, "=")
		if !a.exact() || !ok || name == "" || strings.ContainsAny(name, "/") {
			break
		}
		val := literalArg(a.lit[len(name)+1:])
		x.c.variable(name, &val, "", a.text, x.f)
		if x.c.stop {
			x.done = true
			return
		}
	}
	if i >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(i, true)
}

func (x *cmd) command() {
	p := parseOpts(x.args, 1, optSpec{stop: true})
	if p.has('v') || p.has('V') {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(p.end, true)
}

func (x *cmd) exec() {
	p := parseOpts(x.args, 1, optSpec{short: "a", stop: true})
	x.inner(p.end, true)
}

func (x *cmd) nice() {
	// nice -5 is nice -n 5: digits after - are a value.
	i := 1
	for i < len(x.args) && x.args[i].exact() {
		s := x.args[i].lit
		if s == "-n" || s == "--adjustment" {
			i += 2
			continue
		}
		if strings.HasPrefix(s, "-") && s != "-" {
			i++
			if s == "--" {
				break
			}
			continue
		}
		break
	}
	x.inner(i, true)
}

func (x *cmd) timeout() {
	p := parseOpts(x.args, 1, optSpec{short: "sk", long: []string{"--signal", "--kill-after"}, stop: true})
	x.inner(p.end+1, true) // the duration comes first
}

func (x *cmd) time() {
	p := parseOpts(x.args, 1, optSpec{short: "fo", long: []string{"--format", "--output"}, stop: true})
	if v, ok := p.value("-o", "--output"); ok {
		x.checkPath(v, writes)
		if !p.has('a', "--append") {
			x.destroy(v)
		}
	}
	x.inner(p.end, true)
}

func (x *cmd) stdbuf() {
	x.wrapper(optSpec{short: "ioe", long: []string{"--input", "--output", "--error"}})
}

func (x *cmd) ionice() {
	p := parseOpts(x.args, 1, optSpec{short: "cnp", long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}, stop: true})
	if p.has('p', "--pid", "--pgid", "--uid") || p.has('P') || p.has('u') {
		x.set(Ask, "ask:unknown", "ionice changes the priority of processes already running", "Run the command with ionice in front of it instead")
		return
	}
	x.inner(p.end, true)
}

// privileged names what sudo and the like would run, for the message;
// they are denied whatever it is.
func (x *cmd) privileged() {
	spec := optSpec{stop: true}
	switch x.name {
	case "sudo":
		spec.short, spec.long = "ugCDhprtTUc", []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user"}
	case "doas":
		spec.short = "uC"
	case "pkexec":
		spec.long = []string{"--user"}
	default:
		return
	}
	p := parseOpts(x.args, 1, spec)
	if p.end < len(x.args) {
		x.cls.msg = x.name + " runs " + display(x.args[p.end].text, x.args[p.end:]) + " with other privileges"
	}
}

func (x *cmd) xargs() {
	p := parseOpts(x.args, 1, optSpec{short: "adEILnPs", long: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, stop: true})
	inner := append([]arg{}, x.args[p.end:]...)
	// -I R puts each input line where R is written: those words are only
	// known when it runs.
	repl, replaces := p.value("-I", "--replace")
	if !replaces && (p.has('i') || p.has(0, "--replace")) {
		repl, replaces = literalArg("{}"), true
	}
	if replaces && repl.exact() && repl.lit != "" {
		for i, a := range inner {
			if j := strings.Index(a.lit, repl.lit); j >= 0 && a.exact() && i > 0 {
				inner[i] = arg{text: a.text, lit: a.lit, expanded: true, dyn: true, prefix: a.path[:min(j, len(a.path))]}
			}
		}
	}
	if len(inner) == 0 {
		inner = []arg{literalArg("echo")}
	}
	// The words xargs adds come from its input: only known when it runs.
	inner = append(inner, arg{text: "<input>", lit: "<input>", expanded: true, dyn: true})
	x.set(Allow, "allow:wrapper", "", "")
	f := *x.f
	f.argsFed = x.fedBy()
	f.noFuncs, f.piped, f.fed = true, false, "" // xargs gives its command /dev/null as stdin
	x.c.simple(inner, &f)
}

// find is read-only unless it deletes, writes files or runs commands;
// a command it runs sees {} as a path under the starting points.
func (x *cmd) find() {
	i := 1
	for i < len(x.args) {
		s := x.args[i].lit
		if x.args[i].exact() && (strings.HasPrefix(s, "-") && len(s) > 1 || s == "(" || s == "!" || s == ")" || s == ",") {
			break
		}
		i++
	}
	starts := x.args[1:i]
	if len(starts) == 0 {
		starts = []arg{literalArg(".")}
	}
	// The worst starting point stands for {}: a path beneath it, or,
	// when nothing narrows what find selects, every name beneath it.
	worst := starts[0]
	for _, s := range starts {
		if pl, _ := x.c.locate(s); pl == outside || pl == unknown {
			worst = s
			break
		}
	}
	narrowed := findNarrows(x.args[i:])
	found := beneath(worst, narrowed)
	x.set(Allow, "allow:inspect", "", "")
	for i < len(x.args) && !x.c.stop {
		s := x.args[i].lit
		switch s {
		case "-delete":
			x.set(Allow, "allow:build", "", "")
			for _, st := range starts {
				x.checkPath(beneath(st, narrowed), deletes)
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(x.args) {
				x.overwrite(x.args[i+1], writes)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(x.args) && !(x.args[j].exact() && (x.args[j].lit == ";" || x.args[j].lit == "+")) {
				j++
			}
			inner := make([]arg, 0, j-i-1)
			for _, a := range x.args[i+1 : j] {
				// {} is literal to bash (not a brace expansion): find's placeholder.
				if !a.expanded && strings.Contains(a.lit, "{}") {
					a = found
					a.text = "{}"
					if worst.dyn || worst.braces || worst.glob {
						a.text = worst.text
					}
				}
				inner = append(inner, a)
			}
			if len(inner) == 0 {
				break
			}
			f := *x.f
			f.noFuncs, f.piped, f.fed = true, false, ""
			x.c.simple(inner, &f)
			i = j
		}
		i++
	}
}

// findNarrowing are the tests of find that select some files by what
// they are, so that -delete or -exec rm {} does not take everything.
// -type, -mindepth, -maxdepth and the like are not among them.
var findNarrowing = words(`-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname
	-newer -anewer -cnewer -newermt -mtime -mmin -atime -amin -ctime -cmin -size -empty -perm -user -group
	-uid -gid -nouser -nogroup -inum -samefile -links`)

// findNarrows reports whether find's expression holds a test that selects
// some files only: a name test whose pattern is not one that covers every
// name (-name '*' does not narrow).
func findNarrows(expr []arg) bool {
	for i, a := range expr {
		if !a.exact() || !findNarrowing[a.lit] {
			continue
		}
		switch a.lit {
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename":
			if i+1 < len(expr) && expr[i+1].exact() && !coversAll(path.Base(expr[i+1].lit)) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// beneath is the word for what find hands on under a starting point: a
// path below it ({} names one file find selected) or, when nothing
// narrows the selection, a glob of everything below it. A start only
// known at run time stays as it is.
func beneath(start arg, narrowed bool) arg {
	if start.dyn || start.braces || start.glob {
		return start
	}
	if narrowed {
		a := joinArg(start, "{}")
		a.found = true
		return a
	}
	all := joinArg(start, "*")
	all.glob, all.pattern = true, escapeGlob(start.path)+"/*"
	all.text = path.Join(start.text, "*")
	return all
}

func (x *cmd) busybox() {
	if len(x.args) < 2 || strings.HasPrefix(x.args[1].lit, "-") {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(1, true)
}

func (x *cmd) trap() {
	p := parseOpts(x.args, 1, optSpec{stop: true})
	if p.end >= len(x.args) || p.end+1 >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	action := x.args[p.end]
	if action.exact() && (action.lit == "-" || action.lit == "" || isFD(action.lit)) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.nestedScript(action, "the trap's command")
}

func (x *cmd) watch() {
	p := parseOpts(x.args, 1, optSpec{short: "nd", long: []string{"--interval", "--differences"}, stop: true})
	if p.end >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	if p.end == len(x.args)-1 {
		x.nestedScript(x.args[p.end], "the command watch runs")
		return
	}
	x.inner(p.end, true)
}

func (x *cmd) cd() {
	x.set(Allow, "allow:inspect", "", "")
	p := parseOpts(x.args, 1, optSpec{})
	if len(p.operands) == 0 {
		x.c.cwd = homeDir
		return
	}
	a := x.args[p.operands[0]]
	if a.dyn || a.lit == "-" {
		x.c.cwd = ""
		return
	}
	if abs, ok := x.c.resolve(a.path); ok {
		x.c.cwd = abs
	} else {
		x.c.cwd = ""
	}
}

// shell judges sh, bash and the like: a literal -c script is walked; a
// script from a file is asked about; a script from stdin is denied.
func (x *cmd) shell() {
	if x.f.piped {
		x.set(Deny, "deny:pipe-to-shell", x.name+" is fed by a pipe, so it may run whatever the command before it prints",
			"Run the commands directly, or save the script in the workspace, read it, and run it as a file")
		return
	}
	i, script := 1, false
	for ; i < len(x.args); i++ {
		a := x.args[i]
		s := a.lit
		if a.fdPath {
			break // bash <(...): a script file another command writes
		}
		if !a.exact() {
			x.set(Deny, "deny:dynamic-command", x.name+"'s arguments are only known when it runs ("+a.text+")",
				"Give the shell a literal script: sh -c '...'")
			return
		}
		if s == "--" || s == "-" {
			i++
			break
		}
		if s == "--rcfile" || s == "--init-file" || s == "-o" || s == "+o" || s == "-O" || s == "+O" {
			i++
			continue
		}
		if strings.HasPrefix(s, "--") {
			continue
		}
		if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
			if strings.ContainsAny(s[1:], "si") && s[0] == '-' {
				break // reads commands from stdin
			}
			if strings.Contains(s[1:], "c") {
				script = true
			}
			continue
		}
		break
	}
	if script {
		if i >= len(x.args) {
			x.set(Allow, "allow:wrapper", "", "")
			return
		}
		x.nestedScript(x.args[i], x.name+"'s script")
		return
	}
	if i < len(x.args) && !strings.HasPrefix(x.args[i].lit, "-") {
		if file := x.args[i]; file.fdPath || stdinPath(file.lit) {
			x.set(Deny, "deny:pipe-to-shell", x.name+" runs a script that another command writes into "+file.text+", which this check cannot see",
				"Run the commands directly, or save the script in the workspace, read it, and run it as a file")
			return
		}
		x.set(Ask, "ask:unknown", x.name+" runs the script file "+x.args[i].text+", whose commands this check cannot see",
			"Run the script's commands directly, or ask the user to approve the script")
		return
	}
	from := "its standard input"
	if x.f.fed != "" {
		from = x.f.fed
	}
	x.set(Deny, "deny:pipe-to-shell", x.name+" reads the commands it runs from "+from+", which this check cannot see",
		"Run the commands directly, or pass them literally with "+x.name+" -c '...'")
}

// interpreter judges python, node and the like.
func (x *cmd) interpreter() {
	inline := interpreters[x.name]
	spec := optSpec{short: "mWXr" + inline, long: []string{"--require", "--import", "--loader"}, stop: true}
	if x.name == "node" || x.name == "nodejs" {
		spec.short = "r" + inline
	}
	if inline != "" && langOf(x.name) != langPython {
		spec.long = append(spec.long, "--eval", "--print")
	}
	p := parseOpts(x.args, 1, spec)
	var codes []arg
	for _, v := range p.values {
		if len(v.name) == 2 && strings.Contains(inline, v.name[1:]) || v.name == "--eval" || v.name == "--print" {
			codes = append(codes, v.val)
		}
	}
	if inPlace(x.name, x.args[1:p.end]) {
		// perl -pi -e CODE FILES, perl -i SCRIPT FILES: each file is
		// rewritten.
		files := p.end
		if len(codes) == 0 {
			files++
		}
		for i := files; i < len(x.args); i++ {
			x.destroy(x.args[i])
		}
	}
	if x.name == "deno" && p.end+1 < len(x.args) && x.args[p.end].lit == "eval" {
		q := parseOpts(x.args, p.end+1, optSpec{stop: true})
		if q.end < len(x.args) {
			codes = append(codes, x.args[q.end])
		}
	}
	if len(codes) > 0 {
		x.inlineCode(codes)
		return
	}
	if strings.HasPrefix(x.name, "python") {
		if m, ok := p.value("-m"); ok {
			x.pythonModule(m)
			return
		}
	}
	if p.has(0, "--version", "--help") || p.has('V') || p.has('h') && p.end >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	if (x.name == "node" || x.name == "nodejs") && p.has(0, "--test") {
		x.set(Allow, "allow:build", "", "")
		return
	}
	if p.end >= len(x.args) || x.args[p.end].lit == "-" {
		if x.f.piped || x.f.fed != "" {
			from := "a pipe"
			if x.f.fed != "" {
				from = x.f.fed
			}
			x.set(Deny, "deny:pipe-to-shell", x.name+" reads the program it runs from "+from+", which this check cannot see",
				"Save the program to a file in the workspace and run that file")
			return
		}
		x.set(Ask, "ask:unknown", x.name+" without a program file reads one from its standard input",
			"Give the program file to run, inside the workspace")
		return
	}
	file := x.args[p.end]
	if file.fdPath || stdinPath(file.lit) {
		x.set(Deny, "deny:pipe-to-shell", x.name+" runs a program that another command writes into "+file.text+", which this check cannot see",
			"Save the program to a file in the workspace and run that file")
		return
	}
	if pl, _ := x.c.locate(file); pl == inside && (strings.HasPrefix(x.name, "python") || strings.HasPrefix(x.name, "node")) {
		x.set(Allow, "allow:build", "", "")
		return
	}
	x.set(Ask, "ask:unknown", x.name+" runs "+file.text+", a program this check cannot read",
		"Run a program file inside the workspace, or ask the user to approve it")
}

func (x *cmd) pythonModule(m arg) {
	switch m.lit {
	case "pytest", "unittest", "py_compile", "compileall", "venv", "black", "ruff", "mypy", "flake8", "pylint", "json.tool":
		x.set(Allow, "allow:build", "", "")
	case "pip":
		x.set(Ask, "ask:package-install", "python -m pip installs or changes packages", "Ask the user to approve the install, or use what is already installed")
	case "http.server":
		x.set(Ask, "ask:network", "python -m http.server serves files over the network", "Ask the user to approve the server")
	default:
		x.set(Ask, "ask:unknown", "python runs the module "+m.text+", which the policy does not know", "Ask the user to approve it")
	}
}
