package tools

import (
	"airlock.dev/airlock/plural"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// The bounds of the file tools' arguments, as their schemas state them.
// The workspace enforces its own limits again, in bytes.
const (
	FilePathMaxLength    = workspace.DefaultMaxPathLength // characters in a path argument
	FilePatternMaxLength = 1024                           // characters in a glob or grep pattern
	ReadFileMaxOffset    = 10_000_000                     // largest first line read_file accepts
	ReadFileMaxLimit     = 100_000                        // most lines one read_file may ask for
	WriteFileMaxContent  = workspace.DefaultMaxWriteBytes // characters of write_file content (1 MiB)
	EditFileMaxText      = workspace.DefaultMaxWriteBytes // characters of edit_file's old and new
)

const (
	fileToolSchemaDraft  = "https://json-schema.org/draft/2020-12/schema"
	fileToolSourcePrefix = "workspace:" // a result's Provenance.Source is this and the canonical path
)

// pathProperty is the schema of a "path" argument.
func pathProperty(description string) string {
	return `{"type": "string", "minLength": 1, "maxLength": ` + strconv.Itoa(FilePathMaxLength) +
		`, "format": "relative-path", "description": ` + jsonString(description) + `}`
}

// stringProperty is the schema of a bounded string argument.
func stringProperty(minLength, maxLength int, description string) string {
	return `{"type": "string", "minLength": ` + strconv.Itoa(minLength) + `, "maxLength": ` + strconv.Itoa(maxLength) +
		`, "description": ` + jsonString(description) + `}`
}

// integerProperty is the schema of a bounded integer argument.
func integerProperty(minimum, maximum int, description string) string {
	return `{"type": "integer", "minimum": ` + strconv.Itoa(minimum) + `, "maximum": ` + strconv.Itoa(maximum) +
		`, "description": ` + jsonString(description) + `}`
}

// objectSchema assembles a bounded object schema from its properties (in
// order) and the names it requires.
func objectSchema(required []string, props ...[2]string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"$schema": "` + fileToolSchemaDraft + `", "type": "object", "additionalProperties": false, "required": [`)
	for i, r := range required {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonString(r))
	}
	b.WriteString(`], "properties": {`)
	for i, p := range props {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonString(p[0]) + ": " + p[1])
	}
	b.WriteString("}}")
	return json.RawMessage(b.String())
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// FileTools returns the file tools over a workspace: read_file, list_dir,
// glob and grep (low risk, read) and write_file and edit_file (medium
// risk, write; every change is snapshotted for rollback under the call's
// session). A refusal from the workspace comes back as the Result's Error.
func FileTools(w *workspace.Workspace) []tool.Tool {
	return []tool.Tool{
		{
			Name: "read_file",
			Description: "Read a text file in the workspace. Give path relative to the workspace root. " +
				"Returns a header line in brackets with the path, the line range shown, the file's total lines and bytes, " +
				"then the lines exactly as in the file. Read a large file in parts: offset is the first line (0-based), " +
				"limit the most lines to return (0 or absent: to the end). At most 256 KiB is returned per call; " +
				"when the header says the content was cut, call again with the offset it gives. Binary files are not shown.",
			Schema: objectSchema([]string{"path"},
				[2]string{"path", pathProperty("File to read, relative to the workspace root, such as \"src/main.go\"")},
				[2]string{"offset", integerProperty(0, ReadFileMaxOffset, "First line to read, 0-based; default 0")},
				[2]string{"limit", integerProperty(0, ReadFileMaxLimit, "Most lines to return; 0 or absent means to the end of the file")},
			),
			Risk:      tool.RiskLow,
			Effect:    tool.EffectRead,
			Untrusted: true,
			PathArgs:  []string{"path"},
			Run:       runReadFile(w),
		},
		{
			Name: "list_dir",
			Description: "List a directory of the workspace, sorted by name, one entry per line: a directory ends in /, " +
				"a file shows its size in bytes, a symbolic link is marked (link). Give path relative to the workspace root; " +
				"\".\" or absent lists the root. At most 1000 entries are shown; use glob to find files deeper down.",
			Schema: objectSchema(nil,
				[2]string{"path", pathProperty("Directory to list, relative to the workspace root; default \".\"")},
			),
			Risk:      tool.RiskLow,
			Effect:    tool.EffectRead,
			Untrusted: true,
			PathArgs:  []string{"path"},
			Run:       runListDir(w),
		},
		{
			Name: "glob",
			Description: "Find files and directories in the workspace whose paths match a glob pattern, relative to the " +
				"workspace root: * matches within one name, ** any number of directories, ? one character, [abc] a class, " +
				"{a,b} alternatives; escape a literal metacharacter with \\. Example: \"src/**/*.go\". Returns matching paths " +
				"sorted, one per line, at most 1000. Symbolic links are not followed.",
			Schema: objectSchema([]string{"pattern"},
				[2]string{"pattern", stringProperty(1, FilePatternMaxLength, "Glob pattern relative to the workspace root, such as \"**/*.md\"")},
			),
			Risk:      tool.RiskLow,
			Effect:    tool.EffectRead,
			Untrusted: true,
			GlobArgs:  []string{"pattern"},
			Run:       runGlob(w),
		},
		{
			Name: "grep",
			Description: "Search file contents in the workspace for a regular expression (Go RE2 syntax: no backreferences " +
				"or lookaround; (?i) for case-insensitive), line by line. path is a file, or a directory searched recursively " +
				"(\".\" or absent: the whole workspace); binary files, files over 4 MiB and symbolic links are skipped. " +
				"Returns one match per line as path:line: text, at most 500 matches, each line cut to 512 bytes.",
			Schema: objectSchema([]string{"pattern"},
				[2]string{"pattern", stringProperty(1, FilePatternMaxLength, `Regular expression (RE2), such as "func \w+\("`)},
				[2]string{"path", pathProperty("File or directory to search, relative to the workspace root; default \".\"")},
			),
			Risk:      tool.RiskLow,
			Effect:    tool.EffectRead,
			Untrusted: true,
			PathArgs:  []string{"path"},
			Run:       runGrep(w),
		},
		{
			Name: "write_file",
			Description: "Write a whole file in the workspace, creating it and its parent directories if needed or " +
				"replacing its content entirely (an existing file keeps its permissions). Give path relative to the " +
				"workspace root and the complete new content, at most 1 MiB. To change part of an existing file, " +
				"prefer edit_file. Every change can be rolled back with the session.",
			Schema: objectSchema([]string{"path", "content"},
				[2]string{"path", pathProperty("File to write, relative to the workspace root")},
				[2]string{"content", stringProperty(0, WriteFileMaxContent, "The complete new content of the file")},
			),
			Risk:        tool.RiskMedium,
			Effect:      tool.EffectWrite,
			PathArgs:    []string{"path"},
			ContentArgs: []string{"content"},
			Run:         runWriteFile(w),
		},
		{
			Name: "edit_file",
			Description: "Change part of an existing file in the workspace by exact text replacement: old is replaced by new. " +
				"old must match the file byte for byte, white space and line breaks included, and occur exactly once; " +
				"if it occurs several times, add surrounding lines to make it unique, or set replace_all to replace every " +
				"occurrence. Read the file first to copy old exactly. The edited file must stay within 1 MiB. " +
				"Every change can be rolled back with the session.",
			Schema: objectSchema([]string{"path", "old", "new"},
				[2]string{"path", pathProperty("File to edit, relative to the workspace root")},
				[2]string{"old", stringProperty(1, EditFileMaxText, "Exact text to replace")},
				[2]string{"new", stringProperty(0, EditFileMaxText, "Text to put in its place")},
				[2]string{"replace_all", `{"type": "boolean", "description": "Replace every occurrence of old instead of requiring exactly one; default false"}`},
			),
			Risk:        tool.RiskMedium,
			Effect:      tool.EffectWrite,
			PathArgs:    []string{"path"},
			ContentArgs: []string{"new"},
			Run:         runEditFile(w),
		},
	}
}

// decodeFileArgs decodes validated arguments into v. The gate has checked
// them against the schema already; a mismatch is still refused as a value.
func decodeFileArgs(raw json.RawMessage, v any) *tool.Error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return tool.Errorf(tool.CodeInvalidArguments, "Pass the arguments the tool's schema describes", "the arguments do not decode: %v", err)
	}
	return nil
}

// fileResult returns a refusal from the workspace as a Result, and any
// other error as the runtime fault it is.
func fileResult(prov tool.Provenance, err error) (tool.Result, error) {
	var te *tool.Error
	if errors.As(err, &te) {
		return tool.Result{Error: te, Provenance: prov}, nil
	}
	return tool.Result{}, err
}

func fileProvenance(name, path string) tool.Provenance {
	return tool.Provenance{Tool: name, Source: fileToolSourcePrefix + path}
}

// orRoot returns p, or "." when it is absent.
func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func runReadFile(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		prov := fileProvenance("read_file", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		prov.Source += args.Path
		r, err := w.ReadFile(args.Path, args.Offset, args.Limit)
		if err != nil {
			return fileResult(prov, err)
		}
		prov.Source = fileToolSourcePrefix + r.Path
		return tool.Result{Content: formatRead(r, args.Offset), Provenance: prov}, nil
	}
}

// formatRead writes a header line in brackets, then the content.
func formatRead(r workspace.ReadResult, offset int) string {
	switch {
	case r.TotalBytes == 0:
		return fmt.Sprintf("[%s: empty file]\n", r.Path)
	case r.Lines == 0:
		return fmt.Sprintf("[%s: no lines from offset %d; the file has %s]\n", r.Path, offset, plural.Count(r.TotalLines, "line", "lines"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s: lines %d-%d of %d, %s", r.Path, offset+1, offset+r.Lines, r.TotalLines, plural.Count(int(r.TotalBytes), "byte", "bytes"))
	next := offset + r.Lines
	switch {
	case r.Truncated && r.Lines == 1 && !strings.HasSuffix(r.Content, "\n"):
		fmt.Fprintf(&b, "; the line is longer than the size limit and was cut; continue with offset=%d", next)
	case r.Truncated:
		fmt.Fprintf(&b, "; cut at the size limit; continue with offset=%d", next)
	case next < r.TotalLines:
		fmt.Fprintf(&b, "; more follows from offset=%d", next)
	}
	if strings.IndexByte(r.Content, 0) >= 0 || !utf8.ValidString(r.Content) {
		b.WriteString("; binary content, not shown]\n")
		return b.String()
	}
	b.WriteString("]\n")
	b.WriteString(r.Content)
	return b.String()
}

func runListDir(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Path string `json:"path"`
		}
		prov := fileProvenance("list_dir", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		path := orRoot(args.Path)
		prov.Source += path
		ents, truncated, err := w.ListDir(path)
		if err != nil {
			return fileResult(prov, err)
		}
		var b strings.Builder
		switch {
		case len(ents) == 0:
			fmt.Fprintf(&b, "[%s: empty directory]\n", path)
		case truncated:
			fmt.Fprintf(&b, "[%s: first %d entries by name; more exist, use glob to narrow]\n", path, len(ents))
		default:
			fmt.Fprintf(&b, "[%s: %s]\n", path, plural.Count(len(ents), "entry", "entries"))
		}
		for _, e := range ents {
			b.WriteString(e.Name)
			switch {
			case e.Dir && e.Symlink:
				b.WriteString("/ (link)")
			case e.Dir:
				b.WriteString("/")
			case e.Symlink && e.Size > 0:
				fmt.Fprintf(&b, " (link, %s)", plural.Count(int(e.Size), "byte", "bytes"))
			case e.Symlink:
				b.WriteString(" (link)")
			default:
				fmt.Fprintf(&b, " (%s)", plural.Count(int(e.Size), "byte", "bytes"))
			}
			b.WriteByte('\n')
		}
		return tool.Result{Content: b.String(), Provenance: prov}, nil
	}
}

func runGlob(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Pattern string `json:"pattern"`
		}
		prov := fileProvenance("glob", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		// "workspace:glob PATTERN": the pattern is not a path, and the
		// envelope's SafeSource keeps it readable.
		prov.Source += "glob " + args.Pattern
		paths, truncated, err := w.Glob(args.Pattern)
		if err != nil {
			return fileResult(prov, err)
		}
		var b strings.Builder
		switch {
		case len(paths) == 0 && truncated:
			fmt.Fprintf(&b, "[no paths match %q in the part of the workspace searched; narrow the pattern]\n", args.Pattern)
		case len(paths) == 0:
			fmt.Fprintf(&b, "[no paths match %q]\n", args.Pattern)
		case truncated:
			fmt.Fprintf(&b, "[first %d paths matching %q; the search stopped at a limit, narrow the pattern]\n", len(paths), args.Pattern)
		default:
			fmt.Fprintf(&b, "[%s %q]\n", plural.Count(len(paths), "path matches", "paths match"), args.Pattern)
		}
		for _, p := range paths {
			b.WriteString(p)
			b.WriteByte('\n')
		}
		return tool.Result{Content: b.String(), Provenance: prov}, nil
	}
}

func runGrep(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		prov := fileProvenance("grep", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		path := orRoot(args.Path)
		prov.Source += path
		matches, truncated, err := w.Grep(args.Pattern, path)
		if err != nil {
			return fileResult(prov, err)
		}
		var b strings.Builder
		switch {
		case len(matches) == 0 && truncated:
			fmt.Fprintf(&b, "[no matches for %q in the part of %s searched; the search stopped at a limit, narrow the path]\n", args.Pattern, path)
		case len(matches) == 0:
			fmt.Fprintf(&b, "[no matches for %q in %s]\n", args.Pattern, path)
		case truncated:
			fmt.Fprintf(&b, "[first %d matches for %q in %s; the search stopped at a limit, narrow the pattern or the path]\n", len(matches), args.Pattern, path)
		default:
			fmt.Fprintf(&b, "[%s for %q in %s]\n", plural.Count(len(matches), "match", "matches"), args.Pattern, path)
		}
		for _, m := range matches {
			fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, strings.ToValidUTF8(m.Text, "\uFFFD"))
		}
		return tool.Result{Content: b.String(), Provenance: prov}, nil
	}
}

func runWriteFile(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		prov := fileProvenance("write_file", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		prov.Source += args.Path
		r, err := w.WriteFile(call.Session, args.Path, args.Content)
		if err != nil {
			return fileResult(prov, err)
		}
		prov.Source = fileToolSourcePrefix + r.Path
		how := "replaced"
		if r.Created {
			how = "created"
		}
		return tool.Result{
			Content:    fmt.Sprintf("wrote %s (%s, %s, sha256 %s)\n", r.Path, how, plural.Count(int(r.Bytes), "byte", "bytes"), r.SHA256),
			Provenance: prov,
		}, nil
	}
}

func runEditFile(w *workspace.Workspace) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		var args struct {
			Path       string `json:"path"`
			Old        string `json:"old"`
			New        string `json:"new"`
			ReplaceAll bool   `json:"replace_all"`
		}
		prov := fileProvenance("edit_file", "")
		if e := decodeFileArgs(call.Args, &args); e != nil {
			return tool.Result{Error: e, Provenance: prov}, nil
		}
		prov.Source += args.Path
		r, err := w.EditFile(call.Session, args.Path, args.Old, args.New, args.ReplaceAll)
		if err != nil {
			return fileResult(prov, err)
		}
		prov.Source = fileToolSourcePrefix + r.Path
		noun := "replacements"
		if r.Replacements == 1 {
			noun = "replacement"
		}
		return tool.Result{
			Content:    fmt.Sprintf("edited %s (%d %s, now %s, sha256 %s)\n", r.Path, r.Replacements, noun, plural.Count(int(r.Bytes), "byte", "bytes"), r.SHA256),
			Provenance: prov,
		}, nil
	}
}
