package native

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImports keeps the init path lean: the sandbox's first process runs
// every package initializer of the binary that is ready before nsinit's,
// so nsinit (and this package) may import only the standard library,
// golang.org/x/sys and go-landlock (with its psx), besides airlock's own
// sandbox and sandbox/internal/seccomp packages (whose imports go list
// -deps checks with the rest).
func TestImports(t *testing.T) {
	allowed := []string{
		"golang.org/x/sys/",
		"github.com/landlock-lsm/go-landlock/",
		"kernel.org/pub/linux/libs/security/libcap/psx",
	}
	for _, pkg := range []string{"airlock.dev/airlock/sandbox/native/internal/nsinit", "airlock.dev/airlock/sandbox/native"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list (this test needs the go command): %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg {
				continue
			}
			ok := false
			for _, a := range allowed {
				if strings.HasPrefix(dep, a) {
					ok = true
				}
			}
			switch dep {
			case "airlock.dev/airlock/sandbox/native/internal/nsinit", "airlock.dev/airlock/sandbox", "airlock.dev/airlock/sandbox/internal/seccomp":
				ok = true
			}
			if !ok {
				t.Errorf("%s imports %s: keep the sandbox init's imports to the standard library, x/sys and go-landlock", pkg, dep)
			}
		}
	}
}

// lateImports are standard packages that Go initializes late, because
// their import paths sort after most of the CLI's dependencies (Go
// initializes, at each step, the first package in import-path order
// whose imports are done). `airlock exec`'s fast path runs in the init of
// cmd/airlock/internal/fastexec, after every package it imports, this
// one and bwrap included: one of these in its imports makes every
// sandboxed command start later by milliseconds.
var lateImports = []string{"net", "os/exec", "path/filepath", "crypto/rand", "math/big"}

// TestFastExecImports keeps lateImports out of the fast path's imports.
func TestFastExecImports(t *testing.T) {
	const fastexec = "airlock.dev/airlock/cmd/airlock/internal/fastexec"
	out, err := exec.Command("go", "list", "-deps", fastexec).CombinedOutput()
	if err != nil {
		t.Fatalf("go list (this test needs the go command): %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "airlock.dev/airlock/sandbox/native") {
		t.Fatalf("%s no longer imports this package; move this test to where the fast path's imports are", fastexec)
	}
	for _, late := range lateImports {
		if slices.Contains(deps, late) {
			t.Errorf("%s imports %s (go list -deps %s): it initializes late and delays every `airlock exec`; use x/sys/unix, os.StartProcess or package path instead", fastexec, late, fastexec)
		}
	}
}
