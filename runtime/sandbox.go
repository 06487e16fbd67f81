package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/bwrap"
	"airlock.dev/airlock/sandbox/container"
	"airlock.dev/airlock/sandbox/native"
)

// DefaultSandbox is the backend commands run in unless told otherwise.
const DefaultSandbox = "native"

// SandboxNames are the backends, in the order they are offered.
var SandboxNames = []string{"native", "bwrap", "container"}

// NewSandbox returns the backend of that name ("" is DefaultSandbox),
// with its defaults; the native backend's init is airlock-sandbox-init
// from airlock's own directory where it is installed (native.FindInit),
// this binary where not.
func NewSandbox(name string) (sandbox.Sandbox, error) {
	switch name {
	case "", "native":
		return native.New(&native.Options{Exe: native.FindInit()})
	case "bwrap":
		return bwrap.New(nil), nil
	case "container":
		return container.New(nil), nil
	}
	return nil, fmt.Errorf("unknown sandbox backend %q: want %s", name, strings.Join(SandboxNames, ", "))
}

// LazySandbox returns the backend of that name, built at its first run:
// so a gate that only checks (airlock check, the tools list) never needs
// one, and a backend that cannot start here refuses the run, not the
// start-up.
func LazySandbox(name string) sandbox.Sandbox {
	if name == "" {
		name = DefaultSandbox
	}
	return &lazySandbox{name: name}
}

type lazySandbox struct {
	name string
	once sync.Once
	sb   sandbox.Sandbox
	err  error
}

func (l *lazySandbox) Name() string { return l.name }

func (l *lazySandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	l.once.Do(func() { l.sb, l.err = NewSandbox(l.name) })
	if l.err != nil {
		return sandbox.Result{}, l.err
	}
	return l.sb.Run(ctx, spec)
}
