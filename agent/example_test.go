package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
)

// A scripted planner drives the loop exactly as a model would: here it
// asks the gate for one calculation and finishes with its result.
func ExampleAgent_Run() {
	dir, _ := os.MkdirTemp("", "agent-example-*")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "state.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	// This loop keeps no audit log or ledger and masks nothing, and says so
	// by name; one that serves a model sets each (see gate.Options).
	g, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Sessions: db,
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutApprovalKey})

	planner := agent.Script(
		agent.Step{Calls: []agent.StepCall{agent.Call("calculate", `{"expression":"$1,200 * 3%"}`)}},
		agent.Step{Calls: []agent.StepCall{agent.Call("finish", `{"answer":"The fee is $36."}`)}},
	)
	a, err := agent.New(&agent.Options{Gate: g, Planner: planner, Sessions: db, Runs: db, Approvals: db})
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := a.Run(context.Background(), "", "What is a 3% fee on $1,200?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Reason, sum.Steps, sum.Answer)
	// Output:
	// finished 2 The fee is $36.
}
