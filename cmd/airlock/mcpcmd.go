package main

import (
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/untrusted"

	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/store"
)

// Version is airlock's version, set at link time.
var Version = "dev"

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock mcp [flags]\n\nServes airlock's guarded tools to one MCP client over stdio.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "mcp", err)
	}
	askClient, err := set.askClient()
	if err != nil {
		return misused(stderr, "mcp", err)
	}
	set.envelopes = true
	warnEnvSecrets(stderr)
	opts := &mcp.Options{Name: "airlock", Version: Version, Role: set.Role, Mode: set.Mode, Instructions: untrusted.Instructions, Logger: serverLog(stderr)}
	var g *gate.Gate
	if set.explicitWorkspace {
		e, err := openRuntime(ctx, set, "", nil)
		if err != nil {
			return refused(stderr, "mcp", err)
		}
		defer e.Close()
		g, opts.Decide, opts.Sessions = e.Gate, recordDecision(e.Store), e.Store
	} else {
		// The workspace is the client's first root, known once it has
		// connected: calls wait for it, and only the listing is ready now.
		// So is the store; until then there is none to count steps in,
		// and the one session of this process counts them in memory
		// (Options.Sessions nil), which it holds whole.
		lazy := &rootsEnv{set: set}
		defer lazy.Close()
		if g, err = listingGate(set); err != nil {
			return refused(stderr, "mcp", err)
		}
		opts.GateFor = lazy.gate
		opts.Decide = func(ctx context.Context, ss *sdk.ServerSession, id string, approve bool, by string) error {
			e, err := lazy.env(ctx, ss)
			if err != nil {
				return err
			}
			return recordDecision(e.Store)(ctx, ss, id, approve, by)
		}
	}
	if !askClient {
		// Out-of-band: without Decide the door asks nobody, and every
		// ask ends as approval_required for airlock approve.
		opts.Decide = nil
	}
	// A client that is killed closes its end of stdout: the next write
	// must fail with EPIPE, which ends the session like the end of its
	// input, rather than kill airlock with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	if err := mcp.ServeStdio(ctx, g, stdin, stdout, opts); err != nil && !errors.Is(err, context.Canceled) {
		return refused(stderr, "mcp", err)
	}
	return exitOK
}

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, true)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock serve [--addr HOST:PORT] [flags]\n\nServes MCP over Streamable HTTP at /mcp, and /healthz. Binding anywhere but\nloopback needs bearer tokens (tokens: in airlock.yaml, or AIRLOCK_TOKENS).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "serve", err)
	}
	askClient, err := set.askClient()
	if err != nil {
		return misused(stderr, "serve", err)
	}
	replicas, err := set.replicas()
	if err != nil {
		return misused(stderr, "serve", err)
	}
	// An address others can reach without tokens is refused before
	// anything is opened or printed.
	if err := mcp.CheckExposure(set.Addr, set.Tokens); err != nil {
		return misused(stderr, "serve", err)
	}
	set.envelopes = true
	warnEnvSecrets(stderr)
	cfg, err := runtimeConfig(set, "", nil)
	if err != nil {
		return refused(stderr, "serve", err)
	}
	h := &mcp.HTTPOptions{Addr: set.Addr, Tokens: set.Tokens, AllowedHosts: set.AllowedHosts, AllowedOrigins: set.AllowedOrigins}
	if replicas {
		// The replicas of a deployment share the approval key file, so
		// the key their session ids are signed with comes from it: the
		// gate and the session layer use the same key bytes.
		if cfg.ApprovalKey, err = runtime.LoadApprovalKey(""); err != nil {
			return refused(stderr, "serve", err)
		}
		h.Replicas, h.SessionKey = true, sessionKey(cfg.ApprovalKey)
	}
	e, err := runtime.Open(ctx, cfg)
	if err != nil {
		return refused(stderr, "serve", err)
	}
	defer e.Close()
	opts := &mcp.Options{Name: "airlock", Version: Version, Role: set.Role, Mode: set.Mode, Instructions: untrusted.Instructions,
		Logger: serverLog(stderr), Sessions: e.Store}
	if askClient { // out-of-band: no Decide, so nobody is asked (see runMCP)
		opts.Decide = recordDecision(e.Store)
	}
	handler, err := mcp.NewHTTPHandler(e.Gate, opts, h)
	if err != nil {
		return misused(stderr, "serve", err)
	}
	// The banner comes once the address is bound, so that it never
	// announces a server that did not start.
	ln, err := net.Listen("tcp", set.Addr)
	if err != nil {
		return refused(stderr, "serve", err)
	}
	fmt.Fprintf(stderr, "airlock serve: MCP at http://%s/mcp, workspace %s\n", ln.Addr(), e.Workspace.Dir())
	if replicas {
		keyPath, _ := runtime.ApprovalKeyPath()
		fmt.Fprintf(stderr, "airlock serve: replicas: any replica with the same store and approval key (%s, fingerprint %s) serves this server's sessions\n",
			keyPath, keyFingerprint(h.SessionKey))
	}
	if err := mcp.Serve(ctx, ln, handler, h); err != nil && !errors.Is(err, context.Canceled) {
		return refused(stderr, "serve", err)
	}
	return exitOK
}

// sessionKeyLabel sets the key MCP session ids are signed with apart from
// every other use of the approval key it is derived from.
const sessionKeyLabel = "airlock mcp session key"

// sessionKey derives the key replicas sign MCP session ids and approval
// request states with from the approval key, which they all share.
func sessionKey(approvalKey []byte) []byte {
	return []byte(canon.Bind(approvalKey, sessionKeyLabel))
}

// keyFingerprintLen is how many hex digits of a key's fingerprint the
// banner shows: enough to tell two keys apart at a glance.
const keyFingerprintLen = 12

// keyFingerprint names a key without revealing it, so that an operator
// can see that every replica has the same: a replica with another key
// answers 404 to every session the others opened.
func keyFingerprint(key []byte) string {
	return canon.Bind(key, "airlock key fingerprint")[:keyFingerprintLen]
}

// recordDecision records the answer a person gave through MCP elicitation in
// the store, where the gate's re-run of the call finds it. A client that
// cannot elicit, or any client with approvals: out-of-band, is never asked:
// the result names the approval for `airlock approve`.
func recordDecision(db store.Approvals) func(context.Context, *sdk.ServerSession, string, bool, string) error {
	return func(ctx context.Context, _ *sdk.ServerSession, id string, approve bool, by string) error {
		_, err := db.DecideApproval(ctx, id, approve, by, time.Now())
		return err
	}
}

// rootsEnv builds the gate of a stdio session whose workspace was not named:
// the client's first root when it offers roots, else the current directory
// (refused if that is / or the home directory). One stdio process serves
// one session, so it is built once.
type rootsEnv struct {
	set  *settings
	once sync.Once
	e    *runtime.Runtime
	err  error
}

func (r *rootsEnv) env(ctx context.Context, ss *sdk.ServerSession) (*runtime.Runtime, error) {
	r.once.Do(func() {
		root := ""
		if ss != nil {
			if res, err := ss.ListRoots(ctx, nil); err == nil && len(res.Roots) > 0 {
				if u, err := url.Parse(res.Roots[0].URI); err == nil && u.Scheme == "file" {
					root = u.Path
				}
			}
		}
		r.e, r.err = openRuntime(ctx, r.set, root, nil)
	})
	return r.e, r.err
}

func (r *rootsEnv) gate(ctx context.Context, ss *sdk.ServerSession) (*gate.Gate, error) {
	e, err := r.env(ctx, ss)
	if err != nil {
		return nil, err
	}
	return e.Gate, nil
}

func (r *rootsEnv) Close() error {
	if r.e != nil {
		return r.e.Close()
	}
	return nil
}

// listingGate has the same tools as a session's gate, to list them before
// the workspace is known; it runs nothing (with no policy it would deny
// every call), so it needs none of the protections.
func listingGate(set *settings) (*gate.Gate, error) {
	// No command network: the listing runs no command, so it needs no proxy.
	reg, _, _, err := runtime.Registry(&runtime.Config{Sandbox: set.Sandbox, Credentials: set.Credentials, FAQ: set.FAQ}, nil)
	if err != nil {
		return nil, err
	}
	// The policy decides what each role is shown (tools/list), so the
	// listing has the one the calls will have.
	pol := policy.Default()
	if set.Policy != "" {
		if pol, err = policy.Load(set.Policy); err != nil {
			return nil, err
		}
	}
	return gate.New(reg, &gate.Options{Policy: pol, Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
}
