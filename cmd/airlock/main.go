// Command airlock is the runtime between a language model and its tools.
// Each subcommand is one guard or door; see "airlock help".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	// Serves `airlock exec` before the heavy packages initialize.
	_ "airlock.dev/airlock/cmd/airlock/internal/fastexec"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses shared by every subcommand.
const (
	exitOK      = 0
	exitRefused = 1 // a single input was refused, or reading input failed
	exitUsage   = 2 // bad flags or arguments
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"mcp", "serve the guarded tools to an MCP client over stdio", runMCP},
		{"serve", "serve MCP over Streamable HTTP at /mcp (default 127.0.0.1:8080)", runServe},
		{"gateway", "offer upstream MCP servers' tools behind the gate: airlock gateway [--upstreams FILE] | pins | accept", runGateway},
		{"calc", "evaluate exact arithmetic: airlock calc [flags] EXPR, or --batch over JSON lines", runCalc},
		{"tools", "list the tools with their risk, effect and (with --json) the schema models are shown", runTools},
		{"check", "decide proposals read as JSON lines, running every guard and executing nothing", runCheck},
		{"call", "run one tool call through the whole gate: airlock call TOOL 'JSON'", runCall},
		{"exec", "run ARGV in the sandbox, no shell and no command policy: airlock exec [flags] -- ARGV", runExec},
		{"fetch", "fetch one URL under the egress policy (public hosts only) and print the body", runFetch},
		{"policy", "show the effective policy, or check a policy file", runPolicy},
		{"audit", "verify an audit log's hash chain: airlock audit verify FILE", runAudit},
		{"run", "run the bounded agent loop on a task: airlock run --model PROVIDER:MODEL \"TASK\"", runRun},
		{"resume", "continue a run parked on an approval: airlock resume SESSION", runResume},
		{"kill", "stop a session, or every session, at once: airlock kill SESSION | --all", runKill},
		{"approvals", "list the pending approvals, each with its exact call; --remembered, the remembered ones", runApprovals},
		{"approve", "approve a pending call: airlock approve ID [--remember once|session|workspace]", runApprove},
		{"deny", "deny a pending call: airlock deny ID", runDeny},
		{"revoke", "end a remembered approval, so that its call asks again: airlock revoke ID", runRevoke},
		{"rollback", "undo every change a session made, commands' included: airlock rollback --session ID", runRollback},
		{"diff", "show a session's changes, or those held for an approval: airlock diff --session ID | --approval ID", runDiff},
		{"redact", "mask secrets and personal data from stdin: airlock redact [--json]", runRedact},
		{"scan", "score JSON lines {\"text\": ...} for prompt injection, one answer line each", runScan},
		{"version", "print the version and the source revision it was built from (also --version)", runVersion},
	}
}

// run is the whole CLI, testable in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version":
		return runVersion(ctx, args[1:], stdin, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: airlock version")
		return exitUsage
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info, ok))
	return exitOK
}

// versionLine is what airlock --version prints: the version (Version when
// set at link time, else the module version Go stamped: "(devel)" for a
// build from a source tree) and the VCS revision the build recorded, with
// "+modified" for uncommitted changes, or "unknown" where the build kept
// none (go test, go run, -buildvcs=false, a tree outside version control).
func versionLine(info *debug.BuildInfo, ok bool) string {
	version, revision, modified := Version, "unknown", ""
	if ok && info != nil {
		if version == "dev" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && s.Value != "":
				revision = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				modified = "+modified"
			}
		}
	}
	if version == "" || version == "dev" {
		version = "(devel)"
	}
	return fmt.Sprintf("airlock %s, revision %s%s", version, revision, modified)
}

// refused reports a failure of the command name and returns exitRefused.
func refused(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
	return exitRefused
}

// misused reports bad usage of the command name and returns exitUsage.
func misused(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: airlock COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'airlock COMMAND --help' for a command's flags.")
}
