package redact

import (
	"bytes"
	"errors"
	"strings"
)

// A check: cli rule finds a password given to a known tool on its command
// line: the rule's keywords are the tool's names ("sshpass", "mysql",
// "docker login") and its flags say where that tool takes a password.
// The text after the tool's name is split into shell words, so quotes are
// honoured and masked around rather than with the value, and a flag
// another tool reads differently (ssh -p 2222, mysql -P 3306) is never
// consulted.

// MaxCLIWords bounds the words of one command line a check: cli rule reads
// after the tool's name; the line window (MaxContextBytes) bounds them too.
const MaxCLIWords = 64

// minPasswordBytes is the shortest value a password rule masks: shorter
// ones are flags, prompts and switches far more often than passwords.
const minPasswordBytes = 4

// flagTemplate is one way a tool takes a password, parsed from a template
// in rules.yaml: "-p VALUE" (the next word), "-pVALUE" or "--password=VALUE"
// (in the same word), "-u USER:VALUE" (after the first ':' of the next
// word), "-passout pass:VALUE" (after a literal prefix).
type flagTemplate struct {
	flag     string // the whole word, or its beginning when attached
	attached bool   // the value is in the flag's own word
	user     byte   // the separator after a user name, or 0
	prefix   string // a literal before the value
}

func parseFlagTemplate(s string) (flagTemplate, error) {
	var t flagTemplate
	rest := ""
	if i := strings.IndexByte(s, ' '); i >= 0 {
		t.flag, rest = s[:i], s[i+1:]
	} else {
		i := strings.Index(s, "USER")
		if j := strings.Index(s, "VALUE"); i < 0 || j >= 0 && j < i {
			i = j
		}
		if i < 0 {
			return t, errors.New("no VALUE")
		}
		t.flag, rest, t.attached = s[:i], s[i:], true
	}
	if len(t.flag) < 2 || t.flag[0] != '-' && t.flag[0] != '/' {
		return t, errors.New("a flag is - or / and a name")
	}
	if u, ok := strings.CutPrefix(rest, "USER"); ok {
		if len(u) < 1 || u[0] <= ' ' || u[0] > '~' || isAlnum(u[0]) {
			return t, errors.New("USER needs a separator after it, a printable ASCII punctuation byte")
		}
		t.user, rest = u[0], u[1:]
	}
	prefix, ok := strings.CutSuffix(rest, "VALUE")
	if !ok || strings.ContainsAny(prefix, " ") || strings.Contains(prefix, "USER") || strings.Contains(prefix, "VALUE") {
		return t, errors.New("the template must end in VALUE, with at most USER and a literal before it")
	}
	t.prefix = prefix
	return t, nil
}

// shellWord is one word of a command line with its quotes removed: for
// each byte, the offset in the text it came from and whether it was
// literal (single-quoted or escaped, so a '$' in it is no reference).
type shellWord struct {
	text []byte
	at   []int
	lit  []bool
}

// isCommandEnd reports whether an unquoted b ends a simple command.
func isCommandEnd(b byte) bool {
	return b == ';' || b == '|' || b == '&' || b == '<' || b == '>' || b == '(' || b == ')' || b == '\n' || b == '`'
}

// shellWords splits text[from:to] into the words of the command that
// starts there, up to the end of that command, a comment or MaxCLIWords
// words. Quotes and backslashes are read as a POSIX shell does; an
// unterminated quote runs to the end.
func shellWords(text []byte, from, to int) []shellWord {
	var words []shellWord
	// One backing array each for every word's bytes, offsets and marks:
	// the words together hold at most to-from bytes.
	bs, ats, lits := make([]byte, 0, to-from), make([]int, 0, to-from), make([]bool, 0, to-from)
	i := from
	for i < to && len(words) < MaxCLIWords {
		for i < to && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
			i++
		}
		if i >= to || isCommandEnd(text[i]) || text[i] == '#' {
			break
		}
		start := len(bs)
		put := func(at int, lit bool) {
			bs, ats, lits = append(bs, text[at]), append(ats, at), append(lits, lit)
		}
		quote := byte(0)
	word:
		for ; i < to; i++ {
			c := text[i]
			switch {
			case quote == '\'':
				if c == '\'' {
					quote = 0
				} else {
					put(i, true)
				}
			case quote == '"':
				switch {
				case c == '"':
					quote = 0
				case c == '\\' && i+1 < to && bytes.IndexByte([]byte("\"\\$`"), text[i+1]) >= 0:
					i++
					put(i, true)
				default:
					put(i, false)
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '\\' && i+1 < to:
				i++
				put(i, true)
			case c == ' ' || c == '\t' || c == '\r' || isCommandEnd(c):
				break word
			default:
				put(i, false)
			}
		}
		words = append(words, shellWord{bs[start:len(bs):len(bs)], ats[start:len(ats):len(ats)], lits[start:len(lits):len(lits)]})
	}
	return words
}

// matchCLI finds the values a check: cli rule's flags give the tool named
// at text[at:at+n], in the rest of its command within [ws, we).
func (r *rule) matchCLI(text []byte, at, n, ws, we int, add func(s, e int)) {
	if at > ws && !isCommandStart(text[at-1]) || at+n >= we || text[at+n] != ' ' && text[at+n] != '\t' {
		return // part of a longer word: mysql.connector, my-sshpass
	}
	if !r.mayHaveFlag(text[at+n : we]) {
		return // most mentions of a tool pass none of its password flags
	}
	words := shellWords(text, at+n, we)
	for i, w := range words {
		for _, t := range r.flags {
			var v shellWord
			switch {
			case t.attached && len(w.text) > len(t.flag) && string(w.text[:len(t.flag)]) == t.flag:
				v = shellWord{w.text[len(t.flag):], w.at[len(t.flag):], w.lit[len(t.flag):]}
			case !t.attached && string(w.text) == t.flag && i+1 < len(words) && !bytes.HasPrefix(words[i+1].text, []byte("-")):
				v = words[i+1] // a next word that is a flag is no value: docker login -p --help
			default:
				continue
			}
			if t.user != 0 {
				j := bytes.IndexByte(v.text, t.user)
				if j < 0 {
					continue
				}
				v = shellWord{v.text[j+1:], v.at[j+1:], v.lit[j+1:]}
			}
			if !bytes.HasPrefix(v.text, []byte(t.prefix)) {
				continue
			}
			p := len(t.prefix)
			v = shellWord{v.text[p:], v.at[p:], v.lit[p:]}
			if r.cliValue(v) {
				add(v.at[0], v.at[len(v.at)-1]+1)
			}
		}
	}
}

// mayHaveFlag reports whether any of the rule's flags occurs in rest,
// before the command line is split into words.
func (r *rule) mayHaveFlag(rest []byte) bool {
	for _, t := range r.flags {
		if bytes.Contains(rest, []byte(t.flag)) {
			return true
		}
	}
	return false
}

// isCommandStart reports whether a tool's name may follow b: the start of
// a command, an argument list or a path.
func isCommandStart(b byte) bool {
	return b == ' ' || b == '\t' || b == '/' || b == '"' || b == '\'' || isCommandEnd(b)
}

// cliValue gates a flag's value: long enough, not a placeholder, and no
// unquoted '$' (a variable or a command substitution is a reference).
func (r *rule) cliValue(v shellWord) bool {
	if len(v.text) < minPasswordBytes || isPlaceholder(v.text) {
		return false
	}
	for i, c := range v.text {
		if c == '$' && !v.lit[i] {
			return false
		}
	}
	return r.entropy <= 0 || entropy(v.text) >= r.entropy
}
