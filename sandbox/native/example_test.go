package native_test

import (
	"context"
	"fmt"
	"os"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/native"
)

func ExampleSandbox_Run() {
	sb, err := native.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ws, _ := os.MkdirTemp("", "example-ws-*")
	defer os.RemoveAll(ws)
	res, err := sb.Run(context.Background(), sandbox.Spec{
		Argv:              []string{"/bin/sh", "-c", "echo hello > /workspace/greeting && cat /workspace/greeting && exit 3"},
		Workspace:         ws,
		WorkspaceWritable: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s", res.Stdout)
	fmt.Println("exit", res.ExitCode, "seccomp", res.Has(sandbox.LayerSeccomp))
	// Output:
	// hello
	// exit 3 seccomp true
}
