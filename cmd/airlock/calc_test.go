package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"airlock.dev/airlock/calc"
)

// TestCalcBatchLongLines checks that lines of any length get exactly one
// answer each and do not stop the stream.
func TestCalcBatchLongLines(t *testing.T) {
	var in bytes.Buffer
	in.WriteString(`"` + strings.Repeat("1+", 100000) + `1"` + "\n")        // 200,001 characters
	in.WriteString(`"` + strings.Repeat("1", MaxBatchLine+10) + `"` + "\n") // over the line cap
	in.WriteString(strings.Repeat("7", MaxBatchLine+10) + "\n")             // over the cap, not a string
	in.WriteString("\"1+\xff\"\n")                                          // not UTF-8
	in.WriteString(`"2*3"` + "\n")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"calc", "--batch"}, &in, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{"expression_too_long", "expression_too_long", "invalid_input", "invalid_input", ""}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		var a calcAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		got := ""
		if a.Error != nil {
			got = string(a.Error.Code)
		}
		if got != want[i] {
			t.Errorf("line %d: code %q, want %q", i, got, want[i])
		}
	}
	if !strings.Contains(lines[4], `"value":"6"`) {
		t.Errorf("last line %s, want the value 6", lines[4])
	}
}

type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

// TestCalcBatchReadError checks the one case where --batch exits non-zero:
// reading stdin fails. Lines read before the failure are still answered.
func TestCalcBatchReadError(t *testing.T) {
	var out, errOut bytes.Buffer
	in := failingReader{strings.NewReader("\"1+1\"\n")}
	if code := run(context.Background(), []string{"calc", "--batch"}, in, &out, &errOut); code != exitRefused {
		t.Fatalf("exit %d, want %d", code, exitRefused)
	}
	if !strings.Contains(out.String(), `"value":"2"`) || !strings.Contains(errOut.String(), "disk on fire") {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
}

// FuzzCalcAnswerJSON checks that every answer calc gives, value or
// refusal, encodes as the --json line: a value whose float64 were
// infinite would print an empty line and stop a --batch stream.
func FuzzCalcAnswerJSON(f *testing.F) {
	for _, s := range []string{
		"1+2", "1/3", "1e308*10", "1.7976931348623158e308 + 1e292",
		"1.7976931348623157e308 + 1e292", "-1.7976931348623158e308-1e292",
		"1.79769313486231580793728971405303415e308", "1e-400", "2 x 3",
	} {
		f.Add(s, uint8(0), false)
		f.Add(s, uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, src string, places uint8, round bool) {
		opts := &calc.Options{}
		if round {
			opts.Round = &calc.Rounding{Places: int(places) % (calc.DefaultMaxPlaces + 1)}
		}
		v, err := calc.Eval(src, opts)
		line, merr := json.Marshal(answer(v, err))
		if merr != nil {
			t.Fatalf("%q: the answer does not encode: %v", src, merr)
		}
		var back calcAnswer
		if uerr := json.Unmarshal(line, &back); uerr != nil {
			t.Fatalf("%q: %s does not decode: %v", src, line, uerr)
		}
		if back.OK != (err == nil) {
			t.Fatalf("%q: %s says ok %v; Eval said %v", src, line, back.OK, err)
		}
	})
}
