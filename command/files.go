package command

import (
	"strings"
)

// File commands: inside the workspace they are edits, allowed; outside it
// (and /tmp) they are denied.

func (x *cmd) remove() {
	p := parseOpts(x.args, 1, optSpec{})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, deletes)
}

func (x *cmd) shred() {
	p := parseOpts(x.args, 1, optSpec{short: "ns", long: []string{"--iterations", "--size", "--random-source"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, deletes)
}

func (x *cmd) truncate() {
	p := parseOpts(x.args, 1, optSpec{short: "sr", long: []string{"--size", "--reference"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, deletes)
}

func (x *cmd) mv() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		x.copyInto(t, p.operands)
	}
	x.checkPaths(p.operands, deletes) // the sources are gone afterwards
}

func (x *cmd) cp() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if p.has('r', "--recursive") || p.has('R') || p.has('a', "--archive") {
		srcs := p.operands
		if _, ok := p.value("-t", "--target-directory"); !ok && len(srcs) > 0 {
			srcs = srcs[:len(srcs)-1]
		}
		x.storeAncestors(srcs)
	}
	// A recursive copy keeps the links it copies; -s and -l make them.
	if p.has('r', "--recursive", "--archive", "--symbolic-link", "--link", "--no-dereference") || strings.ContainsAny(p.flags, "RadPsl") {
		x.linked()
	}
	if u, ok := p.value("--update"); !p.has('n', "--no-clobber") && !(ok && strings.HasPrefix(u.lit, "none")) {
		x.copyOnto(p)
	}
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if n := len(p.operands); n >= 2 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) ln() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	x.linked()
	if p.has('f', "--force") {
		x.copyOnto(p) // without -f, ln refuses a destination that exists
	}
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if n := len(p.operands); n >= 2 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) touch() {
	p := parseOpts(x.args, 1, optSpec{short: "drt", long: []string{"--date", "--reference"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
}

func (x *cmd) mkdir() {
	p := parseOpts(x.args, 1, optSpec{short: "m", long: []string{"--mode"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
}

func (x *cmd) tee() {
	p := parseOpts(x.args, 1, optSpec{long: []string{"--output-error"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
	if !p.has('a', "--append") {
		x.destroyAll(p.operands)
	}
}

func (x *cmd) install() {
	p := parseOpts(x.args, 1, optSpec{short: "mogtS", long: []string{"--mode", "--owner", "--group", "--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if p.has('d', "--directory") {
		x.checkPaths(p.operands, writes)
		return
	}
	x.copyOnto(p)
	if n := len(p.operands); n >= 1 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) chmod() {
	p := parseOpts(x.args, 1, optSpec{})
	x.set(Allow, "allow:build", "", "")
	ops := p.operands
	// chmod -x file: a mode that looks like an option.
	if len(ops) > 0 && strings.ContainsAny(p.flags, "rwxXst") && !p.has(0, "--reference") {
		if setuidMode("-" + p.flags) {
			x.set(Deny, "deny:privilege", "chmod with the setuid or setgid bit lets a program run with its owner's privileges",
				"Leave the setuid and setgid bits alone; chmod +x is enough to make a file executable")
			return
		}
	} else if len(ops) > 0 && !p.has(0, "--reference") {
		mode := x.args[ops[0]]
		ops = ops[1:]
		if !mode.exact() || setuidMode(mode.lit) {
			x.set(Deny, "deny:privilege", "chmod "+mode.text+" may set the setuid or setgid bit, which lets a program run with its owner's privileges",
				"Use a plain mode such as 755 or +x, without s or a leading 4, 2 or 6")
			return
		}
	}
	x.checkPaths(ops, changes)
}

// setuidMode reports a chmod mode that sets the setuid or setgid bit:
// an octal mode of four digits whose first has 4 or 2 in it, or a
// symbolic mode that adds s.
func setuidMode(m string) bool {
	if m != "" && strings.Trim(m, "01234567") == "" {
		return len(m) >= 4 && (m[len(m)-4]-'0')&6 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.Contains(clause[i:], "s") {
			return true
		}
	}
	return false
}

func (x *cmd) chown() {
	p := parseOpts(x.args, 1, optSpec{})
	ops := p.operands
	if len(ops) > 0 && !p.has(0, "--reference") {
		ops = ops[1:]
	}
	x.set(Ask, "ask:unknown", x.name+" changes who owns files", "Ask the user to approve the change of owner")
	x.checkPaths(ops, changes)
}

func (x *cmd) dd() {
	x.set(Allow, "allow:build", "", "")
	for _, a := range x.args[1:] {
		if v, ok := strings.CutPrefix(a.lit, "of="); ok {
			b := a
			b.text, b.lit, b.path, b.pattern = v, v, v, escapeGlob(v)
			if a.dyn {
				b.prefix = strings.TrimPrefix(a.prefix, "of=")
			}
			if t, ok := tildePath(v); ok {
				b.path = t
			}
			x.checkPath(b, changes)
			x.destroy(b) // conv=notrunc too: it writes over the bytes
		}
	}
}

func (x *cmd) sed() {
	p := parseOpts(x.args, 1, optSpec{short: "efl", long: []string{"--expression", "--file", "--line-length"}})
	x.set(Allow, "allow:build", "", "")
	var scripts []arg
	for _, v := range p.values {
		if v.name == "-e" || v.name == "--expression" {
			scripts = append(scripts, v.val)
		}
	}
	if _, ok := p.value("-e", "--expression", "-f", "--file"); !ok && len(p.operands) > 0 {
		scripts = append(scripts, x.args[p.operands[0]])
	}
	for _, sc := range scripts {
		if !sc.exact() {
			x.set(Ask, "ask:unknown", "sed's script is only known when it runs, and a sed script can run commands (e) and write files (w)",
				"Write the sed script literally")
			return
		}
		if what := sedRuns(sc.lit); what != "" {
			x.set(Deny, "deny:dynamic-command", "the sed script "+what+", which this check cannot see",
				"Run the commands directly instead of through sed's e, and write files with a redirection")
			return
		}
	}
	if !p.has('i', "--in-place") && !strings.Contains(p.flags, "i") && !hasPrefixLong(p, "--in-place") {
		return
	}
	ops := p.operands
	if _, ok := p.value("-e", "--expression", "-f", "--file"); !ok && len(ops) > 0 {
		ops = ops[1:] // the first operand is the script
	}
	x.checkPaths(ops, writes)
	x.destroyAll(ops) // rewritten in place
}

func hasPrefixLong(p parsed, prefix string) bool {
	for _, l := range p.longs {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	for _, v := range p.values {
		if strings.HasPrefix(v.name, prefix) {
			return true
		}
	}
	return false
}

func (x *cmd) sort() {
	p := parseOpts(x.args, 1, optSpec{short: "kotST", long: []string{"--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory", "--compress-program"}})
	x.set(Allow, "allow:inspect", "", "")
	if v, ok := p.value("--compress-program"); ok {
		x.set(Ask, "ask:unknown", "sort --compress-program runs "+v.text+", which this check cannot see",
			"Sort without --compress-program")
		return
	}
	if v, ok := p.value("-o", "--output"); ok {
		x.overwrite(v, writes)
	}
}

func (x *cmd) uniq() {
	p := parseOpts(x.args, 1, optSpec{short: "fsw", long: []string{"--skip-fields", "--skip-chars", "--check-chars"}})
	x.set(Allow, "allow:inspect", "", "")
	if len(p.operands) >= 2 {
		x.overwrite(x.args[p.operands[1]], writes)
	}
}

// outputs checks the output file of compilers: -o FILE.
func (x *cmd) outputs(short string, long []string) {
	p := parseOpts(x.args, 1, optSpec{short: short, long: long})
	for _, v := range p.values {
		if v.name == "-o" || contains(long, v.name) {
			x.checkPath(v.val, writes)
		}
	}
}

// sedRuns reports how a GNU sed script runs commands or writes files: the
// e command, or an s command's e or w flag, or the w and W commands ("" if
// it does none). It reads the script the way sed does: commands after
// addresses, separated by ; newlines and braces, with the s command's
// pattern and replacement skipped up to their delimiters.
func sedRuns(script string) string {
	i, n := 0, len(script)
	skipAddr := func() {
		for i < n {
			switch ch := script[i]; {
			case ch >= '0' && ch <= '9' || ch == '$' || ch == ',' || ch == '~' || ch == '!' || ch == ' ' || ch == '+':
				i++
			case ch == '/' || ch == '\\':
				d := byte('/')
				if ch == '\\' && i+1 < n {
					i++
					d = script[i]
				}
				i++
				for i < n && script[i] != d {
					if script[i] == '\\' {
						i++
					}
					i++
				}
				i++
				for i < n && (script[i] == 'I' || script[i] == 'M') {
					i++
				}
			default:
				return
			}
		}
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;{}", script[i]) >= 0 {
			i++
		}
		skipAddr()
		if i >= n {
			break
		}
		switch c := script[i]; c {
		case 'e':
			return "runs commands with its e command"
		case 'w', 'W':
			return "writes a file with its " + string(c) + " command"
		case 's', 'y':
			if i+1 >= n {
				return ""
			}
			d := script[i+1]
			i += 2
			for part := 0; part < 2 && i < n; part++ {
				for i < n && script[i] != d {
					if script[i] == '\\' {
						i++
					}
					i++
				}
				i++
			}
			if c == 's' {
				for i < n && strings.IndexByte(";}\n", script[i]) < 0 {
					switch script[i] {
					case 'e':
						return "runs its result as a command (the s command's e flag)"
					case 'w':
						return "writes a file (the s command's w flag)"
					}
					i++
				}
			}
		case '#', 'a', 'i', 'c', 'r', 'R', 'b', 't', 'T', ':':
			// Text or a label to the end of the line: nothing runs.
			for i < n && script[i] != '\n' {
				i++
			}
		default:
			i++
		}
	}
	return ""
}
