package store_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoDriver keeps the storage drivers in the leaf packages:
// the store interfaces, the ledger and the conformance suite must build
// without pgx, go-redis or SQLite, so that the gate never links them.
func TestCoreImportsNoDriver(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test lists imports with the go command, which is not on PATH: %v", err)
	}
	core := []string{"airlock.dev/airlock/store", "airlock.dev/airlock/ledger", "airlock.dev/airlock/store/storetest"}
	out, err := exec.Command(goTool, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, core...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/jackc/", "github.com/redis/", "modernc.org/",
		"airlock.dev/airlock/store/sqlite", "airlock.dev/airlock/store/postgres",
		"airlock.dev/airlock/store/redis", "airlock.dev/airlock/store/storeurl",
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(core) {
		t.Fatalf("go list printed %d packages, want at least %d:\n%s", len(deps), len(core), out)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("a core package depends on %s", dep)
			}
		}
	}
}
