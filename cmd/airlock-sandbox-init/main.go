// Command airlock-sandbox-init is the native sandbox's init as a binary of
// its own. The airlock CLI links every package, and re-executing it as
// the init means starting a large program, every one of whose package
// initializers that sorts before the init's runs first; this binary links
// only the sandbox, so the init starts in a fraction of that time.
//
// Install it next to airlock (CGO_ENABLED=0 go install ./cmd/..., or
// CGO_ENABLED=0 go build -o DIR/ ./cmd/airlock ./cmd/airlock-sandbox-init;
// static, it also starts faster): airlock runs it when it
// finds it there, owned by root or airlock's user and writable by no one
// else (native.FindInit), and was built from the same sandbox sources
// (checked at its first run); otherwise airlock re-executes itself, as
// before. It does nothing when started by hand.
package main

import (
	"fmt"
	"os"

	// Its init function serves the sandbox's init and never returns.
	_ "airlock.dev/airlock/sandbox/native"
)

func main() {
	fmt.Fprintln(os.Stderr, "airlock-sandbox-init: this is the native sandbox's init; airlock starts it, inside the sandbox's namespaces. Install it next to the airlock binary.")
	os.Exit(2)
}
