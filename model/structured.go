package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"airlock.dev/airlock/schema"
	"airlock.dev/airlock/tool"
)

// DefaultMaxRepairs is how many times CompleteJSON asks the model to
// repair an answer that does not match the schema: two rounds fix what a
// model can fix (a missing field, a wrong type); more rarely help and cost
// a whole call each.
const DefaultMaxRepairs = 2

// MaxRepairs bounds StructuredOptions.MaxRepairs.
const MaxRepairs = 10

// MaxRepairViolations is how many violations one repair prompt lists.
const MaxRepairViolations = 10

// StructuredOptions configures CompleteJSON. A nil pointer, or a zero
// field, means the default.
type StructuredOptions struct {
	// MaxRepairs is how many repair rounds follow a first invalid
	// answer (DefaultMaxRepairs when zero; at most MaxRepairs).
	MaxRepairs int
	// NoRepairs turns repair rounds off: the first answer must be valid.
	NoRepairs bool
}

// CompleteJSON asks for an answer that is one JSON object valid against
// s, and validates it. An invalid answer is sent back with the list of
// what is wrong, up to MaxRepairs times. It returns the last Response
// (its Usage and Badge summed over every round) and the valid JSON. When the answer
// is still invalid after the repairs, the Response is a degraded one:
// Success false, the safe default text, no tool calls, and a Reason with
// code invalid_output. A Chain's degraded answer is returned as it is.
// The error is the Client's: for a Chain, non-nil only when ctx is done.
func CompleteJSON(ctx context.Context, c Client, req *Request, s *schema.Schema, opts *StructuredOptions) (*Response, json.RawMessage, error) {
	repairs := DefaultMaxRepairs
	if opts != nil {
		switch {
		case opts.NoRepairs:
			repairs = 0
		case opts.MaxRepairs > MaxRepairs:
			repairs = MaxRepairs
		case opts.MaxRepairs > 0:
			repairs = opts.MaxRepairs
		}
	}
	if req == nil || s == nil {
		return nil, nil, newError(CodeInvalidRequest, nil, "CompleteJSON needs a request and a compiled schema")
	}
	cur := *req
	instr := System("Answer with one JSON object and nothing else: no prose, no code fence. It must be valid against this JSON Schema:\n" + string(s.Doc()))
	cur.Messages = append([]Message{instr}, req.Messages...)
	var used Usage
	var badge Badge
	for round := 0; ; round++ {
		resp, err := c.Complete(ctx, &cur)
		if err != nil {
			return nil, nil, err
		}
		used = used.Add(resp.Usage)
		resp.Usage = used
		// The badge counts every round: its attempts and fallbacks add up.
		badge.Attempts += resp.Badge.Attempts
		badge.Fallbacks = append(badge.Fallbacks, resp.Badge.Fallbacks...)
		badge.Model = resp.Badge.Model
		resp.Badge = badge
		if !resp.Success && resp.Reason != nil {
			return resp, nil, nil
		}
		raw := extractJSON(resp.Text)
		problem := ""
		if len(resp.ToolCalls) > 0 && len(raw) == 0 {
			problem = "You called a tool; answer with the JSON object as text instead."
		} else if terr := s.Validate(raw); terr != nil {
			problem = repairText(terr)
		} else {
			resp.ToolCalls = nil
			return resp, raw, nil
		}
		if round >= repairs {
			reason := newError(CodeInvalidOutput, nil, "the answer still did not match the schema after %d repair rounds (StructuredOptions.MaxRepairs): %s", round, firstLine(problem))
			return &Response{Text: DefaultDegradedText, StopReason: StopDegraded, Usage: used, Model: resp.Model, Badge: resp.Badge, Reason: reason}, nil, nil
		}
		// Only the text goes back: a tool call would need a tool result.
		cur.Messages = append(cur.Messages[:len(cur.Messages):len(cur.Messages)], Assistant(resp.Text), User(problem))
	}
}

// repairText tells the model what is wrong, violation by violation.
func repairText(terr *tool.Error) string {
	var b strings.Builder
	b.WriteString("Your answer is not valid: ")
	b.WriteString(terr.Message)
	for i, v := range terr.Violations {
		if i == MaxRepairViolations {
			fmt.Fprintf(&b, "\n- and %d more", len(terr.Violations)-i)
			break
		}
		ptr := v.Pointer
		if ptr == "" {
			ptr = "(the whole object)"
		}
		fmt.Fprintf(&b, "\n- at %s: %s", ptr, v.Message)
	}
	b.WriteString("\nAnswer again with only the corrected JSON object.")
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// extractJSON finds the JSON object in a model's text: the text itself,
// the inside of a code fence, or the span from the first '{' to the last
// '}' when the model wrapped the object in prose.
func extractJSON(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		if nl := strings.IndexByte(t, '\n'); nl >= 0 {
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t[nl+1:]), "```"))
		}
	}
	if !json.Valid([]byte(t)) {
		i, j := strings.IndexByte(t, '{'), strings.LastIndexByte(t, '}')
		if i >= 0 && j > i && json.Valid([]byte(t[i:j+1])) {
			t = t[i : j+1]
		}
	}
	return bytes.TrimSpace([]byte(t))
}
