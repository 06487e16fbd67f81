package redact

import (
	"regexp/syntax"
	"testing"
)

// TestLineCrossingRulesHoldBack keeps Stream's promise true as rules are
// added: a keyword rule whose pattern can match a line end inside a match
// (not only as the one character that ends it) must have an open pattern,
// so that Stream holds back what could still begin such a match. Line
// rules never cross a line end; check: pem has its own test in Go.
func TestLineCrossingRulesHoldBack(t *testing.T) {
	rules, err := shippedRules()
	if err != nil {
		t.Fatal(err)
	}
	crossing := 0
	for _, r := range rules {
		if r.line || r.re == nil {
			continue
		}
		re, err := syntax.Parse(r.re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if !crossesLine(re) {
			continue
		}
		crossing++
		if r.open == nil {
			t.Errorf("rule %s can match a line end inside a match but has no open pattern", r.kind)
		}
	}
	if crossing == 0 {
		t.Error("no rule crosses a line end: the check has nothing to check (aws-secret-key should)")
	}
}

// crossesLine says whether re can match '\n' anywhere but as the last
// element of its top-level sequence (a boundary such as (?:[^a-z]|$)).
func crossesLine(re *syntax.Regexp) bool {
	for re.Op == syntax.OpCapture || re.Op == syntax.OpConcat && len(re.Sub) == 1 {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpConcat {
		for i, s := range re.Sub {
			if i == len(re.Sub)-1 && boundary(s) {
				continue
			}
			if matchesNewline(s) {
				return true
			}
		}
		return false
	}
	return matchesNewline(re)
}

// boundary is a one-character (or end of text) alternative.
func boundary(re *syntax.Regexp) bool {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpAlternate {
		return re.Op == syntax.OpCharClass
	}
	for _, s := range re.Sub {
		if s.Op != syntax.OpCharClass && s.Op != syntax.OpEndText && s.Op != syntax.OpEndLine {
			return false
		}
	}
	return true
}

func matchesNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if c == '\n' {
				return true
			}
		}
	}
	for _, s := range re.Sub {
		if matchesNewline(s) {
			return true
		}
	}
	return false
}
