package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
)

const testKey = "sk-test-0123456789abcdef"

// conversation exercises every kind of message and a tool definition.
func conversation() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			model.System("You are terse."),
			model.User("What is 2+3?"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "calculate", Args: json.RawMessage(`{"expression":"2+3"}`)}}},
			model.ToolResult("call_1", "5", false),
			model.User("And the weather?"),
		},
		Tools: []model.ToolDef{{
			Name:        "calculate",
			Description: "Exact arithmetic",
			Schema:      json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","maxLength":100}},"required":["expression"],"additionalProperties":false}`),
		}},
		MaxTokens: 321,
	}
}

func toolReply(int, []byte) modeltest.Reply {
	return modeltest.Reply{
		Text:        "Let me check.",
		Calls:       []modeltest.Call{{ID: "call_9", Name: "weather", Args: `{"city":"Paris"}`}},
		Model:       "served-model-1",
		InputTokens: 57, OutputTokens: 13,
	}
}

func newClient(t *testing.T, p model.Provider, srv *modeltest.Server) model.Client {
	t.Helper()
	e, err := model.New(model.Spec{Provider: p, Model: "test-model", BaseURL: srv.BaseURL()}, &model.ClientOptions{APIKey: model.NewAPIKey(testKey)})
	if err != nil {
		t.Fatal(err)
	}
	return e.Client
}

func checkToolAnswer(t *testing.T, resp *model.Response) {
	t.Helper()
	if resp.Text != "Let me check." || resp.StopReason != model.StopToolCalls || resp.Model != "served-model-1" {
		t.Errorf("got text %q stop %q model %q", resp.Text, resp.StopReason, resp.Model)
	}
	if want := (model.Usage{InputTokens: 57, OutputTokens: 13}); resp.Usage != want {
		t.Errorf("usage: got %+v, want %+v", resp.Usage, want)
	}
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("got %d tool calls, want 1", len(resp.ToolCalls))
	}
	tc := resp.ToolCalls[0]
	if tc.ID != "call_9" || tc.Name != "weather" || string(tc.Args) != `{"city":"Paris"}` {
		t.Errorf("tool call: got %+v %s", tc, tc.Args)
	}
}

func TestOpenAIWireFormat(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: toolReply})
	defer srv.Close()
	resp, err := newClient(t, model.ProviderOpenAI, srv).Complete(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	checkToolAnswer(t, resp)

	body, h := srv.Request(0)
	if got := h.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization: got %q", got)
	}
	var sent struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if sent.Model != "test-model" || sent.MaxTokens != 321 {
		t.Errorf("model %q max_tokens %d", sent.Model, sent.MaxTokens)
	}
	var roles []string
	for _, m := range sent.Messages {
		roles = append(roles, m.Role)
	}
	if got, want := strings.Join(roles, ","), "system,user,assistant,tool,user"; got != want {
		t.Errorf("roles: got %s, want %s", got, want)
	}
	a := sent.Messages[2]
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Name != "calculate" || a.ToolCalls[0].Function.Arguments != `{"expression":"2+3"}` {
		t.Errorf("assistant tool calls: %+v", a.ToolCalls)
	}
	if sent.Messages[3].ToolCallID != "call_1" || sent.Messages[3].Content != "5" {
		t.Errorf("tool message: %+v", sent.Messages[3])
	}
	if len(sent.Tools) != 1 || sent.Tools[0].Type != "function" || sent.Tools[0].Function.Name != "calculate" ||
		sent.Tools[0].Function.Description != "Exact arithmetic" || sent.Tools[0].Function.Parameters["additionalProperties"] != false {
		t.Errorf("tools: %+v", sent.Tools)
	}
}

func TestAnthropicWireFormat(t *testing.T) {
	srv := modeltest.NewAnthropic(modeltest.Config{Reply: toolReply})
	defer srv.Close()
	resp, err := newClient(t, model.ProviderAnthropic, srv).Complete(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	checkToolAnswer(t, resp)

	body, h := srv.Request(0)
	if got := h.Get("X-Api-Key"); got != testKey {
		t.Errorf("X-Api-Key: got %q", got)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	var sent struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct{ Type, Text string }
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if sent.Model != "test-model" || sent.MaxTokens != 321 {
		t.Errorf("model %q max_tokens %d", sent.Model, sent.MaxTokens)
	}
	if len(sent.System) != 1 || sent.System[0].Text != "You are terse." {
		t.Errorf("system: %+v", sent.System)
	}
	// user, assistant(tool_use), user(tool_result + text): turns alternate.
	var shape []string
	for _, m := range sent.Messages {
		var kinds []string
		for _, c := range m.Content {
			kinds = append(kinds, c.Type)
		}
		shape = append(shape, m.Role+"["+strings.Join(kinds, "+")+"]")
	}
	if got, want := strings.Join(shape, " "), "user[text] assistant[tool_use] user[tool_result+text]"; got != want {
		t.Errorf("turns: got %s, want %s", got, want)
	}
	if tu := sent.Messages[1].Content[0]; tu.ID != "call_1" || tu.Name != "calculate" || string(tu.Input) != `{"expression":"2+3"}` {
		t.Errorf("tool_use: %+v", tu)
	}
	if tr := sent.Messages[2].Content[0]; tr.ToolUseID != "call_1" {
		t.Errorf("tool_result: %+v", tr)
	}
	if len(sent.Tools) != 1 || sent.Tools[0].Name != "calculate" || sent.Tools[0].InputSchema["type"] != "object" ||
		sent.Tools[0].InputSchema["additionalProperties"] != false || sent.Tools[0].InputSchema["properties"] == nil {
		t.Errorf("tools: %+v", sent.Tools)
	}
}

// TestProviderFaults checks how each injected fault is classified, and
// that the SDK itself never retried (one request reached the server).
func TestProviderFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      modeltest.Fault
		code       model.Code
		retryable  bool
		retryAfter time.Duration
	}{
		{"429 seconds", modeltest.RateLimited("3"), model.CodeRateLimited, true, 3 * time.Second},
		{"429 ms", modeltest.Fault{Kind: modeltest.KindStatus, Status: 429, Header: http.Header{"Retry-After-Ms": {"250"}}}, model.CodeRateLimited, true, 250 * time.Millisecond},
		{"500", modeltest.Status(500), model.CodeServerError, true, 0},
		{"503", modeltest.Status(503), model.CodeServerError, true, 0},
		{"529", modeltest.Overloaded(), model.CodeOverloaded, true, 0},
		{"408", modeltest.Status(408), model.CodeRequestTimeout, true, 0},
		{"409", modeltest.Status(409), model.CodeConflict, true, 0},
		{"400", modeltest.Status(400), model.CodeBadRequest, false, 0},
		{"422", modeltest.Status(422), model.CodeBadRequest, false, 0},
		{"401", modeltest.Status(401), model.CodeAuthFailed, false, 0},
		{"403", modeltest.Status(403), model.CodeAuthFailed, false, 0},
		{"404", modeltest.Status(404), model.CodeModelNotFound, false, 0},
		{"reset", modeltest.Reset(), model.CodeConnectionError, true, 0},
		{"malformed", modeltest.Malformed(), model.CodeMalformedResponse, false, 0},
		{"hang", modeltest.Hang(), model.CodeAttemptTimeout, true, 0},
	}
	for _, p := range []model.Provider{model.ProviderOpenAI, model.ProviderAnthropic} {
		for _, tt := range tests {
			t.Run(string(p)+"/"+tt.name, func(t *testing.T) {
				cfg := modeltest.Config{Faults: modeltest.Sequence(tt.fault)}
				srv := modeltest.NewOpenAI(cfg)
				if p == model.ProviderAnthropic {
					srv = modeltest.NewAnthropic(cfg)
				}
				defer srv.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				_, err := newClient(t, p, srv).Complete(ctx, conversation())
				var e *model.Error
				if !errors.As(err, &e) {
					t.Fatalf("got %v (%T), want a *model.Error", err, err)
				}
				if e.Code != tt.code || e.Retryable() != tt.retryable || e.RetryAfter != tt.retryAfter {
					t.Errorf("got code %s retryable %v retry-after %s (%v), want %s %v %s", e.Code, e.Retryable(), e.RetryAfter, err, tt.code, tt.retryable, tt.retryAfter)
				}
				if e.Message == "" || e.Hint == "" {
					t.Errorf("no message or hint: %+v", e)
				}
				if strings.Contains(e.Message+e.Hint, testKey) {
					t.Errorf("the key leaked into %q", e.Message)
				}
				if n := srv.Count(); n != 1 {
					t.Errorf("the server saw %d requests, want 1: the SDK retried", n)
				}
			})
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{})
	base := srv.BaseURL()
	srv.Close()
	e, err := model.New(model.Spec{Provider: model.ProviderOpenAI, Model: "m", BaseURL: base}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Client.Complete(context.Background(), conversation())
	if !errors.Is(err, &model.Error{Code: model.CodeConnectionError}) {
		t.Errorf("got %v, want connection_error", err)
	}
}

func TestMissingKeyForDefaultBaseURL(t *testing.T) {
	t.Setenv(model.EnvOpenAIKey, "")
	t.Setenv(model.EnvAnthropicKey, "")
	for _, s := range []string{"openai:gpt-4o", "anthropic:claude-haiku-4-5"} {
		_, err := model.New(model.MustParseSpec(s), nil)
		var e *model.Error
		if !errors.As(err, &e) || e.Code != model.CodeAuthFailed || !strings.Contains(e.Hint, "_API_KEY") {
			t.Errorf("%s: got %v, want auth_failed naming the variable", s, err)
		}
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	t.Setenv(model.EnvAnthropicKey, "sk-from-env")
	srv := modeltest.NewAnthropic(modeltest.Config{})
	defer srv.Close()
	e, err := model.New(model.Spec{Provider: model.ProviderAnthropic, Model: "m", BaseURL: srv.BaseURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client.Complete(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	if _, h := srv.Request(0); h.Get("X-Api-Key") != "sk-from-env" {
		t.Errorf("X-Api-Key: got %q", h.Get("X-Api-Key"))
	}
}

func TestInvalidToolArgsKeptAsString(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: func(int, []byte) modeltest.Reply {
		return modeltest.Reply{Calls: []modeltest.Call{{ID: "c", Name: "f", Args: `{"a":`}}}
	}})
	defer srv.Close()
	resp, err := newClient(t, model.ProviderOpenAI, srv).Complete(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.ToolCalls[0].Args); got != `"{\"a\":"` {
		t.Errorf("got args %s, want the text as a JSON string", got)
	}
	if _, err := json.Marshal(resp); err != nil {
		t.Errorf("the response does not marshal: %v", err)
	}
}

// TestEnvironmentBaseURLIgnored: the SDKs' own OPENAI_BASE_URL and
// ANTHROPIC_BASE_URL do not redirect a client: the spec names the server.
func TestEnvironmentBaseURLIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	for _, p := range []model.Provider{model.ProviderOpenAI, model.ProviderAnthropic} {
		srv := modeltest.NewOpenAI(modeltest.Config{})
		if p == model.ProviderAnthropic {
			srv = modeltest.NewAnthropic(modeltest.Config{})
		}
		if _, err := newClient(t, p, srv).Complete(context.Background(), hello()); err != nil || srv.Count() != 1 {
			t.Errorf("%s: %v, %d requests reached the spec's server", p, err, srv.Count())
		}
		srv.Close()
	}
}
