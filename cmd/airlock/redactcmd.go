package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/untrusted"
)

// MaxRedactJSONInput bounds what "airlock redact --json" reads: the whole
// input is one JSON document, so it is held in memory. Plain "airlock
// redact" streams and has no such limit.
const MaxRedactJSONInput = 32 << 20

func runRedact(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, `print one JSON document {"text": ..., "findings": [{"kind", "start", "end"}]} with byte offsets into the input`)
	disable := fs.String("disable", "", "comma-separated `kinds` not to mask (email, phone, card-number, ssn, or pii for all four)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock redact [flags] < input\n\nMasks secrets and personal data read from stdin, writing [REDACTED:kind] in their place.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		return misused(stderr, "redact", fmt.Errorf("takes no arguments; send the text on stdin"))
	}
	opts := &redact.Options{}
	if *disable != "" {
		opts.Disable = strings.Split(*disable, ",")
	}
	rd, err := redact.New(opts)
	if err != nil {
		var e *redact.Error
		if errors.As(err, &e) {
			fmt.Fprintf(stderr, "airlock redact: %s\nhint: %s\nkinds: %s\n", e.Message, e.Hint, strings.Join(redact.Kinds(), ", "))
			return exitUsage
		}
		return misused(stderr, "redact", err)
	}
	if !*asJSON {
		// Unbuffered: Stream writes each complete line as it is read, so
		// that a live log piped through shows as it goes.
		if err := rd.Stream(stdout, stdin); err != nil {
			return refused(stderr, "redact", err)
		}
		return exitOK
	}
	in, err := io.ReadAll(io.LimitReader(stdin, MaxRedactJSONInput+1))
	if err != nil {
		return refused(stderr, "redact", err)
	}
	if len(in) > MaxRedactJSONInput {
		line, _ := json.Marshal(&redact.Error{Code: redact.CodeInputTooLarge,
			Message: fmt.Sprintf("the input is over %d bytes, the limit for --json", MaxRedactJSONInput),
			Hint:    "Use airlock redact without --json, which streams any length"})
		fmt.Fprintf(stdout, "%s\n", line)
		return exitRefused
	}
	out, findings := rd.Redact(in)
	if findings == nil {
		findings = []redact.Finding{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Invalid UTF-8 in the input becomes U+FFFD in the JSON string; the
	// offsets still count the input's bytes.
	if err := enc.Encode(struct {
		Text     string           `json:"text"`
		Findings []redact.Finding `json:"findings"`
	}{string(out), findings}); err != nil {
		return refused(stderr, "redact", err)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return refused(stderr, "redact", err)
	}
	return exitOK
}

func runScan(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	threshold := fs.Float64("threshold", untrusted.DefaultThreshold, "flag a text whose score is at or above this (0 to 1)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: airlock scan [flags] < lines.jsonl

Scores each line {"text": "..."} for prompt injection and writes one line
{"flagged": bool, "score": x, "signals": [...]} per input line, in order.

flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		return misused(stderr, "scan", fmt.Errorf("takes no arguments; send JSON lines on stdin"))
	}
	if *threshold <= 0 || *threshold > 1 {
		return misused(stderr, "scan", fmt.Errorf("--threshold must be above 0 and at most 1"))
	}
	opts := &untrusted.Options{Threshold: *threshold}
	err := answerLines(ctx, stdin, stdout, MaxBatchLine, func(line []byte, tooLong bool) any {
		return scanAnswer(line, tooLong, opts)
	})
	if err != nil {
		return refused(stderr, "scan", fmt.Errorf("reading stdin: %w", err))
	}
	return exitOK
}

// scanResult is one answer line of airlock scan.
type scanResult struct {
	Flagged bool               `json:"flagged"`
	Score   float64            `json:"score"`
	Signals []untrusted.Signal `json:"signals"`
}

func scanAnswer(line []byte, tooLong bool, opts *untrusted.Options) any {
	bad := func(msg string) any {
		return &untrusted.Error{Code: untrusted.CodeInvalidInput, Message: msg, Hint: `Send each text as a JSON object on its own line, as in {"text": "..."}`}
	}
	trimmed := bytes.TrimSpace(line)
	switch {
	case tooLong:
		return &untrusted.Error{Code: untrusted.CodeInputTooLarge, Message: fmt.Sprintf("the line is longer than %d bytes", MaxBatchLine), Hint: "Split the text across several lines"}
	case len(trimmed) == 0:
		return bad("the line is blank")
	case !utf8.Valid(trimmed):
		return bad("the line is not valid UTF-8")
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(trimmed, &in); err != nil {
		if json.Valid(trimmed) {
			return bad("the JSON value is not an object with a string \"text\"")
		}
		return bad("the line is not valid JSON")
	}
	if in.Text == nil {
		return bad(`the object has no "text" string`)
	}
	rep, err := untrusted.ScanWith(*in.Text, opts)
	if err != nil {
		return err
	}
	return scanResult{Flagged: rep.Flagged, Score: rep.Score, Signals: rep.Signals}
}
