package model

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                         `{"a":1}`,
		"  {\"a\":1}\n":                   `{"a":1}`,
		"```json\n{\"a\":1}\n```":         `{"a":1}`,
		"```\n{\"a\":1}\n```  ":           `{"a":1}`,
		`Here it is: {"a":{"b":2}}. Done`: `{"a":{"b":2}}`,
		`no json here`:                    `no json here`,
		`{"a":1} and {"b":2}`:             `{"a":1} and {"b":2}`,
		``:                                ``,
	} {
		if got := string(extractJSON(in)); got != want {
			t.Errorf("extractJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzExtractJSON: never panics, and returns either valid JSON or the
// trimmed text it was given (which validation then refuses).
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", "x {\"a\": [1,2]} y", "```", "{", "}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := extractJSON(s)
		if !json.Valid(got) && string(got) != strings.TrimSpace(s) && !strings.HasPrefix(strings.TrimSpace(s), "```") {
			t.Fatalf("extractJSON(%q) = %q: neither JSON nor the text", s, got)
		}
	})
}
