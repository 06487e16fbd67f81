package agent

import (
	"fmt"
	"strings"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/untrusted"
)

// systemPrompt is the planner's standing instruction; the trust-boundary
// text (untrusted.Instructions) follows it.
const systemPrompt = `You are an agent that carries out the user's goal with the tools you are given. Work in small steps: propose tool calls, read their results, and go on. Every call is checked by airlock before it runs; a refused call comes back as an error value with a code, a message and a hint: follow the hint rather than repeating the call. Do not repeat a call with the same arguments unless something changed since. Keep a plan with the todo tool and notes with the scratchpad tool when the work has several parts. When you need something only the user can give, call ask_user. When the goal is done, or cannot be done, call finish with your answer.`

// EstimateTokens estimates the tokens of a request: four bytes a token,
// rounded up, and a few for each message's framing. It over-counts
// English prose and JSON slightly, which is the safe side for a budget.
func EstimateTokens(msgs []model.Message, tools []model.ToolDef) int64 {
	const perMessage = 4
	var n int64
	for _, m := range msgs {
		b := len(m.Text)
		for _, tc := range m.ToolCalls {
			b += len(tc.Name) + len(tc.Args) + len(tc.ID)
		}
		n += int64(b+3)/4 + perMessage
	}
	for _, t := range tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.Schema)+3)/4 + perMessage
	}
	return n
}

// messages builds the planner's request: the system prompt with the
// trust boundary and the current plan, the user's goal, and as much of the
// conversation as fits in Limits.ContextTokens. The oldest turns go first,
// each whole (an assistant message with its tool results), and are
// dropped from the state too, so that a checkpoint stays bounded.
func (a *Agent) messages(st *state) []model.Message {
	for {
		msgs := a.request(st)
		if EstimateTokens(msgs, a.defs) <= int64(a.lim.ContextTokens) {
			return msgs
		}
		n := firstTurnEnd(st.Messages)
		if n == 0 || n == len(st.Messages) {
			return msgs // the last turn alone is over: send it; the provider says if it is too long
		}
		st.Messages = st.Messages[n:]
		st.Trimmed += n
		a.event(Event{Type: EventNote, Step: st.Step, Text: fmt.Sprintf("trimmed %d earlier messages to keep the context within %d tokens", n, a.lim.ContextTokens)})
	}
}

// firstTurnEnd is the length of the first turn of msgs: the first
// assistant message and the tool results that answer it.
func firstTurnEnd(msgs []model.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	i := 1
	for i < len(msgs) && msgs[i].Role != model.RoleAssistant {
		i++
	}
	return i
}

func (a *Agent) request(st *state) []model.Message {
	var sys strings.Builder
	sys.WriteString(systemPrompt)
	sys.WriteString("\n\n")
	sys.WriteString(untrusted.Instructions)
	if len(st.Todo) > 0 || st.Scratch != "" {
		sys.WriteString("\n\nYour plan so far (kept by the todo and scratchpad tools):\n")
		sys.WriteString(todoText(st.Todo))
		if st.Scratch != "" {
			sys.WriteString("\nScratchpad:\n")
			sys.WriteString(st.Scratch)
		}
	}
	goal := "The user's goal, in their own words, between the goal tags:\n<goal>\n" + untrusted.Neutralize(st.Goal) + "\n</goal>"
	if st.Trimmed > 0 {
		goal += fmt.Sprintf("\n\n(%d earlier messages of this session were trimmed to fit the context; the plan in the system prompt is current.)", st.Trimmed)
	}
	msgs := make([]model.Message, 0, len(st.Messages)+2)
	msgs = append(msgs, model.System(sys.String()), model.User(goal))
	return append(msgs, st.Messages...)
}
