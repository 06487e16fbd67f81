package model

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAI is a client of the chat-completions API at any base URL: OpenAI
// itself, Ollama, vLLM, LM Studio and the like. It makes one attempt per
// Complete.
type OpenAI struct {
	spec   Spec
	client openai.Client
	now    func() time.Time
	// legacyMaxTokens sends max_tokens, which OpenAI-compatible servers
	// know, instead of max_completion_tokens, which OpenAI's reasoning
	// models require.
	legacyMaxTokens bool
}

// NewOpenAI builds a chat-completions client for spec (spec.Provider is
// not checked, so any OpenAI-compatible spec will do).
func NewOpenAI(spec Spec, opts *ClientOptions) (*OpenAI, error) {
	o, err := opts.resolve(spec, EnvOpenAIKey)
	if err != nil {
		return nil, err
	}
	key := o.APIKey.reveal()
	if key == "" {
		key = "unused" // local servers ignore it; the SDK wants one
	}
	c := openai.NewClient(
		option.WithBaseURL(spec.BaseURLOrDefault()),
		option.WithAPIKey(key),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0), // the Chain's Policy alone retries
		// The environment's OPENAI_ORG_ID and OPENAI_PROJECT_ID belong to
		// api.openai.com, not to whatever server this base URL is.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	)
	return &OpenAI{spec: spec, client: c, now: o.Now, legacyMaxTokens: spec.BaseURL != "" && spec.BaseURL != DefaultOpenAIBaseURL}, nil
}

// Complete sends one chat-completions request.
func (c *OpenAI) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	cc, err := c.client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode != 0 {
			return nil, statusError(apiErr.StatusCode, apiErr.Response, apiErr.Type, c.now(), err)
		}
		return nil, transportError(ctx, err)
	}
	return openAIResponse(cc)
}

func (c *OpenAI) params(req *Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.spec.Model)}
	maxTokens := int64(req.MaxTokens)
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	if c.legacyMaxTokens {
		p.MaxTokens = openai.Int(maxTokens)
	} else {
		p.MaxCompletionTokens = openai.Int(maxTokens)
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Text))
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Text, m.ToolCallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Args)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return p, err
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// schemaObject decodes a tool's schema into the map the SDKs send.
func schemaObject(t ToolDef) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil || m == nil {
		return nil, newError(CodeInvalidRequest, err, "tool %q: the schema is not a JSON object", t.Name)
	}
	return m, nil
}

func openAIResponse(cc *openai.ChatCompletion) (*Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return nil, newError(CodeMalformedResponse, nil, "the answer has no choices")
	}
	ch := cc.Choices[0]
	r := &Response{
		Text:  ch.Message.Content,
		Model: cc.Model,
		Usage: Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens},
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are not offered, so not expected
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: validArgs(tc.Function.Arguments)})
	}
	switch ch.FinishReason {
	case "stop":
		r.StopReason = StopEnd
	case "tool_calls", "function_call":
		r.StopReason = StopToolCalls
	case "length":
		r.StopReason = StopMaxTokens
	case "content_filter":
		r.StopReason = StopRefusal
	default:
		r.StopReason = StopOther
	}
	if ch.Message.Refusal != "" {
		r.StopReason = StopRefusal
		if r.Text == "" {
			r.Text = ch.Message.Refusal
		}
	}
	if len(r.ToolCalls) > 0 && r.StopReason != StopRefusal {
		// Some compatible servers say "stop" while calling tools.
		r.StopReason = StopToolCalls
	}
	return r, nil
}
