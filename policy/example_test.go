package policy_test

import (
	"context"
	"fmt"

	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
)

func ExamplePolicy_Decide() {
	p, err := policy.Parse([]byte(`
rules:
  - id: no-force-push
    when: tool == "run_command" && args.command.contains("push --force")
    decision: deny
    message: force pushes rewrite shared history
    hint: Push without --force, or open a pull request
`), "team.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, in := range []policy.Input{
		{Tool: "read_file", Risk: tool.RiskLow, Effect: tool.EffectRead},
		{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite},
		{Tool: "write_file", Risk: tool.RiskMedium, Effect: tool.EffectWrite, Mode: "read-only"},
		{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto",
			Args: map[string]any{"command": "git status"}},
		{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "admin", Mode: "auto",
			Args: map[string]any{"command": "git push --force"}},
		{Tool: "run_command", Risk: tool.RiskHigh, Effect: tool.EffectExternal, Role: "operator"},
	} {
		d := p.Decide(ctx, in)
		fmt.Printf("%s %s %s %s\n", in.Tool, d.Action, d.Code, d.Rule)
	}
	// Output:
	// read_file allow  mode:ask
	// write_file ask approval_required mode:ask
	// write_file deny denied mode:read-only
	// run_command ask approval_required high-risk-asks
	// run_command deny denied no-force-push
	// run_command deny role_not_allowed role-bound
}

func ExampleParse_error() {
	_, err := policy.Parse([]byte("roles:\n  viewer: {max_risk: high}\n"), "team.yaml")
	fmt.Println(err)
	// Output:
	// team.yaml:1: key "roles" is not allowed: a policy file adds rules on top of the built-in policy, so it may hold only version, rules, commands, protected, redact and untrusted
}
