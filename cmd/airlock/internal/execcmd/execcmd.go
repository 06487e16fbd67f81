// Package execcmd is airlock exec: ARGV run directly in a sandbox, no shell
// and no command policy. It is its own package, importing only the
// sandbox backends, so that the CLI can serve it before the packages of
// the gate initialize (see package fastexec), and so that its start-up
// stays close to the sandbox's own.
package execcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/native"
)

// ExitSandbox is airlock exec's own failure, kept apart from the
// command's statuses: a bad flag, a backend that refuses, a fault.
const ExitSandbox = 125

// DefaultSandbox is the backend commands run in unless told otherwise.
const DefaultSandbox = "native"

// SandboxNames are the backends, in the order they are offered.
var SandboxNames = []string{"native", "bwrap", "container"}

// NewSandbox returns the native or the bwrap backend, with its defaults;
// the native backend's init is airlock-sandbox-init from airlock's own
// directory where it is installed (native.FindInit), this binary where
// not. The container backend, which speaks HTTP, comes through
// Options.NewSandbox, so that this package stays light.
func NewSandbox(name string) (sandbox.Sandbox, error) {
	switch name {
	case "native":
		return native.New(&native.Options{Exe: native.FindInit()})
	case "bwrap":
		return bwrap.New(nil), nil
	}
	return nil, fmt.Errorf("unknown sandbox backend %q: want %s", name, strings.Join(SandboxNames, ", "))
}

// Options are what the full CLI adds to exec. A nil *Options is exec
// without an egress proxy.
type Options struct {
	// Proxy starts an egress proxy for --network proxy, with the --resolve
	// pins, and returns its unix socket and how to stop it. Nil refuses
	// --network proxy.
	Proxy func(pins []string) (socket string, stop func(), err error)
	// NewSandbox returns the backend of a name; nil is execcmd's own
	// NewSandbox (native and bwrap).
	NewSandbox func(name string) (sandbox.Sandbox, error)
	// Overlay, for --session, makes a copy-on-write view of the
	// workspace at ws for one run and returns it with apply, which, once
	// the command has ended, applies its changes under the session (their
	// old versions kept for airlock rollback) and returns a line saying
	// what it did, and discard, for a run that did not happen. Nil
	// refuses --session.
	Overlay func(ws, session string) (ov *sandbox.Overlay, apply func() (string, error), discard func(), err error)
}

// NeedsFull reports whether args use what only the full CLI provides
// (the egress proxy, the container backend), so that the fast path leaves
// them to it.
func NeedsFull(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "network" || name == "resolve" || name == "session") {
			return true
		}
		if strings.HasPrefix(a, "-") && name == "backend" && (strings.HasSuffix(a, "=container") || i+1 < len(args) && args[i+1] == "container") {
			return true
		}
	}
	return false
}

// Run is airlock exec with its arguments (those after "exec").
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, opts *Options) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", DefaultSandbox, "the sandbox `backend`: "+strings.Join(SandboxNames, ", "))
	workspaceDir := fs.String("workspace", "", "the workspace `DIR` mounted at /workspace (default: the current directory)")
	readOnly := fs.Bool("read-only", false, "mount the workspace read-only")
	timeout := fs.Duration("timeout", sandbox.DefaultWall, "wall-clock limit, like 2s or 500ms; the whole process tree is killed at it")
	cpu := fs.Duration("cpu", sandbox.DefaultCPU, "CPU-time limit")
	memory := sizeFlag{n: sandbox.DefaultMemory}
	fs.Var(&memory, "memory", "memory limit of the whole tree, like 64M or 1G")
	output := sizeFlag{n: sandbox.DefaultOutput}
	fs.Var(&output, "output", "bytes of stdout and of stderr each kept, like 1M; past it the tree is killed")
	pids := fs.Int("pids", sandbox.DefaultPids, "most processes and threads at once")
	asJSON := fs.Bool("json", false, "print one JSON object with the outcome instead of passing the output through")
	degraded := fs.Bool("allow-degraded", false, "run even where a layer cannot be applied; the JSON's enforced and degraded say what was")
	session := fs.String("session", "", "run on a copy-on-write view of the workspace and apply its changes after, kept under the session `ID` for airlock rollback and airlock diff")
	network := fs.String("network", "none", "none, or proxy: the command reaches only airlock's egress proxy (public hosts on ports 80 and 443), at $HTTP_PROXY")
	var pins listFlag
	fs.Var(&pins, "resolve", "with --network proxy, pin a host name's addresses as `HOST:IP[,IP...]` (repeatable)")
	var env envFlag
	fs.Var(&env, "env", "`KEY=VALUE` in the command's environment (repeatable); nothing of airlock's own environment is passed")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock exec [flags] -- ARGV...\n\nRuns ARGV directly in the sandbox: no shell and no command policy (run_command is the gated path).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return ExitSandbox
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return ExitSandbox
	}
	ws := *workspaceDir
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintf(stderr, "airlock exec: %v\n", err)
			return ExitSandbox
		}
		ws = wd
	}
	ws, err := absPath(ws)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return ExitSandbox
	}
	newSB := NewSandbox
	if opts != nil && opts.NewSandbox != nil {
		newSB = opts.NewSandbox
	}
	sb, err := newSB(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return ExitSandbox
	}
	input, err := readStdin(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: reading stdin: %v\n", err)
		return ExitSandbox
	}
	spec := sandbox.Spec{
		Argv: argv, Env: env, Stdin: input,
		Workspace: ws, WorkspaceWritable: !*readOnly,
		AllowDegraded: *degraded,
		Limits:        sandbox.Limits{Wall: *timeout, CPU: *cpu, Memory: memory.n, Pids: *pids, Output: output.n},
	}
	switch *network {
	case "none":
	case "proxy":
		if opts == nil || opts.Proxy == nil {
			fmt.Fprintln(stderr, "airlock exec: --network proxy needs the egress proxy, which this build lacks")
			return ExitSandbox
		}
		socket, stop, err := opts.Proxy(pins)
		if err != nil {
			fmt.Fprintf(stderr, "airlock exec: %v\n", err)
			return ExitSandbox
		}
		defer stop()
		spec.Network, spec.Proxy = sandbox.NetworkProxy, socket
	default:
		fmt.Fprintf(stderr, "airlock exec: --network must be none or proxy, not %q\n", *network)
		return ExitSandbox
	}
	var apply func() (string, error)
	if *session != "" {
		if *readOnly || opts == nil || opts.Overlay == nil {
			fmt.Fprintln(stderr, "airlock exec: --session needs a writable workspace and the full CLI")
			return ExitSandbox
		}
		ov, ap, discard, err := opts.Overlay(ws, *session)
		if err != nil {
			fmt.Fprintf(stderr, "airlock exec: %v\n", err)
			return ExitSandbox
		}
		spec.Overlay, apply = ov, ap
		defer func() {
			if apply != nil {
				discard()
			}
		}()
	}
	res, err := sb.Run(ctx, spec)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return ExitSandbox
	}
	if apply != nil {
		line, err := apply()
		apply = nil
		if err != nil {
			fmt.Fprintf(stderr, "airlock exec: the command ran, but its changes could not be applied: %v\n", err)
			return ExitSandbox
		}
		fmt.Fprintf(stderr, "airlock exec: %s\n", line)
	}
	if *asJSON {
		line, _ := json.Marshal(execJSON(&res))
		fmt.Fprintf(stdout, "%s\n", line)
		return res.ExitCode
	}
	stdout.Write(res.Stdout)
	stderr.Write(res.Stderr)
	switch {
	case res.Killed != sandbox.KilledNone:
		fmt.Fprintf(stderr, "airlock exec: killed: %s\n", res.Killed)
	case res.Truncated:
		fmt.Fprintln(stderr, "airlock exec: output truncated at --output")
	}
	return res.ExitCode
}

// execOutcome is airlock exec --json's one object.
type execOutcome struct {
	ExitCode   int      `json:"exit_code"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	Truncated  bool     `json:"truncated"`
	TimedOut   bool     `json:"timed_out"`
	Killed     string   `json:"killed"`
	Enforced   []string `json:"enforced"`
	Degraded   []string `json:"degraded,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	// InvalidUTF8 says stdout or stderr held bytes that are not UTF-8,
	// replaced by U+FFFD here so that the JSON carries them safely.
	InvalidUTF8 bool `json:"invalid_utf8,omitempty"`
}

func execJSON(r *sandbox.Result) execOutcome {
	out, bad1 := validText(r.Stdout)
	errOut, bad2 := validText(r.Stderr)
	o := execOutcome{
		ExitCode: r.ExitCode, Stdout: out, Stderr: errOut,
		Truncated: r.Truncated, TimedOut: r.TimedOut, Killed: string(r.Killed),
		Enforced: layerNames(r.Enforced), Degraded: layerNames(r.Degraded),
		DurationMS: r.Duration.Milliseconds(), InvalidUTF8: bad1 || bad2,
	}
	return o
}

// validText returns b as UTF-8, each invalid byte replaced, and whether
// any was.
func validText(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}

func layerNames(ls []sandbox.Layer) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// sizeFlag is a byte size written like 512, 64K, 64M or 1G (powers of 1024).
type sizeFlag struct{ n int64 }

func (f *sizeFlag) String() string { return strconv.FormatInt(f.n, 10) }

func (f *sizeFlag) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	f.n = n
	return nil
}

// ParseSize reads a byte size: digits, then optionally K, M or G (with or
// without a trailing B or iB).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	shift := 0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
		if shift > 0 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a size: write it like 512, 64K, 64M or 1G", s)
	}
	return n << shift, nil
}

// listFlag gathers a repeated flag's values.
type listFlag []string

func (f *listFlag) String() string { return strings.Join(*f, ",") }

func (f *listFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

// readStdin reads what the command gets on its standard input, at most
// sandbox.MaxStdin (more is refused by the Spec); a terminal gives it
// nothing rather than waiting for an end of input no one will type.
func readStdin(stdin io.Reader) ([]byte, error) {
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	return io.ReadAll(io.LimitReader(stdin, sandbox.MaxStdin+1))
}

// envFlag gathers repeated --env KEY=VALUE.
type envFlag []string

func (f *envFlag) String() string { return strings.Join(*f, ",") }

func (f *envFlag) Set(s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", s)
	}
	*f = append(*f, s)
	return nil
}

// absPath is path/filepath.Abs on Linux, on package path: filepath
// initializes too late for the fast start (see package fastexec).
func absPath(p string) (string, error) {
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return path.Join(wd, p), nil
}
