// Package model talks to language models: one Client interface over the
// OpenAI-compatible chat-completions API and the Anthropic messages API,
// and a Chain that puts one retry policy, per-provider concurrency and rate
// limits, a per-model circuit breaker, a fallback chain and graceful
// degradation in front of them.
//
// A provider client (NewOpenAI, NewAnthropic) makes exactly one HTTP
// attempt per Complete; the SDKs' own retries are off, so that the Chain's
// Policy alone decides what is retried and when. A Chain never hands the
// caller a bare error while its context is live: when every model has
// failed it answers with a safe default Response whose Success is false
// and whose Reason says why.
//
//	chain, err := model.FromSpecs([]string{
//		"openai:gpt-4o-mini",
//		"anthropic:claude-haiku-4-5",
//		"openai:llama3.2:3b@http://127.0.0.1:11434/v1",
//	}, nil, nil)
//	...
//	resp, err := chain.Complete(ctx, &model.Request{Messages: msgs, Tools: defs})
//	if err != nil { // only when ctx is done
//		return err
//	}
//	if !resp.Success {
//		log.Printf("degraded: %v", resp.Reason) // resp.Text is the safe default
//	}
//	log.Printf("answered by %s in %d attempts", resp.Badge.Model, resp.Badge.Attempts)
//
// CompleteJSON adds structured output on top of any Client: the answer is
// validated against a compiled schema (package schema) and sent back for
// repair a bounded number of times. PriceTable turns Usage into an exact
// cost. Package modeltest holds fake servers of both wire formats with
// fault injection, for tests.
//
// Nothing of the SDKs' types appears in this package's API.
package model

import (
	"context"
	"encoding/json"
)

// Client completes one request. Implementations are safe for concurrent
// use. A provider client returns a *Error for every failure, so that
// callers can branch on its Code and Retryable.
type Client interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Role says who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call, answering the assistant
	// message that proposed it (ToolCallID).
	RoleTool Role = "tool"
)

// Message is one turn of the conversation.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message proposed.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a RoleTool message as a failed call (Anthropic sends
	// it as is_error; OpenAI has no such flag, so the text must say so).
	IsError bool `json:"is_error,omitempty"`
}

// System, User, Assistant and ToolResult build messages.
func System(text string) Message    { return Message{Role: RoleSystem, Text: text} }
func User(text string) Message      { return Message{Role: RoleUser, Text: text} }
func Assistant(text string) Message { return Message{Role: RoleAssistant, Text: text} }
func ToolResult(callID, text string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: callID, Text: text, IsError: isError}
}

// ToolDef is a tool the model may call: the same bounded schema the gate
// validates against is what the model is shown.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"` // a JSON Schema object for the arguments
}

// ToolCall is a call the model proposed. Args is the raw JSON the model
// wrote; nothing here trusts or validates it (the gate does).
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Request is one completion request.
type Request struct {
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
	// MaxTokens bounds the answer (DefaultMaxTokens when zero): Anthropic
	// requires a bound, and an unbounded answer is an unbounded bill.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is passed on when set.
	Temperature *float64 `json:"temperature,omitempty"`
}

// DefaultMaxTokens bounds an answer when Request.MaxTokens is zero.
const DefaultMaxTokens = 4096

// Limits of a Request, checked before anything is sent.
const (
	// MaxMessages is the most messages one request may hold.
	MaxMessages = 10_000
	// MaxTools is the most tool definitions one request may hold.
	MaxTools = 512
	// MaxRequestMaxTokens is the largest MaxTokens accepted.
	MaxRequestMaxTokens = 1 << 20
)

// StopReason says why the model stopped.
type StopReason string

const (
	StopEnd       StopReason = "end"        // the model finished its answer
	StopToolCalls StopReason = "tool_calls" // the model wants tool calls run
	StopMaxTokens StopReason = "max_tokens" // the answer hit MaxTokens
	StopRefusal   StopReason = "refusal"    // the model or its filter refused
	StopOther     StopReason = "other"      // anything else the provider said
	// StopDegraded marks the safe default answer of a Chain whose models
	// all failed.
	StopDegraded StopReason = "degraded"
)

// Usage counts tokens, as the provider reported them.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// Response is a model's answer, or a Chain's safe default answer.
type Response struct {
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason StopReason `json:"stop_reason"`
	// Usage is what this answer cost, as the provider reported it (a
	// failed attempt reports none); CompleteJSON sums its rounds.
	Usage Usage `json:"usage"`
	// Model is the model name the provider reported.
	Model string `json:"model,omitempty"`
	// Success is false only for a degraded answer; Reason then says why.
	Success bool   `json:"success"`
	Reason  *Error `json:"reason,omitempty"`
	// Badge says which model answered and how.
	Badge Badge `json:"badge"`
}

// Badge names the model that answered, how many attempts were made in all,
// and the fallbacks taken, each with why its predecessor was left.
type Badge struct {
	Model     string     `json:"model"` // the Entry's name; "" when degraded
	Attempts  int        `json:"attempts"`
	Fallbacks []Fallback `json:"fallbacks,omitempty"`
}

// Fallback records one step down the chain: the model left, and why.
type Fallback struct {
	From   string `json:"from"`
	Reason Code   `json:"reason"`
}
