package gateway_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gateway"
	"airlock.dev/airlock/gateway/gatewaytest"
	"airlock.dev/airlock/gateway/gatewaytest/hostile"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/tool"
)

// hostileGateway opens a gateway in front of the hostile server over
// stdio, as a process of its own.
func hostileGateway(t *testing.T, creds []egress.Credential) (*gateway.Gateway, map[string]tool.Tool, *gatewaytest.Buffer) {
	t.Helper()
	bin := gatewaytest.BuildHostile(t)
	c := config(t, map[string]*gateway.Server{"hostile": {Command: bin, Timeout: 20 * time.Second}})
	rd, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &gatewaytest.Buffer{}
	g, err := gateway.Open(context.Background(), c, &gateway.Options{
		Pins: openStore(t), Credentials: creds,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Redact: func(s string) string { out, _ := rd.RedactString(s); return out },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	tools := map[string]tool.Tool{}
	for _, tl := range g.Tools() {
		tools[tl.Name] = tl
	}
	return g, tools, logs
}

// eventually runs the call until it succeeds, for as long as an
// upstream's backoff can last, and fails the test past it.
func eventually(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	deadline := time.Now().Add(gateway.BackoffMax + 5*time.Second)
	for {
		res := run(t, tl, args)
		if res.Error == nil || time.Now().After(deadline) {
			return res
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStdioHostile: the hostile upstream's misbehaviours each end its
// call with a clear code, and the next call starts it again.
func TestStdioHostile(t *testing.T) {
	_, tools, _ := hostileGateway(t, nil)
	for _, tc := range []struct {
		name, tool, args string
		code             tool.Code
	}{
		{"a crash mid-call", "hostile__crash", `{}`, gateway.CodeUpstreamUnavailable},
		{"a truncated message", "hostile__garbage", `{"kind":"truncated"}`, gateway.CodeUpstreamUnavailable},
		{"a line of text", "hostile__garbage", `{"kind":"text"}`, gateway.CodeUpstreamUnavailable},
		{"binary bytes", "hostile__garbage", `{"kind":"binary"}`, gateway.CodeUpstreamUnavailable},
		{"a message over MaxMessageBytes", "hostile__huge", `{"bytes":17000000}`, gateway.CodeUpstreamUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := run(t, tools[tc.tool], tc.args)
			if res.Error == nil || res.Error.Code != tc.code {
				t.Fatalf("got %+v, want %s", res, tc.code)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the refusal took %s: the connection hung instead of ending", d)
			}
			if res := eventually(t, tools["hostile__echo"], `{"text":"again"}`); res.Error != nil || !strings.Contains(res.Content, "again") {
				t.Errorf("after %s, echo: %+v", tc.name, res)
			}
		})
	}
	res := run(t, tools["hostile__huge"], `{"bytes":2000000}`)
	if res.Error != nil || len(res.Content) != 2000000 {
		t.Errorf("a 2 MB result: %d bytes, %+v", len(res.Content), res.Error)
	}
	if res := run(t, tools["hostile__sample"], `{"prompt":"hi"}`); res.Error != nil || !strings.HasPrefix(res.Content, "refused:") {
		t.Errorf("sampling: %+v", res)
	}
	if res := run(t, tools["hostile__elicit"], `{"message":"hi"}`); res.Error != nil || !strings.HasPrefix(res.Content, "refused:") {
		t.Errorf("elicitation, not relayed: %+v", res)
	}
}

// TestStdioEnvAndSecrets: a stdio upstream gets a minimal environment and
// its credentials, never airlock's other variables; what it writes to
// stderr reaches the log redacted.
func TestStdioEnvAndSecrets(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_LEAK", "must-not-reach-the-upstream")
	_, tools, logs := hostileGateway(t, []egress.Credential{{Server: "hostile", Variable: "HOSTILE_TOKEN", Value: "token-for-hostile-123"}})
	if res := run(t, tools["hostile__env"], `{"name":"AIRLOCK_TEST_LEAK"}`); res.Error != nil || res.Content != "AIRLOCK_TEST_LEAK is not set" {
		t.Errorf("airlock's own variable: %+v", res)
	}
	if res := run(t, tools["hostile__env"], `{"name":"HOSTILE_TOKEN"}`); res.Error != nil || res.Content != "HOSTILE_TOKEN=token-for-hostile-123" {
		t.Errorf("the credential variable: %+v", res)
	}
	if res := run(t, tools["hostile__env"], `{"name":"PATH"}`); res.Error != nil || !strings.HasPrefix(res.Content, "PATH=") {
		t.Errorf("PATH: %+v", res)
	}
	run(t, tools["hostile__secret"], `{}`)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "authenticating with token") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	log := logs.String()
	if !strings.Contains(log, "authenticating with token") {
		t.Fatalf("the upstream's stderr is not in the log:\n%s", log)
	}
	if strings.Contains(log, hostile.FakeGitHubToken) {
		t.Errorf("the log holds the secret the upstream wrote to stderr:\n%s", log)
	}
}

// TestStdioPromptsAndResources: an upstream's prompts and resources are
// offered beside its tools, pinned and scanned like them: a poisoned
// description hides its prompt or resource.
func TestStdioPromptsAndResources(t *testing.T) {
	g, _, _ := hostileGateway(t, nil)
	var prompts, resources []string
	for _, p := range g.Prompts() {
		prompts = append(prompts, p.Name)
	}
	for _, r := range g.Resources() {
		resources = append(resources, r.URI)
	}
	if len(prompts) != 1 || prompts[0] != "hostile__greeting" {
		t.Errorf("prompts offered: %v, want only hostile__greeting (the other is poisoned)", prompts)
	}
	if len(resources) != 1 || resources[0] != hostile.CleanResourceURI {
		t.Errorf("resources offered: %v, want only %s", resources, hostile.CleanResourceURI)
	}
	res, source, terr := g.GetPrompt(context.Background(), "hostile__greeting", map[string]string{"name": "Ada"})
	if terr != nil || len(res.Messages) == 0 || !strings.Contains(res.Messages[0].Content.(*sdk.TextContent).Text, "Ada") || source != "mcp:hostile/prompt/greeting" {
		t.Errorf("greeting: %+v %q %+v", res, source, terr)
	}
	if _, _, terr := g.ReadResource(context.Background(), hostile.PoisonedResourceURI); terr == nil || terr.Code != gateway.CodeToolFlagged {
		t.Errorf("the poisoned resource: %+v", terr)
	}
	rr, _, terr := g.ReadResource(context.Background(), hostile.CleanResourceURI)
	if terr != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "nothing to hide") {
		t.Errorf("the clean resource: %+v %+v", rr, terr)
	}
}
