package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gateway"
	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/untrusted"
)

func runGateway(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "pins":
			return runGatewayPins(ctx, args[1:], stdout, stderr)
		case "accept":
			return runGatewayAccept(ctx, args[1:], stdout, stderr)
		case "import":
			return runGatewayImport(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, true)
	overHTTP := fs.Bool("http", false, "serve MCP over Streamable HTTP at --addr (/mcp) instead of stdio")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: airlock gateway [--upstreams FILE] [--http [--addr HOST:PORT]] [flags]
       airlock gateway pins [--server NAME] [--json]
       airlock gateway accept [--hash HASH] SERVER__TOOL...
       airlock gateway import claude|codex|cursor|vscode|gemini [--from FILE]

Offers the tools of the upstream MCP servers the upstreams file names, each
as SERVER__TOOL, to one MCP client over stdio (or to many over HTTP), every
call through airlock's gate. Each tool's definition is pinned when first
seen; a changed or flagged one is disabled until a person accepts it.

flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "gateway", err)
	}
	askClient, err := set.askClient()
	if err != nil {
		return misused(stderr, "gateway", err)
	}
	if *overHTTP {
		if err := mcp.CheckExposure(set.Addr, set.Tokens); err != nil {
			return misused(stderr, "gateway", err)
		}
	}
	path, err := upstreamsPath(set)
	if err != nil {
		return misused(stderr, "gateway", err)
	}
	cfg, err := gateway.LoadConfig(path)
	if err != nil {
		return refused(stderr, "gateway", err)
	}
	var creds []egress.Credential
	if set.Credentials != "" {
		if creds, err = egress.LoadCredentials(set.Credentials, nil); err != nil {
			return refused(stderr, "gateway", err)
		}
	}
	set.envelopes = true
	warnEnvSecrets(stderr)
	rcfg, err := runtimeConfig(set, "", nil)
	if err != nil {
		return refused(stderr, "gateway", err)
	}
	rcfg.Upstreams, rcfg.NoBuiltins = path, !cfg.Builtins
	var gw *gateway.Gateway
	rcfg.Upstream = func(ctx context.Context, rt *runtime.Runtime, rd *redact.Redactor) ([]tool.Tool, error) {
		var err error
		gw, err = gateway.Open(ctx, cfg, &gateway.Options{
			Pins: rt.Store, Credentials: creds, Logger: gatewayLog(stderr, rd),
			Redact: func(s string) string { out, _ := rd.RedactString(s); return out },
			Elicit: func(callCtx context.Context, _ string, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return mcp.RelayElicitation(callCtx, req.Params)
			},
		})
		if err != nil {
			return nil, err
		}
		return gw.Tools(), nil
	}
	rt, err := runtime.Open(ctx, rcfg)
	if gw != nil {
		defer gw.Close()
	}
	if err != nil {
		return refused(stderr, "gateway", err)
	}
	defer rt.Close()
	opts := &mcp.Options{Name: "airlock-gateway", Version: Version, Role: set.Role, Mode: set.Mode,
		Instructions: untrusted.Instructions, Logger: serverLog(stderr), Visible: gw.Visible, Upstream: gw}
	if *overHTTP {
		// Over HTTP a session's steps are counted in the store. Over
		// stdio the one session is this process's own, whole, so its
		// steps are counted in memory (mcp.Options.Sessions), a durable
		// write less per call; the gate still reads the session's kill
		// flag, taint and provenance from the store.
		opts.Sessions = rt.Store
	}
	if askClient { // out-of-band: no Decide, so nobody is asked (see runMCP)
		opts.Decide = recordDecision(rt.Store)
	}
	if !*overHTTP {
		signal.Ignore(syscall.SIGPIPE) // as airlock mcp: a closed client ends the session, not airlock
		if err := mcp.ServeStdio(ctx, rt.Gate, stdin, stdout, opts); err != nil && !errors.Is(err, context.Canceled) {
			return refused(stderr, "gateway", err)
		}
		return exitOK
	}
	h := &mcp.HTTPOptions{Addr: set.Addr, Tokens: set.Tokens, AllowedHosts: set.AllowedHosts, AllowedOrigins: set.AllowedOrigins}
	handler, err := mcp.NewHTTPHandler(rt.Gate, opts, h)
	if err != nil {
		return misused(stderr, "gateway", err)
	}
	ln, err := net.Listen("tcp", set.Addr)
	if err != nil {
		return refused(stderr, "gateway", err)
	}
	fmt.Fprintf(stderr, "airlock gateway: MCP at http://%s/mcp, %d upstream servers from %s\n", ln.Addr(), len(cfg.Servers), path)
	if err := mcp.Serve(ctx, ln, handler, h); err != nil && !errors.Is(err, context.Canceled) {
		return refused(stderr, "gateway", err)
	}
	return exitOK
}

// gatewayLog is the gateway's log: upstream stderr and lifecycle events
// at info and above, every message and string attribute redacted.
func gatewayLog(stderr io.Writer, rd *redact.Redactor) *slog.Logger {
	return slog.New(redact.NewHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}), rd))
}

// upstreamsPath is the upstreams file: the setting, else UpstreamsFile in
// the user's config directory.
func upstreamsPath(set *settings) (string, error) {
	if set.Upstreams != "" {
		return filepath.Abs(set.Upstreams)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no upstreams file: pass --upstreams FILE (%v)", err)
	}
	return filepath.Join(dir, "airlock", UpstreamsFile), nil
}

// gatewaySeparator is the upstreams file's separator, for naming tools,
// or the default when there is no file to read.
func gatewaySeparator(set *settings) string {
	if path, err := upstreamsPath(set); err == nil {
		if cfg, err := gateway.LoadConfig(path); err == nil {
			return cfg.Separator
		}
	}
	return gateway.DefaultSeparator
}

func runGatewayPins(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway pins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	server := fs.String("server", "", "list only this upstream server's pins")
	asJSON := fs.Bool("json", false, "print one JSON object per pin")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock gateway pins [--server NAME] [--json]\n\nLists the pinned definitions of the upstream servers' tools: offered, changed\n(with the diff from the pinned definition to the offered one) or flagged.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "gateway pins", err)
	}
	db, err := openStore(set)
	if err != nil {
		return refused(stderr, "gateway pins", err)
	}
	defer db.Close()
	list, err := gateway.Pins(ctx, db, gatewaySeparator(set), *server)
	if err != nil {
		return refused(stderr, "gateway pins", err)
	}
	waiting := 0
	for _, p := range list {
		if p.State != gateway.StateOffered {
			waiting++
		}
		if *asJSON {
			line, _ := json.Marshal(p)
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		name := p.Tool
		if name == "" {
			name = p.Server + "/" + p.Kind + "/" + p.Name
		}
		fmt.Fprintf(stdout, "%-40s %-8s %s\n", name, p.State, gateway.ShortHash(p.Hash))
		if len(p.Signals) > 0 {
			fmt.Fprintf(stdout, "    flagged for: %s\n", strings.Join(p.Signals, ", "))
		}
		if p.Diff != "" {
			fmt.Fprintf(stdout, "    offered now: %s\n", gateway.ShortHash(p.SeenHash))
			for _, line := range strings.Split(strings.TrimRight(p.Diff, "\n"), "\n") {
				fmt.Fprintf(stdout, "    %s\n", line)
			}
		}
	}
	if !*asJSON {
		fmt.Fprintf(stderr, "%d pinned, %d waiting for a person (airlock gateway accept NAME)\n", len(list), waiting)
	}
	return exitOK
}

func runGatewayAccept(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway accept", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	hash := fs.String("hash", "", "accept only if the waiting definition still has this hash (or its first 12 digits), as `airlock gateway pins` showed it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock gateway accept [--hash HASH] NAME...\n\nAccepts the changed or flagged definition of each named tool (SERVER__TOOL,\nor SERVER/KIND/NAME for a prompt or resource), as `airlock gateway pins`\nshows it. The gateway offers it from its next start.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "gateway accept", err)
	}
	db, err := openStore(set)
	if err != nil {
		return refused(stderr, "gateway accept", err)
	}
	defer db.Close()
	sep := gatewaySeparator(set)
	by := decider()
	code := exitOK
	for _, name := range fs.Args() {
		k, ok := pinKey(name, sep)
		if !ok {
			fmt.Fprintf(stderr, "airlock gateway accept: %q is neither SERVER%sTOOL nor SERVER/KIND/NAME\n", name, sep)
			code = exitUsage
			continue
		}
		want := *hash
		if want != "" {
			if want, err = fullHash(ctx, db, k, want); err != nil {
				fmt.Fprintf(stderr, "airlock gateway accept: %s: %v\n", name, err)
				code = exitRefused
				continue
			}
		}
		p, err := gateway.Accept(ctx, db, k, want, by, time.Now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			fmt.Fprintf(stderr, "airlock gateway accept: %s: no such pin; `airlock gateway pins` lists them\n", name)
			code = exitRefused
		case errors.Is(err, gateway.ErrNothingToAccept):
			fmt.Fprintf(stdout, "%s: nothing waits to be accepted; it is offered as pinned (%s)\n", name, gateway.ShortHash(p.Hash))
		case err != nil:
			fmt.Fprintf(stderr, "airlock gateway accept: %s: %v\n", name, err)
			code = exitRefused
		default:
			fmt.Fprintf(stdout, "%s: accepted %s; the gateway offers it from its next start\n", name, gateway.ShortHash(p.Hash))
		}
	}
	return code
}

// pinKey reads SERVER<sep>TOOL, or SERVER/KIND/NAME.
func pinKey(name, sep string) (store.PinKey, bool) {
	if parts := strings.SplitN(name, "/", 3); len(parts) == 3 {
		switch parts[1] {
		case store.PinTool, store.PinPrompt, store.PinResource:
			return store.PinKey{Server: parts[0], Kind: parts[1], Name: parts[2]}, parts[0] != "" && parts[2] != ""
		}
		return store.PinKey{}, false
	}
	server, tl, ok := strings.Cut(name, sep)
	return store.PinKey{Server: server, Kind: store.PinTool, Name: tl}, ok && server != "" && tl != ""
}

// fullHash expands the prefix of a waiting definition's hash that a person
// copied from `airlock gateway pins`.
func fullHash(ctx context.Context, db store.Pins, k store.PinKey, prefix string) (string, error) {
	p, err := db.Pin(ctx, k)
	if err != nil {
		return "", err
	}
	for _, h := range []string{p.SeenHash, p.Hash} {
		if h != "" && len(prefix) >= 12 && strings.HasPrefix(h, prefix) {
			return h, nil
		}
	}
	return "", fmt.Errorf("the waiting definition is not %s: review `airlock gateway pins` again", prefix)
}

func runGatewayImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	var from []string
	fs.Func("from", "read this client config `FILE` (repeatable; default: the client's project file in the current directory, then its user file)", func(v string) error {
		from = append(from, v)
		return nil
	})
	dryRun := fs.Bool("dry-run", false, "print the upstreams file that would be written, and write nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: airlock gateway import claude|codex|cursor|vscode|gemini [--from FILE] [--upstreams FILE] [--dry-run]

Reads the MCP servers a client is configured with, adds them to the gateway's
upstreams file (never replacing a server already there), and prints the one
entry that replaces them in the client. Secrets found in env variables and
headers go to a separate credentials file (mode 600), never to the upstreams
file.

flags:`)
		fs.PrintDefaults()
	}
	// The client comes first (airlock gateway import claude --from F),
	// and the flag package stops at the first argument that is not a
	// flag: so it is taken off before the flags are parsed.
	var client string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		client, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if client == "" && fs.NArg() == 1 {
		client = fs.Arg(0)
	} else if client == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "gateway import", err)
	}
	out, err := upstreamsPath(set)
	if err != nil {
		return misused(stderr, "gateway import", err)
	}
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	explicit := len(from) > 0
	if !explicit {
		if from = gateway.DefaultImportPaths(client, home, cwd); from == nil {
			return misused(stderr, "gateway import", fmt.Errorf("unknown client %q: want claude, codex, cursor, vscode or gemini", client))
		}
	}
	cfg := &gateway.Config{Version: 1, Servers: map[string]*gateway.Server{}}
	if _, err := os.Stat(out); err == nil {
		if cfg, err = gateway.LoadConfig(out); err != nil {
			return refused(stderr, "gateway import", err)
		}
	}
	var creds []gateway.SuggestedCredential
	read := 0
	for _, path := range from {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && !explicit {
			continue
		}
		if err != nil {
			return refused(stderr, "gateway import", err)
		}
		read++
		im, err := gateway.Import(client, data, &gateway.ImportOptions{Project: cwd, Home: home})
		if err != nil {
			return refused(stderr, "gateway import", fmt.Errorf("%s: %w", path, err))
		}
		added, conflicts := gateway.MergeImported(cfg, im)
		for _, w := range append(im.Warnings, conflicts...) {
			fmt.Fprintf(stderr, "airlock gateway import: %s: %s: %s\n", path, orFile(w.Server), w.Message)
		}
		creds = append(creds, added.Credentials...)
		fmt.Fprintf(stderr, "airlock gateway import: %s: %d servers added\n", path, len(added.Servers))
	}
	if read == 0 {
		return refused(stderr, "gateway import", fmt.Errorf("no %s config found (looked at %s); name one with --from FILE", client, strings.Join(from, ", ")))
	}
	if err := cfg.Check(); err != nil {
		return refused(stderr, "gateway import", err)
	}
	data, err := cfg.Marshal()
	if err != nil {
		return refused(stderr, "gateway import", err)
	}
	if *dryRun {
		stdout.Write(data)
		if len(creds) > 0 {
			fmt.Fprintf(stderr, "airlock gateway import: %d secrets would go to a credentials file of their own\n", len(creds))
		}
		return exitOK
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return refused(stderr, "gateway import", err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return refused(stderr, "gateway import", err)
	}
	fmt.Fprintf(stderr, "airlock gateway import: wrote %s (%d servers)\n", out, len(cfg.Servers))
	credFlag := ""
	if len(creds) > 0 {
		path, err := writeSuggestedCredentials(filepath.Dir(out), creds)
		if err != nil {
			return refused(stderr, "gateway import", err)
		}
		fmt.Fprintf(stderr, "airlock gateway import: wrote %d secrets to %s (mode 600); run the gateway with --credentials %s, or merge them into your credentials file\n", len(creds), path, path)
		credFlag = path
	}
	bin, err := os.Executable()
	if err != nil {
		bin = "airlock"
	}
	entry, err := gateway.Replacement(client, out, bin)
	if err != nil {
		return refused(stderr, "gateway import", err)
	}
	if credFlag != "" {
		fmt.Fprintf(stderr, "airlock gateway import: add \"--credentials\", %q to the entry's args, or set credentials: in airlock.yaml\n", credFlag)
	}
	fmt.Fprintf(stderr, "airlock gateway import: replace the %s servers with this one entry:\n", client)
	fmt.Fprintln(stdout, entry)
	return exitOK
}

// orFile names a warning's server, or the file for a warning about it.
func orFile(server string) string {
	if server == "" {
		return "(file)"
	}
	return server
}

// writeSuggestedCredentials writes import's credentials to a new file in
// dir, mode 600, never over an existing one.
func writeSuggestedCredentials(dir string, creds []gateway.SuggestedCredential) (string, error) {
	data, err := gateway.CredentialsYAML(creds)
	if err != nil {
		return "", err
	}
	for i := 1; i < 100; i++ {
		name := "gateway-credentials.yaml"
		if i > 1 {
			name = fmt.Sprintf("gateway-credentials-%d.yaml", i)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		return path, f.Close()
	}
	return "", fmt.Errorf("%s holds 99 gateway-credentials files already: merge and remove them", dir)
}
