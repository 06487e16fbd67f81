package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/calc"
)

// MaxBatchLine bounds the bytes of one --batch input line that are kept in
// memory. A longer line is skipped to its end and answered
// expression_too_long when it holds a JSON string, else invalid_input; the
// stream goes on either way.
const MaxBatchLine = 1 << 20

func runCalc(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("calc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON object instead of plain text")
	batch := fs.Bool("batch", false, "read one JSON value per line from stdin; write one JSON object per line")
	accounting := fs.Bool("accounting", false, "parentheses directly around one literal negate it: (123) is -123")
	var places placesFlag
	fs.Var(&places, "round", fmt.Sprintf("round the result to `N` decimal places (0 to %d)", calc.DefaultMaxPlaces))
	mode := fs.String("rounding", "half-even", "rounding `mode` for --round: half-even or half-up")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock calc [flags] EXPR\n       airlock calc --batch [flags] < lines.jsonl\n\nflags:")
		fs.PrintDefaults()
	}
	exprs, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}

	opts := &calc.Options{Accounting: *accounting}
	switch *mode {
	case "half-even":
	case "half-up":
	default:
		fmt.Fprintf(stderr, "airlock calc: --rounding must be half-even or half-up, not %q\n", *mode)
		return exitUsage
	}
	if places.set {
		m := calc.HalfEven
		if *mode == "half-up" {
			m = calc.HalfUp
		}
		opts.Round = &calc.Rounding{Places: places.n, Mode: m}
	}

	if *batch {
		if len(exprs) > 0 {
			fmt.Fprintln(stderr, "airlock calc: --batch reads expressions from stdin, not from arguments")
			return exitUsage
		}
		if err := calcBatch(ctx, stdin, stdout, opts); err != nil {
			fmt.Fprintf(stderr, "airlock calc: reading stdin: %v\n", err)
			return exitRefused
		}
		return exitOK
	}
	if len(exprs) == 0 {
		fs.Usage()
		return exitUsage
	}
	// Several arguments are one expression split by the shell: calc 1 + 2.
	v, err := calc.Eval(strings.Join(exprs, " "), opts)
	if *asJSON {
		line, _ := json.Marshal(answer(v, err))
		fmt.Fprintf(stdout, "%s\n", line)
	} else if err == nil {
		fmt.Fprintln(stdout, v.String())
	} else {
		e := asCalcError(err)
		fmt.Fprintf(stderr, "error: %s. Hint: %s\n", e.Msg, e.Hint)
	}
	if err != nil {
		return exitRefused
	}
	return exitOK
}

// placesFlag is --round: unset, or a number of places within the limit.
type placesFlag struct {
	n   int
	set bool
}

func (p *placesFlag) String() string {
	if !p.set {
		return ""
	}
	return strconv.Itoa(p.n)
}

func (p *placesFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > calc.DefaultMaxPlaces {
		return fmt.Errorf("want a number of places from 0 to %d", calc.DefaultMaxPlaces)
	}
	p.n, p.set = n, true
	return nil
}

// parseArgs separates flags from the expression. An argument that starts
// with '-' but not with a letter after it ("-5+3", "-(2)") is part of the
// expression, so that negative expressions need no "--".
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var exprs []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return append(exprs, args[1:]...), nil
		case isFlag(a):
			n := 1
			name := strings.TrimLeft(a, "-")
			if f := fs.Lookup(name); f != nil && !strings.Contains(name, "=") && len(args) > 1 {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					n = 2 // the flag's value is the next argument
				}
			}
			if err := fs.Parse(args[:n]); err != nil {
				return nil, err
			}
			args = args[n:]
		default:
			exprs = append(exprs, a)
			args = args[1:]
		}
	}
	return exprs, nil
}

func isFlag(a string) bool {
	if !strings.HasPrefix(a, "-") {
		return false
	}
	a = strings.TrimPrefix(a[1:], "-")
	return len(a) > 0 && ('a' <= a[0] && a[0] <= 'z' || 'A' <= a[0] && a[0] <= 'Z')
}

// calcAnswer is the JSON form of one result.
type calcAnswer struct {
	OK    bool       `json:"ok"`
	Value string     `json:"value,omitempty"`
	Float *float64   `json:"float,omitempty"`
	Exact *bool      `json:"exact,omitempty"`
	Error *calcError `json:"error,omitempty"`
}

type calcError struct {
	Code    calc.Code `json:"code"`
	Message string    `json:"message"`
	Hint    string    `json:"hint"`
	Pos     *int      `json:"pos,omitempty"`
}

func answer(v calc.Value, err error) calcAnswer {
	if err != nil {
		e := asCalcError(err)
		out := &calcError{Code: e.Code, Message: e.Msg, Hint: e.Hint}
		if e.Pos != calc.NoPos {
			out.Pos = &e.Pos
		}
		return calcAnswer{Error: out}
	}
	f, exact := v.Float64(), v.Exact()
	return calcAnswer{OK: true, Value: v.String(), Float: &f, Exact: &exact}
}

func asCalcError(err error) *calc.Error {
	var e *calc.Error
	if errors.As(err, &e) {
		return e
	}
	return &calc.Error{Code: calc.CodeInvalidInput, Msg: err.Error(), Hint: "Check the input", Pos: calc.NoPos}
}

func invalidInput(msg, hint string) calcAnswer {
	return answer(calc.Value{}, &calc.Error{Code: calc.CodeInvalidInput, Msg: msg, Hint: hint, Pos: calc.NoPos})
}

// calcBatch answers each line of in with exactly one JSON line on out, in
// order, whatever the line holds.
func calcBatch(ctx context.Context, in io.Reader, out io.Writer, opts *calc.Options) error {
	return answerLines(ctx, in, out, MaxBatchLine, func(line []byte, tooLong bool) any {
		return batchAnswer(line, tooLong, opts)
	})
}

// answerLines is the JSON Lines contract of the bulk commands: each input
// line, of any length, gets exactly one JSON line of output, in order, and
// no line stops the stream. At most max bytes of a line are kept; answer is
// told when a line was longer. Only a failure to read or write ends it.
func answerLines(ctx context.Context, in io.Reader, out io.Writer, max int, answer func(line []byte, tooLong bool) any) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, tooLong, err := readLine(r, max)
		if err == io.EOF && line == nil {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if encErr := enc.Encode(answer(line, tooLong)); encErr != nil {
			return encErr
		}
		// Flush when no more input is waiting, so that a line-by-line
		// conversation over a pipe gets each answer at once.
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readLine reads one line without its end of line. It keeps at most max
// bytes and then reports tooLong, having read through the end of the line.
// A last line without a newline ends with io.EOF.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	line = []byte{}
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= max {
			line = append(line, chunk...)
		} else if !tooLong {
			tooLong = true
			line = append(line, chunk[:min(len(chunk), 64)]...) // enough to see what it is
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return bytes.TrimRight(line, "\r\n"), tooLong, nil
		case io.EOF:
			if len(line) == 0 {
				return nil, false, io.EOF
			}
			return bytes.TrimRight(line, "\r\n"), tooLong, io.EOF
		default:
			return nil, false, err
		}
	}
}

func batchAnswer(line []byte, tooLong bool, opts *calc.Options) calcAnswer {
	trimmed := bytes.TrimSpace(line)
	switch {
	case tooLong && len(trimmed) > 0 && trimmed[0] == '"':
		return answer(calc.Value{}, &calc.Error{Code: calc.CodeExpressionTooLong, Pos: calc.NoPos,
			Msg:  fmt.Sprintf("the line is longer than %d bytes", MaxBatchLine),
			Hint: "Split the calculation into shorter expressions"})
	case tooLong:
		return invalidInput(fmt.Sprintf("the line is longer than %d bytes and is not a JSON string", MaxBatchLine),
			`Send each expression as a JSON string on its own line, as in "1+2"`)
	case len(trimmed) == 0:
		return invalidInput("the line is blank", `Send each expression as a JSON string on its own line, as in "1+2"`)
	case !utf8.Valid(line):
		return invalidInput("the line is not valid UTF-8", "Send the expression as UTF-8 text")
	case trimmed[0] != '"':
		if !json.Valid(trimmed) {
			return invalidInput("the line is not valid JSON", `Send each expression as a JSON string, as in "1+2"`)
		}
		return invalidInput("the JSON value is not a string", `Send the expression as a JSON string, as in "1+2"`)
	}
	var src string
	if err := json.Unmarshal(trimmed, &src); err != nil {
		return invalidInput("the line is not valid JSON", `Send each expression as a JSON string, as in "1+2"`)
	}
	// encoding/json turns a lone surrogate escape into U+FFFD: a string that
	// was not UTF-8 before it was escaped.
	if strings.ContainsRune(src, utf8.RuneError) && !bytes.Contains(trimmed, []byte("\uFFFD")) &&
		!bytes.Contains(bytes.ToLower(trimmed), []byte(`\ufffd`)) {
		return invalidInput("the string holds an unpaired surrogate escape, not UTF-8 text", "Send the expression as UTF-8 text")
	}
	v, err := calc.Eval(src, opts)
	return answer(v, err)
}
