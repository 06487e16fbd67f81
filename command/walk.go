package command

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// checker holds the state of one Check or CheckArgv: what the walk has
// found so far and the facts it tracks along the script (the directory,
// the functions declared). It is used by one goroutine only.
type checker struct {
	p     *Policy
	ws    string               // the workspace mount, clean and absolute
	cwd   string               // the shell's directory: absolute, homeDir-based, or "" when unknown
	funcs map[string]*function // functions declared in the script being walked
	count int                  // simple commands examined
	best  Decision
	have  bool // best holds a decision
	stop  bool // a deny was found: nothing later can change the verdict
	// otherAsk: a command asked under a rule that is not reviewable.
	otherAsk bool
	// braceWords counts the words brace expansions were expanded to, for
	// MaxBraceWordsTotal.
	braceWords int
	// bash evaluates a variable used in arithmetic as arithmetic itself,
	// and runs any $(...) in an array index there: x='a[$(cmd)]'; ((x)).
	// arith is set when the script does arithmetic, codeValue to the
	// first assignment of a literal holding $( or a backquote.
	arith     bool
	codeValue string
	// What the script destroys (destroy.go): destroys once a deleted or
	// overwritten path may hold data; fresh when a path written over was
	// found not to exist, and links when a command may make links through
	// which such a path reaches existing data.
	exists      func(rel string) bool
	existsCalls int
	destroys    bool
	fresh       steps
	links       steps
	redirs      int // redirections that write over, each a step of its own
}

// function is a function declared in the script.
type function struct {
	body       *syntax.Stmt
	dir, after string // the directory it was judged in, and the one its body leaves
	walked     bool   // its declaration has been walked
	active     bool   // its body is being walked again, for a call
}

// frame is what the walk knows about where a statement sits.
type frame struct {
	piped      bool   // stdin is the output of another command
	fed        string // stdin is redirected: "a here-document", "a here-string" or "a file"; "" if not
	argsFed    string // the command's last words come from another command's output (xargs fed by a pipe)
	pipeline   bool   // the statement is one element of a pipeline
	background bool   // the statement, or one around it, runs in the background
	fn         string // the body of this function is being walked
	noFuncs    bool   // the name is looked up past functions (command, builtin, exec)
	nest       int    // syntax nesting
	depth      int    // script nesting: 0 for the script given, 1 inside its sh -c, ...
	pos        int    // 1-based offset of the statement in the script given
}

func (p *Policy) newChecker(opts *Options) *checker {
	ws := opts.workspace()
	return &checker{p: p, ws: ws, cwd: ws, exists: opts.exists()}
}

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// report records one command's decision; the most severe wins, and among
// equals the first. Once a deny is in, the walk stops.
func (c *checker) report(d Decision) {
	if d.Verdict == Ask && !reviewableRules[d.Rule] {
		c.otherAsk = true
	}
	if !c.have || d.Verdict.severer(c.best.Verdict) {
		c.best, c.have = d, true
	}
	if d.Verdict == Deny {
		c.stop = true
	}
}

// finishScript reports what only the whole script shows.
func (c *checker) finishScript() {
	if c.arith && c.codeValue != "" && !c.stop {
		c.report(Decision{Verdict: Deny, Rule: "deny:dynamic-command", Command: c.codeValue,
			Message: "a variable holds $(...) or backquotes and the script does arithmetic, where bash may run them",
			Hint:    "Do not store commands in variables; write them out literally"})
	}
}

func (c *checker) decision() Decision {
	if !c.have {
		return Decision{Verdict: Allow, Rule: "allow:empty", Destroys: c.destroyed()}
	}
	d := c.best
	d.Destroys = c.destroyed()
	d.Reviewable = d.Verdict == Ask && !c.otherAsk
	if d.Code == "" {
		switch d.Verdict {
		case Deny:
			d.Code = CodeDenied
		case Ask:
			d.Code = CodeNeedsApproval
		}
	}
	return d
}

// found reports the decision about one command.
func (c *checker) found(f *frame, v Verdict, rule, name, cmd, msg, hint string) {
	c.report(Decision{Verdict: v, Rule: rule, Name: name, Command: cmd, Message: msg, Hint: hint, Pos: f.pos})
}

func (c *checker) limit(f *frame, code, limit, msg, hint string) {
	d := limitDecision(code, limit, msg, hint)
	d.Pos = f.pos
	c.report(d)
}

// script parses src as bash and walks it. depth is how deeply it sits in
// literal scripts; pos is the position of the command that holds it, for a
// nested script.
func (c *checker) script(src string, depth, pos int) {
	if depth, at := bracketDepth(src); depth > MaxBrackets {
		c.report(Decision{Verdict: Deny, Rule: "deny:limit:MaxBrackets", Code: CodeTooComplex, Pos: pos + at,
			Message: fmt.Sprintf("the command's parentheses, braces and brackets nest deeper than %d (MaxBrackets)", MaxBrackets),
			Hint:    "Flatten the command: fewer parentheses, braces and substitutions inside one another"})
		return
	}
	parser := parsers.Get().(*syntax.Parser)
	file, err := parser.Parse(strings.NewReader(src), "")
	parsers.Put(parser)
	if err != nil {
		d := Decision{Verdict: Deny, Rule: "deny:parse-error", Code: CodeParseError, Pos: pos,
			Message: "the command is not valid bash: " + parseMessage(err),
			Hint:    "Write the command as plain bash: close every quote, parenthesis, block and here-document"}
		if depth == 0 {
			var pe syntax.ParseError
			if asParseError(err, &pe) {
				d.Pos = int(pe.Pos.Offset()) + 1
			}
		} else {
			d.Message = "the script given to a shell is not valid bash: " + parseMessage(err)
		}
		c.report(d)
		return
	}
	// Functions may be called before the walk reaches their declaration
	// (from another function), so they are collected first. Their bodies
	// are judged where they are declared.
	saved := c.funcs
	c.funcs = map[string]*function{}
	syntax.Walk(file, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			c.funcs[fd.Name.Value] = &function{}
		}
		return true
	})
	c.stmts(file.Stmts, &frame{depth: depth, pos: pos})
	c.funcs = saved
}

func parseMessage(err error) string {
	var pe syntax.ParseError
	if asParseError(err, &pe) {
		return fmt.Sprintf("%s (line %d, column %d)", pe.Text, pe.Pos.Line(), pe.Pos.Col())
	}
	var le syntax.LangError
	if e, ok := err.(syntax.LangError); ok {
		le = e
		return fmt.Sprintf("%s is not supported by bash (line %d, column %d)", le.Feature, le.Pos.Line(), le.Pos.Col())
	}
	return err.Error()
}

func asParseError(err error, pe *syntax.ParseError) bool {
	e, ok := err.(syntax.ParseError)
	if ok {
		*pe = e
	}
	return ok
}

func (c *checker) stmts(list []*syntax.Stmt, f *frame) {
	for _, s := range list {
		if c.stop {
			return
		}
		c.stmt(s, *f)
	}
}

// stmt walks one statement. The frame is a copy, so that what is true of
// this statement (its pipe, its redirections) does not leak to the next.
func (c *checker) stmt(s *syntax.Stmt, f frame) {
	f.nest++
	if f.nest > MaxNesting {
		c.limit(&f, CodeTooComplex, "MaxNesting",
			fmt.Sprintf("the command nests deeper than %d levels (MaxNesting)", MaxNesting),
			"Flatten the command: fewer subshells, blocks and substitutions inside one another")
		return
	}
	if f.depth == 0 {
		f.pos = int(s.Pos().Offset()) + 1
	}
	if s.Background {
		f.background = true
	}
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			f.fed = "a here-document"
		case syntax.WordHdoc:
			f.fed = "a here-string"
		case syntax.RdrIn, syntax.RdrInOut:
			if r.Word == nil || r.Word.Lit() != "/dev/null" {
				f.fed = "a file"
			}
		}
	}
	// A background statement runs in a subshell: its cd stays there.
	if s.Background {
		defer c.keepCwd()()
	}
	name := ""
	if call, ok := s.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
		name = call.Args[0].Lit()
	}
	// Redirections are opened before the command runs.
	for _, r := range s.Redirs {
		if c.stop {
			return
		}
		c.redirect(r, name, &f)
	}
	switch x := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		c.call(x, &f)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.Pipe, syntax.PipeAll:
			left, right := f, f
			left.pipeline, right.pipeline = true, true
			right.piped, right.fed = true, ""
			// Each element of a pipeline runs in a subshell.
			restore := c.keepCwd()
			c.stmt(x.X, left)
			restore()
			if !c.stop {
				c.stmt(x.Y, right)
				restore()
			}
		default:
			c.stmt(x.X, f)
			if !c.stop {
				c.stmt(x.Y, f)
			}
		}
	case *syntax.Subshell:
		restore := c.keepCwd()
		c.stmts(x.Stmts, &f)
		restore()
	case *syntax.Block:
		c.stmts(x.Stmts, &f)
	case *syntax.IfClause:
		for cl := x; cl != nil && !c.stop; cl = cl.Else {
			c.stmts(cl.Cond, &f)
			c.stmts(cl.Then, &f)
		}
	case *syntax.WhileClause:
		c.stmts(x.Cond, &f)
		c.stmts(x.Do, &f)
	case *syntax.ForClause:
		c.nested(x.Loop, &f)
		c.stmts(x.Do, &f)
	case *syntax.CaseClause:
		c.nested(x.Word, &f)
		for _, it := range x.Items {
			for _, w := range it.Patterns {
				c.nested(w, &f)
			}
			c.stmts(it.Stmts, &f)
		}
	case *syntax.FuncDecl:
		body := f
		body.pipeline, body.background, body.piped, body.fed = false, false, false, ""
		var fn *function
		if x.Name != nil {
			body.fn = x.Name.Value
			fn = c.funcs[x.Name.Value]
		}
		if x.Body != nil {
			// Declaring runs nothing: the body is judged here, in the
			// directory of the declaration, and again at a call made
			// from another directory.
			restore := c.keepCwd()
			dir := c.cwd
			c.stmt(x.Body, body)
			if fn != nil {
				*fn = function{body: x.Body, dir: dir, after: c.cwd, walked: true}
			}
			restore()
		}
	case *syntax.ArithmCmd:
		c.arith = true
		c.nested(x.X, &f)
	case *syntax.TestClause:
		c.nested(x.X, &f)
	case *syntax.DeclClause:
		c.decl(x, &f)
	case *syntax.LetClause:
		c.arith = true
		for _, e := range x.Exprs {
			// let evaluates a quoted expression itself, subscripts and all.
			if t := printNode(e); riskySubscript(t) {
				c.found(&f, Deny, "deny:dynamic-command", "let", "let "+t,
					"let evaluates "+t+", whose array subscript runs whatever command it holds",
					"Use plain arithmetic, with no [ ] subscript holding $ or a backquote")
				return
			}
			c.nested(e, &f)
		}
	case *syntax.TimeClause:
		if x.Stmt != nil {
			c.stmt(x.Stmt, f)
		}
	case *syntax.CoprocClause:
		co := f
		co.background = true
		if x.Stmt != nil {
			restore := c.keepCwd()
			c.stmt(x.Stmt, co)
			restore()
		}
	case *syntax.TestDecl:
		if x.Body != nil {
			c.stmt(x.Body, f)
		}
	default:
		// A node this walk does not know may hide a command: fail closed.
		c.found(&f, Deny, "deny:dynamic-command", "", "",
			fmt.Sprintf("the command uses shell syntax this check does not know (%T)", x),
			"Write the command with plain commands, pipes and lists")
	}
}

// keepCwd returns a func that puts the directory back, for code that runs
// in a subshell.
func (c *checker) keepCwd() func() {
	saved := c.cwd
	return func() { c.cwd = saved }
}

// nested walks the commands inside any node: command and process
// substitutions in words, arithmetic and test expressions.
func (c *checker) nested(n syntax.Node, f *frame) {
	if n == nil || c.stop {
		return
	}
	// A nil *Word or *ArrayExpr in a non-nil interface.
	if v := reflect.ValueOf(n); v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		if c.stop {
			return false
		}
		switch x := n.(type) {
		case *syntax.ArithmExp, *syntax.CStyleLoop:
			c.arith = true
		case *syntax.BinaryTest:
			if x.Op >= syntax.TsEql && x.Op <= syntax.TsGtr {
				c.arith = true
			}
		case *syntax.ParamExp:
			if x.Index != nil || x.Slice != nil {
				c.arith = true
			}
			// ${x@P} expands x's value as a prompt, running the $(...) in it.
			if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && x.Exp.Word != nil && strings.Contains(x.Exp.Word.Lit(), "P") {
				c.found(f, Deny, "deny:dynamic-command", "", printWord(&syntax.Word{Parts: []syntax.WordPart{x}}),
					"${...@P} runs the command substitutions inside a variable's value",
					"Expand the variable plainly, as in \"$x\"")
				return false
			}
		case *syntax.CmdSubst:
			sub := *f
			sub.pipeline, sub.nest = false, sub.nest+1
			restore := c.keepCwd()
			c.stmts(x.Stmts, &sub)
			restore()
			return false
		case *syntax.ProcSubst:
			sub := *f
			sub.pipeline, sub.piped, sub.fed, sub.nest = false, x.Op == syntax.CmdOut, "", sub.nest+1
			restore := c.keepCwd()
			c.stmts(x.Stmts, &sub)
			restore()
			return false
		}
		return true
	})
}

// call walks a simple command: its assignments, the commands inside its
// words, and then the command itself.
func (c *checker) call(x *syntax.CallExpr, f *frame) {
	for _, as := range x.Assigns {
		c.nested(as.Value, f)
		c.nested(as.Array, f)
		c.nested(as.Index, f)
	}
	for _, w := range x.Args {
		c.nested(w, f)
	}
	if c.stop {
		return
	}
	first := ""
	if len(x.Args) > 0 {
		first = x.Args[0].Lit()
	}
	for _, as := range x.Assigns {
		c.assign(as, first, f)
		if c.stop {
			return
		}
	}
	if len(x.Args) == 0 {
		c.found(f, Allow, "allow:assign", "", "", "", "")
		return
	}
	if len(x.Args) > MaxArgs {
		c.limit(f, CodeTooLong, "MaxArgs",
			fmt.Sprintf("the command has %d words, over the limit of %d (MaxArgs)", len(x.Args), MaxArgs),
			"Pass fewer arguments, or let a command inside the workspace read them from a file")
		return
	}
	args := make([]arg, len(x.Args))
	for i, w := range x.Args {
		args[i] = c.wordArg(w)
	}
	c.simple(args, f)
}

// assign checks a variable assignment; cmd is the command it prefixes,
// if any.
func (c *checker) assign(as *syntax.Assign, cmd string, f *frame) {
	if as.Name == nil {
		if as.Value != nil {
			a := c.wordArg(as.Value)
			if a.dyn {
				c.found(f, Deny, "deny:dynamic-command", "", a.text,
					"the assignment's name is only known when it runs, so it may set IFS or PATH",
					"Assign to a variable named literally, as in NAME=value")
				return
			}
			if c.argChecks([]arg{a}, "", a.text, f) {
				return
			}
			if name, v, ok := strings.Cut(a.lit, "="); ok {
				val := literalArg(v)
				c.variable(name, &val, cmd, a.text, f)
			}
		}
		return
	}
	text := as.Name.Value + "="
	var val *arg
	if as.Value != nil {
		a := c.wordArg(as.Value)
		text += a.text
		b := a
		b.text = text
		if c.argChecks([]arg{b}, "", text, f) {
			return
		}
		if !a.dyn {
			val = &a
		}
	} else if as.Array == nil {
		val = &arg{}
	}
	c.variable(as.Name.Value, val, cmd, text, f)
}

func (c *checker) decl(x *syntax.DeclClause, f *frame) {
	// A name reference (-n), or a quoted NAME=value that declare parses
	// itself, gets its subscript evaluated by bash: $(...) in it runs.
	ref := false
	for _, as := range x.Args {
		if as.Naked && as.Name == nil && as.Value != nil && strings.HasPrefix(printNode(as.Value), "-") && strings.Contains(printNode(as.Value), "n") {
			ref = true
		}
	}
	for _, as := range x.Args {
		if as.Value == nil {
			continue
		}
		t := printNode(as.Value)
		before, _, _ := strings.Cut(t, "=")
		if as.Naked && as.Name == nil && riskySubscript(before) || ref && riskySubscript(t) {
			c.found(f, Deny, "deny:dynamic-command", x.Variant.Value, x.Variant.Value+" "+t,
				"the name "+t+" holds an array subscript that bash evaluates, running whatever command it holds",
				"Use a plain variable name, with no [ ] subscript holding $ or a backquote")
			return
		}
	}
	for _, as := range x.Args {
		c.nested(as.Value, f)
		c.nested(as.Array, f)
		c.nested(as.Index, f)
	}
	for _, as := range x.Args {
		if c.stop {
			return
		}
		if as.Naked && as.Name != nil {
			continue // declare -x NAME: no value
		}
		c.assign(as, "", f)
	}
	if !c.stop {
		c.found(f, Allow, "allow:assign", x.Variant.Value, x.Variant.Value, "", "")
	}
}

// bracketDepth returns how deeply ( { [ nest in s, whatever quotes them,
// and the 1-based offset where that depth is first passed MaxBrackets.
func bracketDepth(s string) (max, at int) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{', '[':
			depth++
			if depth > max {
				max = depth
				if max == MaxBrackets+1 {
					at = i + 1
				}
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return max, at
}
