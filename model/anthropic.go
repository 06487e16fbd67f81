package model

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Anthropic is a client of the messages API. It makes one attempt per
// Complete.
type Anthropic struct {
	spec   Spec
	client anthropic.Client
	now    func() time.Time
}

// NewAnthropic builds a messages client for spec. It reads nothing from
// the environment but the key (ANTHROPIC_API_KEY, when ClientOptions
// gives none): the base URL is the spec's.
func NewAnthropic(spec Spec, opts *ClientOptions) (*Anthropic, error) {
	o, err := opts.resolve(spec, EnvAnthropicKey)
	if err != nil {
		return nil, err
	}
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(spec.BaseURLOrDefault()),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0), // the Chain's Policy alone retries
	}
	if o.APIKey.IsSet() {
		// The SDK sends the key as a bearer token; the API's documented
		// header is x-api-key, which compatible servers check, so send both.
		ro = append(ro, option.WithAPIKey(o.APIKey.reveal()), option.WithHeader("X-Api-Key", o.APIKey.reveal()))
	}
	return &Anthropic{spec: spec, client: anthropic.NewClient(ro...), now: o.Now}, nil
}

// Complete sends one messages request.
func (c *Anthropic) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	var extra []option.RequestOption
	if req.Temperature != nil {
		// This SDK's params have no temperature field; the API still
		// takes one on the models that support it.
		extra = append(extra, option.WithJSONSet("temperature", *req.Temperature))
	}
	msg, err := c.client.Messages.New(ctx, params, extra...)
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode != 0 {
			return nil, statusError(apiErr.StatusCode, apiErr.Response, string(apiErr.Type()), c.now(), err)
		}
		return nil, transportError(ctx, err)
	}
	return anthropicResponse(msg)
}

func (c *Anthropic) params(req *Request) (anthropic.MessageNewParams, error) {
	maxTokens := int64(req.MaxTokens)
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	p := anthropic.MessageNewParams{Model: c.spec.Model, MaxTokens: maxTokens}
	// The messages API takes the system prompt apart, and wants user and
	// assistant turns to alternate, with tool results as blocks of a user
	// turn: adjacent messages of one side become one turn.
	var turns []anthropic.MessageParam
	var blocks []anthropic.ContentBlockParamUnion
	side := Role("")
	flush := func() {
		switch {
		case len(blocks) == 0:
		case side == RoleAssistant:
			turns = append(turns, anthropic.NewAssistantMessage(blocks...))
		default:
			turns = append(turns, anthropic.NewUserMessage(blocks...))
		}
		blocks = nil
	}
	for _, m := range req.Messages {
		s := RoleUser
		switch m.Role {
		case RoleSystem:
			p.System = append(p.System, anthropic.TextBlockParam{Text: m.Text})
			continue
		case RoleAssistant:
			s = RoleAssistant
		}
		if s != side {
			flush()
			side = s
		}
		switch m.Role {
		case RoleUser:
			blocks = append(blocks, anthropic.NewTextBlock(m.Text))
		case RoleTool:
			blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
		case RoleAssistant:
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				args := tc.Args
				if !json.Valid(args) {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
		}
	}
	flush()
	p.Messages = turns
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return p, err
		}
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				in.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

func anthropicResponse(m *anthropic.Message) (*Response, error) {
	if m == nil {
		return nil, newError(CodeMalformedResponse, nil, "the answer is empty")
	}
	u := m.Usage
	r := &Response{
		Model: m.Model,
		// Cache reads and writes are input too; they are priced alike
		// here, which overstates a cached call's cost, never understates.
		Usage: Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens},
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			r.Text += b.Text
		case "tool_use":
			args := []byte(b.Input)
			if len(args) == 0 {
				args = []byte("{}")
			}
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: validArgs(string(args))})
		}
	}
	switch m.StopReason {
	case "end_turn", "stop_sequence":
		r.StopReason = StopEnd
	case "tool_use":
		r.StopReason = StopToolCalls
	case "max_tokens":
		r.StopReason = StopMaxTokens
	case "refusal":
		r.StopReason = StopRefusal
	default:
		r.StopReason = StopOther
	}
	return r, nil
}
