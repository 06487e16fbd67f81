package main

import (
	"context"
	"sync"

	"airlock.dev/airlock/cmd/airlock/internal/execcmd"
	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/container"
)

// DefaultSandbox is the backend commands run in unless told otherwise.
const DefaultSandbox = execcmd.DefaultSandbox

// newSandbox returns the backend of that name, each with its defaults.
func newSandbox(name string) (sandbox.Sandbox, error) {
	if name == "container" {
		return container.New(nil), nil
	}
	return execcmd.NewSandbox(name)
}

// lazySandbox builds its backend at the first run, so that a gate that
// only checks (airlock check, the tools list) never needs one, and a
// backend that cannot start here refuses the run, not the start-up.
type lazySandbox struct {
	name string
	once sync.Once
	sb   sandbox.Sandbox
	err  error
}

func (l *lazySandbox) Name() string { return l.name }

func (l *lazySandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	l.once.Do(func() { l.sb, l.err = newSandbox(l.name) })
	if l.err != nil {
		return sandbox.Result{}, l.err
	}
	return l.sb.Run(ctx, spec)
}
