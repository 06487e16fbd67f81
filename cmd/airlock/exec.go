package main

import (
	"context"
	"fmt"
	"io"

	"airlock.dev/airlock/cmd/airlock/internal/execcmd"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/sandbox"
)

// exitSandbox is airlock exec's own failure status.
const exitSandbox = execcmd.ExitSandbox

// runExec is airlock exec with the egress proxy, which the fast path
// (package fastexec) leaves to it.
func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execcmd.Run(ctx, args, stdin, stdout, stderr, &execcmd.Options{Proxy: execProxy, NewSandbox: runtime.NewSandbox, Overlay: execOverlay})
}

// execOverlay gives airlock exec --session a copy-on-write view of the
// workspace, and applies what the command changed once it has ended.
func execOverlay(dir, session string) (*sandbox.Overlay, func() (string, error), func(), error) {
	ws, err := openRecovered(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := ws.CheckSnapshotRoom(session); err != nil {
		ws.Close()
		return nil, nil, nil, err
	}
	ov, err := ws.NewOverlay()
	if err != nil {
		ws.Close()
		return nil, nil, nil, err
	}
	apply := func() (string, error) {
		defer ws.Close()
		set, err := ov.Changes()
		if err != nil {
			ov.Discard()
			return "", err
		}
		a, err := ov.Apply(session, set)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("changes: %d added, %d modified, %d deleted; airlock rollback --session %s undoes them", a.Added, a.Modified, a.Deleted, session), nil
	}
	discard := func() { ov.Discard(); ws.Close() }
	return &sandbox.Overlay{Upper: ov.Upper, Work: ov.Work}, apply, discard, nil
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
