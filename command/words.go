package command

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// homeDir stands for the home directory in resolved paths: it is outside
// every workspace, and credential stores are matched under it. Messages
// show it as "~".
const homeDir = "/~"

// arg is one word of a simple command, as far as it can be known before
// the command runs.
type arg struct {
	text string // the word for messages: its value, or its source when it expands
	lit  string // the value after quote removal (meaningful when !expanded)
	// path is the value read as a path: a leading ~ or $HOME becomes
	// homeDir, ~user becomes that user's home, and $PWD becomes ".". It is
	// meaningful when !dyn; prefix is its part before the first unknown
	// expansion.
	path     string
	pattern  string // path with quoted glob characters escaped, for path.Match
	prefix   string
	expanded bool  // some part is an expansion, even a known one ($HOME)
	dyn      bool  // some part is only known at run time
	glob     bool  // unquoted glob characters or an extended glob
	braces   bool  // an unquoted brace expansion
	fdPath   bool  // the word is a process substitution: a /dev/fd path
	subst    bool  // some part is a command or process substitution: another command's output
	found    bool  // find's {}: a path beneath a starting point, whichever files find selects
	alts     []arg // with braces: the words it expands to, unless too many
}

// exact reports whether the word's value is known and is exactly lit.
func (a arg) exact() bool { return !a.expanded && !a.glob && !a.braces }

// literalArg is a word passed without a shell: taken as it is. A leading
// ~ is still read as home for the credential and path checks, which only
// makes them stricter.
func literalArg(s string) arg {
	a := arg{text: s, lit: s, path: s, pattern: escapeGlob(s)}
	if p, ok := tildePath(s); ok {
		a.path, a.pattern = p, escapeGlob(p)
	}
	return a
}

// wordArg reads a word the way the shell would before running a command.
func (c *checker) wordArg(w *syntax.Word) arg { return c.wordArgs(w, true) }

// MaxBraceWords is the most words one brace expansion in an argument is
// expanded to for the path checks; an argument that expands to more
// ({1..100000}) is taken as only known at run time.
const MaxBraceWords = 64

func (c *checker) wordArgs(w *syntax.Word, braces bool) arg {
	var a arg
	var lit, pth, pat strings.Builder
	known := true // no unknown expansion seen yet
	addQuoted := func(s string) {
		lit.WriteString(s)
		pth.WriteString(s)
		pat.WriteString(escapeGlob(s))
	}
	unknown := func() {
		a.expanded, a.dyn = true, true
		if known {
			a.prefix = pth.String()
			known = false
		}
	}
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				end := strings.IndexByte(v, '/')
				if end < 0 {
					end = len(v)
				}
				prefix := v[:end]
				quoted := end == len(v) && len(w.Parts) > 1 && startsQuoted(w.Parts[1])
				switch {
				case quoted: // ~"x": no tilde expansion
				case prefix == "~+": // $PWD
					lit.WriteString(prefix)
					pth.WriteString(".")
					pat.WriteString(".")
					v = v[end:]
				case prefix == "~-": // $OLDPWD: only known at run time
					lit.WriteString(prefix)
					unknown()
					v = v[end:]
				default:
					if home, ok := tildePath(prefix); ok {
						lit.WriteString(prefix)
						pth.WriteString(home)
						pat.WriteString(escapeGlob(home))
						v = v[end:]
					}
				}
			}
			c.unquoted(v, &a, &lit, &pth, &pat)
		case *syntax.SglQuoted:
			if x.Dollar {
				// bash keeps C strings: a NUL ends the quoted part.
				v, _, _ := strings.Cut(decodeANSIC(x.Value), "\x00")
				addQuoted(v)
			} else {
				addQuoted(x.Value)
			}
		case *syntax.DblQuoted:
			for j, in := range x.Parts {
				switch y := in.(type) {
				case *syntax.Lit:
					addQuoted(unescapeDouble(y.Value))
				case *syntax.ParamExp:
					c.param(y, i == 0 && j == 0, &a, &lit, &pth, &pat, unknown)
				default:
					lit.WriteString("$(...)")
					a.subst = true
					unknown()
				}
			}
		case *syntax.ParamExp:
			c.param(x, i == 0, &a, &lit, &pth, &pat, unknown)
		case *syntax.ProcSubst:
			if len(w.Parts) == 1 {
				a.fdPath = true
			}
			a.subst = true
			lit.WriteString("/dev/fd/63")
			unknown()
		case *syntax.ExtGlob:
			a.glob = true
			s := x.Op.String() + x.Pattern.Value + ")"
			lit.WriteString(s)
			pth.WriteString(s)
			pat.WriteString("*")
		default: // command substitution, arithmetic
			lit.WriteString("$(...)")
			if _, ok := x.(*syntax.CmdSubst); ok {
				a.subst = true
			}
			unknown()
		}
	}
	a.lit, a.path, a.pattern = lit.String(), pth.String(), pat.String()
	if known {
		a.prefix = a.path
	}
	// SplitBraces copies what it changes, so the tree stays as parsed.
	if b := (&syntax.Word{Parts: w.Parts}); braces && syntax.SplitBraces(b) && expands(b) {
		a.braces = true
		// Each word the braces expand to is checked as a path, up to
		// MaxBraceWords of them; more are only known at run time.
		for e, err := range expand.BracesSeq(nil, b) {
			if err != nil || len(a.alts) == MaxBraceWords || c.braceWords >= MaxBraceWordsTotal {
				a.alts, a.dyn, a.prefix = nil, true, ""
				break
			}
			c.braceWords++
			a.alts = append(a.alts, c.wordArgs(e, false))
		}
	}
	if a.expanded || a.glob || a.braces {
		a.text = printWord(w)
	} else {
		a.text = a.lit
	}
	return a
}

func startsQuoted(p syntax.WordPart) bool {
	switch p.(type) {
	case *syntax.SglQuoted, *syntax.DblQuoted:
		return true
	}
	return false
}

// unquoted adds the value of an unquoted literal: backslashes escape the
// next character, and *, ? and [ are glob characters.
func (c *checker) unquoted(v string, a *arg, lit, pth, pat *strings.Builder) {
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case ch == '\\' && i+1 < len(v):
			i++
			if v[i] == '\n' {
				continue
			}
			lit.WriteByte(v[i])
			pth.WriteByte(v[i])
			pat.WriteString(escapeGlob(v[i : i+1]))
		case ch == '*' || ch == '?' || ch == '[' && strings.IndexByte(v[i:], ']') > 0:
			a.glob = true
			lit.WriteByte(ch)
			pth.WriteByte(ch)
			pat.WriteByte(ch)
		default:
			lit.WriteByte(ch)
			pth.WriteByte(ch)
			if ch == '\\' {
				pat.WriteString(`\\`)
			} else {
				pat.WriteByte(ch)
			}
		}
	}
}

// param adds a parameter expansion. $HOME at the start of a word is the
// home directory and $PWD the current one; every other expansion is only
// known at run time.
func (c *checker) param(p *syntax.ParamExp, first bool, a *arg, lit, pth, pat *strings.Builder, unknown func()) {
	a.expanded = true
	plain := p.Param != nil && !p.Excl && !p.Length && !p.Width && !p.IsSet && p.Index == nil &&
		p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil && p.NestedParam == nil &&
		len(p.Modifiers) == 0 && p.Flags == nil
	if first && plain && (p.Param.Value == "HOME" || p.Param.Value == "PWD") {
		lit.WriteString("$" + p.Param.Value)
		if p.Param.Value == "HOME" {
			pth.WriteString(homeDir)
			pat.WriteString(homeDir)
		} else {
			pth.WriteString(".")
			pat.WriteString(".")
		}
		return
	}
	name := "?"
	if p.Param != nil {
		name = p.Param.Value
	}
	lit.WriteString("$" + name)
	unknown()
}

// tildePath resolves a tilde prefix: "~" and "~/..." are the home
// directory, "~root" is /root and "~name" is /home/name.
func tildePath(s string) (string, bool) {
	if !strings.HasPrefix(s, "~") {
		return "", false
	}
	user, rest, _ := strings.Cut(s[1:], "/")
	if rest != "" || strings.Contains(s, "/") {
		rest = "/" + rest
	}
	switch {
	case user == "":
		return homeDir + rest, true
	case user == "root":
		return "/root" + rest, true
	case validUser(user):
		return "/home/" + user + rest, true
	}
	return "", false
}

func validUser(s string) bool {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' || ch == '.') {
			return false
		}
	}
	return s != ""
}

func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape inside double quotes:
// only before $, `, ", \ and a newline.
func unescapeDouble(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(v[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// decodeANSIC decodes the escapes of a $'...' string, so that $'\x72m' is
// read as rm.
func decodeANSIC(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 >= len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch ch := v[i]; ch {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(ch)
		case 'c':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[ch]
			j := i + 1
			for j < len(v) && j-i-1 < max && isHex(v[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(ch)
				continue
			}
			n, _ := strconv.ParseUint(v[i+1:j], 16, 32)
			if ch == 'x' {
				b.WriteByte(byte(n))
			} else {
				writeBashRune(&b, n)
			}
			i = j - 1
		default:
			if ch >= '0' && ch <= '7' {
				j := i
				for j < len(v) && j-i < 3 && v[j] >= '0' && v[j] <= '7' {
					j++
				}
				n, _ := strconv.ParseUint(v[i:j], 8, 16)
				b.WriteByte(byte(n))
				i = j - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(ch)
		}
	}
	// A NUL ends the word, as in bash, which keeps it as a C string:
	// $'ca\x00t' is ca.
	out := b.String()
	if n := strings.IndexByte(out, 0); n >= 0 {
		out = out[:n]
	}
	return out
}

// writeBashRune writes code point n as bash 5.2 does: UTF-8, in its
// original form of up to six bytes for values past U+10FFFF and for
// surrogates, which Go's encoder would replace ($'\U200000' is the bytes
// f8 88 80 80 80). Values past 0x7fffffff write nothing, as in bash; a
// zero writes a NUL, where decodeANSIC ends the word.
func writeBashRune(b *strings.Builder, n uint64) {
	switch {
	case n > 0x7fffffff:
	case n < 0x80:
		b.WriteByte(byte(n))
	case utf8.ValidRune(rune(n)):
		b.WriteRune(rune(n))
	default:
		var size int
		var lead byte
		switch {
		case n < 0x800:
			size, lead = 2, 0xc0
		case n < 0x10000:
			size, lead = 3, 0xe0
		case n < 0x200000:
			size, lead = 4, 0xf0
		case n < 0x4000000:
			size, lead = 5, 0xf8
		default:
			size, lead = 6, 0xfc
		}
		buf := make([]byte, size)
		for i := size - 1; i > 0; i-- {
			buf[i] = 0x80 | byte(n&0x3f)
			n >>= 6
		}
		buf[0] = lead | byte(n)
		b.Write(buf)
	}
}

func isHex(ch byte) bool {
	return ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F'
}

func printWord(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "?"
	}
	return b.String()
}

// display joins a command's words for a Decision, with the resolved name
// first.
func display(name string, args []arg) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args[1:] {
		b.WriteByte(' ')
		b.WriteString(a.text)
	}
	s := b.String()
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "..."
	}
	return s
}

// maxShown bounds the command text a Decision repeats, so that a long
// script does not come back whole in every answer.
const maxShown = 512

// expands reports whether a word split by SplitBraces holds a brace
// expansion bash would expand: a sequence or two elements or more. "{}"
// and "{x}" stay as they are.
func expands(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if b, ok := p.(*syntax.BraceExp); ok {
			if b.Sequence || len(b.Elems) >= 2 {
				return true
			}
			for _, e := range b.Elems {
				if expands(e) {
					return true
				}
			}
		}
	}
	return false
}
