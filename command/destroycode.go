package command

import "strings"

// What inline code and the interpreters' in-place edits destroy
// (destroy.go): the scanner of inline.go reads the code's tokens for the
// calls that delete, rename or write files.

// destroyByCode records what inline code deletes or writes: the literal
// path it names (p, when known) unless that is outside the workspace or
// scratch; without one, anything.
func (c *checker) destroyByCode(p string, known bool) {
	if !known {
		c.destroys = true
		return
	}
	if pl, _ := c.locate(literalArg(p)); pl == inside || pl == unknown {
		c.destroys = true
	}
}

// destroyed is Decision.Destroys.
// keepCalls are the file calls of inline code that destroy nothing:
// they make directories, append, or change modes and owners.
var keepCalls = words(`mkdir mkdirsync makedirs touch appendfile appendfilesync chmod chmodsync chown chownsync`)

// moveCalls move, copy over or write files under their full name only:
// their last part alone (move, copy, write) is too common a word.
var moveCalls = words(`shutil.move shutil.copy shutil.copy2 os.replace fs.cpsync fs.cp fileutils.mv fileutils.move
	fileutils.cp fileutils.copy fileutils.copy_file file.write file::copy::copy file::copy::move deno.writetextfile
	deno.writefile deno.remove deno.truncate bun.write`)

// codeDestroys records what inline code deletes, renames or writes over
// (destroy.go): the calls of destroyCalls but keepCalls, moveCalls, an
// open whose mode writes over (w or +; Perl's > and +<), os.open with
// O_TRUNC, O_WRONLY or O_RDWR, and awk's print > FILE. A literal path
// outside the workspace or in /tmp destroys nothing of the workspace.
func (x *cmd) codeDestroys(toks []token, low string, lg lang) {
	c := x.c
	if strings.Contains(low, "o_trunc") || strings.Contains(low, "o_wronly") || strings.Contains(low, "o_rdwr") {
		c.destroyByCode("", false)
	}
	for i := 0; i < len(toks) && !c.destroys; i++ {
		t := toks[i]
		// Path('x').unlink(): the object's path.
		object := i >= 4 && toks[i-1].text == "." && toks[i-2].text == ")" && toks[i-3].kind == tokStr && toks[i-4].text == "("
		switch {
		case t.kind == tokName && (isDestroyCall(t.text) && !keepCalls[lastName(t.text)] || moveCalls[t.text]):
			if object {
				c.destroyByCode(toks[i-3].text, true)
				continue
			}
			p, ok := firstString(toks[i+1:])
			c.destroyByCode(p, ok)
		case t.kind == tokName && openCalls[t.text]:
			if p, known, over := openMode(toks[i+1:], i > 0 && toks[i-1].text == "."); over {
				if object {
					p, known = toks[i-3].text, true
				}
				c.destroyByCode(p, known)
			}
		case lg == langAwk && t.text == ">" && awkPrints(toks[:i]):
			if i+1 < len(toks) && toks[i+1].text == ">" {
				i++ // >> appends
				continue
			}
			if i+1 < len(toks) && toks[i+1].kind == tokStr {
				c.destroyByCode(toks[i+1].text, true)
			} else {
				c.destroyByCode("", false)
			}
		}
	}
}

// awkPrints reports whether the awk statement that toks ends in is a
// print or printf, so that a > in it is a redirection.
func awkPrints(toks []token) bool {
	for i := len(toks) - 1; i >= 0; i-- {
		switch t := toks[i]; {
		case t.text == ";" || t.text == "{" || t.text == "}":
			return false
		case t.kind == tokName && (t.text == "print" || t.text == "printf"):
			return true
		}
	}
	return false
}

// openMode reads the arguments of an open call: whether its mode writes
// over (w or + in a mode string, Perl's > or +< but not >>), and the path
// when it is a literal. method is for path.open('w'), whose only string
// is the mode.
func openMode(toks []token, method bool) (p string, known, over bool) {
	var strs []string
	first := -1 // the index in strs of the call's first argument, if a string
	for i := 0; i < len(toks) && i < 8 && toks[i].text != ")" && toks[i].text != ";"; i++ {
		if toks[i].kind == tokStr {
			if i == 1 && toks[0].text == "(" || i == 0 {
				first = len(strs)
			}
			strs = append(strs, toks[i].text)
		}
	}
	for j, s := range strs {
		m := strings.TrimSpace(s)
		// Perl: ">file", "+<file", or the mode alone before the path.
		if strings.HasPrefix(m, ">") || strings.HasPrefix(m, "+<") || strings.HasPrefix(m, "+>") {
			if strings.HasPrefix(m, ">>") {
				return "", false, false
			}
			if rest := strings.TrimSpace(strings.TrimLeft(m, "+<>")); rest != "" {
				return rest, true, true
			}
			if j+1 < len(strs) {
				return strs[j+1], true, true
			}
			return "", false, true
		}
		if j == first && !method || len(m) > 4 || strings.Trim(m, "rwaxbtU+") != "" {
			continue
		}
		if !strings.ContainsAny(m, "w+") {
			return "", false, false
		}
		if first == 0 && j > 0 {
			return strs[0], true, true
		}
		return "", false, true
	}
	return "", false, false
}

// inPlaceValues are the letters of perl's and ruby's options whose value
// is the rest of the word (or, for e and E, the next word): an i among
// them is not -i.
var inPlaceValues = map[string]string{"perl": "eEMmIxdDCF", "ruby": "eIrCEKWTxF"}

// inPlace reports whether perl's or ruby's options (opts, the words
// before the program or its files) hold -i, which rewrites the files in
// place: -i, -pi, -i.bak, -pi.orig.
func inPlace(name string, opts []arg) bool {
	values, ok := inPlaceValues[name]
	if !ok {
		return false
	}
	for k := 0; k < len(opts); k++ {
		s := opts[k].lit
		if !opts[k].exact() || len(s) < 2 || s[0] != '-' || s[1] == '-' {
			continue
		}
		for j := 1; j < len(s); j++ {
			if s[j] == 'i' {
				return true
			}
			if strings.IndexByte(values, s[j]) >= 0 {
				if j == len(s)-1 && (s[j] == 'e' || s[j] == 'E') {
					k++ // -e CODE: the code is no option
				}
				break
			}
		}
	}
	return false
}

// awkInPlace records gawk -i inplace rewriting the files it reads: the
// operands after the program (or all, when -f, -e or --source gives it).
func (x *cmd) awkInPlace() {
	p := parseOpts(x.args, 1, optSpec{short: "fvFiEel", long: []string{"--file", "--assign", "--field-separator",
		"--include", "--source", "--exec", "--load"}})
	lib, ok := p.value("-i", "--include")
	if !ok || strings.TrimSuffix(lib.lit, ".awk") != "inplace" {
		return
	}
	files := p.operands
	if _, ok := p.value("-f", "--file", "-e", "--source", "-E", "--exec"); !ok && len(files) > 0 {
		files = files[1:]
	}
	x.destroyAll(files)
}
