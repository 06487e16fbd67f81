package calc

import "strings"

// printExpr prints postfix ops as source text with the fewest parentheses
// that keep the tree. It never adds nodes or depth, and never lengthens a
// literal, so the printed form parses within the limits the original met.
func printExpr(src string, ops []op, accounting bool) string {
	if len(ops) == 0 {
		return ""
	}
	// Rebuild child links: kids[i] are the operand indexes of ops[i].
	kids := make([][2]int, len(ops))
	stack := make([]int, 0, 16)
	for i, o := range ops {
		switch o.kind {
		case opNum:
		case opNeg, opPos:
			kids[i][0] = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		default:
			kids[i] = [2]int{stack[len(stack)-2], stack[len(stack)-1]}
			stack = stack[:len(stack)-2]
		}
		stack = append(stack, i)
	}
	pr := printer{src: src, ops: ops, kids: kids}
	pr.node(len(ops) - 1)
	return pr.b.String()
}

type printer struct {
	src  string
	ops  []op
	kids [][2]int
	b    strings.Builder
}

// prec is the binding strength of an op: sums bind loosest, then products,
// then signs and literals.
func prec(k opKind) int {
	switch k {
	case opAdd, opSub:
		return 1
	case opMul, opDiv:
		return 2
	}
	return 3
}

func (pr *printer) node(i int) {
	o := pr.ops[i]
	switch o.kind {
	case opNum:
		pr.literal(o.lit)
	case opNeg, opPos:
		pr.b.WriteByte("-+"[o.kind-opNeg])
		pr.child(pr.kids[i][0], prec(o.kind))
	default:
		p := prec(o.kind)
		pr.child(pr.kids[i][0], p)
		pr.b.WriteByte("+-*/"[o.kind-opAdd])
		pr.child(pr.kids[i][1], p+1) // left-associative: an equal right operand needs parentheses
	}
}

func (pr *printer) child(i, min int) {
	if prec(pr.ops[i].kind) < min {
		pr.b.WriteByte('(')
		pr.node(i)
		pr.b.WriteByte(')')
		return
	}
	pr.node(i)
}

func (pr *printer) literal(l literal) {
	if l.acct {
		pr.b.WriteByte('(')
	}
	for _, c := range []byte(pr.src[l.start:l.end]) {
		if c != ',' {
			pr.b.WriteByte(c)
		}
	}
	if l.pct {
		pr.b.WriteByte('%')
	}
	if l.acct {
		pr.b.WriteByte(')')
	}
}
