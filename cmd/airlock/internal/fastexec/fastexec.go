// Package fastexec serves `airlock exec` from its init function, before
// the packages of the gate (CEL, JSON Schema, the SDKs, the store drivers)
// initialize: a sandboxed command then starts in about the time of the
// sandbox itself. Go initializes packages in import-path order among
// those whose imports are done, so a package whose imports are light runs
// early; this one imports only the standard library, execcmd and the
// sandbox backends. The CLI imports it for that effect alone. Anything
// exec needs the full CLI for (--network proxy, --resolve) is left to
// the CLI's own exec.
package fastexec

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"airlock.dev/airlock/cmd/airlock/internal/execcmd"
)

// Off is the environment variable that turns the fast path off (any
// value), for comparing it with the full CLI.
const Off = "AIRLOCK_NO_FAST_EXEC"

func init() {
	if len(os.Args) < 2 || os.Args[1] != "exec" || os.Getenv(Off) != "" || execcmd.NeedsFull(os.Args[2:]) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execcmd.Run(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}
