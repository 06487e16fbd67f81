package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// The bounds of run_command's arguments, as its schema states them.
const (
	CommandMaxLength  = 16 << 10 // characters of one command line
	CommandMaxTimeout = 600      // seconds a model may ask for; sandbox.MaxWall bounds it again
)

// RunCommandOptions configures run_command. A nil *RunCommandOptions is
// all defaults.
type RunCommandOptions struct {
	// Shell runs the command line as Shell -c LINE; "/bin/bash" when
	// empty, the dialect the command policy parses.
	Shell string
	// Env is the command's whole environment; DefaultCommandEnv when nil.
	// Nothing of airlock's own environment is passed.
	Env []string
	// Limits bound each run; zero fields are the sandbox's defaults. A
	// call's timeout_seconds can only lower Limits.Wall.
	Limits sandbox.Limits
	// Proxy, when set, is the unix socket of an egress proxy: commands
	// then run with sandbox.NetworkProxy and reach only what the egress
	// policy allows. Empty: no network at all.
	Proxy string
	// Workspace, when set, runs every command on a copy-on-write view of
	// it (an overlay under .airlock/overlay, or a copy of the workspace on
	// a backend that cannot mount one): the command changes nothing in
	// place, and its result carries its changes (tool.Changes) for the
	// gate to apply, with their old versions kept for rollback, hold for a
	// person's review, or discard. Where neither view can be made (a
	// workspace past the copy view's limits) the command is refused with
	// sandbox_unavailable and nothing runs. Nil: commands write straight
	// into the workspace, and rollback cannot undo them.
	Workspace *workspace.Workspace

	copyView *atomic.Bool // the backend refused an overlay: use copy views
}

// DefaultCommandEnv is the environment run_command gives a command.
var DefaultCommandEnv = []string{
	"PATH=" + sandbox.DefaultPath, "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb",
}

// RunCommand returns the run_command tool: one bash command line, judged
// by the gate's command policy on its syntax tree, then run in sb with the
// workspace at workspaceRoot mounted read-write at /workspace.
func RunCommand(sb sandbox.Sandbox, workspaceRoot string, opts *RunCommandOptions) tool.Tool {
	var o RunCommandOptions
	if opts != nil {
		o = *opts
	}
	if o.Shell == "" {
		o.Shell = "/bin/bash"
	}
	if o.Env == nil {
		o.Env = DefaultCommandEnv
	}
	if o.copyView == nil {
		o.copyView = new(atomic.Bool)
	}
	var class tool.Class
	if o.Proxy != "" {
		class = tool.ClassEgress // its commands reach the network, through the proxy
	}
	t := tool.Tool{
		Name: "run_command",
		Description: "Run one shell command line (bash syntax) in a sandbox: the workspace is at /workspace and is the working directory, " +
			"/tmp is private, there is no network, and the command is killed at its time limit. " +
			"Returns the exit code, then stdout and stderr (each cut at 1 MiB). Commands are checked before they run: " +
			"destructive, privileged or credential-reading commands are refused, and network clients, package installs " +
			"and unknown commands need a person's approval.",
		Schema: objectSchema([]string{"command"},
			[2]string{"command", stringProperty(1, CommandMaxLength, "The command line, such as \"go test ./...\" or \"ls -la src\"")},
			[2]string{"timeout_seconds", integerProperty(1, CommandMaxTimeout, "Wall-clock limit in seconds; default 30")},
		),
		Risk:       tool.RiskMedium,
		Effect:     tool.EffectWrite,
		Class:      class,
		Untrusted:  true,
		CommandArg: "command",
		Run:        runCommand(sb, workspaceRoot, &o),
	}
	if o.Workspace != nil {
		t.Held = heldCommand(o.Workspace)
	}
	return t
}

func runCommand(sb sandbox.Sandbox, root string, o *RunCommandOptions) tool.Executor {
	return func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		var args struct {
			Command string `json:"command"`
			Timeout int    `json:"timeout_seconds"`
		}
		if err := json.Unmarshal(call.Args, &args); err != nil {
			return tool.Result{}, err
		}
		lim := o.Limits
		if args.Timeout > 0 {
			if d := time.Duration(args.Timeout) * time.Second; lim.Wall == 0 || d < lim.Wall {
				lim.Wall = d
			}
		}
		spec := sandbox.Spec{
			Argv: []string{o.Shell, "-c", args.Command}, Env: o.Env,
			Workspace: root, WorkspaceWritable: true, Limits: lim,
		}
		if o.Proxy != "" {
			spec.Network, spec.Proxy = sandbox.NetworkProxy, o.Proxy
		}
		prov := tool.Provenance{Tool: "run_command", Source: "sandbox:" + sb.Name()}
		var kept int64 // what the session's snapshot keeps already
		if ws := o.Workspace; ws != nil {
			var err error
			if kept, err = ws.CheckSnapshotRoom(call.Session); err != nil {
				return tool.Result{}, err
			}
		}
		res, ov, err := runOnView(ctx, sb, spec, o)
		switch {
		case errors.Is(err, sandbox.ErrUnavailable):
			r := tool.Fail(tool.CodeSandboxUnavailable, "the sandbox cannot run commands here: "+err.Error(),
				"Tell the operator: the sandbox backend lacks an isolation layer it needs")
			var te *tool.Error
			if errors.As(err, &te) {
				r.Error = te // the copy view's own refusal, with its limits and hint
			}
			r.Provenance = prov
			return r, nil
		case err != nil:
			return tool.Result{}, err
		}
		out := tool.Result{Content: commandReport(&res), Provenance: prov}
		if ov == nil {
			return out, nil
		}
		ch, err := overlayChanges(o.Workspace, ov, call.Session, kept)
		if err != nil {
			return tool.Result{}, err
		}
		if ch != nil {
			out.Content += ch.skippedNote()
			out.Changes = ch
		}
		return out, nil
	}
}

// runOnView runs spec with the workspace behind a copy-on-write view
// when o.Workspace is set: an overlay, or, on a backend that cannot mount
// one (bubblewrap before 0.9, the container engine), a copy view, which
// it then keeps to (o.copyView). A backend refuses an overlay before the
// command starts, so the run on the copy is its only run. It returns the
// view, nil when the command wrote in place; on an error none is left.
func runOnView(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec, o *RunCommandOptions) (sandbox.Result, *workspace.Overlay, error) {
	ws := o.Workspace
	if ws == nil {
		res, err := sb.Run(ctx, spec)
		return res, nil, err
	}
	if !o.copyView.Load() {
		ov, err := ws.NewOverlay()
		if err != nil {
			return sandbox.Result{}, nil, err
		}
		spec.Overlay = &sandbox.Overlay{Upper: ov.Upper, Work: ov.Work}
		res, err := sb.Run(ctx, spec)
		var se *sandbox.Error
		if err == nil {
			return res, ov, nil
		}
		ov.Discard()
		if !errors.As(err, &se) || se.Code != sandbox.CodeUnavailable || se.Layer != sandbox.LayerOverlay {
			return res, nil, err
		}
		o.copyView.Store(true)
		spec.Overlay = nil
	}
	ov, err := ws.NewCopyView()
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.CodeSandboxUnavailable {
			return sandbox.Result{}, nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, te)
		}
		return sandbox.Result{}, nil, err
	}
	spec.Workspace = ov.Copy
	res, err := sb.Run(ctx, spec)
	if err != nil {
		ov.Discard()
		return res, nil, err
	}
	return res, ov, nil
}

// heldCommand reopens the changes a run left held under an approval.
func heldCommand(ws *workspace.Workspace) func(context.Context, *tool.Call, string) (tool.Result, error) {
	return func(ctx context.Context, call *tool.Call, id string) (tool.Result, error) {
		kept, err := ws.SessionKept(call.Session)
		if err != nil {
			return tool.Result{}, err
		}
		ov, content, err := ws.HeldOverlay(id)
		if err != nil {
			return tool.Result{}, err
		}
		ch, err := overlayChanges(ws, ov, call.Session, kept)
		if err != nil {
			return tool.Result{}, err
		}
		out := tool.Result{Content: string(content), Provenance: tool.Provenance{Tool: "run_command", Source: "sandbox:held " + id}}
		if ch == nil {
			out.Content += "--- changes: none are left to apply (the workspace already holds them)\n"
			return out, nil
		}
		out.Changes = ch
		return out, nil
	}
}

// commandChanges are a run's changes on its overlay, as tool.Changes.
type commandChanges struct {
	ov      *workspace.Overlay
	set     *workspace.ChangeSet
	session string
	limit   string // why the changes are past a snapshot limit, if they are
}

// overlayChanges reads what a run changed, for a session whose snapshot
// keeps kept bytes; nil (the overlay discarded) when it changed nothing.
// A change set that cannot be read is refused with its changes
// discarded, the workspace as it was.
func overlayChanges(ws *workspace.Workspace, ov *workspace.Overlay, session string, kept int64) (*commandChanges, error) {
	set, err := ov.Changes()
	if err != nil {
		ov.Discard()
		return nil, err
	}
	if len(set.Changes) == 0 && len(set.Skipped) == 0 {
		return nil, ov.Discard()
	}
	return &commandChanges{ov: ov, set: set, session: session, limit: ws.OverLimit(set, kept)}, nil
}

func (c *commandChanges) Summary() string { return c.set.Summary() }
func (c *commandChanges) Destroys() bool  { return c.set.Destroys() }
func (c *commandChanges) OverLimit() string {
	return c.limit
}

// MaxReviewDiffBytes bounds the diff an approval carries for a person
// (its question, the MCP elicitation); airlock diff --approval shows the
// whole.
const MaxReviewDiffBytes = 64 << 10

func (c *commandChanges) Diff() string {
	var b strings.Builder
	if err := c.ov.Diff(c.set, &b, workspace.DiffLimits{MaxBytes: MaxReviewDiffBytes}); err != nil {
		return b.String() + "\n(the diff could not be made whole: " + err.Error() + ")\n"
	}
	return b.String()
}

func (c *commandChanges) Apply(ctx context.Context) (string, error) {
	a, err := c.ov.Apply(c.session, c.set)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d added, %d modified, %d deleted; airlock rollback --session %s undoes them", a.Added, a.Modified, a.Deleted, c.session), nil
}

func (c *commandChanges) Hold(id, content string) error { return c.ov.Hold(id, []byte(content)) }
func (c *commandChanges) Discard() error                { return c.ov.Discard() }

// skippedNote tells the model what of its command's output was not
// applied: pipes, sockets and devices it left in the workspace.
func (c *commandChanges) skippedNote() string {
	if len(c.set.Skipped) == 0 {
		return ""
	}
	return fmt.Sprintf("--- not applied (neither a file, a directory nor a link): %s\n", strings.Join(c.set.Skipped, ", "))
}

// commandReport is what the model sees of a run: a header line, then the
// streams, each marked where it was cut.
func commandReport(r *sandbox.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", r.ExitCode)
	if r.Killed != sandbox.KilledNone {
		fmt.Fprintf(&b, " (killed: %s)", killedReason(r.Killed))
	}
	b.WriteString("\n")
	for _, s := range []struct {
		name string
		data []byte
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if len(s.data) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s\n", s.name)
		b.WriteString(strings.ToValidUTF8(string(s.data), "\uFFFD"))
		if !utf8.Valid(s.data) || len(s.data) > 0 && s.data[len(s.data)-1] != '\n' {
			b.WriteString("\n")
		}
	}
	if r.Truncated {
		b.WriteString("--- output was cut at its limit\n")
	}
	return b.String()
}

func killedReason(k sandbox.Killed) string {
	switch k {
	case sandbox.KilledWall:
		return "wall: it ran past its time limit; give a larger timeout_seconds or do less in one command"
	case sandbox.KilledCPU:
		return "cpu: it used up its CPU time"
	case sandbox.KilledOOM:
		return "oom: it ran out of memory"
	case sandbox.KilledPids:
		return "pids: it started too many processes"
	case sandbox.KilledOutput:
		return "output: it printed more than the limit; redirect to a file and read parts of it"
	}
	return string(k)
}
