package gateway

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/redact"
)

var updateImport = flag.Bool("update-import", false, "rewrite testdata/import/*/*.golden from Import's output")

// importOpts are the options every fixture is read with: the project and
// home the fixtures' paths name.
var importOpts = &ImportOptions{Project: "/home/dev/shop", Home: "/home/dev"}

// importFixtures are the client files under testdata/import, by client.
func importFixtures(t testing.TB) map[string][]string {
	out := map[string][]string{}
	for _, c := range ImportClients {
		files, err := filepath.Glob(filepath.Join("testdata", "import", c, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, ".golden") {
				out[c] = append(out[c], f)
			}
		}
		if len(out[c]) == 0 {
			t.Fatalf("no fixture for %s under testdata/import/%s", c, c)
		}
	}
	return out
}

// importEachFixture imports each fixture and hands fn the file, its
// bytes and what Import made of them.
func importEachFixture(t *testing.T, fn func(file string, data []byte, im Imported)) {
	for client, files := range importFixtures(t) {
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			im, err := Import(client, data, importOpts)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fn(file, data, im)
		}
	}
}

// renderImport shows an import as the golden files hold it: the gateway
// config as written, the suggested credentials with values masked, and
// the warnings.
func renderImport(t *testing.T, im Imported) string {
	var b strings.Builder
	cfg := &Config{Version: 1, Servers: im.Servers}
	y, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("# gateway config\n")
	b.Write(y)
	b.WriteString("# suggested credentials\n")
	for _, c := range im.Credentials {
		fmt.Fprintf(&b, "- server=%s variable=%s host=%s header=%s", c.Server, c.Variable, c.Host, c.Header)
		if c.Value != "" {
			fmt.Fprintf(&b, " value=%s", c.Value) // masked
		}
		if c.Env != "" {
			fmt.Fprintf(&b, " env=%s", c.Env)
		}
		b.WriteString("\n")
	}
	b.WriteString("# warnings\n")
	for _, w := range im.Warnings {
		b.WriteString("- " + w.String() + "\n")
	}
	return b.String()
}

// TestImportFixtures reads each client's fixture and compares the result
// with its golden file; every server passes the gateway's own check, and
// no secret of the fixture reaches the config or the warnings.
func TestImportFixtures(t *testing.T) {
	for client, files := range importFixtures(t) {
		for _, file := range files {
			t.Run(client+"/"+filepath.Base(file), func(t *testing.T) {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				im, err := Import(client, data, importOpts)
				if err != nil {
					t.Fatalf("Import: %v", err)
				}
				if len(im.Servers) == 0 {
					t.Fatal("no server imported")
				}
				checkImported(t, im)
				got := renderImport(t, im)
				golden := file + ".golden"
				if *updateImport {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update-import to write it)", err)
				}
				if got != string(want) {
					t.Errorf("Import(%s) differs from %s (run with -update-import to accept):\n%s", file, golden, got)
				}
			})
		}
	}
}

// checkImported checks what every import must hold: the servers pass
// Config.Check, and no suggested credential's value appears in the
// written config or in a warning.
func checkImported(t testing.TB, im Imported) {
	t.Helper()
	if len(im.Servers) > 0 && len(im.Servers) <= MaxServers {
		servers := map[string]*Server{}
		for n, s := range im.Servers {
			c := *s
			servers[n] = &c
		}
		if err := (&Config{Version: 1, Servers: servers}).Check(); err != nil {
			t.Fatalf("imported servers fail the gateway's check: %v", err)
		}
	}
	cfg, err := (&Config{Version: 1, Servers: im.Servers}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var warnings strings.Builder
	for _, w := range im.Warnings {
		warnings.WriteString(w.String() + "\n")
	}
	for _, c := range im.Credentials {
		v := c.Value.Reveal()
		if len(v) < 8 { // a short value would match by chance
			continue
		}
		if strings.Contains(string(cfg), v) {
			t.Fatalf("the gateway config holds the secret of credential %s%s", c.Server+c.Host, "/"+c.Variable+c.Header)
		}
		if strings.Contains(warnings.String(), v) {
			t.Fatalf("a warning holds the secret of credential %s%s", c.Server+c.Host, "/"+c.Variable+c.Header)
		}
	}
	for _, c := range im.Credentials {
		if (c.Server == "") == (c.Host == "") || (c.Value == "") == (c.Env == "") {
			t.Fatalf("credential %+v: want server or host, and value or env", c)
		}
		if c.Server != "" && im.Servers[c.Server] == nil {
			t.Fatalf("credential for server %s, which was not imported", c.Server)
		}
	}
}

// fixtureSecrets are the secrets written in clear in the fixtures.
var fixtureSecrets = []string{
	"ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
	"lin_api_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFRIBXu",
	"33xtplpft75v2seh60kvj50ce9uvw53e",
}

// TestImportKeepsSecretsOut checks the fixtures' clear secrets against
// the written config directly, not only against what Import says it
// took out.
func TestImportKeepsSecretsOut(t *testing.T) {
	found := map[string]bool{}
	importEachFixture(t, func(file string, data []byte, im Imported) {
		cfg, err := (&Config{Version: 1, Servers: im.Servers}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range fixtureSecrets {
			if strings.Contains(string(data), s) {
				found[s] = true
			}
			if strings.Contains(string(cfg), s) {
				t.Errorf("%s: the gateway config holds a secret of the fixture", file)
			}
			for _, w := range im.Warnings {
				if strings.Contains(w.String(), s) {
					t.Errorf("%s: warning %q holds a secret of the fixture", file, w)
				}
			}
		}
		creds, err := CredentialsYAML(im.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range fixtureSecrets {
			if strings.Contains(string(data), s) && !strings.Contains(string(creds), s) {
				t.Errorf("%s: a secret of the fixture is in neither the config nor the suggested credentials", file)
			}
		}
	})
	for _, s := range fixtureSecrets {
		if !found[s] {
			t.Errorf("no fixture holds secret %.8s...: the test checks nothing for it", s)
		}
	}
}

func TestImportExamples(t *testing.T) {
	tests := []struct {
		name, client, data string
		want               map[string]*Server
		creds              []SuggestedCredential
		warn               []string // substrings, each of some warning
	}{
		{
			name:   "claude env reference becomes an env credential",
			client: ClientClaude,
			data:   `{"mcpServers": {"a": {"command": "x", "env": {"TOKEN": "${MY_TOKEN}", "MODE": "fast"}}}}`,
			want:   map[string]*Server{"a": {Command: "x", Env: map[string]string{"MODE": "fast"}}},
			creds:  []SuggestedCredential{{Server: "a", Variable: "TOKEN", Env: "MY_TOKEN"}},
			warn:   []string{"env TOKEN comes from $MY_TOKEN"},
		},
		{
			name:   "a secret-named literal moves to the credentials",
			client: ClientCursor,
			data:   `{"mcpServers": {"a": {"command": "x", "env": {"SERVICE_PASSWORD": "hunter2hunter2"}}}}`,
			want:   map[string]*Server{"a": {Command: "x"}},
			creds:  []SuggestedCredential{{Server: "a", Variable: "SERVICE_PASSWORD", Value: "hunter2hunter2"}},
			warn:   []string{"env SERVICE_PASSWORD holds a secret (secret-name)"},
		},
		{
			name:   "a header with a token moves to the credentials, for the URL's host",
			client: ClientVSCode,
			data:   `{"servers": {"a": {"type": "http", "url": "https://Mcp.Example.com:8443/mcp", "headers": {"authorization": "Basic dXNlcjpwYXNz", "X-Team": "core"}}}}`,
			want:   map[string]*Server{"a": {URL: "https://Mcp.Example.com:8443/mcp", Headers: map[string]string{"X-Team": "core"}}},
			creds:  []SuggestedCredential{{Host: "mcp.example.com", Header: "authorization", Value: "Basic dXNlcjpwYXNz"}},
		},
		{
			name:   "gemini bare $VAR in env",
			client: ClientGemini,
			data:   `{"mcpServers": {"a": {"command": "x", "env": {"DB": "$DB_URL"}}}}`,
			want:   map[string]*Server{"a": {Command: "x"}},
			creds:  []SuggestedCredential{{Server: "a", Variable: "DB", Env: "DB_URL"}},
		},
		{
			name:   "claude takes $VAR literally",
			client: ClientClaude,
			data:   `{"mcpServers": {"a": {"command": "x", "args": ["$5", "$HOME"]}}}`,
			want:   map[string]*Server{"a": {Command: "x", Args: []string{"$5", "$HOME"}}},
		},
		{
			name:   "a secret in args skips the server",
			client: ClientClaude,
			data:   `{"mcpServers": {"a": {"command": "x", "args": ["--token", "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"]}}}`,
			want:   map[string]*Server{},
			warn:   []string{"args[1] holds a secret (github-token)"},
		},
		{
			name:   "user info in a URL skips the server",
			client: ClientCursor,
			data:   `{"mcpServers": {"a": {"url": "https://bob:pw@mcp.example.com/mcp"}}}`,
			want:   map[string]*Server{},
			warn:   []string{"url holds user info"},
		},
		{
			name:   "codex timeouts, clamped to MaxTimeout",
			client: ClientCodex,
			data:   "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = 1e9\nstartup_timeout_sec = 2.5\n",
			want:   map[string]*Server{"a": {Command: "x", Timeout: MaxTimeout, StartTimeout: 2500 * 1e6}},
			warn:   []string{"tool_timeout_sec is over 1h0m0s (MaxTimeout)"},
		},
		{
			name:   "codex inline bearer_token",
			client: ClientCodex,
			data:   "[mcp_servers.a]\nurl = \"https://h.example/mcp\"\nbearer_token = \"abc123abc123\"\n",
			want:   map[string]*Server{"a": {URL: "https://h.example/mcp"}},
			creds:  []SuggestedCredential{{Host: "h.example", Header: "Authorization", Value: "Bearer abc123abc123"}},
		},
		{
			name:   "a header credential for a plain-http server allows http",
			client: ClientCodex,
			data:   "[mcp_servers.a]\nurl = \"http://localhost:8931/mcp\"\nenv_http_headers = { \"X-Token\" = \"LOCAL_TOKEN\" }\n",
			want:   map[string]*Server{"a": {URL: "http://localhost:8931/mcp"}},
			creds:  []SuggestedCredential{{Host: "localhost", Header: "X-Token", Env: "LOCAL_TOKEN", AllowHTTP: true}},
		},
		{
			name:   "a wrongly typed field skips that server only",
			client: ClientGemini,
			data:   `{"mcpServers": {"a": {"command": "x", "args": "not a list"}, "b": {"command": "y"}}}`,
			want:   map[string]*Server{"b": {Command: "y"}},
			warn:   []string{"server a: skipped: args is a string, want a list of strings"},
		},
		{
			name:   "vscode settings.json with mcp.servers",
			client: ClientVSCode,
			data:   `{"editor.fontSize": 13, "mcp": {"servers": {"a": {"command": "x"}}}}`,
			want:   map[string]*Server{"a": {Command: "x"}},
		},
		{
			name:   "gemini mcp.allowed disables the rest",
			client: ClientGemini,
			data:   `{"mcp": {"allowed": ["a"]}, "mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}`,
			want:   map[string]*Server{"a": {Command: "x"}, "b": {Command: "y", Disabled: true}},
			warn:   []string{"server b: imported disabled: missing from mcp.allowed"},
		},
		{
			name:   "an unknown field is named",
			client: ClientCursor,
			data:   `{"mcpServers": {"a": {"command": "x", "autoApprove": ["t"]}}}`,
			want:   map[string]*Server{"a": {Command: "x"}},
			warn:   []string{"autoApprove is not carried over"},
		},
		{
			name:   "keys are matched exactly, as the clients match them",
			client: ClientCursor,
			data:   `{"MCPSERVERS": {"a": {"command": "x"}}}`,
			want:   map[string]*Server{},
			warn:   []string{"no MCP servers"},
		},
		{
			name:   "a URL with no host name",
			client: ClientCursor,
			data:   `{"mcpServers": {"a": {"url": "https://:443/mcp", "headers": {"X-Key": "k3y-k3y-k3y"}}}}`,
			want:   map[string]*Server{},
			warn:   []string{"not an http(s) URL with a host"},
		},
		{
			name:   "no servers is no error",
			client: ClientGemini,
			data:   `{"theme": "Dracula"}`,
			want:   map[string]*Server{},
			warn:   []string{"no MCP servers"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, err := Import(tt.client, []byte(tt.data), nil)
			if err != nil {
				t.Fatal(err)
			}
			checkImported(t, im)
			if !maps.EqualFunc(im.Servers, tt.want, serversEqual) {
				t.Errorf("servers:\n got %s\nwant %s", showServers(im.Servers), showServers(tt.want))
			}
			if !slices.Equal(im.Credentials, tt.creds) {
				t.Errorf("credentials:\n got %+v\nwant %+v", reveal(im.Credentials), reveal(tt.creds))
			}
			for _, w := range tt.warn {
				if !slices.ContainsFunc(im.Warnings, func(x ImportWarning) bool { return strings.Contains(x.String(), w) }) {
					t.Errorf("no warning says %q; got %v", w, im.Warnings)
				}
			}
		})
	}
}

func serversEqual(a, b *Server) bool { return fmt.Sprintf("%#v", *a) == fmt.Sprintf("%#v", *b) }

func showServers(m map[string]*Server) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%+v ", n, *m[n])
	}
	return b.String()
}

func reveal(cs []SuggestedCredential) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("{%s %s %s %s %q %s}", c.Server, c.Variable, c.Host, c.Header, c.Value.Reveal(), c.Env))
	}
	return out
}

func TestImportMalformed(t *testing.T) {
	tests := []struct {
		client, data string
		line         int // 0: no position expected
		msg          string
	}{
		{ClientClaude, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}}}", 3, "invalid character"},
		{ClientCursor, `[1, 2]`, 1, "want an object"},
		{ClientVSCode, "{\n /* never closed\n}", 2, "never closed"},
		{ClientGemini, `{"mcpServers": ["a"]}`, 0, "mcpServers is not an object"},
		{ClientClaude, `{"projects": {"/home/dev/shop": {"mcpServers": 7}}}`, 0, "projects./home/dev/shop.mcpServers is not an object"},
		{ClientCodex, "[mcp_servers.a]\ncommand = \n", 2, ""},
		{ClientCodex, "mcp_servers = 3\n", 0, "not a table"},
		{ClientClaude, " \n", 0, "empty"},
	}
	for _, tt := range tests {
		_, err := Import(tt.client, []byte(tt.data), importOpts)
		var ie *ImportError
		if !errors.As(err, &ie) {
			t.Errorf("Import(%s, %q) = %v, want an *ImportError", tt.client, tt.data, err)
			continue
		}
		if ie.Line != tt.line || !strings.Contains(ie.Msg, tt.msg) {
			t.Errorf("Import(%s, %q) = line %d %q, want line %d and %q", tt.client, tt.data, ie.Line, ie.Msg, tt.line, tt.msg)
		}
	}
	if _, err := Import("windsurf", []byte(`{}`), nil); err == nil || !strings.Contains(err.Error(), "want one of") {
		t.Errorf("an unknown client: got %v", err)
	}
	big := make([]byte, MaxImportBytes+1)
	if _, err := Import(ClientCursor, big, nil); err == nil || !strings.Contains(err.Error(), "MaxImportBytes") {
		t.Errorf("an oversized file: got %v", err)
	}
	var many strings.Builder
	many.WriteString(`{"mcpServers": {`)
	for i := range MaxImportEntries + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"s%d": {"command": "x"}`, i)
	}
	many.WriteString("}}")
	if _, err := Import(ClientCursor, []byte(many.String()), nil); err == nil || !strings.Contains(err.Error(), "MaxImportEntries") {
		t.Errorf("too many entries: got %v", err)
	}
}

func TestImportNames(t *testing.T) {
	data := `{"mcpServers": {
		"a b": {"command": "x"},
		"a-b": {"command": "x"},
		"a_b": {"command": "x"},
		"a__b": {"command": "x"},
		"9lives": {"command": "x"},
		"": {"command": "x"},
		"überserver": {"command": "x"},
		"this-name-is-far-too-long-for-the-gateway-rule": {"command": "x"},
		"this-name-is-far-too-long-for-the-gateway-rule!": {"command": "x"}
	}}`
	for range 3 { // the same names every time
		im, err := Import(ClientCursor, []byte(data), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkImported(t, im)
		got := slices.Sorted(maps.Keys(im.Servers))
		want := []string{"a-b", "a-b-2", "a_b", "a_b-2", "mcp-", "mcp-9lives", "mcp--berserver", "this-name-is-far-too-long-for-th", "this-name-is-far-too-long-for--2"}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("names:\n got %q\nwant %q", got, want)
		}
	}
}

func TestStripJSONC(t *testing.T) {
	in := "{\n  // a comment with \"quotes\" and a , comma\n  \"a\": \"// not a comment, /* nor this */\", /* block\n comment */\n  \"b\": [1, 2, ],\n  \"d\": [3, /* x */ ],\n  \"c\": \"escaped \\\" quote,\",\n}"
	out, err := stripJSONC([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) || strings.Count(string(out), "\n") != strings.Count(in, "\n") {
		t.Errorf("offsets moved:\n%s", out)
	}
	for _, keep := range []string{`"// not a comment, /* nor this */"`, `"escaped \" quote,"`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("string %s was changed:\n%s", keep, out)
		}
	}
	if strings.Contains(string(out), "comment with") || strings.Contains(string(out), "2, ]") || strings.Contains(string(out), "3, ") {
		t.Errorf("a comment or trailing comma is left:\n%s", out)
	}
}

// TestReplacementImportsBack reads each replacement entry back with
// Import: it is the client's own format, and it runs the gateway.
func TestReplacementImportsBack(t *testing.T) {
	const cfg, bin = `/home/dev/.config/airlock/gateway "main".yaml`, `/opt/air lock/bin/airlock`
	for _, client := range ImportClients {
		snippet, err := Replacement(client, cfg, bin)
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		im, err := Import(client, []byte(snippet), nil)
		if err != nil {
			t.Fatalf("%s: the replacement does not import: %v\n%s", client, err, snippet)
		}
		s := im.Servers[ReplacementName]
		if len(im.Servers) != 1 || s == nil {
			t.Fatalf("%s: the replacement gives %v, want one server %q\n%s", client, slices.Collect(maps.Keys(im.Servers)), ReplacementName, snippet)
		}
		if s.Command != bin || !slices.Equal(s.Args, []string{"gateway", "--upstreams", cfg}) {
			t.Errorf("%s: the replacement runs %q %q\n%s", client, s.Command, s.Args, snippet)
		}
		if client == ClientCodex {
			var doc map[string]map[string]map[string]any
			if err := toml.Unmarshal([]byte(snippet), &doc); err != nil {
				t.Fatal(err)
			}
			if got := doc["mcp_servers"][ReplacementName]["startup_timeout_sec"]; got != int64(ReplacementStartTimeout.Seconds()) {
				t.Errorf("codex: startup_timeout_sec = %v", got)
			}
		}
	}
	if _, err := Replacement(ClientClaude, "gateway.yaml", bin); err == nil {
		t.Error("a relative config path was taken")
	}
	if _, err := Replacement("zed", cfg, bin); err == nil {
		t.Error("an unknown client was taken")
	}
}

func TestDefaultImportPaths(t *testing.T) {
	for _, c := range ImportClients {
		paths := DefaultImportPaths(c, "/home/u", "/src/p")
		if len(paths) < 2 || !strings.HasPrefix(paths[0], "/src/p/") || !strings.HasPrefix(paths[len(paths)-1], "/home/u/") {
			t.Errorf("%s: %q, want the project's file first and the user's last", c, paths)
		}
		if got := DefaultImportPaths(c, "", "/src/p"); len(got) == 0 || slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "/home") }) {
			t.Errorf("%s without home: %q", c, got)
		}
	}
	if got := DefaultImportPaths(ClientClaude, "/home/u", "/src/p"); !slices.Equal(got, []string{"/src/p/.mcp.json", "/home/u/.claude.json"}) {
		t.Errorf("claude: %q", got)
	}
	if got := DefaultImportPaths("zed", "/home/u", "/src/p"); got != nil {
		t.Errorf("an unknown client: %q", got)
	}
}

func TestMergeImported(t *testing.T) {
	existing := &Server{Command: "mine"}
	c := &Config{Version: 1, Servers: map[string]*Server{"github": existing}}
	im, err := Import(ClientClaude, []byte(`{"mcpServers": {
		"github": {"command": "theirs", "env": {"GITHUB_TOKEN": "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"}},
		"memory": {"command": "npx", "env": {"API_KEY": "${MEM_KEY}"}},
		"docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer x1234567"}},
		"bad": {"type": "sse", "url": "https://x.example/sse"}
	}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	added, conflicts := MergeImported(c, im)
	if c.Servers["github"] != existing {
		t.Error("the existing server was replaced")
	}
	if got := slices.Sorted(maps.Keys(added.Servers)); !slices.Equal(got, []string{"docs", "memory"}) {
		t.Errorf("added %q", got)
	}
	if len(conflicts) != 1 || conflicts[0].Server != "github" {
		t.Errorf("conflicts %v", conflicts)
	}
	for _, cr := range added.Credentials {
		if cr.Server == "github" {
			t.Error("the left-out server's credential was kept: it would reach the existing server")
		}
	}
	if len(added.Credentials) != 2 {
		t.Errorf("credentials %v, want memory's and docs'", reveal(added.Credentials))
	}
	if !slices.ContainsFunc(added.Warnings, func(w ImportWarning) bool { return w.Server == "bad" }) {
		t.Error("the warning of a server Import skipped was dropped")
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}

	full := &Config{Version: 1, Servers: map[string]*Server{}}
	for i := range MaxServers {
		full.Servers[fmt.Sprintf("s%d", i)] = &Server{Command: "x"}
	}
	added, conflicts = MergeImported(full, im)
	if len(added.Servers) != 0 || len(conflicts) != 3 {
		t.Errorf("a full config took %d, left out %v", len(added.Servers), conflicts)
	}
}

func TestCredentialsYAML(t *testing.T) {
	creds := []SuggestedCredential{
		{Server: "github", Variable: "GITHUB_TOKEN", Value: redact.Secret("ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d")},
		{Host: "mcp.example.com", Header: "X-Api-Key", Env: "EXAMPLE_KEY"},
	}
	got, err := CredentialsYAML(creds)
	if err != nil {
		t.Fatal(err)
	}
	want := `credentials:
  - server: github
    variable: GITHUB_TOKEN
    value: ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d
  - host: mcp.example.com
    header: X-Api-Key
    env: EXAMPLE_KEY
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if s := fmt.Sprint(creds); strings.Contains(s, "ghp_") {
		t.Errorf("printing the credentials shows the secret: %s", s)
	}
}

// TestCredentialsYAMLLoads reads what each fixture suggests back with
// egress.LoadCredentials, the reader of the credentials file.
func TestCredentialsYAMLLoads(t *testing.T) {
	getenv := func(name string) string { return "value-of-" + name }
	n := 0
	importEachFixture(t, func(file string, _ []byte, im Imported) {
		y, err := CredentialsYAML(im.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "credentials.yaml")
		if err := os.WriteFile(path, y, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := egress.LoadCredentials(path, getenv)
		if err != nil {
			t.Fatalf("%s: the suggested credentials do not load: %v\n%s", file, err, y)
		}
		if len(got) != len(im.Credentials) {
			t.Fatalf("%s: %d credentials loaded, %d suggested", file, len(got), len(im.Credentials))
		}
		n += len(got)
	})
	if n == 0 {
		t.Fatal("no fixture suggests a credential")
	}
}

// FuzzImport feeds every client's reader arbitrary bytes: no panic, and
// what it returns holds the import's promises.
func FuzzImport(f *testing.F) {
	for client, files := range importFixtures(f) {
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(slices.Index(ImportClients, client)), data)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		client := ImportClients[int(which)%len(ImportClients)]
		im, err := Import(client, data, importOpts)
		if err != nil {
			var ie *ImportError
			if !errors.As(err, &ie) {
				t.Fatalf("Import: %v is not an *ImportError", err)
			}
			return
		}
		checkImported(t, im)
	})
}
