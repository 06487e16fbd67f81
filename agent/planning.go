package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/schema"
	"airlock.dev/airlock/tool"
)

// The planning tools run in process: they change only the run's own
// state, so they need no gate. Their arguments are still validated against
// bounded schemas.
const (
	ToolFinish     = "finish"
	ToolTodo       = "todo"
	ToolScratchpad = "scratchpad"
	ToolAskUser    = "ask_user"
)

// Bounds of the planning tools.
const (
	MaxTodoItems    = 50
	MaxTodoText     = 500
	MaxScratchBytes = 16 << 10
	MaxQuestion     = 2000
	MaxAnswerBytes  = 64 << 10
)

var planningTools = map[string]bool{ToolFinish: true, ToolTodo: true, ToolScratchpad: true, ToolAskUser: true}

type planningTool struct {
	def    model.ToolDef
	schema *schema.Schema
}

// planning holds the planning tools with their compiled schemas, built at
// the first agent's start rather than at every start of a program that
// links this package (the CLI links it for every command).
var planning = sync.OnceValue(func() map[string]planningTool {
	defs := []model.ToolDef{
		{Name: ToolFinish, Description: "End the run with your answer to the user: what was done, or why it cannot be done.",
			Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["answer"],"properties":{"answer":{"type":"string","minLength":1,"maxLength":%d}}}`, MaxAnswerBytes))},
		{Name: ToolTodo, Description: "Keep a todo list for this run: add an item, mark one done by its number, or list them. The list is shown to you at every step.",
			Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{"action":{"enum":["add","done","list"]},"text":{"type":"string","minLength":1,"maxLength":%d},"item":{"type":"integer","minimum":1,"maximum":%d}}}`, MaxTodoText, MaxTodoItems))},
		{Name: ToolScratchpad, Description: "Keep notes for this run: write (replace), append to, or read the scratchpad. It is shown to you at every step.",
			Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{"action":{"enum":["write","append","read"]},"text":{"type":"string","maxLength":%d}}}`, MaxScratchBytes))},
		{Name: ToolAskUser, Description: "Ask the user a question only they can answer (a missing detail, a choice). Use it sparingly.",
			Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["question"],"properties":{"question":{"type":"string","minLength":1,"maxLength":%d}}}`, MaxQuestion))},
	}
	out := map[string]planningTool{}
	for _, d := range defs {
		s, err := schema.Compile(d.Name, d.Schema, nil)
		if err != nil {
			panic("agent: planning tool schema: " + err.Error())
		}
		out[d.Name] = planningTool{def: d, schema: s}
	}
	return out
})

func planningDefs() []model.ToolDef {
	var out []model.ToolDef
	for _, name := range []string{ToolFinish, ToolTodo, ToolScratchpad, ToolAskUser} {
		out = append(out, planning()[name].def)
	}
	return out
}

type todoItem struct {
	Text string `json:"text"`
	Done bool   `json:"done,omitempty"`
}

func todoText(items []todoItem) string {
	if len(items) == 0 {
		return "Todo list: empty.\n"
	}
	var b strings.Builder
	b.WriteString("Todo list:\n")
	for i, it := range items {
		mark := " "
		if it.Done {
			mark = "x"
		}
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, mark, it.Text)
	}
	return b.String()
}

// planning runs one planning tool.
func (a *Agent) planning(ctx context.Context, st *state, tc model.ToolCall) (toolOutput, *ending) {
	p := planning()[tc.Name]
	if terr := p.schema.Validate(tc.Args); terr != nil {
		st.Denials++
		return errorOutput(terr), nil
	}
	var args struct {
		Answer   string `json:"answer"`
		Action   string `json:"action"`
		Text     string `json:"text"`
		Item     int    `json:"item"`
		Question string `json:"question"`
	}
	if err := json.Unmarshal(tc.Args, &args); err != nil { // validated above; cannot fail
		return errorOutput(&tool.Error{Code: tool.CodeInvalidArguments, Message: err.Error(), Hint: "Send the arguments as one JSON object"}), nil
	}
	a.event(Event{Type: EventTool, Step: st.Step, Tool: tc.Name, Decision: "allow"})
	switch tc.Name {
	case ToolFinish:
		return toolOutput{}, &ending{reason: ReasonFinished, answer: args.Answer}
	case ToolTodo:
		return a.todo(st, args.Action, args.Text, args.Item), nil
	case ToolScratchpad:
		switch args.Action {
		case "write":
			st.Scratch = args.Text
		case "append":
			if len(st.Scratch)+1+len(args.Text) > MaxScratchBytes {
				return errorOutput(&tool.Error{Code: tool.CodeInvalidArguments,
					Message: fmt.Sprintf("the scratchpad would pass %d bytes (agent.MaxScratchBytes)", MaxScratchBytes),
					Hint:    "Rewrite the scratchpad shorter with action write"}), nil
			}
			if st.Scratch != "" {
				st.Scratch += "\n"
			}
			st.Scratch += args.Text
		}
		return toolOutput{text: "Scratchpad:\n" + st.Scratch}, nil
	}
	// ask_user
	if a.opts.Ask == nil {
		return toolOutput{}, &ending{reason: ReasonNeedsInput, question: args.Question, detail: "the run needs an answer from the user, and none can be asked here"}
	}
	ans, err := a.opts.Ask(ctx, args.Question)
	if end := stopped(ctx); end != nil {
		return toolOutput{}, end
	}
	if err != nil {
		return toolOutput{}, &ending{reason: ReasonNeedsInput, question: args.Question, detail: "asking the user failed: " + err.Error()}
	}
	if len(ans) > MaxAnswerBytes {
		ans = ans[:MaxAnswerBytes]
	}
	// The user's answer is the user's: its values may go into calls.
	if err := a.opts.Gate.ObserveUser(ctx, st.Session, ans); err != nil {
		return toolOutput{}, &ending{reason: ReasonNeedsInput, question: args.Question, detail: "recording the user's answer failed: " + err.Error()}
	}
	return toolOutput{text: "The user answered: " + ans}, nil
}

func (a *Agent) todo(st *state, action, text string, item int) toolOutput {
	switch action {
	case "add":
		if text == "" {
			return errorOutput(&tool.Error{Code: tool.CodeInvalidArguments, Message: "add needs text", Hint: `Send {"action":"add","text":"..."}`})
		}
		if len(st.Todo) >= MaxTodoItems {
			return errorOutput(&tool.Error{Code: tool.CodeInvalidArguments,
				Message: fmt.Sprintf("the todo list holds at most %d items (agent.MaxTodoItems)", MaxTodoItems), Hint: "Finish or merge items first"})
		}
		st.Todo = append(st.Todo, todoItem{Text: text})
	case "done":
		if item < 1 || item > len(st.Todo) {
			return errorOutput(&tool.Error{Code: tool.CodeInvalidArguments,
				Message: fmt.Sprintf("there is no item %d; the list has %d", item, len(st.Todo)), Hint: "Use a number from the list"})
		}
		st.Todo[item-1].Done = true
	}
	return toolOutput{text: todoText(st.Todo)}
}
