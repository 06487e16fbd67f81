package mcp_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/tool"
)

// fakeUpstream offers one prompt and one resource, whose text carries a
// marker the test looks for, and refuses every other name.
type fakeUpstream struct{ text string }

func (f fakeUpstream) Prompts() []*sdk.Prompt {
	return []*sdk.Prompt{{Name: "up__hello", Description: "says hello"}}
}

func (f fakeUpstream) GetPrompt(_ context.Context, name string, _ map[string]string) (*sdk.GetPromptResult, string, *tool.Error) {
	if name != "up__hello" {
		return nil, "", tool.Errorf(tool.CodeNotFound, "list them", "%s is not offered", name)
	}
	return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: f.text}}}}, "mcp:up/prompt/hello", nil
}

func (f fakeUpstream) Resources() []*sdk.Resource {
	return []*sdk.Resource{{URI: "up://notes", Name: "notes", Description: "notes"}}
}

func (f fakeUpstream) ReadResource(_ context.Context, uri string) (*sdk.ReadResourceResult, string, *tool.Error) {
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, Text: f.text}}}, "mcp:up/resource/" + uri, nil
}

// TestUpstreamPromptsAndResources: Options.Upstream's prompts and
// resources are listed, and what they return reaches the client through
// the gate's TakeIn; a refusal is a JSON-RPC error carrying the error value.
func TestUpstreamPromptsAndResources(t *testing.T) {
	f := newFixture(t)
	cs := connect(t, f.gate, &mcp.Options{Upstream: fakeUpstream{text: "hello from upstream"}}, nil)
	ctx := context.Background()
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "up__hello" {
		t.Fatalf("prompts/list: %+v %v", pl, err)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "up__hello"})
	if err != nil || len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.(*sdk.TextContent).Text, "hello from upstream") {
		t.Fatalf("prompts/get: %+v %v", pr, err)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 {
		t.Fatalf("resources/list: %+v %v", rl, err)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "up://notes"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "hello from upstream") {
		t.Fatalf("resources/read: %+v %v", rr, err)
	}
	big := connect(t, f.gate, &mcp.Options{Upstream: fakeUpstream{text: strings.Repeat("x", 2<<20)}}, nil)
	if _, err := big.GetPrompt(ctx, &sdk.GetPromptParams{Name: "up__hello"}); err == nil || !strings.Contains(err.Error(), string(tool.CodeFileTooLarge)) {
		t.Errorf("a prompt over the gate's result cap: %v", err)
	}
}
