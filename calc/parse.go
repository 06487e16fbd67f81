package calc

import (
	"strconv"
	"unicode/utf8"
)

// opKind is one step of a parsed expression in postfix order.
type opKind uint8

const (
	opNum opKind = iota
	opNeg
	opPos
	opAdd
	opSub
	opMul
	opDiv
)

// op is a node of the tree, stored in postfix order so that evaluation is a
// loop over a slice and parsing allocates nothing once the slice is warm.
type op struct {
	kind opKind
	pos  int32   // byte offset of the token, for errors
	lit  literal // for opNum
}

// parser is a recursive-descent parser over the grammar
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = ("+" | "-") unary | primary
//	primary = number | "(" expr ")"
//
// Recursion happens only through unary operators and parentheses, and both
// count toward depth, which is checked before recursing.
//
// The parser emits the tree in postfix order: into ops for Parse, or
// straight into a machine for Eval, which then needs no second pass.
type parser struct {
	s        scanner
	tok      token
	ahead    token // one token of look-ahead, for accounting negatives
	aheadErr *Error
	peeked   bool
	err      *Error // the first syntax or limit error
	ops      []op
	m        *machine // when set, ops are executed instead of stored
	evalErr  *Error   // the first evaluation error; a later syntax error wins
	cfg      *config
	nodes    int
	depth    int
	lastOp   tokKind // the last operator consumed, for "dangling operator" errors
	lastPos  int
	lastPct  bool // the last literal was a percent literal
}

// parse parses src, appending its ops to ops, or executing them on m when m
// is not nil.
func parse(src string, cfg *config, ops []op, m *machine) ([]op, error) {
	if len(src) > cfg.lim.MaxLength {
		if n := utf8.RuneCountInString(src); n > cfg.lim.MaxLength {
			return ops, &Error{Code: CodeExpressionTooLong, Pos: NoPos,
				Msg:  "the expression has " + strconv.Itoa(n) + " characters; the limit is " + strconv.Itoa(cfg.lim.MaxLength),
				Hint: "Split the calculation into shorter expressions"}
		}
	}
	if !utf8.ValidString(src) {
		return ops, &Error{Code: CodeInvalidInput, Pos: firstInvalidUTF8(src),
			Msg: "the expression is not valid UTF-8", Hint: "Send the expression as UTF-8 text"}
	}
	p := parser{s: scanner{src: src}, ops: ops, cfg: cfg, m: m}
	p.next()
	if p.err == nil && p.tok.kind == tokEOF {
		return p.ops, &Error{Code: CodeInvalidSyntax, Pos: NoPos,
			Msg: "the expression is empty", Hint: "Write an expression, such as 1+2"}
	}
	p.expr()
	if p.err == nil && p.tok.kind != tokEOF {
		p.unexpected()
	}
	switch {
	case p.err != nil:
		return p.ops, p.err
	case p.evalErr != nil:
		return p.ops, p.evalErr
	}
	return p.ops, nil
}

func firstInvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return NoPos
}

func (p *parser) next() {
	var err *Error
	if p.peeked {
		p.tok, err, p.peeked = p.ahead, p.aheadErr, false
	} else {
		err = p.s.next(&p.tok)
	}
	if err != nil && p.err == nil {
		p.err = err
	}
}

// peek returns the kind of the token after the current one without
// consuming it. A scan error there is kept until next reaches it, so errors
// stay in source order.
func (p *parser) peek() tokKind {
	if !p.peeked {
		p.aheadErr = p.s.next(&p.ahead)
		p.peeked = true
	}
	return p.ahead.kind
}

// emit stores an operator, or executes it when the parser evaluates as it
// goes. Literals go through literal.
func (p *parser) emit(k opKind, pos int) {
	if p.m == nil {
		p.ops = append(p.ops, op{kind: k, pos: int32(pos)})
		return
	}
	if p.evalErr == nil && p.err == nil {
		p.evalErr = p.m.apply(k, pos)
	}
}

func (p *parser) fail(code Code, pos int, msg, hint string) {
	if p.err == nil {
		p.err = errAt(code, pos, msg, hint)
	}
}

func (p *parser) count(n, pos int) {
	p.nodes += n
	if p.nodes > p.cfg.lim.MaxNodes {
		p.fail(CodeExpressionTooComplex, pos,
			"the expression has more than "+strconv.Itoa(p.cfg.lim.MaxNodes)+" nodes",
			"Split the calculation into smaller expressions and combine their results")
	}
}

func (p *parser) enter(pos int) {
	p.depth++
	if p.depth > p.cfg.lim.MaxDepth {
		p.fail(CodeExpressionTooDeep, pos,
			"the expression nests deeper than "+strconv.Itoa(p.cfg.lim.MaxDepth)+" levels",
			"Remove redundant parentheses and signs, or split the calculation")
	}
}

func (p *parser) expr() {
	p.term()
	for p.err == nil && (p.tok.kind == tokAdd || p.tok.kind == tokSub) {
		k, pos := p.tok.kind, p.tok.pos
		p.count(2, pos)
		p.lastOp, p.lastPos = k, pos
		p.next()
		p.term()
		p.emit(binaryOp[k], pos)
	}
}

func (p *parser) term() {
	p.unary()
	for p.err == nil && (p.tok.kind == tokMul || p.tok.kind == tokDiv) {
		k, pos := p.tok.kind, p.tok.pos
		p.count(2, pos)
		p.lastOp, p.lastPos = k, pos
		p.next()
		p.unary()
		p.emit(binaryOp[k], pos)
	}
}

var binaryOp = [...]opKind{tokAdd: opAdd, tokSub: opSub, tokMul: opMul, tokDiv: opDiv}

func (p *parser) unary() {
	if p.err != nil {
		return
	}
	if k, pos := p.tok.kind, p.tok.pos; k == tokAdd || k == tokSub {
		p.count(2, pos)
		p.enter(pos)
		if p.err != nil {
			return
		}
		p.lastOp, p.lastPos = k, pos
		p.next()
		p.unary()
		o := opNeg
		if k == tokAdd {
			o = opPos
		}
		p.emit(o, pos)
		p.depth--
		return
	}
	p.primary()
}

func (p *parser) primary() {
	if p.err != nil {
		return
	}
	switch p.tok.kind {
	case tokNum:
		p.literal(&p.tok)
		p.next()
	case tokLParen:
		open := p.tok.pos
		p.enter(open)
		if p.err != nil {
			return
		}
		p.lastOp, p.lastPos = tokLParen, open // "(" at the end has no number after it
		p.next()
		if p.err != nil {
			return
		}
		if p.cfg.accounting && p.tok.kind == tokNum && p.peek() == tokRParen {
			// An accounting negative: parentheses directly around one literal.
			p.tok.lit.acct = true
			p.tok.lit.n = -p.tok.lit.n
			p.literal(&p.tok)
			p.next()
			p.next()
			p.depth--
			return
		}
		if p.tok.kind == tokRParen {
			p.fail(CodeInvalidSyntax, p.tok.pos, "empty parentheses",
				"Put an expression inside the parentheses, or remove them")
			return
		}
		p.expr()
		if p.err != nil {
			return
		}
		if p.tok.kind != tokRParen {
			if p.tok.kind == tokEOF {
				p.fail(CodeInvalidSyntax, open, "unclosed '('",
					"Add a ')' to close the '(' at offset "+strconv.Itoa(open))
				return
			}
			p.unexpected()
			return
		}
		p.depth--
		p.next()
	case tokEOF:
		op := tokText[p.lastOp]
		p.fail(CodeInvalidSyntax, p.lastPos, "'"+op+"' has no number after it",
			"Complete the expression after '"+op+"', or remove the operator")
	case tokRParen:
		p.fail(CodeInvalidSyntax, p.tok.pos, "expected a number before ')'",
			"Put a number before ')', or remove the operator before it")
	default: // '*' or '/' where an operand belongs
		op := tokText[p.tok.kind]
		p.fail(CodeInvalidSyntax, p.tok.pos, "'"+op+"' has no number before it",
			"Put a number before '"+op+"', or remove the extra operator")
	}
}

var tokText = [...]string{tokEOF: "end", tokNum: "number", tokAdd: "+", tokSub: "-",
	tokMul: "*", tokDiv: "/", tokLParen: "(", tokRParen: ")"}

func (p *parser) literal(t *token) {
	n := 1
	if t.lit.pct {
		n = 4 // counted as (number / 100)
	}
	p.count(n, t.pos)
	p.lastPct = t.lit.pct
	switch {
	case p.m == nil:
		p.ops = append(p.ops, op{kind: opNum, pos: int32(t.pos), lit: t.lit})
	case p.evalErr == nil && p.err == nil:
		p.evalErr = p.m.push(&t.lit, t.pos)
	}
}

// unexpected reports the current token, which stands where an operator or
// the end of the expression belongs.
func (p *parser) unexpected() {
	t := &p.tok
	switch t.kind {
	case tokNum:
		hint := "Put an operator such as '+' or '*' between the two numbers"
		if p.lastPct {
			hint = "'%' means percent (20% is 0.2), not modulo; put an operator between the numbers"
		}
		p.fail(CodeInvalidSyntax, t.pos, "two numbers side by side", hint)
	case tokLParen:
		p.fail(CodeInvalidSyntax, t.pos, "missing operator before '('",
			"Use '*' to multiply, as in 2*(3+4)")
	case tokRParen:
		p.fail(CodeInvalidSyntax, t.pos, "unmatched ')'",
			"Remove the ')' or add a matching '(' before it")
	default:
		p.fail(CodeInvalidSyntax, t.pos, "unexpected '"+tokText[t.kind]+"'",
			"Check the operators around offset "+strconv.Itoa(t.pos))
	}
}
