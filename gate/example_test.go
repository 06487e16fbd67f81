package gate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
)

// A Go program gives its model tools through a gate: every call is
// validated, authorized and run, or refused with an error value.
func Example() {
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	// This program keeps no audit log, ledger or kill switch and masks
	// nothing, and says so by name; one that serves a model sets each
	// (see Options).
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	res := g.Call(ctx, tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expression":"($100 + $250.75) * 20%"}`)})
	fmt.Println(res.Decision, res.Content)

	res = g.Call(ctx, tool.Call{Tool: "calculate", Args: json.RawMessage(`{"expr":"1+1"}`)})
	fmt.Println(res.Decision, res.Error.Code)
	for _, v := range res.Error.Violations {
		fmt.Printf("  %q: %s\n", v.Pointer, v.Message)
	}
	// Output:
	// allow 70.15
	// deny invalid_arguments
	//   "/expr": unknown property: the schema does not list it
	//   "/expression": required property is missing
}
