package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandboxbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", DefaultRuns, "samples per candidate")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *runs < 1 {
		fmt.Fprintln(stderr, "sandboxbench: -runs must be at least 1")
		return 2
	}
	ws, err := os.MkdirTemp("", "sandboxbench-*")
	if err != nil {
		fmt.Fprintln(stderr, "sandboxbench:", err)
		return 1
	}
	defer os.RemoveAll(ws)
	os.Chmod(ws, 0o755)
	cs, err := Candidates(ws)
	if err != nil {
		fmt.Fprintln(stderr, "sandboxbench:", err)
		return 1
	}
	stats, err := Measure(ctx, cs, *runs)
	if err != nil {
		fmt.Fprintln(stderr, "sandboxbench:", err, "(scripts/setup-sandbox.sh, run as root, installs what the backends need)")
		return 1
	}
	PrintTable(stdout, stats)
	return 0
}
