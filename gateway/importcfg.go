package gateway

// Import reads the MCP server entries that other clients keep (Claude
// Code, Codex CLI, Cursor, VS Code, Gemini CLI) and turns them into
// gateway servers, so that one entry, airlock's, can replace them all.
//
// Every client's file goes through the same steps: the file is decoded
// (JSON with comments and trailing commas, or TOML) into plain maps; each
// server entry is read field by field, with the client's variable syntax
// (${VAR}, ${env:VAR}, ${input:id}, $VAR); whatever the gateway cannot
// express becomes a warning rather than a guess; and every value that
// looks like a credential leaves the config for a suggested credentials
// entry, so the gateway config never holds a secret in clear.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/textproto"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/redact"
)

// The clients whose config files Import reads.
const (
	ClientClaude = "claude" // Claude Code: .mcp.json, ~/.claude.json
	ClientCodex  = "codex"  // Codex CLI: ~/.codex/config.toml, .codex/config.toml
	ClientCursor = "cursor" // Cursor: ~/.cursor/mcp.json, .cursor/mcp.json
	ClientVSCode = "vscode" // VS Code: .vscode/mcp.json, the user profile's mcp.json
	ClientGemini = "gemini" // Gemini CLI: ~/.gemini/settings.json, .gemini/settings.json
)

// ImportClients are the clients Import knows, in the order the CLI lists
// them.
var ImportClients = []string{ClientClaude, ClientCodex, ClientCursor, ClientVSCode, ClientGemini}

// The bounds of an import.
const (
	// MaxImportBytes is the most bytes of one client file Import reads.
	// ~/.claude.json also keeps each project's history, so it can run to
	// tens of megabytes; the MCP entries are a small part of it.
	MaxImportBytes = 64 << 20
	// MaxImportEntries is the most server entries one file may hold
	// (all scopes together); past it the file is refused rather than
	// read in part.
	MaxImportEntries = 1024
)

// ReplacementStartTimeout is the startup timeout the Codex replacement
// entry asks for: Codex waits 10 seconds by default, and the gateway may
// wait up to DefaultStartTimeout for a slow upstream before it answers.
const ReplacementStartTimeout = DefaultStartTimeout + 15*time.Second

// ImportOptions tune Import. A nil *ImportOptions means none of them.
type ImportOptions struct {
	// Project is the project directory whose entries to take from
	// ~/.claude.json's "projects" (Claude Code's local scope); it also
	// stands for ${workspaceFolder} in VS Code and Cursor files. Empty
	// means user-scope entries only, and a warning names what was left.
	Project string
	// Home stands for ${userHome}; empty leaves a server that uses it
	// out, with a warning.
	Home string
}

// Imported is what Import found in one client file.
type Imported struct {
	// Servers are the gateway servers, by a name that passes the
	// gateway's rule. Each passes Config.Check.
	Servers map[string]*Server
	// Credentials are the credentials entries that carry what was taken
	// out of Servers: secrets, and values the client read from its
	// environment. CredentialsYAML writes them for a mode-0600 file.
	Credentials []SuggestedCredential
	// Warnings say what could not be carried, and why. They never hold a
	// secret's value.
	Warnings []ImportWarning
}

// ImportWarning is one thing an import could not carry as it was.
type ImportWarning struct {
	Server  string // the server's name in the gateway config; "" for the file
	Message string
}

func (w ImportWarning) String() string {
	if w.Server == "" {
		return w.Message
	}
	return "server " + w.Server + ": " + w.Message
}

// SuggestedCredential is one entry for the gateway's credentials file:
// {server, variable} sets a stdio server's environment variable,
// {host, header} an HTTP server's header; Value holds the secret itself
// and Env names the variable of airlock's environment to read it from
// instead. AllowHTTP is set for a server reached over plain http, since
// a header credential is otherwise sent over https only.
type SuggestedCredential struct {
	Server    string
	Variable  string
	Host      string
	Header    string
	Value     redact.Secret
	Env       string
	AllowHTTP bool
}

// CredentialsYAML writes creds as a credentials file, values in clear:
// the caller writes it to a file of mode 0600, never to the terminal.
func CredentialsYAML(creds []SuggestedCredential) ([]byte, error) {
	type entry struct {
		Server    string `yaml:"server,omitempty"`
		Variable  string `yaml:"variable,omitempty"`
		Host      string `yaml:"host,omitempty"`
		Header    string `yaml:"header,omitempty"`
		Value     string `yaml:"value,omitempty"`
		Env       string `yaml:"env,omitempty"`
		AllowHTTP bool   `yaml:"allow_http,omitempty"`
	}
	doc := struct {
		Credentials []entry `yaml:"credentials"`
	}{Credentials: []entry{}}
	for _, c := range creds {
		doc.Credentials = append(doc.Credentials, entry{c.Server, c.Variable, c.Host, c.Header, c.Value.Reveal(), c.Env, c.AllowHTTP})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// ImportError is a client file Import cannot read: which client, where
// in the file (Line 0 when unknown), and what is wrong.
type ImportError struct {
	Client string
	Line   int
	Column int
	Msg    string
}

func (e *ImportError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("import %s: line %d, column %d: %s", e.Client, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("import %s: %s", e.Client, e.Msg)
}

// Import reads one client's config file. A file with no MCP servers
// gives no servers and no error; a file that is not the client's format
// gives an *ImportError.
func Import(client string, data []byte, opts *ImportOptions) (Imported, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	if !slices.Contains(ImportClients, client) {
		return Imported{}, fmt.Errorf("import: unknown client %q: want one of %s", client, strings.Join(ImportClients, ", "))
	}
	if len(data) > MaxImportBytes {
		return Imported{}, &ImportError{Client: client, Msg: fmt.Sprintf("the file is over %d bytes (MaxImportBytes)", MaxImportBytes)}
	}
	im := &importer{client: client, opts: opts, out: Imported{Servers: map[string]*Server{}}}
	var entries []rawEntry
	var err error
	if client == ClientCodex {
		entries, err = im.codexEntries(data)
	} else {
		entries, err = im.jsonEntries(data)
	}
	if err != nil {
		return Imported{}, err
	}
	if len(entries) > MaxImportEntries {
		return Imported{}, &ImportError{Client: client, Msg: fmt.Sprintf("%d server entries: at most %d (MaxImportEntries)", len(entries), MaxImportEntries)}
	}
	if len(entries) == 0 {
		im.warnf("", "no MCP servers in this %s file", client)
	}
	slices.SortFunc(entries, func(a, b rawEntry) int { return strings.Compare(a.name, b.name) })
	// Names the gateway takes as they are go first, so that a renamed
	// entry never takes the name of one that needed no renaming.
	taken := map[string]bool{}
	for _, e := range entries {
		if validName(e.name) {
			taken[e.name] = true
		}
	}
	for _, e := range entries {
		name := e.name
		if !validName(name) {
			name = gatewayName(name, taken)
		}
		if name != e.name {
			im.warnf(name, "renamed from %q: a server's name is a letter, then up to 31 letters, digits, _ and -, without %q", e.name, DefaultSeparator)
		}
		if e.m == nil {
			im.warnf(name, "the entry is not an object: skipped")
			continue
		}
		im.entry(name, e)
	}
	return im.out, nil
}

// rawEntry is one server entry as the client wrote it.
type rawEntry struct {
	name     string
	m        map[string]any
	disabled string // why the client does not start it; "" when it does
}

type importer struct {
	client string
	opts   *ImportOptions
	out    Imported
}

func (im *importer) warnf(server, format string, args ...any) {
	im.out.Warnings = append(im.out.Warnings, ImportWarning{Server: server, Message: fmt.Sprintf(format, args...)})
}

// The file formats.

// jsonEntries reads the JSON clients' files: the servers are under
// "mcpServers" (Claude Code, Cursor, Gemini CLI, also each project of
// ~/.claude.json) or "servers" (VS Code's mcp.json, or "mcp" in its
// settings.json).
func (im *importer) jsonEntries(data []byte) ([]rawEntry, error) {
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, im.jsonError(data, err)
	}
	if len(bytes.TrimSpace(clean)) == 0 {
		return nil, &ImportError{Client: im.client, Msg: "the file is empty: want a JSON object"}
	}
	// Keys are matched exactly, as the clients match them (encoding/json
	// alone would also take "MCPSERVERS").
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(clean, &doc); err != nil {
		return nil, im.jsonError(data, err)
	}
	var top, mcp map[string]json.RawMessage
	if im.client == ClientVSCode || im.client == ClientGemini {
		if mcp, err = im.object(doc, "mcp", "mcp"); err != nil {
			return nil, err
		}
	}
	switch im.client {
	case ClientVSCode:
		top, err = im.object(doc, "servers", "servers")
		if err == nil && top == nil {
			top, err = im.object(mcp, "servers", "mcp.servers")
		}
	default:
		top, err = im.object(doc, "mcpServers", "mcpServers")
	}
	if err != nil {
		return nil, err
	}
	entries, err := im.decodeEntries(top)
	if err != nil {
		return nil, err
	}
	switch im.client {
	case ClientClaude:
		return im.claudeProjects(entries, doc)
	case ClientGemini:
		allowed, err := im.names(mcp, "allowed", "mcp.allowed")
		if err != nil {
			return nil, err
		}
		excluded, err := im.names(mcp, "excluded", "mcp.excluded")
		if err != nil {
			return nil, err
		}
		for i := range entries {
			switch {
			case slices.Contains(excluded, entries[i].name):
				entries[i].disabled = "listed in mcp.excluded"
			case allowed != nil && !slices.Contains(allowed, entries[i].name):
				entries[i].disabled = "missing from mcp.allowed"
			}
		}
	}
	return entries, nil
}

// object is the JSON object under key, by its keys; nil when absent or
// null.
func (im *importer) object(m map[string]json.RawMessage, key, where string) (map[string]json.RawMessage, error) {
	raw, ok := m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, &ImportError{Client: im.client, Msg: where + " is not an object"}
	}
	return out, nil
}

// names is the list of strings under key; nil when absent.
func (im *importer) names(m map[string]json.RawMessage, key, where string) ([]string, error) {
	raw, ok := m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	out := []string{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, &ImportError{Client: im.client, Msg: where + " is not a list of names"}
	}
	return out, nil
}

// claudeProjects adds the local-scope entries of ~/.claude.json, those
// under the project's path, which win over user-scope entries of the
// same name as they do in Claude Code.
func (im *importer) claudeProjects(user []rawEntry, doc map[string]json.RawMessage) ([]rawEntry, error) {
	projects, err := im.object(doc, "projects", "projects")
	if err != nil {
		return nil, err
	}
	projectServers := func(path string) (map[string]json.RawMessage, error) {
		p, err := im.object(projects, path, "projects."+path)
		if err != nil {
			return nil, err
		}
		return im.object(p, "mcpServers", "projects."+path+".mcpServers")
	}
	if im.opts.Project == "" {
		n := 0
		for path := range projects {
			servers, err := projectServers(path)
			if err != nil {
				return nil, err
			}
			n += len(servers)
		}
		if n > 0 {
			im.warnf("", "%d project-scoped servers under \"projects\" were left out: name the project directory to import its servers too", n)
		}
		return user, nil
	}
	path := im.opts.Project
	if _, ok := projects[path]; !ok {
		path = filepath.Clean(path)
	}
	servers, err := projectServers(path)
	if err != nil {
		return nil, err
	}
	local, err := im.decodeEntries(servers)
	if err != nil {
		return nil, err
	}
	for _, l := range local {
		if i := slices.IndexFunc(user, func(u rawEntry) bool { return u.name == l.name }); i >= 0 {
			im.warnf("", "server %q: the project's entry replaces the user-scope entry of the same name", l.name)
			user = slices.Delete(user, i, i+1)
		}
	}
	return append(user, local...), nil
}

// decodeEntries decodes each entry into plain maps, numbers kept as
// written. The file was decoded whole before, so no syntax error is left.
func (im *importer) decodeEntries(raw map[string]json.RawMessage) ([]rawEntry, error) {
	var out []rawEntry
	for name, msg := range raw {
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &ImportError{Client: im.client, Msg: fmt.Sprintf("server %q: %v", name, err)}
		}
		m, _ := v.(map[string]any)
		out = append(out, rawEntry{name: name, m: m})
	}
	return out, nil
}

// jsonError positions a JSON error in the file as the user wrote it
// (comments blanked keep offsets).
func (im *importer) jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var unclosed *unclosedComment
	off := int64(-1)
	msg := err.Error()
	switch {
	case errors.As(err, &unclosed):
		off = int64(unclosed.off)
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
		msg = fmt.Sprintf("%s is a JSON %s, want %s", strings.TrimPrefix(typ.Field, "."), typ.Value, typ.Type)
		if typ.Field == "" {
			msg = fmt.Sprintf("the file is a JSON %s: want an object", typ.Value)
		}
	}
	e := &ImportError{Client: im.client, Msg: msg}
	if off >= 0 && off <= int64(len(data)) {
		e.Line, e.Column = lineCol(data, int(off))
	}
	return e
}

func lineCol(data []byte, off int) (line, col int) {
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// stripJSONC turns JSON with comments and trailing commas (VS Code's and
// Gemini CLI's files allow both) into JSON, blanking what it drops so
// that offsets stay those of the input.
func stripJSONC(data []byte) ([]byte, error) {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xef\xbb\xbf")) {
		copy(out, "   ")
	}
	inStr := false
	comma := -1 // the last comma seen, until something other than space or a comment follows it
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil, &unclosedComment{off: i}
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if (c == '}' || c == ']') && comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
			switch c {
			case '"':
				inStr = true
			case ',':
				comma = i
			}
		}
	}
	return out, nil
}

// unclosedComment is a /* comment with no */, at byte off.
type unclosedComment struct{ off int }

func (e *unclosedComment) Error() string { return "a /* comment is never closed" }

// codexEntries reads Codex's config.toml: one [mcp_servers.NAME] table
// per server.
func (im *importer) codexEntries(data []byte) ([]rawEntry, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		e := &ImportError{Client: im.client, Msg: err.Error()}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			e.Line, e.Column = de.Position()
		}
		return nil, e
	}
	raw, ok := doc["mcp_servers"]
	if !ok {
		return nil, nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return nil, &ImportError{Client: im.client, Msg: "mcp_servers is not a table: want [mcp_servers.NAME] tables"}
	}
	var out []rawEntry
	for name, v := range servers {
		m, _ := v.(map[string]any)
		out = append(out, rawEntry{name: name, m: m})
	}
	return out, nil
}

// One server entry.

// skip is a server left out: the reason becomes its warning.
type skip struct{ why string }

func (s *skip) Error() string { return s.why }

func skipf(format string, args ...any) error { return &skip{fmt.Sprintf(format, args...)} }

// entry reads one server entry into a gateway server and its credentials.
func (im *importer) entry(name string, e rawEntry) {
	r := &reader{m: e.m, used: map[string]bool{}}
	s, creds, warns, err := im.server(name, r)
	var sk *skip
	switch {
	case errors.As(err, &sk):
		im.warnf(name, "skipped: %s", sk.why)
		return
	case err != nil:
		im.warnf(name, "skipped: %v", err)
		return
	}
	for _, k := range r.unused() {
		warns = append(warns, fmt.Sprintf("%s is not carried over (the gateway has no such setting)", k))
	}
	if e.disabled != "" {
		s.Disabled = true
		warns = append(warns, "imported disabled: "+e.disabled)
	}
	// The gateway's own check, on a copy, so that the defaults it fills
	// in stay out of the written file.
	c := *s
	if err := (&Config{Version: 1, Servers: map[string]*Server{name: &c}}).Check(); err != nil {
		im.warnf(name, "skipped: %v", err)
		return
	}
	im.out.Servers[name] = s
	im.out.Credentials = append(im.out.Credentials, creds...)
	for _, w := range warns {
		im.warnf(name, "%s", w)
	}
}

// server builds the server; a *skip error leaves it out.
func (im *importer) server(name string, r *reader) (*Server, []SuggestedCredential, []string, error) {
	f := fieldsFor(im.client)
	s := &Server{}
	var warns []string
	if enabled, ok, err := r.boolean(f.enabled); err != nil {
		return nil, nil, nil, err
	} else if ok && !enabled {
		s.Disabled = true
		warns = append(warns, "imported disabled: "+f.enabled+" is false")
	}
	if disabled, ok, err := r.boolean("disabled"); err != nil {
		return nil, nil, nil, err
	} else if ok && disabled {
		s.Disabled = true
		warns = append(warns, "imported disabled: disabled is true")
	}
	typ, _, err := r.str("type")
	if err != nil {
		return nil, nil, nil, err
	}
	command, hasCommand, err := r.str("command")
	if err != nil {
		return nil, nil, nil, err
	}
	rawURL, hasURL, err := im.serverURL(r, typ, &warns)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, ok := r.m["tcp"]; ok {
		r.used["tcp"] = true
		return nil, nil, nil, skipf("a WebSocket (tcp) transport: the gateway reaches upstreams over stdio or Streamable HTTP")
	}
	switch {
	case hasCommand && hasURL:
		return nil, nil, nil, skipf("it has both command and a URL: keep one")
	case !hasCommand && !hasURL:
		return nil, nil, nil, skipf("it has neither command nor url")
	case hasCommand:
		if typ != "" && typ != "stdio" {
			return nil, nil, nil, skipf("type %q with a command: want stdio", typ)
		}
	}
	var creds []SuggestedCredential
	if hasCommand {
		creds, err = im.stdio(name, r, s, command, &warns)
	} else {
		creds, err = im.http(name, r, s, rawURL, &warns)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if err := im.common(r, s, f, &warns); err != nil {
		return nil, nil, nil, err
	}
	return s, creds, warns, nil
}

// serverURL finds an HTTP server's URL and refuses the transports the
// gateway does not speak (SSE, WebSocket).
func (im *importer) serverURL(r *reader, typ string, warns *[]string) (string, bool, error) {
	if im.client == ClientGemini {
		if u, ok, err := r.str("httpUrl"); err != nil || ok {
			if ok {
				if _, also := r.m["url"]; also {
					return "", false, skipf("it has both httpUrl and url: keep one")
				}
			}
			return u, ok, err
		}
	}
	u, ok, err := r.str("url")
	if err != nil || !ok {
		return "", false, err
	}
	switch typ {
	case "http", "streamable-http", "streamableHttp", "streamable_http":
	case "sse":
		return "", false, skipf("an SSE server: the gateway speaks Streamable HTTP only; if the server also serves Streamable HTTP, add its URL by hand")
	case "":
		switch im.client {
		case ClientGemini:
			*warns = append(*warns, "url without type: Gemini CLI may have reached it over SSE, which the gateway does not speak; it is imported as Streamable HTTP")
		case ClientCursor:
			*warns = append(*warns, "url without type: Cursor falls back to SSE, which the gateway does not speak; it is imported as Streamable HTTP")
		}
	default:
		if im.client != ClientCodex {
			return "", false, skipf("type %q: the gateway reaches upstreams over stdio or Streamable HTTP", typ)
		}
	}
	return u, true, nil
}

// clientFields are the names a client gives the settings the gateway
// shares.
type clientFields struct {
	enabled      string // false switches the server off
	callTimeout  string // one call's timeout
	timeoutScale time.Duration
	startTimeout string
	hide         string // tools to hide
	only         string // tools to keep (an allowlist the gateway cannot express)
}

func fieldsFor(client string) clientFields {
	switch client {
	case ClientCodex:
		return clientFields{enabled: "enabled", callTimeout: "tool_timeout_sec", timeoutScale: time.Second, startTimeout: "startup_timeout_sec", hide: "disabled_tools", only: "enabled_tools"}
	case ClientGemini:
		return clientFields{enabled: "enabled", callTimeout: "timeout", timeoutScale: time.Millisecond, hide: "excludeTools", only: "includeTools"}
	default:
		return clientFields{enabled: "enabled"}
	}
}

func (im *importer) stdio(name string, r *reader, s *Server, command string, warns *[]string) ([]SuggestedCredential, error) {
	var err error
	if s.Command, err = im.literal(command, "command"); err != nil {
		return nil, err
	}
	args, _, err := r.strs("args")
	if err != nil {
		return nil, err
	}
	if len(args) > MaxArgs {
		return nil, skipf("%d args: at most %d (MaxArgs)", len(args), MaxArgs)
	}
	for i, a := range args {
		if a, err = im.literal(a, fmt.Sprintf("args[%d]", i)); err != nil {
			return nil, err
		}
		if kind := secretKind(a); kind != "" {
			return nil, skipf("args[%d] holds a secret (%s), and the gateway keeps secrets only in the credentials file: have the server read it from an environment variable, then import again", i, kind)
		}
		s.Args = append(s.Args, a)
	}
	if cwd, ok, err := r.str("cwd"); err != nil {
		return nil, err
	} else if ok {
		if s.Dir, err = im.literal(cwd, "cwd"); err != nil {
			return nil, err
		}
		// The client resolved a relative directory against the project;
		// the gateway starts from wherever it was started.
		if !filepath.IsAbs(s.Dir) {
			if im.opts.Project == "" {
				return nil, skipf("cwd %q is relative to a project directory that was not named: name it, or make cwd absolute", cwd)
			}
			s.Dir = filepath.Join(im.opts.Project, s.Dir)
		}
	}
	if _, ok := r.m["envFile"]; ok {
		r.used["envFile"] = true
		*warns = append(*warns, "envFile is not read: add its variables by hand, the secret ones to the credentials file")
	}
	env, _, err := r.strMap("env")
	if err != nil {
		return nil, err
	}
	var creds []SuggestedCredential
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envName.MatchString(k) {
			*warns = append(*warns, fmt.Sprintf("env %q is not a variable name: left out", k))
			continue
		}
		v, cred, w := im.value(env[k], "env "+k, envSecret(k, env[k]))
		if w != "" {
			*warns = append(*warns, w)
		}
		switch {
		case cred != nil:
			cred.Server, cred.Variable = name, k
			creds = append(creds, *cred)
		case v != nil:
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[k] = *v
		}
	}
	if len(s.Env) > MaxEnv {
		return nil, skipf("%d env variables: at most %d (MaxEnv)", len(s.Env), MaxEnv)
	}
	if im.client == ClientCodex {
		vars, err := r.envVars()
		if err != nil {
			return nil, err
		}
		for _, v := range vars {
			if !envName.MatchString(v) {
				*warns = append(*warns, fmt.Sprintf("env_vars %q is not a variable name: left out", v))
				continue
			}
			creds = append(creds, SuggestedCredential{Server: name, Variable: v, Env: v})
			*warns = append(*warns, fmt.Sprintf("env_vars %s passes Codex's own variable through; the gateway starts servers with a minimal environment, so a credentials entry reads it from airlock's", v))
		}
	}
	return creds, nil
}

func (im *importer) http(name string, r *reader, s *Server, rawURL string, warns *[]string) ([]SuggestedCredential, error) {
	u, err := im.literal(rawURL, "url")
	if err != nil {
		return nil, err
	}
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Hostname() == "" {
		return nil, skipf("url is not an http(s) URL with a host")
	}
	if parsed.User != nil {
		return nil, skipf("url holds user info (a credential): put it in the credentials file as a header for the host, and import the URL without it")
	}
	if kind := secretKind(u); kind != "" {
		return nil, skipf("url holds a secret (%s): put it in the credentials file as a header for the host, and import the URL without it", kind)
	}
	s.URL = u
	host := strings.ToLower(parsed.Hostname())
	headersKey := "headers"
	if im.client == ClientCodex {
		headersKey = "http_headers"
	}
	headers, _, err := r.strMap(headersKey)
	if err != nil {
		return nil, err
	}
	var creds []SuggestedCredential
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if textproto.CanonicalMIMEHeaderKey(k) == "" || strings.ContainsAny(k, "\r\n\x00 :") {
			*warns = append(*warns, fmt.Sprintf("header %q is not a header name: left out", k))
			continue
		}
		v, cred, w := im.value(headers[k], "header "+k, headerSecret(k, headers[k]))
		if w != "" {
			*warns = append(*warns, w)
		}
		switch {
		case cred != nil:
			cred.Host, cred.Header = host, k
			creds = append(creds, *cred)
		case v != nil && strings.ContainsAny(*v, "\r\n\x00"):
			*warns = append(*warns, fmt.Sprintf("header %s has a line break: left out", k))
		case v != nil:
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[k] = *v
		}
	}
	if len(s.Headers) > MaxEnv {
		return nil, skipf("%d headers: at most %d (MaxEnv)", len(s.Headers), MaxEnv)
	}
	if im.client == ClientCodex {
		envHeaders, _, err := r.strMap("env_http_headers")
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(envHeaders)) {
			creds = append(creds, SuggestedCredential{Host: host, Header: k, Env: envHeaders[k]})
			*warns = append(*warns, fmt.Sprintf("header %s comes from $%s: a credentials entry reads it from airlock's environment", k, envHeaders[k]))
		}
		if v, ok, err := r.str("bearer_token_env_var"); err != nil {
			return nil, err
		} else if ok {
			*warns = append(*warns, fmt.Sprintf("bearer_token_env_var %s: add a credentials entry {host: %s, header: Authorization, value: \"Bearer <the token>\"} by hand (an env entry would send the variable without \"Bearer \")", v, host))
		}
		if v, ok, err := r.str("bearer_token"); err != nil {
			return nil, err
		} else if ok && v != "" {
			creds = append(creds, SuggestedCredential{Host: host, Header: "Authorization", Value: redact.Secret("Bearer " + v)})
			*warns = append(*warns, "bearer_token is a secret: it is in the suggested credentials, not the gateway config")
		}
	}
	for i := range creds {
		creds[i].AllowHTTP = parsed.Scheme == "http"
	}
	for _, k := range []string{"oauth", "oauth_resource", "scopes", "headersHelper", "auth", "authProviderType", "targetAudience", "targetServiceAccount"} {
		if _, ok := r.m[k]; ok {
			r.used[k] = true
			*warns = append(*warns, fmt.Sprintf("%s: the gateway does not run OAuth or a header helper; give the server a token through the credentials file", k))
		}
	}
	return creds, nil
}

// common reads the settings every transport shares: timeouts and tool
// filters.
func (im *importer) common(r *reader, s *Server, f clientFields, warns *[]string) error {
	if f.callTimeout != "" {
		d, ok, err := r.duration(f.callTimeout, f.timeoutScale)
		if err != nil {
			return err
		}
		if ok {
			s.Timeout = im.clamp(d, f.callTimeout, warns)
		}
	}
	if f.startTimeout != "" {
		d, ok, err := r.duration(f.startTimeout, time.Second)
		if err != nil {
			return err
		}
		if !ok {
			d, ok, err = r.duration("startup_timeout_ms", time.Millisecond)
			if err != nil {
				return err
			}
		}
		if ok {
			s.StartTimeout = im.clamp(d, f.startTimeout, warns)
		}
	}
	if f.hide != "" {
		hide, _, err := r.strs(f.hide)
		if err != nil {
			return err
		}
		for _, t := range hide {
			if t == "" {
				continue
			}
			if s.Tools == nil {
				s.Tools = map[string]ToolConfig{}
			}
			s.Tools[t] = ToolConfig{Hide: true}
		}
	}
	if f.only != "" {
		if only, ok, err := r.strs(f.only); err != nil {
			return err
		} else if ok {
			*warns = append(*warns, fmt.Sprintf("%s lists %d tools to keep: the gateway hides tools by name only, so all others are offered; hide them under tools once you know their names", f.only, len(only)))
		}
	}
	if trust, ok, err := r.boolean("trust"); err != nil {
		return err
	} else if ok && trust {
		*warns = append(*warns, "trust: true is not carried: the gateway's policy decides which calls need approval")
	}
	for _, k := range []string{"description", "name", "trust"} {
		r.used[k] = true // cosmetic, or handled above
	}
	return nil
}

func (im *importer) clamp(d time.Duration, key string, warns *[]string) time.Duration {
	if d > MaxTimeout {
		*warns = append(*warns, fmt.Sprintf("%s is over %s (MaxTimeout): set to %s", key, MaxTimeout, MaxTimeout))
		return MaxTimeout
	}
	return d
}

// Values and variables.

// literal resolves the path variables of a command, argument, directory
// or URL; any other variable leaves the server out, since the gateway
// expands none.
func (im *importer) literal(s, where string) (string, error) {
	out, refs := im.expand(s)
	if len(refs) > 0 {
		return "", skipf("%s uses %s, which the gateway does not expand: write the value itself (a secret cannot go there; pass it through an env variable)", where, refs[0].text)
	}
	if strings.ContainsRune(out, 0) {
		return "", skipf("%s holds a NUL byte", where)
	}
	return out, nil
}

// value turns an env or header value into what the gateway keeps: the
// value, or a suggested credential (a secret, or a value the client read
// from its environment), or neither, with a warning.
func (im *importer) value(v, where string, secret string) (*string, *SuggestedCredential, string) {
	out, refs := im.expand(v)
	switch {
	case len(refs) == 0 && secret != "":
		return nil, &SuggestedCredential{Value: redact.Secret(out)},
			fmt.Sprintf("%s holds a secret (%s): it is in the suggested credentials, not the gateway config", where, secret)
	case len(refs) == 0:
		return &out, nil, ""
	case len(refs) == 1 && refs[0].kind == refEnv && refs[0].text == out:
		w := fmt.Sprintf("%s comes from $%s: a credentials entry reads it from airlock's environment", where, refs[0].name)
		if refs[0].def {
			w += " (the default in " + refs[0].text + " is dropped)"
		}
		return nil, &SuggestedCredential{Env: refs[0].name}, w
	case refs[0].kind == refInput:
		return nil, nil, fmt.Sprintf("%s is %s, which VS Code prompts for: add a credentials entry with the value by hand", where, refs[0].text)
	default:
		return nil, nil, fmt.Sprintf("%s mixes %s with other text, which the gateway cannot expand: add a credentials entry with the whole value by hand", where, refs[0].text)
	}
}

// The kinds of variable reference.
const (
	refEnv   = iota // the client's environment: ${VAR}, ${env:VAR}, $VAR
	refInput        // VS Code's prompted ${input:id}
	refPath         // a path the client knows: ${workspaceFolder}, ${userHome}
	refOther        // anything else: ${config:x}, ${command:x}
)

type varRef struct {
	kind int
	name string
	text string // as written, for messages (never a value)
	def  bool   // ${VAR:-default}
}

// expand replaces the path variables it can, and returns the references
// left.
func (im *importer) expand(s string) (string, []varRef) {
	if im.client == ClientCodex || !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	var refs []varRef
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			text := s[i : i+end+1]
			ref, ok := im.braced(text[2 : len(text)-1])
			i += end + 1
			if !ok {
				b.WriteString(text)
				continue
			}
			ref.text = text
			if ref.kind == refPath {
				if p, ok := im.path(ref.name); ok {
					b.WriteString(p)
					continue
				}
			}
			b.WriteString(text)
			refs = append(refs, ref)
			continue
		}
		// Gemini CLI also expands a bare $VAR.
		j := i + 1
		for j < len(s) && (s[j] == '_' || isAlnum(s[j])) {
			j++
		}
		if im.client == ClientGemini && j > i+1 && !isDigit(s[i+1]) {
			refs = append(refs, varRef{kind: refEnv, name: s[i+1 : j], text: s[i:j]})
		}
		b.WriteString(s[i:j])
		i = j
	}
	return b.String(), refs
}

// braced reads what stands between ${ and }; ok is false where the
// client takes it literally.
func (im *importer) braced(in string) (varRef, bool) {
	if kind, name, ok := strings.Cut(in, ":"); ok && (im.client == ClientVSCode || im.client == ClientCursor) {
		switch kind {
		case "env":
			return varRef{kind: refEnv, name: name}, envName.MatchString(name)
		case "input":
			return varRef{kind: refInput, name: name}, im.client == ClientVSCode
		default:
			return varRef{kind: refOther, name: in}, true
		}
	}
	switch in {
	case "workspaceFolder", "workspaceRoot", "userHome", "workspaceFolderBasename", "pathSeparator", "/":
		if im.client == ClientVSCode || im.client == ClientCursor {
			return varRef{kind: refPath, name: in}, true
		}
	}
	if im.client == ClientVSCode || im.client == ClientCursor {
		return varRef{kind: refOther, name: in}, true
	}
	name, _, def := strings.Cut(in, ":-")
	return varRef{kind: refEnv, name: name, def: def}, envName.MatchString(name)
}

func (im *importer) path(name string) (string, bool) {
	switch name {
	case "workspaceFolder", "workspaceRoot":
		return im.opts.Project, im.opts.Project != ""
	case "workspaceFolderBasename":
		return filepath.Base(im.opts.Project), im.opts.Project != ""
	case "userHome":
		return im.opts.Home, im.opts.Home != ""
	default: // pathSeparator, /
		return "/", true
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

// Secrets.

var redactor = sync.OnceValues(func() (*redact.Redactor, error) { return redact.New(nil) })

// secretKind is the kind of secret the redact package finds in s, or
// "": its value check for an environment variable, under a name that
// says nothing.
func secretKind(s string) string {
	rd, err := redactor()
	if err != nil {
		return "unknown" // the shipped rules failed to compile: treat all as secret
	}
	if fs := rd.ScanEnv([]string{"_=" + s}); len(fs) > 0 {
		return fs[0].Kind
	}
	return ""
}

// secretNameParts mark an env or header name as naming a credential
// wherever they stand in it. They are broader than the redact package's
// (KEY anywhere): a false alarm only moves a value to the credentials
// file.
var secretNameParts = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE", "AUTH", "SESSION", "PRIVATE", "DSN", "DATABASE_URL", "CONNECTION_STRING"}

func secretName(name string) bool {
	n := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	return slices.ContainsFunc(secretNameParts, func(p string) bool { return strings.Contains(n, p) })
}

// envSecret says why an env variable is a secret, or "".
func envSecret(name, value string) string {
	if value == "" {
		return ""
	}
	if rd, err := redactor(); err == nil {
		if fs := rd.ScanEnv([]string{name + "=" + value}); len(fs) > 0 {
			return fs[0].Kind
		}
	} else {
		return "unknown"
	}
	if secretName(name) {
		return "secret-name"
	}
	return ""
}

// headerSecret says why a header is a secret, or "".
func headerSecret(name, value string) string {
	if value == "" {
		return ""
	}
	switch textproto.CanonicalMIMEHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Cookie":
		return "auth-header"
	}
	return envSecret(name, value)
}

// Names.

func validName(name string) bool {
	return serverName.MatchString(name) && !strings.Contains(name, DefaultSeparator)
}

// gatewayName turns a client's server name into one the gateway takes,
// the same every time for the same names: characters outside the rule
// become -, a name that does not start with a letter gets "mcp-" before
// it, runs of _ lose the separator, and a clash gets -2, -3, ...
func gatewayName(name string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (isAlnum(byte(r)) || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := b.String()
	for strings.Contains(n, DefaultSeparator) {
		n = strings.ReplaceAll(n, DefaultSeparator, "_")
	}
	if n == "" || !(('a' <= n[0] && n[0] <= 'z') || ('A' <= n[0] && n[0] <= 'Z')) {
		n = "mcp-" + n
		n = strings.ReplaceAll(n, "-_", "-") // "mcp-_x" would read oddly
	}
	const maxLen = 32
	if len(n) > maxLen {
		n = n[:maxLen]
	}
	base := n
	for i := 2; taken[n]; i++ {
		suffix := "-" + strconv.Itoa(i)
		n = base[:min(len(base), maxLen-len(suffix))] + suffix
	}
	taken[n] = true
	return n
}

// Reading an entry.

// reader reads one entry's fields, remembering which it used.
type reader struct {
	m    map[string]any
	used map[string]bool
}

func (r *reader) get(key string) (any, bool) {
	v, ok := r.m[key]
	if ok {
		r.used[key] = true
	}
	if v == nil {
		return nil, false // JSON null: as if absent
	}
	return v, ok
}

func (r *reader) unused() []string {
	var out []string
	for k := range r.m {
		if !r.used[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (r *reader) str(key string) (string, bool, error) {
	v, ok := r.get(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, fmt.Errorf("%s is %s, want a string", key, kindOf(v))
	}
	return s, true, nil
}

func (r *reader) boolean(key string) (bool, bool, error) {
	v, ok := r.get(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, fmt.Errorf("%s is %s, want true or false", key, kindOf(v))
	}
	return b, true, nil
}

func (r *reader) strs(key string) ([]string, bool, error) {
	v, ok := r.get(key)
	if !ok {
		return nil, false, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, false, fmt.Errorf("%s is %s, want a list of strings", key, kindOf(v))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			return nil, false, fmt.Errorf("%s[%d] is %s, want a string", key, i, kindOf(e))
		}
		out = append(out, s)
	}
	return out, true, nil
}

// strMap reads a map of strings; a number or boolean value is taken as
// written (VS Code allows them in env), a null one is left out.
func (r *reader) strMap(key string) (map[string]string, bool, error) {
	v, ok := r.get(key)
	if !ok {
		return nil, false, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, false, fmt.Errorf("%s is %s, want an object of strings", key, kindOf(v))
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case nil:
		case string:
			out[k] = e
		case bool:
			out[k] = strconv.FormatBool(e)
		case json.Number:
			out[k] = e.String()
		case int64:
			out[k] = strconv.FormatInt(e, 10)
		case float64:
			out[k] = strconv.FormatFloat(e, 'g', -1, 64)
		default:
			return nil, false, fmt.Errorf("%s.%s is %s, want a string", key, k, kindOf(e))
		}
	}
	return out, true, nil
}

// duration reads a number of units; negative, NaN and overflowing
// numbers are errors.
func (r *reader) duration(key string, unit time.Duration) (time.Duration, bool, error) {
	v, ok := r.get(key)
	if !ok {
		return 0, false, nil
	}
	var f float64
	switch v := v.(type) {
	case json.Number:
		var err error
		if f, err = v.Float64(); err != nil {
			return 0, false, fmt.Errorf("%s is not a number", key)
		}
	case int64:
		f = float64(v)
	case float64:
		f = v
	default:
		return 0, false, fmt.Errorf("%s is %s, want a number", key, kindOf(v))
	}
	if math.IsNaN(f) || f < 0 {
		return 0, false, fmt.Errorf("%s is negative or not a number", key)
	}
	if f*float64(unit) > float64(MaxTimeout) {
		return MaxTimeout + 1, true, nil // clamped, with a warning, by the caller
	}
	return time.Duration(f * float64(unit)), true, nil
}

// envVars reads Codex's env_vars: names, or {name, source} tables.
func (r *reader) envVars() ([]string, error) {
	v, ok := r.get("env_vars")
	if !ok {
		return nil, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("env_vars is %s, want a list", kindOf(v))
	}
	var out []string
	for i, e := range list {
		switch e := e.(type) {
		case string:
			out = append(out, e)
		case map[string]any:
			name, isStr := e["name"].(string)
			if !isStr {
				return nil, fmt.Errorf("env_vars[%d] has no name", i)
			}
			if src, _ := e["source"].(string); src == "remote" {
				return nil, skipf("env_vars %s has source remote, which the gateway cannot reach", name)
			}
			out = append(out, name)
		default:
			return nil, fmt.Errorf("env_vars[%d] is %s, want a name", i, kindOf(e))
		}
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// Paths, the replacement entry, and merging.

// DefaultImportPaths are where client keeps its MCP servers, the project's
// files before the user's (a client takes the project's entry where both
// name a server; MergeImported keeps the first it is given). An empty home
// or projectDir leaves its files out; an unknown client has none. Codex
// honours $CODEX_HOME instead of ~/.codex: a caller that sees it set
// replaces that path.
func DefaultImportPaths(client, home, projectDir string) []string {
	var project, user []string
	switch client {
	case ClientClaude:
		// ~/.claude.json holds both the user scope and, per project, the
		// local scope (ImportOptions.Project picks it).
		project, user = []string{".mcp.json"}, []string{".claude.json"}
	case ClientCodex:
		project, user = []string{".codex/config.toml"}, []string{".codex/config.toml"}
	case ClientCursor:
		project, user = []string{".cursor/mcp.json"}, []string{".cursor/mcp.json"}
	case ClientVSCode:
		project = []string{".vscode/mcp.json"}
		if runtime.GOOS == "darwin" {
			user = []string{"Library/Application Support/Code/User/mcp.json"}
		} else {
			user = []string{".config/Code/User/mcp.json"}
		}
	case ClientGemini:
		project, user = []string{".gemini/settings.json"}, []string{".gemini/settings.json"}
	default:
		return nil
	}
	var out []string
	if projectDir != "" {
		for _, p := range project {
			out = append(out, filepath.Join(projectDir, p))
		}
	}
	if home != "" {
		for _, p := range user {
			if p := filepath.Join(home, p); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// ReplacementName is the name of the one entry that replaces a client's
// servers.
const ReplacementName = "airlock"

// Replacement is the server entry, in client's own format, that runs the
// gateway over stdio: airlockBinary gateway --upstreams gatewayConfig. Both
// paths must be absolute, since the client starts it from any directory.
// The snippet holds the entry under the client's key for servers, ready
// to merge into its file.
func Replacement(client, gatewayConfig, airlockBinary string) (string, error) {
	for _, p := range []string{gatewayConfig, airlockBinary} {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, "\x00\r\n") {
			return "", fmt.Errorf("replacement: %q is not an absolute path on one line: give the full path", p)
		}
	}
	args := []string{"gateway", "--upstreams", gatewayConfig}
	type stdioEntry struct {
		Type    string   `json:"type,omitempty"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	entry := stdioEntry{Command: airlockBinary, Args: args}
	key := "mcpServers"
	switch client {
	case ClientCodex:
		var b strings.Builder
		fmt.Fprintf(&b, "[mcp_servers.%s]\n", ReplacementName)
		fmt.Fprintf(&b, "command = %s\n", tomlString(airlockBinary))
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = tomlString(a)
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
		fmt.Fprintf(&b, "startup_timeout_sec = %d\n", int(ReplacementStartTimeout/time.Second))
		return b.String(), nil
	case ClientClaude:
		entry.Type = "stdio"
	case ClientVSCode:
		entry.Type = "stdio"
		key = "servers"
	case ClientCursor, ClientGemini:
	default:
		return "", fmt.Errorf("replacement: unknown client %q: want one of %s", client, strings.Join(ImportClients, ", "))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]map[string]stdioEntry{key: {ReplacementName: entry}}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// MergeImported adds im's servers to c, never replacing a server c
// already names, and stopping at MaxServers. It returns what it added,
// with the suggested credentials of those servers only (a credential of
// a server it did not add would reach the other one of that name), and a
// warning for each server it left out.
func MergeImported(c *Config, im Imported) (Imported, []ImportWarning) {
	added := Imported{Servers: map[string]*Server{}}
	var conflicts []ImportWarning
	if c.Servers == nil {
		c.Servers = map[string]*Server{}
	}
	sep := c.Separator
	if sep == "" {
		sep = DefaultSeparator
	}
	for _, name := range slices.Sorted(maps.Keys(im.Servers)) {
		switch {
		case c.Servers[name] != nil:
			conflicts = append(conflicts, ImportWarning{Server: name, Message: "the gateway config already has a server of this name: kept it, and left the imported one out"})
		case strings.Contains(name, sep):
			conflicts = append(conflicts, ImportWarning{Server: name, Message: fmt.Sprintf("the name holds the config's separator %q: left out; rename it and add it by hand", sep)})
		case len(c.Servers) >= MaxServers:
			conflicts = append(conflicts, ImportWarning{Server: name, Message: fmt.Sprintf("the gateway config already has %d servers (MaxServers): left out", MaxServers)})
		default:
			c.Servers[name] = im.Servers[name]
			added.Servers[name] = im.Servers[name]
		}
	}
	for _, cr := range im.Credentials {
		if cr.Server != "" && added.Servers[cr.Server] == nil {
			continue
		}
		if cr.Host != "" && !slices.ContainsFunc(slices.Collect(maps.Values(added.Servers)), func(s *Server) bool { return serverHost(s) == cr.Host }) {
			continue
		}
		added.Credentials = append(added.Credentials, cr)
	}
	for _, w := range im.Warnings {
		// A server left out here loses its warnings (the conflict says
		// why); one that Import skipped keeps them.
		if w.Server == "" || added.Servers[w.Server] != nil || im.Servers[w.Server] == nil {
			added.Warnings = append(added.Warnings, w)
		}
	}
	return added, conflicts
}

func serverHost(s *Server) string {
	if s.URL == "" {
		return ""
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
