package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"airlock.dev/airlock/plural"
	"airlock.dev/airlock/runtime"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// runtimeConfig is the runtime the settings describe, on the workspace
// they decide (firstRoot is the MCP client's first root, if any, for an
// implicit workspace), with web_fetch's egress options eg (nil means the
// defaults).
func runtimeConfig(s *settings, firstRoot string, eg *egress.Options) (*runtime.Config, error) {
	dir, err := s.workspaceDir(firstRoot)
	if err != nil {
		return nil, err
	}
	lease, err := ledgerLease()
	if err != nil {
		return nil, err
	}
	return &runtime.Config{Workspace: dir, Policy: s.Policy, Store: s.Store, Sandbox: s.Sandbox,
		CommandNetwork: s.CommandNetwork, Credentials: s.Credentials, FAQ: s.FAQ, ConfigFile: s.file,
		Envelopes: s.envelopes, Egress: eg, LedgerLease: lease}, nil
}

// openRuntime opens the runtime the settings describe (see runtimeConfig).
func openRuntime(ctx context.Context, s *settings, firstRoot string, eg *egress.Options) (*runtime.Runtime, error) {
	cfg, err := runtimeConfig(s, firstRoot, eg)
	if err != nil {
		return nil, err
	}
	return runtime.Open(ctx, cfg)
}

// warnEnvSecrets says which of airlock's own environment variables hold
// secrets: they never reach a sandboxed command (its environment is an
// allowlist), but whoever runs airlock should know they are there.
func warnEnvSecrets(stderr io.Writer) {
	for _, f := range runtime.DefaultRedactor().ScanEnv(os.Environ()) {
		fmt.Fprintf(stderr, "airlock: warning: $%s holds what looks like a secret (%s); it is kept out of every sandbox and result\n", f.Name, f.Kind)
	}
}

// serverLog is the MCP doors' log: warnings and errors to stderr, with
// every message and string attribute redacted.
func serverLog(stderr io.Writer) *slog.Logger {
	return slog.New(redact.NewHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), runtime.DefaultRedactor()))
}

// ledgerLease is the ledger's lease: AIRLOCK_LEDGER_LEASE (a duration
// such as 30s) or ledger.DefaultLease. How long a crashed process's call
// blocks a retry; tests shorten it.
func ledgerLease() (time.Duration, error) {
	v := os.Getenv("AIRLOCK_LEDGER_LEASE")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("AIRLOCK_LEDGER_LEASE=%q: want a duration of at least 1s, such as 30s", v)
	}
	return d, nil
}

// checkLine is one line of airlock check's output.
type checkLine struct {
	Decision string `json:"decision"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Hint     string `json:"hint"`
	Rule     string `json:"rule"`
}

// MaxProposalLine bounds the bytes of one airlock check input line kept in
// memory; a longer line is answered arguments_too_large.
const MaxProposalLine = 8 << 20

func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	pins := egress.Pins{}
	fs.Var(pinFlag{pins}, "resolve", "taken as call takes it, `HOST:IP[,IP...]`; check resolves no name: web_fetch's URL is judged as written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock check [flags] < proposals.jsonl\n\nEach input line is {\"tool\":\"...\",\"args\":{...}}; each output line the decision.\nEvery guard runs; nothing executes.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "airlock check: proposals are read from stdin, not from arguments")
		return exitUsage
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "check", err)
	}
	e, err := openRuntime(ctx, set, "", egressOptions(pins))
	if err != nil {
		return refused(stderr, "check", err)
	}
	defer e.Close()

	err = answerLines(ctx, stdin, stdout, MaxProposalLine, func(line []byte, tooLong bool) any {
		return checkOne(ctx, e.Gate, set, line, tooLong)
	})
	if err != nil {
		return refused(stderr, "check", err)
	}
	return exitOK
}

func checkOne(ctx context.Context, g *gate.Gate, set *settings, line []byte, tooLong bool) checkLine {
	deny := func(code tool.Code, msg, hint string) checkLine {
		return checkLine{Decision: "deny", Code: string(code), Message: msg, Hint: hint}
	}
	if tooLong {
		return deny(tool.CodeArgumentsTooLarge, fmt.Sprintf("the line is longer than %d bytes", MaxProposalLine),
			"Send smaller arguments")
	}
	var p struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || dec.More() {
		return deny(tool.CodeInvalidCall, "the line is not a proposal {\"tool\":\"...\",\"args\":{...}}",
			`Send one JSON object per line, as in {"tool":"calculate","args":{"expression":"1+2"}}`)
	}
	if p.Args == nil {
		p.Args = json.RawMessage(`{}`)
	}
	res := g.Check(ctx, tool.Call{Tool: p.Tool, Args: p.Args, Role: set.Role, Mode: set.Mode})
	out := checkLine{Decision: res.Decision, Rule: res.Rule}
	if res.Error != nil {
		out.Code, out.Message, out.Hint = string(res.Error.Code), res.Error.Message, res.Error.Hint
	}
	return out
}

// callOutput is airlock call --json's object.
type callOutput struct {
	OK       bool        `json:"ok"`
	Content  string      `json:"content"`
	Error    *tool.Error `json:"error,omitempty"`
	Decision string      `json:"decision"`
	Rule     string      `json:"rule,omitempty"`
	Session  string      `json:"session"`
	CallID   string      `json:"call_id"`
	Source   string      `json:"source,omitempty"`
	// Approval names the pending approval of an approval_required result.
	Approval *tool.ApprovalRequest `json:"approval,omitempty"`
	// Replayed: the ledger's stored result of the same call; nothing ran.
	Replayed bool `json:"replayed,omitempty"`
	// Retry: an earlier attempt of this call may have had its effect.
	Retry bool `json:"retry,omitempty"`
}

func runCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	asJSON := fs.Bool("json", false, "print one JSON object")
	session := fs.String("session", "", "the session `ID` (a new one when absent; printed in the result)")
	idemKey := fs.String("idempotency-key", "", "the call's idempotency `KEY`: a repeat under it returns the stored result and runs nothing")
	pins := egress.Pins{}
	fs.Var(pinFlag{pins}, "resolve", "pin a host name's addresses for web_fetch, as `HOST:IP[,IP...]` (repeatable); other names use the system resolver")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock call [flags] TOOL 'JSON-ARGS'\n\nRuns one call through the whole gate. An ask is not prompted for: it returns\napproval_required and exits 1.\n\nflags:")
		fs.PrintDefaults()
	}
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) < 1 || len(rest) > 2 {
		fs.Usage()
		return exitUsage
	}
	argsJSON := "{}"
	if len(rest) == 2 {
		argsJSON = rest[1]
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "call", err)
	}
	e, err := openRuntime(ctx, set, "", egressOptions(pins))
	if err != nil {
		return refused(stderr, "call", err)
	}
	defer e.Close()

	call := tool.Call{Tool: rest[0], Args: json.RawMessage(argsJSON),
		Session: *session, Role: set.Role, Mode: set.Mode, IdempotencyKey: *idemKey}
	var res tool.Result
	if *session != "" && *idemKey == "" {
		call.Step, err = nextStep(ctx, e.Store, *session)
	}
	switch {
	case errors.Is(err, store.ErrKilled):
		res = tool.Result{Error: &tool.Error{Code: tool.CodeKilled, Message: "session " + *session + " was killed (airlock kill); nothing more runs in it",
			Hint: "Lift it with `airlock kill --clear " + *session + "`, or use another session"}, Decision: "deny", Session: *session}
	case err != nil:
		return refused(stderr, "call", fmt.Errorf("taking the session's next step: %w", err))
	default:
		res = e.Gate.Call(ctx, call)
	}
	if *asJSON {
		line, _ := json.Marshal(callOutput{OK: res.Error == nil, Content: res.Content, Error: res.Error,
			Decision: res.Decision, Rule: res.Rule, Session: res.Session, CallID: res.CallID, Source: res.Provenance.Source, Approval: res.Approval,
			Replayed: res.Replayed, Retry: res.Retry})
		fmt.Fprintf(stdout, "%s\n", line)
	} else {
		if res.Error == nil {
			fmt.Fprint(stdout, res.Content)
			if !strings.HasSuffix(res.Content, "\n") {
				fmt.Fprintln(stdout)
			}
			if res.Replayed {
				fmt.Fprintln(stderr, "replayed: the stored result of the earlier call with this idempotency key; nothing ran")
			}
		} else {
			fmt.Fprintf(stderr, "error: %s: %s. Hint: %s\n", res.Error.Code, res.Error.Message, res.Error.Hint)
		}
		fmt.Fprintf(stderr, "session %s\n", res.Session)
	}
	if res.Error != nil {
		return exitRefused
	}
	return exitOK
}

// nextStep takes the session's next step from the store, in one atomic
// update, so that concurrent calls get distinct steps. The ledger keys a
// call without an idempotency key by session, step, tool and arguments:
// without a step of its own, a repeated call in a named session would be
// taken for the first one and replay its result instead of running.
func nextStep(ctx context.Context, db store.Sessions, session string) (int64, error) {
	s, err := db.ChargeSession(ctx, session, store.Charge{Steps: 1}, time.Now())
	if err != nil {
		return 0, err
	}
	return s.Step, nil
}

// interleaved parses flags that may stand before, between or after the
// positional arguments, as people type them.
func interleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func runPolicy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: airlock policy show [--policy FILE]\n       airlock policy check FILE")
		return exitUsage
	}
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "show":
		fs := flag.NewFlagSet("policy show", flag.ContinueOnError)
		fs.SetOutput(stderr)
		file := fs.String("policy", "", "a policy `FILE` to add on top of the built-in policy")
		if err := fs.Parse(args[1:]); err != nil {
			return usageExit(err)
		}
		p := policy.Default()
		if *file != "" {
			var err error
			if p, err = policy.Load(*file); err != nil {
				return refused(stderr, "policy show", err)
			}
		}
		stdout.Write(p.Effective())
		return exitOK
	case "check":
		if len(args) != 2 {
			return usage()
		}
		if _, err := policy.Load(args[1]); err != nil {
			// Every problem of the file, one per line.
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				fmt.Fprintf(stderr, "airlock policy check: %v\n", e)
			}
			if len(errs) > 1 {
				fmt.Fprintf(stderr, "airlock policy check: %d problems in %s\n", len(errs), args[1])
			}
			return exitRefused
		}
		fmt.Fprintf(stdout, "%s: ok\n", args[1])
		return exitOK
	}
	return usage()
}

func runAudit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "verify" {
		fmt.Fprintln(stderr, "usage: airlock audit verify FILE")
		return exitUsage
	}
	rep, err := audit.Verify(args[1])
	if err != nil {
		return refused(stderr, "audit verify", err)
	}
	if rep.OK {
		fmt.Fprintf(stdout, "%s: ok, %s, head %s\n", args[1], plural.Count(int(rep.Records), "record", "records"), rep.Head)
		return exitOK
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "%s:%d: record %d %s: %s\n", args[1], p.Line, p.Seq, p.Kind, p.Message)
	}
	return exitRefused
}

// openRecovered opens the workspace at dir for a command that reads or
// changes its snapshots, first finishing any command's changes a crash
// left half applied (workspace.Recover), so that they are seen, and
// undone, whole.
func openRecovered(dir string) (*workspace.Workspace, error) {
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	if _, err := ws.Recover(); err != nil {
		ws.Close()
		return nil, err
	}
	return ws, nil
}

func runRollback(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rollback", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("workspace", ".", "the workspace `DIR`")
	session := fs.String("session", "", "the session `ID` whose changes to undo")
	asJSON := fs.Bool("json", false, "print what was restored and the conflicts as one JSON object")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if *session == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: airlock rollback --session ID [--workspace DIR] [--json]")
		return exitUsage
	}
	ws, err := openRecovered(*dir)
	if err != nil {
		return refused(stderr, "rollback", err)
	}
	defer ws.Close()
	res, err := ws.Rollback(*session)
	if err != nil {
		return refused(stderr, "rollback", err)
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
	} else {
		for _, p := range res.Restored {
			fmt.Fprintf(stdout, "restored %s\n", p)
		}
		for _, c := range res.Conflicts {
			fmt.Fprintf(stdout, "conflict %s: %s\n", c.Path, c.Reason)
		}
	}
	fmt.Fprintf(stderr, "%s restored\n", plural.Count(len(res.Restored), "path", "paths"))
	if len(res.Conflicts) > 0 {
		fmt.Fprintf(stderr, "%s left as they are: changed since by someone else; deal with them, then run airlock rollback again\n",
			plural.Count(len(res.Conflicts), "path", "paths"))
		return exitRefused
	}
	return exitOK
}

func runDiff(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("workspace", ".", "the workspace `DIR`")
	session := fs.String("session", "", "show every change the session `ID` made, from any tool")
	approval := fs.String("approval", "", "show the changes a command left held for the approval `ID`")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if (*session == "") == (*approval == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: airlock diff --session ID | --approval ID [--workspace DIR]")
		return exitUsage
	}
	ws, err := openRecovered(*dir)
	if err != nil {
		return refused(stderr, "diff", err)
	}
	defer ws.Close()
	if *session != "" {
		if err := ws.SessionDiff(*session, stdout, workspace.DiffLimits{}); err != nil {
			return refused(stderr, "diff", err)
		}
		return exitOK
	}
	ov, _, err := ws.HeldOverlay(*approval)
	if err != nil {
		return refused(stderr, "diff", err)
	}
	defer ov.Close()
	set, err := ov.Changes()
	if err != nil {
		return refused(stderr, "diff", err)
	}
	fmt.Fprintf(stderr, "held for approval %s: %s\n", *approval, set.Summary())
	if err := ov.Diff(set, stdout, workspace.DiffLimits{}); err != nil {
		return refused(stderr, "diff", err)
	}
	return exitOK
}

// toolLine is one tool as airlock tools --json prints it: what a model is
// shown.
type toolLine struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Risk        tool.Risk       `json:"risk"`
	Effect      tool.Effect     `json:"effect"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func runTools(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	asJSON := fs.Bool("json", false, "print one JSON object per tool, with its input schema")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "tools", err)
	}
	g, err := listingGate(set)
	if err != nil {
		return refused(stderr, "tools", err)
	}
	for _, t := range g.Tools() {
		if *asJSON {
			line, _ := json.Marshal(toolLine{t.Name, t.Description, t.Risk, t.Effect, t.Schema})
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		fmt.Fprintf(stdout, "%-12s %-6s %-8s %s\n", t.Name, t.Risk, t.Effect, firstSentence(t.Description))
	}
	return exitOK
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
