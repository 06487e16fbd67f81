package calc

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a token. The scanner produces only the tokens of
// the language; everything else ends the scan with an *Error.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNum
	tokAdd
	tokSub
	tokMul
	tokDiv
	tokLParen
	tokRParen
)

// token is one token. For numbers, lit holds the literal.
type token struct {
	kind tokKind
	pos  int // byte offset of the token (of the '$' for a currency literal)
	lit  literal
}

// literal is a number as written: the span of its digits in the source and,
// when it fits, its exact value n/d (d > 0, not necessarily reduced).
type literal struct {
	start, end int32 // digits, '.', ',' and exponent; no '$' and no '%'
	n, d       int64
	big        bool // does not fit n/d: converted from the text when evaluated
	pct        bool // followed by '%': the value is divided by 100
	acct       bool // an accounting negative: (123) under Options.Accounting
}

// maxExponent bounds the written exponent of a literal: 1e401 and 1e-401
// are non_finite before any arithmetic happens.
const maxExponent = 400

// pow10 holds the powers of ten that fit in an int64.
var pow10 = [...]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

type scanner struct {
	src  string
	off  int
	prev tokKind // kind of the last token returned (tokEOF before the first), for context-dependent errors
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }
func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isWord(c byte) bool   { return isLetter(c) || isDigit(c) || c == '_' }

// skipSpace returns the offset of the first non-space byte at or after i.
func (s *scanner) skipSpace(i int) int {
	for i < len(s.src) && isSpace(s.src[i]) {
		i++
	}
	return i
}

// startsNumber reports whether a number literal starts at i.
func (s *scanner) startsNumber(i int) bool {
	if i >= len(s.src) {
		return false
	}
	c := s.src[i]
	return isDigit(c) || c == '.' && i+1 < len(s.src) && isDigit(s.src[i+1])
}

// next scans the next token into t. On error t is left as tokEOF.
func (s *scanner) next(t *token) *Error {
	t.kind = tokEOF
	err := s.scan(t)
	s.prev = t.kind
	return err
}

// operators maps the bytes that are whole tokens by themselves.
var operators = [256]tokKind{'+': tokAdd, '-': tokSub, '*': tokMul, '/': tokDiv, '(': tokLParen, ')': tokRParen}

func (s *scanner) scan(t *token) *Error {
	src := s.src
	i := s.off
	for i < len(src) && isSpace(src[i]) {
		i++
	}
	t.pos = i
	if i >= len(src) {
		s.off = i
		return nil
	}
	c := src[i]
	if k := operators[c]; k != tokEOF {
		if (c == '*' || c == '/') && i+1 < len(src) && src[i+1] == c {
			return doubled(c, i)
		}
		s.off = i + 1
		t.kind = k
		return nil
	}
	switch {
	case isDigit(c) || c == '.' && s.startsNumber(i):
		return s.number(t, i)
	case c == '$':
		return s.currency(t, i)
	case isLetter(c) || c == '_':
		return s.word(i)
	}
	return s.bad(i)
}

// doubled refuses "**" and "//".
func doubled(c byte, i int) *Error {
	if c == '*' {
		return errAt(CodeUnsupportedSyntax, i, "'**' (exponentiation) is not supported",
			"Exponentiation is not supported; multiply instead, as in 2*2*2")
	}
	return errAt(CodeUnsupportedSyntax, i, "'//' (floor division) is not supported",
		"Use '/' for exact division")
}

// currency scans a '$' that must stand directly before a number.
func (s *scanner) currency(t *token, i int) *Error {
	bad := func() *Error {
		return errAt(CodeInvalidCurrencyMarker, i, "'$' is not directly before a number",
			"Use '$' only directly before a number, as in $100")
	}
	if i > 0 {
		if p := s.src[i-1]; isWord(p) || p == '.' || p == ')' {
			return bad()
		}
	}
	j := s.skipSpace(i + 1)
	if !s.startsNumber(j) {
		return bad()
	}
	return s.number(t, j)
}

// number scans a literal whose digits start at j into t; t.pos is already
// the token's start (a '$' before it, or j itself).
func (s *scanner) number(t *token, j int) *Error {
	src := s.src
	i := j
	var (
		mant     uint64 // the digits, while fewer than 19 are significant
		overflow bool   // more significant digits than mant holds
		frac     int    // digits after '.'
	)
	// digits accumulates the run of digits at i and returns its end.
	digits := func(i int) int {
		for ; i < len(src); i++ {
			c := src[i] - '0'
			if c > 9 {
				break
			}
			if mant < 1e18 {
				mant = mant*10 + uint64(c)
			} else {
				overflow = true
			}
		}
		return i
	}
	i = digits(i)
	if i < len(src) && src[i] == ',' {
		// Thousands separators: a first group of 1 to 3 digits that does not
		// start with 0, then groups of exactly three.
		if n := i - j; n == 0 || n > 3 || src[j] == '0' {
			return badGrouping(i)
		}
		for i < len(src) && src[i] == ',' {
			if k := digits(i + 1); k-(i+1) == 3 {
				i = k
			} else {
				return badGrouping(i)
			}
		}
	}
	if i < len(src) && src[i] == '.' {
		k := digits(i + 1)
		frac = k - (i + 1)
		i = k
	}
	exp := 0
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		k := i + 1
		neg := false
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			neg = src[k] == '-'
			k++
		}
		if k >= len(src) || !isDigit(src[k]) {
			return errAt(CodeInvalidSyntax, i, "malformed exponent",
				"Write the exponent as digits after 'e', as in 1e3 or 2.5e-2")
		}
		for ; k < len(src) && isDigit(src[k]); k++ {
			if exp <= maxExponent {
				exp = exp*10 + int(src[k]-'0')
			}
		}
		if exp > maxExponent {
			return errAt(CodeNonFinite, t.pos, "the exponent is beyond ±400",
				"Use an exponent between -400 and 400; values must stay within about ±1.8e308")
		}
		if neg {
			exp = -exp
		}
		i = k
	}
	if err := s.afterNumber(j, i); err != nil {
		return err
	}
	lit := &t.lit
	*lit = literal{start: int32(j), end: int32(i)}
	lit.n, lit.d, lit.big = smallLiteral(mant, overflow, exp-frac)

	// A '%' after the number, spaces allowed, makes it a percent literal.
	s.off = i
	if k := s.skipSpace(i); k < len(src) && src[k] == '%' {
		lit.pct = true
		s.off = k + 1
		if !lit.big {
			if lit.d > math.MaxInt64/100 {
				lit.big = true
			} else {
				lit.d *= 100
			}
		}
	}
	t.kind = tokNum
	return nil
}

// smallLiteral returns mant*10^scale as n/d when both fit in an int64.
func smallLiteral(mant uint64, overflow bool, scale int) (n, d int64, big bool) {
	switch {
	case overflow || mant > math.MaxInt64:
		return 0, 0, true
	case mant == 0:
		return 0, 1, false
	case scale >= 0:
		if scale < len(pow10) && int64(mant) <= math.MaxInt64/pow10[scale] {
			return int64(mant) * pow10[scale], 1, false
		}
		return 0, 0, true
	case -scale < len(pow10):
		return int64(mant), pow10[-scale], false
	}
	return 0, 0, true
}

// afterNumber refuses what may not directly follow the literal src[j:i].
func (s *scanner) afterNumber(j, i int) *Error {
	src := s.src
	if i >= len(src) {
		return nil
	}
	c := src[i]
	switch {
	case c == '.':
		return errAt(CodeInvalidSyntax, i, "malformed number: unexpected '.'",
			"Write a number with at most one '.', before any exponent, as in 1.25 or 1.5e3")
	case c == ',':
		return badGrouping(i)
	case c == '_' && i+1 < len(src) && isDigit(src[i+1]):
		return errAt(CodeUnsupportedSyntax, i, "'_' digit separators are not supported",
			"Write the digits without '_', as in 1000 or 1,000")
	case src[j:i] == "0" && i+1 < len(src) && isWord(src[i+1]) && (c|0x20 == 'x' || c|0x20 == 'b' || c|0x20 == 'o'):
		return errAt(CodeUnsupportedSyntax, j, "hexadecimal, octal and binary literals are not supported",
			"Write the number in decimal digits")
	}
	return nil
}

func badGrouping(i int) *Error {
	return errAt(CodeInvalidSyntax, i, "invalid thousands separator",
		"Use ',' only between groups of exactly three digits, as in 1,234,567, or leave the commas out")
}

// word refuses a name starting at i: a variable, constant, function, keyword
// or unit. A lone x between two numbers is a multiplication mistake instead.
func (s *scanner) word(i int) *Error {
	src := s.src
	k := i
	for k < len(src) && isWord(src[k]) {
		k++
	}
	if src[i]|0x20 == 'x' && (s.prev == tokNum || s.prev == tokRParen) {
		// "2 x 3", "2x3", "(1)x(2)": the x is followed by a number or '('.
		n := i + 1
		if !(k > n && isDigit(src[n])) { // x3 reads as x then 3
			n = s.skipSpace(n)
		}
		if s.startsNumber(n) || n < len(src) && (src[n] == '(' || src[n] == '$') {
			return errAt(CodeInvalidSyntax, i, "'"+src[i:i+1]+"' is not an operator",
				"Use '*' for multiplication, not 'x'")
		}
	}
	name := src[i:k]
	after := s.skipSpace(k)
	switch {
	case after < len(src) && src[after] == '(':
		return errAt(CodeUnsupportedSyntax, i, "function calls such as "+quoteName(name+"(...)")+" are not supported",
			"Write the numbers and operators directly; no functions are available")
	case after < len(src) && src[after] == '.' && !s.startsNumber(after):
		return errAt(CodeUnsupportedSyntax, i, "attribute access such as "+quoteName(name+".")+" is not supported",
			"Replace "+quoteName(name)+" with the number it stands for")
	}
	switch strings.ToLower(name) {
	case "and", "or", "not", "xor", "true", "false":
		return errAt(CodeUnsupportedSyntax, i, "boolean logic is not supported",
			"Compute only numbers with + - * /")
	case "mod", "rem", "div":
		return errAt(CodeUnsupportedSyntax, i, quoteName(name)+" is not supported",
			"Modulo and integer division are not supported; use '/' for exact division")
	}
	return errAt(CodeUnsupportedSyntax, i, "names such as "+quoteName(name)+" are not supported",
		"Replace "+quoteName(name)+" with the number it stands for")
}

// bad refuses the byte at i, which starts no token of the language.
func (s *scanner) bad(i int) *Error {
	c := s.src[i]
	unsupported := func(msg, hint string) *Error { return errAt(CodeUnsupportedSyntax, i, msg, hint) }
	switch c {
	case '%':
		return errAt(CodeInvalidSyntax, i, "'%' does not follow a number",
			"Percent must follow a number, as in 20%; modulo is not supported")
	case ',':
		return badGrouping(i)
	case '.':
		if (s.prev == tokNum || s.prev == tokRParen) && i+1 < len(s.src) && (isLetter(s.src[i+1]) || s.src[i+1] == '_') {
			return unsupported("attribute access is not supported",
				"Write the number itself instead of an attribute")
		}
		return errAt(CodeInvalidSyntax, i, "'.' is not part of a number",
			"Write decimals with a digit after the point, as in 0.5 or .5")
	case '^':
		return unsupported("'^' is not supported",
			"Exponentiation is not supported; multiply instead, as in 2*2*2")
	case '[', ']', '{', '}':
		return unsupported("brackets and braces are not supported",
			"Group with parentheses ( ) instead")
	case '<', '>', '=', '!':
		return unsupported("comparison, assignment and negation operators are not supported",
			"Compute only numbers with + - * /; compare the results yourself")
	case '&', '|', '~':
		return unsupported("bitwise and boolean operators are not supported",
			"Compute only numbers with + - * /")
	case '"', '\'', '`':
		return unsupported("strings are not supported",
			"Write the number itself, without quotes")
	}
	if c < 0x20 || c == 0x7f {
		return errAt(CodeInvalidSyntax, i, "control character in the expression",
			"Remove the control character; only space, tab, CR and LF may separate tokens")
	}
	if c < utf8.RuneSelf {
		return unsupported("'"+string(rune(c))+"' is not supported",
			"Use only numbers, + - * /, parentheses, '$' before a number and '%' after one")
	}
	r, _ := utf8.DecodeRuneInString(s.src[i:])
	hint := "Replace it with ASCII: only numbers, + - * /, parentheses, $ and % are allowed"
	switch {
	case r == '×' || r == '·' || r == '∙' || r == '⋅' || r == '✕':
		hint = "Use '*' for multiplication"
	case r == '÷' || r == '∕' || r == '⁄':
		hint = "Use '/' for division"
	case r == '−' || r == '–' || r == '—' || r == '‐' || r == '‑' || r == '﹣' || r == '－':
		hint = "Use the ASCII '-' for minus"
	case r == '＋':
		hint = "Use the ASCII '+' for plus"
	case unicode.IsDigit(r) || unicode.IsNumber(r):
		hint = "Use the ASCII digits 0-9"
	case unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) || r == '\u200b' || r == '\ufeff':
		hint = "Use an ordinary ASCII space"
	case unicode.Is(unicode.Sc, r):
		hint = "Only '$' marks currency; remove the currency symbol"
	}
	return errAt(CodeInvalidSyntax, i, "non-ASCII character "+quoteRune(r), hint)
}

func quoteName(s string) string {
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return "'" + s + "'"
}

func quoteRune(r rune) string { return fmt.Sprintf("U+%04X %q", r, r) }
