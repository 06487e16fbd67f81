package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/policy"
)

// settings are what a command runs with. Each comes from, in order of
// precedence: its flag, its environment variable, the config file
// (airlock.yaml), the default. The table below is the one place that lists
// them.
type settings struct {
	Workspace      string            `yaml:"workspace"`
	Policy         string            `yaml:"policy"`
	Mode           string            `yaml:"mode"`
	Role           string            `yaml:"role"`
	FAQ            string            `yaml:"faq"`
	Sandbox        string            `yaml:"sandbox"`
	Store          string            `yaml:"store"`
	CommandNetwork string            `yaml:"command_network"`
	Approvals      string            `yaml:"approvals"`
	Replicas       string            `yaml:"replicas"`
	Credentials    string            `yaml:"credentials"`
	Upstreams      string            `yaml:"upstreams"`
	Addr           string            `yaml:"addr"`
	Tokens         map[string]string `yaml:"tokens"` // bearer token -> role, for airlock serve
	AllowedHosts   []string          `yaml:"allowed_hosts"`
	AllowedOrigins []string          `yaml:"allowed_origins"`

	// explicitWorkspace: the workspace was named by a flag, the
	// environment or the file, and is honoured whatever it is.
	explicitWorkspace bool
	// envelopes: the door's results go to a model (MCP), so untrusted
	// results are wrapped in envelopes.
	envelopes bool
	// file is the config file the settings were read from, if any: the
	// runtime never lets a tool write it.
	file string
}

// DefaultAddr is where airlock serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// ConfigFile is the config file's name, in the user's config directory
// (airlock/airlock.yaml under $XDG_CONFIG_HOME, usually ~/.config) when
// --config and AIRLOCK_CONFIG name none. Never the current directory or
// the workspace: a repository airlock works on, or a model that can write
// there, could otherwise choose airlock's own workspace, mode and policy.
const ConfigFile = "airlock.yaml"

// UpstreamsFile is the gateway's file of upstream servers, beside
// ConfigFile, when neither --upstreams nor AIRLOCK_UPSTREAMS names one.
const UpstreamsFile = "gateway.yaml"

// setting is one row of the table: its flag and variable names and where
// its value lives.
type setting struct {
	flag, env, usage string
	str              func(*settings) *string
}

var settingTable = []setting{
	{"workspace", "AIRLOCK_WORKSPACE", "the workspace `DIR` the file tools are scoped to (default: the client's first root, else the current directory)",
		func(s *settings) *string { return &s.Workspace }},
	{"policy", "AIRLOCK_POLICY", "a policy `FILE` whose rules are added on top of the built-in policy",
		func(s *settings) *string { return &s.Policy }},
	{"mode", "AIRLOCK_MODE", "the session's permission `mode`: read-only, ask (default), auto-edit or auto",
		func(s *settings) *string { return &s.Mode }},
	{"role", "AIRLOCK_ROLE", "the caller's `role`: viewer, operator (default) or admin",
		func(s *settings) *string { return &s.Role }},
	{"faq", "AIRLOCK_FAQ", "a FAQ index `FILE` of approved keys for faq_lookup",
		func(s *settings) *string { return &s.FAQ }},
	{"store", "AIRLOCK_STORE", "the store `URL` of approvals, sessions and the ledger: sqlite:PATH, postgres://... or redis://... (default: .airlock/state.db in the workspace)",
		func(s *settings) *string { return &s.Store }},
	{"credentials", "AIRLOCK_CREDENTIALS", "a credentials `FILE` (mode 600) of headers web_fetch, the egress proxy and the gateway attach per exact host, and of gateway stdio upstreams' variables, so that no model or command sees them",
		func(s *settings) *string { return &s.Credentials }},
	{"upstreams", "AIRLOCK_UPSTREAMS", "airlock gateway: the `FILE` of upstream MCP servers (default: airlock/" + UpstreamsFile + " in the user's config directory)",
		func(s *settings) *string { return &s.Upstreams }},
	{"command-network", "AIRLOCK_COMMAND_NETWORK", "what run_command's commands may reach: none (default), or proxy (only airlock's egress proxy, under web_fetch's policy)",
		func(s *settings) *string { return &s.CommandNetwork }},
	{"sandbox", "AIRLOCK_SANDBOX", "the sandbox `backend` run_command runs in: native (default), bwrap or container",
		func(s *settings) *string { return &s.Sandbox }},
	{"approvals", "AIRLOCK_APPROVALS", "how the MCP doors get a person's approval: client (default: ask through the client where it can answer; a decline is a denial) or out-of-band (never ask the client: the call waits for airlock approve)",
		func(s *settings) *string { return &s.Approvals }},
	{"replicas", "AIRLOCK_REPLICAS", "airlock serve: serve each MCP session on every replica of a deployment, with no sticky sessions; the replicas share the store (postgres:// or redis:// across hosts) and the approval key file (true or false; default false: a session lives in the process that opened it)",
		func(s *settings) *string { return &s.Replicas }},
}

// booleanSettings are the settings of the table that are true or false:
// their flag may stand alone (--replicas), and takes no other value.
var booleanSettings = map[string]bool{"replicas": true}

// replicas says whether airlock serve serves each MCP session on every
// replica (the replicas setting): "" and false mean no, true yes; any
// other value is refused.
func (s *settings) replicas() (bool, error) {
	if s.Replicas == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(s.Replicas)
	if err != nil {
		return false, fmt.Errorf("invalid_setting: replicas %q is neither true nor false. Hint: pass --replicas to serve each MCP session on every replica, or leave it out", s.Replicas)
	}
	return on, nil
}

// boolFlag is the flag of a boolean setting: it may stand alone, and it
// keeps its value as the string the settings hold.
type boolFlag struct{ s *string }

func (b boolFlag) String() string {
	if b.s == nil {
		return ""
	}
	return *b.s
}

func (b boolFlag) Set(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New("want true or false")
	}
	*b.s = v
	return nil
}

func (b boolFlag) IsBoolFlag() bool { return true }

// The values of the approvals setting.
const (
	// ApprovalsClient asks the person at the MCP client, where it can
	// answer (elicitation); their decline is a denial.
	ApprovalsClient = "client"
	// ApprovalsOutOfBand never asks the client: every ask ends the call
	// with approval_required, and a person decides it with airlock
	// approve or deny. For clients that decline every question headless
	// (codex exec), where asking could only ever deny.
	ApprovalsOutOfBand = "out-of-band"
)

// askClient says whether the MCP doors put the gate's asks to the person
// at the client (approvals: client, the default) rather than leave them
// for airlock approve (out-of-band). Any other value is refused.
func (s *settings) askClient() (bool, error) {
	switch s.Approvals {
	case "", ApprovalsClient:
		return true, nil
	case ApprovalsOutOfBand:
		return false, nil
	}
	return false, fmt.Errorf("invalid_setting: approvals %q is neither %s nor %s. Hint: pass --approvals %s to ask the person through the client, or --approvals %s to decide each call with airlock approve",
		s.Approvals, ApprovalsClient, ApprovalsOutOfBand, ApprovalsClient, ApprovalsOutOfBand)
}

// settingFlags registers the shared flags on fs; resolve then combines
// them with the environment and the config file.
type settingFlags struct {
	config string
	vals   map[string]*string
	addr   *string
}

func registerSettings(fs *flag.FlagSet, withAddr bool) *settingFlags {
	sf := &settingFlags{vals: map[string]*string{}}
	fs.StringVar(&sf.config, "config", "", "the config `FILE` (default: $AIRLOCK_CONFIG, else airlock/"+ConfigFile+" in the user's config directory, when present)")
	for _, s := range settingTable {
		if booleanSettings[s.flag] {
			sf.vals[s.flag] = new(string)
			fs.Var(boolFlag{sf.vals[s.flag]}, s.flag, s.usage)
			continue
		}
		sf.vals[s.flag] = fs.String(s.flag, "", s.usage)
	}
	if withAddr {
		sf.addr = fs.String("addr", "", "the `HOST:PORT` to listen on (default "+DefaultAddr+"; AIRLOCK_ADDR)")
	}
	return sf
}

// resolve combines flags, environment and the config file.
func (sf *settingFlags) resolve(fs *flag.FlagSet, getenv func(string) string) (*settings, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	s := &settings{}
	path := sf.config
	if path == "" {
		path = getenv("AIRLOCK_CONFIG")
	}
	if err := s.loadFile(path, path != ""); err != nil {
		return nil, err
	}
	s.explicitWorkspace = s.Workspace != ""
	for _, row := range settingTable {
		dst := row.str(s)
		if v := getenv(row.env); v != "" {
			*dst = v
		}
		if set[row.flag] {
			*dst = *sf.vals[row.flag]
		}
		if row.flag == "workspace" && *dst != "" {
			s.explicitWorkspace = true
		}
	}
	if v := getenv("AIRLOCK_ADDR"); v != "" {
		s.Addr = v
	}
	if sf.addr != nil && set["addr"] {
		s.Addr = *sf.addr
	}
	if v := getenv("AIRLOCK_TOKENS"); v != "" {
		tokens, err := parseTokens(v)
		if err != nil {
			return nil, err
		}
		s.Tokens = tokens
	}
	if s.Addr == "" {
		s.Addr = DefaultAddr
	}
	if s.Role == "" {
		s.Role = policy.DefaultRole
	}
	return s, nil
}

// loadFile reads the config file; a missing default file is fine, a
// missing named one is not.
func (s *settings) loadFile(path string, named bool) error {
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil // no config directory: no default file
		}
		path = filepath.Join(dir, "airlock", ConfigFile)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) { // an empty file is no settings
		return fmt.Errorf("config %s: %w (the keys are %s)", path, err, strings.Join(configKeys(), ", "))
	}
	s.file = path
	// Relative paths in the file are relative to the file.
	base := filepath.Dir(path)
	for _, p := range []*string{&s.Workspace, &s.Policy, &s.FAQ} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	return nil
}

// configKeys lists the keys airlock.yaml may hold, read from the settings
// struct's own tags so that the list cannot fall behind it.
func configKeys() []string {
	var keys []string
	t := reflect.TypeFor[settings]()
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// parseTokens reads AIRLOCK_TOKENS: "TOKEN=ROLE,TOKEN=ROLE".
func parseTokens(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		tok, role, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || tok == "" || role == "" {
			return nil, fmt.Errorf("AIRLOCK_TOKENS: want TOKEN=ROLE pairs separated by commas")
		}
		out[tok] = role
	}
	return out, nil
}

// workspaceDir decides the workspace: an explicit one always; else the
// client's first root when it offers one; else the current directory. An
// implicit workspace of / or the home directory itself is refused, since
// it would put every file of the machine or the user in reach.
func (s *settings) workspaceDir(firstRoot string) (string, error) {
	if s.explicitWorkspace {
		return s.Workspace, nil
	}
	dir := firstRoot
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// Compare what the paths are, not how they are spelled: a symlink to
	// the home directory, or /proc/self/root, is the same directory.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	home, _ := os.UserHomeDir()
	if sameDir(real, string(filepath.Separator)) || home != "" && sameDir(real, home) {
		return "", fmt.Errorf("refusing the implicit workspace %s: it would expose every file there; "+
			"run airlock from a project directory or pass --workspace DIR", abs)
	}
	return real, nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
