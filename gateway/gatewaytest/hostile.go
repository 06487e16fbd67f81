package gatewaytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildHostile builds the hostile server's command (package
// hostile/cmd/hostile-mcp) into the test's temporary directory and
// returns its path.
func BuildHostile(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostile-mcp")
	cmd := exec.Command("go", "build", "-o", bin, "airlock.dev/airlock/gateway/gatewaytest/hostile/cmd/hostile-mcp")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gatewaytest: go build hostile-mcp: %v\n%s", err, out)
	}
	return bin
}

// Hostile is a command that runs the hostile server with these flags
// (see hostile-mcp's doc), built afresh for the test.
func Hostile(t testing.TB, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(BuildHostile(t), flags...)
	cmd.Env = os.Environ()
	return cmd
}
