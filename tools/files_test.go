package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// fileToolsWorkspace returns the file tools, by name, over a temporary
// workspace holding a few files.
func fileToolsWorkspace(t *testing.T) (map[string]tool.Tool, *workspace.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	for p, content := range map[string]string{
		"notes/a.txt":   "alpha\nbeta\ngamma\n",
		"notes/b.md":    "# beta\n",
		"src/main.go":   "package main\n\nfunc main() {}\n",
		"bin.dat":       "\x00\x01\x02",
		".airlock/x":    "state",
		"edit/dup.txt":  "x x x\n",
		"edit/once.txt": "hello world\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	byName := map[string]tool.Tool{}
	for _, tl := range tools.FileTools(w) {
		byName[tl.Name] = tl
	}
	return byName, w, dir
}

func TestFileToolsRun(t *testing.T) {
	ts, w, dir := fileToolsWorkspace(t)
	for _, c := range []struct {
		tool, args string
		want       []string  // substrings of Content, in order
		code       tool.Code // or the refusal
		source     string    // Provenance.Source
	}{
		{tool: "read_file", args: `{"path": "notes/a.txt"}`,
			want: []string{"[notes/a.txt: lines 1-3 of 3, 17 bytes]\nalpha\nbeta\ngamma\n"}, source: "workspace:notes/a.txt"},
		{tool: "read_file", args: `{"path": "notes/../notes/a.txt", "offset": 1, "limit": 1}`,
			want: []string{"[notes/a.txt: lines 2-2 of 3, 17 bytes; more follows from offset=2]\nbeta\n"}, source: "workspace:notes/a.txt"},
		{tool: "read_file", args: `{"path": "notes/a.txt", "offset": 9}`, want: []string{"no lines from offset 9; the file has 3 lines"}},
		{tool: "read_file", args: `{"path": "bin.dat"}`, want: []string{"binary content, not shown]\n"}},
		{tool: "read_file", args: `{"path": "missing.txt"}`, code: tool.CodeNotFound, source: "workspace:missing.txt"},
		{tool: "read_file", args: `{"path": "../etc/passwd"}`, code: tool.CodePathOutside},
		{tool: "read_file", args: `{"path": ".airlock/x"}`, code: tool.CodePathOutside},
		{tool: "read_file", args: `{"path": "notes"}`, code: tool.CodeNotAFile},
		{tool: "read_file", args: `{"path": "notes/a.txt", "bogus": 1}`, code: tool.CodeInvalidArguments},

		{tool: "list_dir", args: `{}`, want: []string{"[.: 4 entries]\n", "bin.dat (3 bytes)\nedit/\nnotes/\nsrc/\n"}, source: "workspace:."},
		{tool: "list_dir", args: `{"path": "notes"}`, want: []string{"a.txt (17 bytes)\nb.md (7 bytes)\n"}, source: "workspace:notes"},
		{tool: "list_dir", args: `{"path": "notes/a.txt"}`, code: tool.CodeNotADirectory},

		{tool: "glob", args: `{"pattern": "**/*.{txt,md}"}`,
			want: []string{"[4 paths match", "edit/dup.txt\nedit/once.txt\nnotes/a.txt\nnotes/b.md\n"}, source: "workspace:glob **/*.{txt,md}"},
		{tool: "glob", args: `{"pattern": "*.none"}`, want: []string{"[no paths match"}},
		{tool: "glob", args: `{"pattern": "../*"}`, code: tool.CodePathOutside},
		{tool: "glob", args: `{"pattern": "[a"}`, code: tool.CodeInvalidPattern},

		{tool: "grep", args: `{"pattern": "beta"}`,
			want: []string{"[2 matches", "notes/a.txt:2: beta\nnotes/b.md:1: # beta\n"}, source: "workspace:."},
		{tool: "grep", args: `{"pattern": "^func", "path": "src"}`, want: []string{"src/main.go:3: func main() {}\n"}, source: "workspace:src"},
		{tool: "grep", args: `{"pattern": "zeta"}`, want: []string{"[no matches"}},
		{tool: "grep", args: `{"pattern": "(?<=x)"}`, code: tool.CodeInvalidPattern},

		{tool: "write_file", args: `{"path": "new/c.txt", "content": "fresh\n"}`,
			want: []string{"wrote new/c.txt (created, 6 bytes, sha256 "}, source: "workspace:new/c.txt"},
		{tool: "write_file", args: `{"path": "notes/a.txt", "content": "replaced\n"}`, want: []string{"wrote notes/a.txt (replaced, 9 bytes"}},
		{tool: "write_file", args: `{"path": "one.txt", "content": "1"}`, want: []string{"wrote one.txt (created, 1 byte, sha256 "}},
		{tool: "glob", args: `{"pattern": "one.*"}`, want: []string{"[1 path matches \"one.*\"]\n"}},
		{tool: "write_file", args: `{"path": ".airlock/x", "content": "x"}`, code: tool.CodePathOutside},
		{tool: "write_file", args: `{"path": "notes", "content": "x"}`, code: tool.CodeNotAFile},

		{tool: "edit_file", args: `{"path": "edit/once.txt", "old": "world", "new": "there"}`,
			want: []string{"edited edit/once.txt (1 replacement, now 12 bytes"}, source: "workspace:edit/once.txt"},
		{tool: "edit_file", args: `{"path": "edit/dup.txt", "old": "x", "new": "y"}`, code: tool.CodeEditAmbiguous},
		{tool: "edit_file", args: `{"path": "edit/dup.txt", "old": "x", "new": "y", "replace_all": true}`, want: []string{"(3 replacements, now 6 bytes"}},
		{tool: "edit_file", args: `{"path": "edit/dup.txt", "old": "x", "new": "y"}`, code: tool.CodeEditNoMatch},
		{tool: "edit_file", args: `{"path": "missing.txt", "old": "x", "new": "y"}`, code: tool.CodeNotFound},
	} {
		what := c.tool + " " + c.args
		tl, ok := ts[c.tool]
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		call := &tool.Call{Tool: c.tool, Args: json.RawMessage(c.args), Session: "test-session"}
		res, err := tl.Run(context.Background(), call)
		if err != nil {
			t.Errorf("%s: fault %v", what, err)
			continue
		}
		if res.Provenance.Tool != c.tool {
			t.Errorf("%s: provenance tool %q", what, res.Provenance.Tool)
		}
		if c.source != "" && res.Provenance.Source != c.source {
			t.Errorf("%s: provenance source %q, want %q", what, res.Provenance.Source, c.source)
		}
		if c.code != "" {
			if res.Error == nil || res.Error.Code != c.code || res.Error.Hint == "" {
				t.Errorf("%s: error %+v, want code %s with a hint", what, res.Error, c.code)
			}
			continue
		}
		if res.Error != nil {
			t.Errorf("%s: error %+v", what, res.Error)
			continue
		}
		rest := res.Content
		for _, s := range c.want {
			i := strings.Index(rest, s)
			if i < 0 {
				t.Errorf("%s: content %q lacks %q", what, res.Content, s)
				break
			}
			rest = rest[i+len(s):]
		}
	}

	// The writes went to the call's session: rolling it back undoes them.
	rb, err := w.Rollback("test-session")
	if err != nil {
		t.Fatal(err)
	}
	restored := rb.Restored
	slices.Sort(restored)
	if want := []string{"edit/dup.txt", "edit/once.txt", "new", "new/c.txt", "notes/a.txt", "one.txt"}; !slices.Equal(restored, want) {
		t.Errorf("Rollback restored %q, want %q", restored, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); err != nil || string(b) != "alpha\nbeta\ngamma\n" {
		t.Errorf("notes/a.txt after Rollback = %q, %v", b, err)
	}

	// A call without a session cannot write: there would be nothing to
	// roll back under.
	res, err := ts["write_file"].Run(context.Background(), &tool.Call{Tool: "write_file", Args: json.RawMessage(`{"path": "x.txt", "content": "x"}`)})
	if err != nil || res.Error == nil || res.Error.Code != tool.CodeInvalidCall {
		t.Errorf("write_file without a session = %+v, %v; want invalid_call", res, err)
	}
	// A cancelled context runs nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ts["read_file"].Run(ctx, &tool.Call{Tool: "read_file", Args: json.RawMessage(`{"path": "notes/b.md"}`)}); err == nil {
		t.Error("read_file ran with a cancelled context")
	}
}

func TestFileToolsTruncationHeaders(t *testing.T) {
	dir := t.TempDir()
	lines := strings.Repeat("0123456789\n", 100)
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "long.txt"), []byte(strings.Repeat("x", 100)+"\nnext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(dir, &workspace.Options{MaxReadBytes: 55})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	read := tools.FileTools(w)[0]
	for _, c := range []struct{ args, header string }{
		{`{"path": "f.txt"}`, "[f.txt: lines 1-5 of 100, 1100 bytes; cut at the size limit; continue with offset=5]\n"},
		{`{"path": "f.txt", "offset": 95}`, "[f.txt: lines 96-100 of 100, 1100 bytes]\n"},
		{`{"path": "long.txt"}`, "[long.txt: lines 1-1 of 2, 106 bytes; the line is longer than the size limit and was cut; continue with offset=1]\n"},
	} {
		res, err := read.Run(context.Background(), &tool.Call{Tool: "read_file", Args: json.RawMessage(c.args)})
		if err != nil || res.Error != nil {
			t.Errorf("read_file %s: %+v, %v", c.args, res.Error, err)
			continue
		}
		if header, _, _ := strings.Cut(res.Content, "\n"); header+"\n" != c.header {
			t.Errorf("read_file %s: header %q, want %q", c.args, header+"\n", c.header)
		}
	}
}

func TestFileToolsDeclarations(t *testing.T) {
	ts, _, _ := fileToolsWorkspace(t)
	want := map[string]struct {
		risk     tool.Risk
		effect   tool.Effect
		pathArgs []string
	}{
		"read_file":  {tool.RiskLow, tool.EffectRead, []string{"path"}},
		"list_dir":   {tool.RiskLow, tool.EffectRead, []string{"path"}},
		"glob":       {tool.RiskLow, tool.EffectRead, nil},
		"grep":       {tool.RiskLow, tool.EffectRead, []string{"path"}},
		"write_file": {tool.RiskMedium, tool.EffectWrite, []string{"path"}},
		"edit_file":  {tool.RiskMedium, tool.EffectWrite, []string{"path"}},
	}
	if len(ts) != len(want) {
		t.Errorf("FileTools returned %d tools, want %d", len(ts), len(want))
	}
	reg := tool.NewRegistry()
	for name, w := range want {
		tl, ok := ts[name]
		if !ok {
			t.Errorf("no tool %s", name)
			continue
		}
		if tl.Risk != w.risk || tl.Effect != w.effect || !slices.Equal(tl.PathArgs, w.pathArgs) {
			t.Errorf("%s: risk %v, effect %v, path args %v; want %v, %v, %v", name, tl.Risk, tl.Effect, tl.PathArgs, w.risk, w.effect, w.pathArgs)
		}
		if len(tl.Description) < 100 {
			t.Errorf("%s: description %q is too short to use the tool by", name, tl.Description)
		}
		if err := reg.Register(tl); err != nil {
			t.Errorf("Register(%s): %v", name, err)
		}
		checkFileToolSchema(t, name, tl)
	}
}

// checkFileToolSchema is a simple walk of a tool's schema: valid JSON, a
// 2020-12 object at the top with additionalProperties false and a required
// list naming declared properties, every string with maxLength, every
// number with minimum and maximum, and every path argument a relative-path
// string.
func checkFileToolSchema(t *testing.T, name string, tl tool.Tool) {
	t.Helper()
	if !json.Valid(tl.Schema) {
		t.Errorf("%s: schema is not valid JSON: %s", name, tl.Schema)
		return
	}
	var top map[string]any
	if err := json.Unmarshal(tl.Schema, &top); err != nil {
		t.Errorf("%s: schema is not an object: %v", name, err)
		return
	}
	if top["$schema"] != "https://json-schema.org/draft/2020-12/schema" || top["type"] != "object" {
		t.Errorf("%s: schema is not a draft 2020-12 object: %v", name, top)
	}
	props, _ := top["properties"].(map[string]any)
	req, ok := top["required"].([]any)
	if !ok {
		t.Errorf("%s: schema has no required list", name)
	}
	for _, r := range req {
		if _, ok := props[r.(string)]; !ok {
			t.Errorf("%s: required %q is not a property", name, r)
		}
	}
	for _, p := range tl.PathArgs {
		prop, _ := props[p].(map[string]any)
		if prop["type"] != "string" || prop["format"] != "relative-path" {
			t.Errorf("%s: path argument %q is %v, want a relative-path string", name, p, prop)
		}
	}
	var walk func(at string, v any)
	walk = func(at string, v any) {
		s, ok := v.(map[string]any)
		if !ok {
			return
		}
		switch s["type"] {
		case "object":
			if s["additionalProperties"] != false {
				t.Errorf("%s %s: object without additionalProperties false", name, at)
			}
		case "string":
			if _, ok := s["maxLength"].(float64); !ok {
				t.Errorf("%s %s: string without maxLength", name, at)
			}
		case "integer", "number":
			_, lo := s["minimum"].(float64)
			_, hi := s["maximum"].(float64)
			if !lo || !hi {
				t.Errorf("%s %s: number without minimum and maximum", name, at)
			}
		case "boolean":
		default:
			t.Errorf("%s %s: unexpected type %v", name, at, s["type"])
		}
		if ps, ok := s["properties"].(map[string]any); ok {
			for k, sub := range ps {
				walk(fmt.Sprintf("%s/properties/%s", at, k), sub)
			}
		}
	}
	walk("#", top)
}
