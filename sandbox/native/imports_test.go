package native

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the init path lean: the sandbox's first process runs
// every package initializer of the binary that is ready before nsinit's,
// so nsinit (and this package) may import only the standard library,
// golang.org/x/sys and go-landlock (with its psx), besides airlock's own
// dependency-free sandbox package.
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
			if dep == "airlock.dev/airlock/sandbox/native/internal/nsinit" || dep == "airlock.dev/airlock/sandbox" {
				ok = true
			}
			if !ok {
				t.Errorf("%s imports %s: keep the sandbox init's imports to the standard library, x/sys and go-landlock", pkg, dep)
			}
		}
	}
}
