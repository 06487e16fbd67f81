package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/tool"
)

func runTool(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), &tool.Call{Tool: tl.Name, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Name, args, err)
	}
	return res
}

func TestCalculate(t *testing.T) {
	tl := Calculate()
	tests := []struct {
		args, content string
		code          tool.Code
	}{
		{`{"expression":"($100 + $250.75) * 20%"}`, "70.15", ""},
		{`{"expression":"0.1+0.2"}`, "0.3", ""},
		{`{"expression":"2/3"}`, "0.6666666666666666666666666666666667 (rounded to 34 significant digits)", ""},
		{`{"expression":"2 x 3"}`, "", "invalid_syntax"},
		{`{"expression":"1/0"}`, "", "division_by_zero"},
	}
	for _, tt := range tests {
		res := runTool(t, tl, tt.args)
		var code tool.Code
		if res.Error != nil {
			code = res.Error.Code
			if res.Error.Hint == "" || !strings.Contains(res.Error.Message, "offset") {
				t.Errorf("%s: error %+v lacks a hint or the offset", tt.args, res.Error)
			}
		}
		if res.Content != tt.content || code != tt.code {
			t.Errorf("%s: got %q/%q, want %q/%q", tt.args, res.Content, code, tt.content, tt.code)
		}
		if res.Provenance != (tool.Provenance{Tool: "calculate", Source: "calc"}) {
			t.Errorf("%s: provenance %+v", tt.args, res.Provenance)
		}
	}
}

// TestCalculateStructured: calculate's result is also one object, the
// form programs (and MCP clients that parse results) read.
func TestCalculateStructured(t *testing.T) {
	tl := Calculate()
	tests := []struct{ args, want string }{
		{`{"expression":"($100 + $250.75) * 20%"}`, `{"value":"70.15","float":70.15,"exact":true}`},
		{`{"expression":"2/3"}`, `{"value":"0.6666666666666666666666666666666667","float":0.6666666666666666,"exact":false}`},
		{`{"expression":"-7"}`, `{"value":"-7","float":-7,"exact":true}`},
	}
	for _, tt := range tests {
		res := runTool(t, tl, tt.args)
		if string(res.Structured) != tt.want {
			t.Errorf("%s: structured %s, want %s", tt.args, res.Structured, tt.want)
		}
	}
	if res := runTool(t, tl, `{"expression":"1/0"}`); res.Structured != nil {
		t.Errorf("a refusal has structured %s", res.Structured)
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFAQLookup(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"faq.yaml": "entries:\n  - key: refunds\n    file: answers/refunds.md\n    source: handbook-v3\n" +
			"  - key: hours\n    file: answers/hours.md\n    source: site-2026\n",
		"answers/refunds.md": "Refunds within 30 days.\n",
		"answers/hours.md":   "9 to 5.\n",
	})
	tl, err := LoadFAQ(filepath.Join(dir, "faq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := runTool(t, tl, `{"key":"refunds"}`)
	if res.Content != "Refunds within 30 days.\n" || res.Provenance.Source != "faq:handbook-v3" {
		t.Fatalf("got %+v", res)
	}
	// The executor refuses a key that is not listed, should one get past the
	// schema's enum.
	if res := runTool(t, tl, `{"key":"salaries"}`); res.Error == nil || res.Error.Code != tool.CodeUnknownKey {
		t.Fatalf("got %+v", res)
	}
	var schema struct {
		Properties struct {
			Key struct {
				Enum []string `json:"enum"`
			} `json:"key"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema, &schema); err != nil || strings.Join(schema.Properties.Key.Enum, ",") != "hours,refunds" {
		t.Fatalf("schema enum %v, %v", schema.Properties.Key.Enum, err)
	}
}

func TestLoadFAQRefuses(t *testing.T) {
	for name, index := range map[string]string{
		"escaping file": "entries:\n  - key: a\n    file: ../secret\n    source: s\n",
		"absolute file": "entries:\n  - key: a\n    file: /etc/passwd\n    source: s\n",
		"bad key":       "entries:\n  - key: A B\n    file: a.md\n    source: s\n",
		"no source":     "entries:\n  - key: a\n    file: a.md\n",
		"duplicate":     "entries:\n  - key: a\n    file: a.md\n    source: s\n  - key: a\n    file: a.md\n    source: s\n",
		"unknown field": "entries:\n  - key: a\n    file: a.md\n    source: s\n    extra: 1\n",
		"missing file":  "entries:\n  - key: b\n    file: b.md\n    source: s\n",
	} {
		dir := writeFiles(t, map[string]string{"faq.yaml": index, "a.md": "A"})
		if _, err := LoadFAQ(filepath.Join(dir, "faq.yaml")); err == nil {
			t.Errorf("%s: LoadFAQ accepted %q", name, index)
		}
	}
}
