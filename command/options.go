package command

import "strings"

// optSpec says which options of a command take a value, so that the
// value is not mistaken for an operand (nice -n 5 rm: 5 is not the
// command).
type optSpec struct {
	short string   // letters whose option takes a value: "n" for -n 5 and -n5
	long  []string // long options that take the next word as a value: "--adjustment"
	// stop ends the options at the first operand, as for a wrapper whose
	// command follows (timeout 5 rm -f x: -f is rm's).
	stop bool
}

type optVal struct {
	name string // "-o" or "--output"
	val  arg
}

type parsed struct {
	operands []int  // indexes into args
	flags    string // short flags seen without a value, in order
	longs    []string
	values   []optVal
	end      int  // with stop: the index of the first operand, or len(args)
	dashdash bool // a "--" ended the options
}

func (p *parsed) has(short byte, long ...string) bool {
	if short != 0 && strings.IndexByte(p.flags, short) >= 0 {
		return true
	}
	for _, v := range p.values {
		if short != 0 && v.name == "-"+string(short) {
			return true
		}
	}
	for _, l := range long {
		for _, s := range p.longs {
			if s == l {
				return true
			}
		}
		for _, v := range p.values {
			if v.name == l {
				return true
			}
		}
	}
	return false
}

func (p *parsed) value(names ...string) (arg, bool) {
	for _, v := range p.values {
		for _, n := range names {
			if v.name == n {
				return v.val, true
			}
		}
	}
	return arg{}, false
}

// parseOpts reads the options of args[from:] the way getopt would. A word
// only known at run time is taken as an operand: it cannot be told apart.
func parseOpts(args []arg, from int, spec optSpec) parsed {
	p := parsed{end: len(args)}
	for i := from; i < len(args); i++ {
		a := args[i]
		s := a.lit
		if !a.exact() || len(s) < 2 || s[0] != '-' {
			if spec.stop {
				p.end = i
				return p
			}
			p.operands = append(p.operands, i)
			continue
		}
		if s == "--" {
			if spec.stop {
				p.end = i + 1
				return p
			}
			p.dashdash = true
			for j := i + 1; j < len(args); j++ {
				p.operands = append(p.operands, j)
			}
			return p
		}
		if strings.HasPrefix(s, "--") {
			if name, v, ok := strings.Cut(s, "="); ok {
				p.values = append(p.values, optVal{name, inlineArg(v)})
				continue
			}
			if contains(spec.long, s) {
				if i+1 < len(args) {
					i++
					p.values = append(p.values, optVal{s, args[i]})
				}
				continue
			}
			p.longs = append(p.longs, s)
			continue
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			if strings.IndexByte(spec.short, ch) < 0 {
				p.flags += string(ch)
				continue
			}
			name := "-" + string(ch)
			if j+1 < len(s) {
				p.values = append(p.values, optVal{name, inlineArg(s[j+1:])})
			} else if i+1 < len(args) {
				i++
				p.values = append(p.values, optVal{name, args[i]})
			}
			break
		}
	}
	return p
}

func inlineArg(v string) arg { return literalArg(v) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
