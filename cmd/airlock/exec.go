package main

import (
	"context"
	"io"

	"airlock.dev/airlock/cmd/airlock/internal/execcmd"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/runtime"
)

// exitSandbox is airlock exec's own failure status.
const exitSandbox = execcmd.ExitSandbox

// runExec is airlock exec with the egress proxy, which the fast path
// (package fastexec) leaves to it.
func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execcmd.Run(ctx, args, stdin, stdout, stderr, &execcmd.Options{Proxy: execProxy, NewSandbox: runtime.NewSandbox})
}

// execProxy starts an egress proxy under the default egress policy, with
// names pinned as --resolve says.
func execProxy(resolve []string) (string, func(), error) {
	pins := egress.Pins{}
	for _, r := range resolve {
		if err := (pinFlag{pins}).Set(r); err != nil {
			return "", nil, err
		}
	}
	client, err := egress.NewClient(egressOptions(pins))
	if err != nil {
		return "", nil, err
	}
	p, err := runtime.StartEgressProxy(client)
	if err != nil {
		return "", nil, err
	}
	return p.Socket, func() { p.Close() }, nil
}
