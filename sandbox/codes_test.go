package sandbox_test

import (
	"testing"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/tool"
)

// The gate's table of codes spells sandbox_unavailable itself (package
// tool cannot import sandbox); both must stay one word.
func TestUnavailableCodeIsTheGates(t *testing.T) {
	if string(sandbox.CodeUnavailable) != string(tool.CodeSandboxUnavailable) {
		t.Errorf("sandbox.CodeUnavailable = %q, tool.CodeSandboxUnavailable = %q", sandbox.CodeUnavailable, tool.CodeSandboxUnavailable)
	}
}
