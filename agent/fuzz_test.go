package agent

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"airlock.dev/airlock/model"
)

// FuzzLoadScript: no script text makes LoadScript or the planner it
// builds panic, and a script that loads answers every step.
func FuzzLoadScript(f *testing.F) {
	f.Add(`[{"calls":[{"tool":"calculate","args":{"expression":"1+1"}}]},{"text":"done"}]`)
	f.Add(`[{"text":"x","usage":{"input_tokens":5,"output_tokens":-1}}]`)
	f.Add(`[{"calls":[{"tool":"","args":null}]}]`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := LoadScript(strings.NewReader(text))
		if err != nil {
			return
		}
		for range 3 {
			resp, err := s.Complete(context.Background(), &model.Request{})
			if err != nil || resp == nil || !resp.Success {
				t.Fatalf("a loaded script answered %+v, %v", resp, err)
			}
		}
	})
}

// FuzzClip: a clipped result stays within its bound (plus the note) and
// valid UTF-8 stays valid: the cut never splits a character.
func FuzzClip(f *testing.F) {
	f.Add(strings.Repeat("é", 40_000), 2048)
	f.Add(strings.Repeat("a", 100), 10_000)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1024 || max > 1<<20 {
			return
		}
		out := clip(s, max)
		if len(s) <= max {
			if out != s {
				t.Fatal("a result within the bound was changed")
			}
			return
		}
		if len(out) > max+8 {
			t.Fatalf("clipped to %d bytes, over %d", len(out), max)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatal("clipping split a character")
		}
	})
}
