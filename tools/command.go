package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/tool"
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
	var class tool.Class
	if o.Proxy != "" {
		class = tool.ClassEgress // its commands reach the network, through the proxy
	}
	return tool.Tool{
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
		res, err := sb.Run(ctx, spec)
		switch {
		case errors.Is(err, sandbox.ErrUnavailable):
			r := tool.Fail(tool.CodeSandboxUnavailable, "the sandbox cannot run commands here: "+err.Error(),
				"Tell the operator: the sandbox backend lacks an isolation layer it needs")
			r.Provenance = prov
			return r, nil
		case err != nil:
			return tool.Result{}, err
		}
		return tool.Result{Content: commandReport(&res), Provenance: prov}, nil
	}
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
