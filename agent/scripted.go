package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"airlock.dev/airlock/model"
)

// Step is one answer of a scripted planner: tool calls, or (with none) a
// final text. Usage is what it reports having cost.
type Step struct {
	Text  string       `json:"text,omitempty"`
	Calls []StepCall   `json:"calls,omitempty"`
	Usage *model.Usage `json:"usage,omitempty"`
}

// StepCall is one proposed call of a Step.
type StepCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// ScriptModel is the model name a scripted planner answers as.
const ScriptModel = "script"

// scriptUsage is what a step without Usage reports.
var scriptUsage = model.Usage{InputTokens: 100, OutputTokens: 20}

// Scripted is a deterministic planner, for tests and replay: its n-th
// answer is Next(n, request). It implements model.Client.
type Scripted struct {
	// Next gives the n-th answer (from 0); ok false ends the script,
	// which then answers "the script has ended" with no calls.
	Next func(n int, req *model.Request) (s Step, ok bool)

	mu sync.Mutex
	n  int
}

// Script answers with steps in order.
func Script(steps ...Step) *Scripted {
	return &Scripted{Next: func(n int, _ *model.Request) (Step, bool) {
		if n < len(steps) {
			return steps[n], true
		}
		return Step{}, false
	}}
}

// MaxScriptSteps and MaxScriptBytes bound a script read by LoadScript.
const (
	MaxScriptSteps = 10_000
	MaxScriptBytes = 16 << 20
)

// LoadScript reads a script: a JSON array of steps, each
// {"text": ..., "calls": [{"tool": ..., "args": {...}}], "usage": {...}}.
func LoadScript(r io.Reader) (*Scripted, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxScriptBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxScriptBytes {
		return nil, fmt.Errorf("agent: the script is over %d bytes (MaxScriptBytes)", MaxScriptBytes)
	}
	var steps []Step
	if err := json.Unmarshal(b, &steps); err != nil {
		return nil, fmt.Errorf("agent: the script is not a JSON array of steps: %w", err)
	}
	if len(steps) > MaxScriptSteps {
		return nil, fmt.Errorf("agent: the script has %d steps, over the limit of %d (MaxScriptSteps)", len(steps), MaxScriptSteps)
	}
	for i, s := range steps {
		for j, c := range s.Calls {
			if c.Tool == "" || !json.Valid(c.Args) {
				return nil, fmt.Errorf("agent: script step %d, call %d: it needs a tool name and JSON args", i+1, j+1)
			}
		}
	}
	return Script(steps...), nil
}

// Complete implements model.Client.
func (s *Scripted) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, context.Cause(ctx))
	}
	s.mu.Lock()
	n := s.n
	s.n++
	s.mu.Unlock()
	step, ok := s.Next(n, req)
	if !ok {
		step = Step{Text: "the script has ended"}
	}
	resp := &model.Response{Text: step.Text, StopReason: model.StopEnd, Model: ScriptModel, Success: true,
		Badge: model.Badge{Model: ScriptModel, Attempts: 1}, Usage: scriptUsage}
	if step.Usage != nil {
		resp.Usage = *step.Usage
	}
	for i, c := range step.Calls {
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: fmt.Sprintf("call_%d_%d", n+1, i+1), Name: c.Tool, Args: c.Args})
	}
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = model.StopToolCalls
	}
	return resp, nil
}

// Call is a StepCall from a tool name and arguments written as JSON text.
func Call(tool, args string) StepCall { return StepCall{Tool: tool, Args: json.RawMessage(args)} }
