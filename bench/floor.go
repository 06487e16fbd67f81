package main

import (
	"strconv"
	"strings"
)

// The floor: a plain float64 recursive-descent evaluator of the calc grammar,
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = ("+" | "-") unary | primary
//	primary = [ "$" ] number [ "%" ] | "(" expr ")"
//
// with whitespace between any two tokens (also after "$" and before "%").
// It is the baseline the other engines are compared against: no tree, no
// allocation on success, each literal converted with strconv.ParseFloat.
// It checks the syntax but does not reproduce calc's diagnostics or limits.
func floorEval(src string) (float64, error) {
	p := floorParser{src: src}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.peek() != 0 {
		return 0, p.fail("unexpected character")
	}
	return v, nil
}

type floorParser struct {
	src string
	pos int
}

// floorError is a syntax error at a byte offset.
type floorError struct {
	pos int
	msg string
}

func (e *floorError) Error() string { return "offset " + strconv.Itoa(e.pos) + ": " + e.msg }

func (p *floorParser) fail(msg string) error { return &floorError{pos: p.pos, msg: msg} }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// peek skips whitespace and returns the next byte, or 0 at the end.
func (p *floorParser) peek() byte {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *floorParser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.pos++
		r, err := p.term()
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += r
		} else {
			v -= r
		}
	}
}

func (p *floorParser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '*' && op != '/' {
			return v, nil
		}
		p.pos++
		r, err := p.unary()
		if err != nil {
			return 0, err
		}
		if op == '*' {
			v *= r
		} else {
			v /= r
		}
	}
}

func (p *floorParser) unary() (float64, error) {
	switch p.peek() {
	case '+':
		p.pos++
		return p.unary()
	case '-':
		p.pos++
		v, err := p.unary()
		return -v, err
	}
	return p.primary()
}

func (p *floorParser) primary() (float64, error) {
	switch p.peek() {
	case '(':
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, p.fail("expected ')'")
		}
		p.pos++
		return v, nil
	case '$':
		p.pos++
		p.peek() // whitespace may follow '$'
	}
	return p.number()
}

// number reads a literal at p.pos and an optional '%' after it.
func (p *floorParser) number() (float64, error) {
	start := p.pos
	end, ok := numberEnd(p.src, start)
	if !ok {
		return 0, p.fail("expected a number")
	}
	text := p.src[start:end]
	if strings.IndexByte(text, ',') >= 0 {
		text = strings.ReplaceAll(text, ",", "")
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, p.fail("bad number " + strconv.Quote(text))
	}
	p.pos = end
	if p.peek() == '%' {
		p.pos++
		v /= 100
	}
	return v, nil
}

// numberEnd returns the end of the literal starting at i: digits with
// optional thousands groups (",ddd"), an optional fraction and an optional
// exponent. ok is false when no literal starts at i.
func numberEnd(src string, i int) (end int, ok bool) {
	start := i
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	for i > start && i+3 < len(src) && src[i] == ',' &&
		isDigit(src[i+1]) && isDigit(src[i+2]) && isDigit(src[i+3]) {
		i += 4 // a thousands group: ",ddd"
	}
	if i < len(src) && (src[i] == ',' || isDigit(src[i])) {
		return 0, false // a broken group such as "1,23" or "1,2345"
	}
	digits := i > start
	if i < len(src) && src[i] == '.' {
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
			digits = true
		}
	}
	if !digits {
		return 0, false
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j >= len(src) || !isDigit(src[j]) {
			return 0, false
		}
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		i = j
	}
	return i, true
}
