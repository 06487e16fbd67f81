package command

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Builtins that take variable names, and bash evaluates an array
// subscript in a name it is given: `printf -v 'a[$(cmd)]' x` runs cmd,
// although the word is quoted and so reads as a plain string. These are
// the arguments that are names.
//
//   - printf -v NAME, test -v NAME / [ -v NAME ], wait -p NAME:
//     the word after the option;
//   - read, unset, mapfile, readarray, getopts (its second operand on),
//     let (arithmetic): every operand;
//   - declare, typeset, local, export, readonly: the part of each operand
//     before its first =, and with -n (a name reference) the value too.
var nameTakers = map[string]bool{
	"printf": true, "test": true, "[": true, "wait": true,
	"read": true, "unset": true, "mapfile": true, "readarray": true, "getopts": true, "let": true,
	"declare": true, "typeset": true, "local": true, "export": true, "readonly": true,
}

// evaluatedSubscript returns the first argument of a name-taking builtin
// that is a name holding a subscript bash would evaluate (a [ with $ or `
// in it), or "" when there is none.
func evaluatedSubscript(name string, args []arg) string {
	if !nameTakers[name] {
		return ""
	}
	risky := riskySubscript
	text := func(a arg) string { // the word as written covers quoted and expanded forms alike
		return a.text
	}
	switch name {
	case "printf", "test", "[", "wait":
		opt := map[string]string{"printf": "-v", "test": "-v", "[": "-v", "wait": "-p"}[name]
		for i := 1; i+1 < len(args); i++ {
			if args[i].lit == opt && risky(text(args[i+1])) {
				return args[i+1].text
			}
		}
	case "declare", "typeset", "local", "export", "readonly":
		ref := false
		for _, a := range args[1:] {
			if strings.HasPrefix(a.lit, "-") && strings.Contains(a.lit, "n") {
				ref = true
			}
		}
		for _, a := range args[1:] {
			t := text(a)
			before, _, _ := strings.Cut(t, "=")
			if risky(before) || ref && risky(t) {
				return a.text
			}
		}
	default:
		for _, a := range args[1:] {
			if risky(text(a)) {
				return a.text
			}
		}
	}
	return ""
}

// riskySubscript reports whether s, a name as written, holds a subscript
// with $ or a backquote in it: what bash would evaluate.
func riskySubscript(s string) bool {
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.ContainsAny(s[i:], "$`")
}

// printNode prints a node of the tree as source.
func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		return ""
	}
	return b.String()
}
