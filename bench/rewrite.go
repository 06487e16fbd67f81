package main

import (
	"fmt"
	"strings"
)

// dialect is the language a calc expression is rewritten into.
type dialect int

const (
	dialectExpr dialect = iota // expr-lang: literals as written; '/' is float division
	dialectCEL                 // cel-go: every literal a double, no unary '+'
)

// rewrite turns a calc expression into the rival's language, once, before
// timing: the '$' marker and the whitespace after it go, "N%" becomes
// "(N/100)", thousands commas go. For CEL every literal is also written as a
// double ("100" -> "100.0", ".5" -> "0.5", "5." -> "5.0", "1e3" -> "1.0e3"),
// since CEL refuses to mix int and double, and a unary '+', which CEL lacks,
// is dropped (+x is x). Other whitespace is kept as written.
func rewrite(src string, d dialect) (string, error) {
	var b strings.Builder
	b.Grow(len(src) + 16)
	hundred := "100"
	if d == dialectCEL {
		hundred = "100.0"
	}
	operand := false // the last token ends an operand: a number or ')'
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case isSpace(c):
			b.WriteByte(c)
			i++
		case c == '$':
			i++
			for i < len(src) && isSpace(src[i]) {
				i++
			}
			if _, ok := numberEnd(src, i); !ok {
				return "", fmt.Errorf("offset %d: '$' is not before a number", i)
			}
		case isDigit(c) || c == '.':
			end, ok := numberEnd(src, i)
			if !ok {
				return "", fmt.Errorf("offset %d: malformed number", i)
			}
			lit := strings.ReplaceAll(src[i:end], ",", "")
			if d == dialectCEL {
				lit = doubleLiteral(lit)
			}
			j := end
			for j < len(src) && isSpace(src[j]) {
				j++
			}
			if j < len(src) && src[j] == '%' {
				b.WriteString("(" + lit + "/" + hundred + ")")
				i = j + 1
			} else {
				b.WriteString(lit)
				i = end
			}
			operand = true
		case c == '+' && !operand && d == dialectCEL:
			i++
		case c == '+' || c == '-' || c == '*' || c == '/' || c == '(':
			b.WriteByte(c)
			i++
			operand = false
		case c == ')':
			b.WriteByte(c)
			i++
			operand = true
		default:
			return "", fmt.Errorf("offset %d: unexpected %q", i, c)
		}
	}
	return b.String(), nil
}

// doubleLiteral writes a decimal literal (no commas) with digits on both
// sides of a '.', which CEL reads as a double.
func doubleLiteral(lit string) string {
	mant, exp := lit, ""
	if k := strings.IndexAny(lit, "eE"); k >= 0 {
		mant, exp = lit[:k], lit[k:]
	}
	switch {
	case !strings.Contains(mant, "."):
		mant += ".0"
	case strings.HasSuffix(mant, "."):
		mant += "0"
	}
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	return mant + exp
}
