package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/textproto"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/tool"
)

// The bounds of a gateway config file.
const (
	// MaxConfigBytes is the most bytes a config file may hold.
	MaxConfigBytes = 1 << 20
	// MaxServers is the most upstream servers one gateway fronts.
	MaxServers = 64
	// MaxArgs is the most arguments, and MaxEnv the most environment
	// variables or headers, of one server.
	MaxArgs = 256
	MaxEnv  = 256
)

// The defaults of a server's timeouts.
const (
	// DefaultCallTimeout bounds one upstream call, from the request to
	// its result, when the server's config names no timeout.
	DefaultCallTimeout = 60 * time.Second
	// DefaultStartTimeout bounds starting an upstream (the process, or
	// the HTTP connection) and its initialize handshake and listing.
	DefaultStartTimeout = 30 * time.Second
	// MaxTimeout is the longest either may be set to.
	MaxTimeout = time.Hour
)

// DefaultSeparator joins a server's name and its tool's name into the
// name the client sees: SERVER__TOOL.
const DefaultSeparator = "__"

// The values of Server.Elicitation and Server.Sampling.
const (
	Deny  = "deny"  // the upstream's request is refused
	Relay = "relay" // elicitation only: the request goes to the client
)

// Config is a gateway config file: the upstream servers, and how their
// tools are offered.
//
//	version: 1
//	servers:
//	  everything:
//	    command: npx
//	    args: ["-y", "@modelcontextprotocol/server-everything"]
//	  docs:
//	    url: https://mcp.example.com/mcp
//	    headers: {X-Team: docs}
//	    tools:
//	      search: {risk: low, effect: read}
type Config struct {
	Version int `yaml:"version" json:"version"`
	// Separator joins SERVER and TOOL in the names the client sees; ""
	// means DefaultSeparator.
	Separator string `yaml:"separator,omitempty" json:"separator,omitempty"`
	// Builtins also offers airlock's own tools (calculate, the file
	// tools, run_command, web_fetch) next to the upstreams'.
	Builtins bool `yaml:"builtin_tools,omitempty" json:"builtin_tools,omitempty"`
	// Servers are the upstream servers by name.
	Servers map[string]*Server `yaml:"servers" json:"servers"`
}

// Server is one upstream MCP server: a command (stdio) or a URL
// (Streamable HTTP).
type Server struct {
	// Command, Args, Env and Dir start a stdio server. Env is added to a
	// minimal environment (PATH, HOME, LANG), never airlock's own; a
	// secret belongs in the credentials file (an entry with server and
	// variable), not here.
	Command string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Dir     string            `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	// URL and Headers reach a Streamable HTTP server. A credential for
	// the URL's exact host comes from the credentials file.
	URL     string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Timeout bounds one call (DefaultCallTimeout when zero), and
	// StartTimeout starting the server (DefaultStartTimeout).
	Timeout      time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	StartTimeout time.Duration `yaml:"start_timeout,omitempty" json:"start_timeout,omitempty"`
	// Elicitation is Deny (the default) or Relay: whether the upstream's
	// requests for the user's input reach the client. Sampling is Deny,
	// the only value: the upstream never drives the client's model.
	Elicitation string `yaml:"elicitation,omitempty" json:"elicitation,omitempty"`
	Sampling    string `yaml:"sampling,omitempty" json:"sampling,omitempty"`
	// Tools overrides what the gateway takes from a tool's annotations,
	// by the upstream's tool name.
	Tools map[string]ToolConfig `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Disabled keeps the server in the file but starts nothing.
	Disabled bool `yaml:"disabled,omitempty" json:"disabled,omitempty"`
}

// ToolConfig overrides one upstream tool's risk, effect and class, or
// hides it.
type ToolConfig struct {
	Risk   string `yaml:"risk,omitempty" json:"risk,omitempty"`     // low, medium or high
	Effect string `yaml:"effect,omitempty" json:"effect,omitempty"` // read, write or external
	Class  string `yaml:"class,omitempty" json:"class,omitempty"`   // egress, payment or send
	Hide   bool   `yaml:"hide,omitempty" json:"hide,omitempty"`
}

// serverName is what a server's name may look like: it is the first part
// of every tool name the client sees.
var serverName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// separator is what a separator may look like: characters a tool name
// may hold but a word seldom does.
var separator = regexp.MustCompile(`^[_-]{1,4}$`)

// envName is what an environment variable's name may look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// LoadConfig reads and checks a gateway config file.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("gateway config: %s is over %d bytes (MaxConfigBytes)", path, MaxConfigBytes)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("gateway config: %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses and checks a config file's bytes (YAML, or JSON).
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty: want version: 1 and servers")
		}
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Check checks a config, and fills in its defaults.
func (c *Config) Check() error {
	if c.Version != 1 {
		return fmt.Errorf("version %d: want version: 1", c.Version)
	}
	if c.Separator == "" {
		c.Separator = DefaultSeparator
	}
	if !separator.MatchString(c.Separator) {
		return fmt.Errorf("separator %q: want 1 to 4 of _ and -", c.Separator)
	}
	if len(c.Servers) == 0 {
		return errors.New("no servers: name at least one under servers")
	}
	if len(c.Servers) > MaxServers {
		return fmt.Errorf("%d servers: at most %d (MaxServers)", len(c.Servers), MaxServers)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if err := c.checkServer(name, c.Servers[name]); err != nil {
			return fmt.Errorf("server %q: %w", name, err)
		}
	}
	return nil
}

func (c *Config) checkServer(name string, s *Server) error {
	switch {
	case !serverName.MatchString(name):
		return errors.New("a server's name is a letter, then up to 31 letters, digits, _ and -")
	case strings.Contains(name, c.Separator):
		return fmt.Errorf("the name holds the separator %q, which would make tool names ambiguous", c.Separator)
	case s == nil:
		return errors.New("empty: give command, or url")
	case (s.Command == "") == (s.URL == ""):
		return errors.New("give command (a stdio server) or url (a Streamable HTTP server), not both nor neither")
	case len(s.Args) > MaxArgs:
		return fmt.Errorf("%d args: at most %d (MaxArgs)", len(s.Args), MaxArgs)
	case len(s.Env) > MaxEnv || len(s.Headers) > MaxEnv:
		return fmt.Errorf("at most %d env variables and %d headers (MaxEnv)", MaxEnv, MaxEnv)
	case s.Timeout < 0 || s.Timeout > MaxTimeout || s.StartTimeout < 0 || s.StartTimeout > MaxTimeout:
		return fmt.Errorf("timeouts are between 0 (the default) and %s (MaxTimeout)", MaxTimeout)
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultCallTimeout
	}
	if s.StartTimeout == 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.URL != "" {
		if s.Dir != "" || len(s.Env) > 0 || len(s.Args) > 0 {
			return errors.New("args, env and cwd are for a command; an HTTP server takes url and headers")
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
			return fmt.Errorf("url %q: want http(s)://host/path, with no user info (credentials go in the credentials file)", s.URL)
		}
	} else if len(s.Headers) > 0 {
		return errors.New("headers are for an HTTP server; a command takes env")
	}
	for k, v := range s.Env {
		if !envName.MatchString(k) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %q: want a variable name of letters, digits and _, and a value without NUL", k)
		}
	}
	for k, v := range s.Headers {
		if textproto.CanonicalMIMEHeaderKey(k) == "" || strings.ContainsAny(k+v, "\r\n\x00") {
			return fmt.Errorf("header %q: want a header name, and a value on one line", k)
		}
	}
	switch s.Elicitation {
	case "":
		s.Elicitation = Deny
	case Deny, Relay:
	default:
		return fmt.Errorf("elicitation %q: want deny or relay", s.Elicitation)
	}
	switch s.Sampling {
	case "":
		s.Sampling = Deny
	case Deny:
	default:
		return fmt.Errorf("sampling %q: the gateway only denies sampling (an upstream never drives the client's model)", s.Sampling)
	}
	for t, o := range s.Tools {
		if err := o.check(); err != nil {
			return fmt.Errorf("tool %q: %w", t, err)
		}
	}
	return nil
}

func (o ToolConfig) check() error {
	if o.Risk != "" {
		if _, err := tool.ParseRisk(o.Risk); err != nil {
			return err
		}
	}
	if o.Effect != "" {
		if _, err := tool.ParseEffect(o.Effect); err != nil {
			return err
		}
	}
	if !tool.Class(o.Class).Valid() {
		return fmt.Errorf("class %q: want egress, payment or send", o.Class)
	}
	return nil
}

// Marshal writes c as YAML, the form LoadConfig reads.
func (c *Config) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
