// Command hostile-mcp runs the hostile MCP server of package hostile over
// its standard input and output, for the tests and scripts that need a
// misbehaving upstream as a process.
//
//	hostile-mcp [-tools echo,slow,...] [-cancel-log FILE]
//
// Each flag not given is read from an environment variable:
// HOSTILE_MCP_TOOLS for -tools (a comma-separated list; empty means every
// tool) and HOSTILE_MCP_CANCEL_LOG for -cancel-log (a file that gets each
// cancelled request id as a line of JSON, appended). The secret tool's line
// goes to standard error.
//
// Exit status: 0 when standard input ends or on SIGINT or SIGTERM; 3 when
// the crash tool was called (nothing is written for that call); 2 for bad
// flags; 1 for any other error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"airlock.dev/airlock/gateway/gatewaytest/hostile"
)

// crashStatus is the exit status after the crash tool.
const crashStatus = 3

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("hostile-mcp", flag.ContinueOnError)
	flags.SetOutput(stderr)
	tools := flags.String("tools", os.Getenv("HOSTILE_MCP_TOOLS"), "comma-separated tools to offer; empty means all of "+strings.Join(hostile.ToolNames(), ","))
	cancelLog := flags.String("cancel-log", os.Getenv("HOSTILE_MCP_CANCEL_LOG"), "file to append each cancelled request id to, as a line of JSON")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "hostile-mcp: unexpected argument %q; it takes only flags (see -help)\n", flags.Arg(0))
		return 2
	}

	opts := hostile.Options{Stderr: stderr}
	if *tools != "" {
		opts.Tools = strings.Split(*tools, ",")
	}
	if *cancelLog != "" {
		f, err := os.OpenFile(*cancelLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "hostile-mcp: opening the cancel log: %v\n", err)
			return 1
		}
		defer f.Close()
		opts.CancelLog = f
	}

	err := hostile.Serve(ctx, stdin, stdout, opts)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, hostile.ErrCrash):
		return crashStatus
	}
	fmt.Fprintf(stderr, "hostile-mcp: %v\n", err)
	return 1
}
