package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/tool"
)

// An embedder opens the same guarded gate as the CLI: policy, audit log,
// store, ledger, redactor, egress, sandbox, kill switch and approval key,
// each with its default.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)

	rt, err := runtime.Open(ctx, &runtime.Config{Workspace: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	res := rt.Gate.Call(ctx, tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"0.1 + 0.2"}`)})
	fmt.Println(res.Decision, res.Content)

	// In the default mode (ask) a write waits for a person.
	res = rt.Gate.Call(ctx, tool.Call{Tool: "write_file", Args: json.RawMessage(`{"path":"notes.txt","content":"hi"}`)})
	fmt.Println(res.Decision, res.Error.Code)
	// Output:
	// allow 0.3
	// ask approval_required
}
