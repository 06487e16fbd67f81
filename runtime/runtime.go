// Package runtime opens everything one door needs to guard tool calls,
// from one Config, and closes it in one call: the workspace, the policy,
// the store (approvals, session state, the ledger), the audit log, the
// redactor, egress, the sandbox, the built-in tools, the approval key,
// and the gate over them all. Every door (airlock check, call, mcp,
// serve, run, and a Go program) opens its gate here, so each gets the
// same protections with the same defaults: nothing is left out unless a
// Config field says so by name.
//
//	rt, err := runtime.Open(ctx, &runtime.Config{Workspace: "."})
//	if err != nil { ... }
//	defer rt.Close()
//	res := rt.Gate.Call(ctx, tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"2*21"}`)})
//
// Several processes may open a runtime on the same workspace at once (two
// MCP clients, serve and call, the agent): they share its store and append
// to its one audit log, whose chain stays whole.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/protect"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/store/storeurl"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// AuditLockWait is how long one audit append waits for another process
// appending to the same log at that moment.
const AuditLockWait = 30 * time.Second

// The values of Config.CommandNetwork.
const (
	// CommandNetworkNone: run_command's commands reach no network.
	CommandNetworkNone = "none"
	// CommandNetworkProxy: they reach only the runtime's egress proxy,
	// under web_fetch's egress policy.
	CommandNetworkProxy = "proxy"
)

// Config is what a runtime is opened from. The zero value of each field
// is its safe default; only Workspace is required.
type Config struct {
	// Workspace is the directory the file tools are scoped to; airlock
	// keeps its state in its .airlock directory.
	Workspace string
	// Policy is a policy file whose rules are added on top of the
	// built-in policy; "" is the built-in policy alone.
	Policy string
	// Store is the store's URL (sqlite:PATH, postgres://..., redis://...);
	// "" is SQLite at .airlock/state.db in the workspace. Replicas share
	// one Postgres (or Redis) store.
	Store string
	// Sandbox names the backend run_command runs in: native (the
	// default), bwrap or container. It starts at the first command, so a
	// runtime that only checks never needs one.
	Sandbox string
	// CommandNetwork is CommandNetworkNone (the default, "") or
	// CommandNetworkProxy.
	CommandNetwork string
	// Credentials is a credentials file (mode 0600) of headers that
	// web_fetch and the egress proxy attach per exact host.
	Credentials string
	// ConfigFile is the config file these settings came from, if any
	// (the CLI's airlock.yaml). Like Policy and Credentials, it is never
	// written through a tool when it lies in the workspace.
	ConfigFile string
	// FAQ is a FAQ index file; it adds the faq_lookup tool.
	FAQ string
	// Envelopes wraps untrusted results in envelopes, for doors whose
	// results go to a model.
	Envelopes bool
	// Egress are web_fetch's egress options; nil is the defaults.
	Egress *egress.Options
	// ApprovalKey keys the hashes approvals are found by. Nil loads it
	// from ApprovalKeyPath(), creating it on first use: outside every
	// workspace, so that a store shipped in one holds no approval that
	// matches.
	ApprovalKey []byte
	// LedgerLease is how long a crashed process's call blocks its retry;
	// zero is ledger.DefaultLease.
	LedgerLease time.Duration
	// Tools are added to the built-in tools.
	Tools []tool.Tool
	// Upstreams is the gateway's file of upstream servers, if any: like
	// ConfigFile, never written through a tool.
	Upstreams string
	// NoBuiltins leaves airlock's own tools out: a gateway that offers
	// only its upstream servers' tools.
	NoBuiltins bool
	// Upstream, when set, adds the tools it returns once the store is
	// open: the gateway's upstream tools, whose pins the store holds. It
	// gets the runtime opened so far (Store, Policy, Workspace) and the
	// redactor the gate will use; what it opens, it closes itself.
	Upstream func(ctx context.Context, rt *Runtime, rd *redact.Redactor) ([]tool.Tool, error)
}

// Runtime is an open runtime: the gate, and what it was built from.
type Runtime struct {
	Gate      *gate.Gate
	Workspace *workspace.Workspace
	Policy    *policy.Policy
	Store     store.Backend
	Audit     *audit.Log
	Ledger    *ledger.Ledger
	// Egress is web_fetch's client: its Check is the gate's URL guard.
	Egress *egress.Client

	closers []func() error // in the order opened; Close runs them backwards
}

// Open opens the runtime cfg describes. On an error nothing stays open.
func Open(ctx context.Context, cfg *Config) (*Runtime, error) {
	if cfg == nil || cfg.Workspace == "" {
		return nil, errors.New("runtime: Config.Workspace is empty: name the directory the file tools are scoped to")
	}
	rt := &Runtime{}
	if err := rt.open(ctx, cfg); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// open opens what Open does, into rt; whatever it opened before an error
// is in rt.closers.
func (rt *Runtime) open(ctx context.Context, cfg *Config) (err error) {
	if rt.Workspace, err = workspace.Open(cfg.Workspace, nil); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	rt.closers = append(rt.closers, rt.Workspace.Close)
	if err := CheckStateDir(rt.Workspace.Dir()); err != nil {
		return err
	}
	// A command's changes that a crash left half applied are finished
	// before anything else reads the workspace.
	if _, err := rt.Workspace.Recover(); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	rt.Policy = policy.Default()
	if cfg.Policy != "" {
		if rt.Policy, err = policy.Load(cfg.Policy); err != nil {
			return err
		}
	}
	reg, err := rt.registry(cfg)
	if err != nil {
		return err
	}
	if rt.Audit, err = audit.Open(AuditPath(rt.Workspace.Dir()), &audit.Options{LockWait: AuditLockWait, Redact: RedactEntry}); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	rt.closers = append(rt.closers, rt.Audit.Close)
	if rt.Store, err = OpenStore(ctx, cfg.Store, rt.Workspace.Dir()); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	rt.closers = append(rt.closers, rt.Store.Close)
	if _, err := rt.Store.Prune(ctx, time.Now()); err != nil {
		return err
	}
	key := cfg.ApprovalKey
	if key == nil {
		if key, err = LoadApprovalKey(""); err != nil {
			return err
		}
	}
	if rt.Ledger, err = ledger.New(rt.Store, &ledger.Options{Lease: cfg.LedgerLease}); err != nil {
		return err
	}
	allow := rt.Policy.RedactAllow()
	rd, err := redact.New(&redact.Options{Allow: redact.Allowlist{Values: allow.Values, Patterns: allow.Patterns}})
	if err != nil {
		return err
	}
	if cfg.Upstream != nil {
		more, err := cfg.Upstream(ctx, rt, rd)
		if err != nil {
			return err
		}
		for _, t := range more {
			if err := reg.Register(t); err != nil {
				return err
			}
		}
	}
	protected := rt.Policy.Protected().WithOwn(ownFiles(rt.Workspace.Dir(), cfg))
	rt.Gate, err = gate.New(reg, &gate.Options{
		Policy: rt.Policy, Workspace: rt.Workspace, Protected: protected,
		Commands: rt.Policy.Commands().WithProtected(protected), Egress: rt.Egress,
		Audit: rt.Audit, Approvals: rt.Store, ApprovalKey: key, Ledger: rt.Ledger, Sessions: rt.Store,
		Redactor: rd, Secrets: rt.Egress.InjectedValues(),
		Envelopes: cfg.Envelopes, OnFlagged: gate.FlagAction(rt.Policy.OnFlagged()),
	})
	return err
}

// ownFiles names airlock's own files for package protect: absolute, with
// symbolic links resolved where they exist, as the workspace's own path
// is, so that a file inside the workspace is known by either name.
func ownFiles(ws string, cfg *Config) protect.Own {
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		p, err := filepath.Abs(p)
		if err != nil {
			return ""
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return protect.Own{Workspace: abs(ws), Policy: abs(cfg.Policy), Credentials: abs(cfg.Credentials), Config: abs(cfg.ConfigFile), Upstreams: abs(cfg.Upstreams)}
}

// Close closes everything Open opened, the last opened first, and
// returns every error met.
func (rt *Runtime) Close() error {
	var errs []error
	for i := len(rt.closers) - 1; i >= 0; i-- {
		errs = append(errs, rt.closers[i]())
	}
	rt.closers = nil
	return errors.Join(errs...)
}

// registry holds the built-in tools on the runtime's workspace, and sets
// rt.Egress.
func (rt *Runtime) registry(cfg *Config) (*tool.Registry, error) {
	reg, fetcher, proxy, err := Registry(cfg, rt.Workspace)
	if proxy != nil {
		rt.closers = append(rt.closers, proxy.Close)
	}
	if err != nil {
		return nil, err
	}
	rt.Egress = fetcher
	return reg, nil
}

// Registry holds the built-in tools (calculate, web_fetch, run_command,
// the file tools on ws) unless cfg.NoBuiltins, faq_lookup when cfg names
// an index, and cfg.Tools. It returns web_fetch's egress client and, with
// CommandNetworkProxy, the egress proxy it started, which the caller
// closes (also when err is not nil). A nil ws gives a registry whose
// file tools refuse every call: enough to list the tools.
func Registry(cfg *Config, ws *workspace.Workspace) (*tool.Registry, *egress.Client, *EgressProxy, error) {
	eg := cfg.Egress
	if cfg.Credentials != "" {
		creds, err := egress.LoadCredentials(cfg.Credentials, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		o := egress.Options{}
		if eg != nil {
			o = *eg
		}
		o.Credentials = creds
		eg = &o
	}
	fetcher, err := egress.NewClient(eg)
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		cmdOpts tools.RunCommandOptions
		proxy   *EgressProxy
	)
	switch cfg.CommandNetwork {
	case "", CommandNetworkNone:
	case CommandNetworkProxy:
		if proxy, err = StartEgressProxy(fetcher); err != nil {
			return nil, nil, nil, err
		}
		cmdOpts.Proxy = proxy.Socket
	default:
		return nil, nil, nil, fmt.Errorf("command_network %q: want %s or %s", cfg.CommandNetwork, CommandNetworkNone, CommandNetworkProxy)
	}
	// Commands run on a copy-on-write view of the workspace, so that
	// their changes can be reviewed and rolled back.
	cmdOpts.Workspace = ws
	var list []tool.Tool
	if !cfg.NoBuiltins {
		list = append([]tool.Tool{tools.Calculate(), tools.WebFetch(fetcher),
			tools.RunCommand(LazySandbox(cfg.Sandbox), ws.Dir(), &cmdOpts)}, tools.FileTools(ws)...)
	}
	if cfg.FAQ != "" {
		faq, err := tools.LoadFAQ(cfg.FAQ)
		if err != nil {
			return nil, nil, proxy, err
		}
		list = append(list, faq)
	}
	list = append(list, cfg.Tools...)
	reg := tool.NewRegistry()
	for _, t := range list {
		if err := reg.Register(t); err != nil {
			return nil, nil, proxy, err
		}
	}
	return reg, fetcher, proxy, nil
}

// StateDir returns airlock's state directory inside a workspace.
func StateDir(ws string) string { return filepath.Join(ws, workspace.StateDir) }

// AuditPath is where a workspace's audit log lives.
func AuditPath(ws string) string { return filepath.Join(StateDir(ws), "audit.jsonl") }

// StatePath is where a workspace's embedded store lives.
func StatePath(ws string) string { return filepath.Join(StateDir(ws), "state.db") }

// CheckStateDir refuses a .airlock that is not a plain directory of this
// user's: a symlink would send the audit log and the store elsewhere, and
// a repository could ship one.
func CheckStateDir(ws string) error {
	fi, err := os.Lstat(StateDir(ws))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (a symlink?); airlock keeps its state there: remove it", StateDir(ws))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user; airlock keeps its state there: remove it", StateDir(ws))
	}
	return nil
}

// OpenStore opens the store at url, else the embedded SQLite store of the
// workspace ws (.airlock/state.db).
func OpenStore(ctx context.Context, url, ws string) (store.Backend, error) {
	if url != "" {
		return storeurl.Open(ctx, url)
	}
	if err := CheckStateDir(ws); err != nil {
		return nil, err
	}
	return sqlite.Open(StatePath(ws), nil)
}

// DefaultRedactor is the redactor of the embedded rules alone, with no
// policy's allowlist: what masks an audit entry's free text (its note: a
// tool's fault, a ledger's message; the entry holds no contents, only
// sizes and hashes) and a door's own log.
var DefaultRedactor = sync.OnceValue(func() *redact.Redactor {
	rd, err := redact.New(nil)
	if err != nil {
		panic("the embedded redaction rules are broken: " + err.Error()) // a test rules it out
	}
	return rd
})

// RedactEntry masks secrets in an audit entry's note: the audit log's
// Options.Redact.
func RedactEntry(e *audit.Entry) {
	e.Note, _ = DefaultRedactor().RedactString(e.Note)
}
