package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/untrusted"
)

var (
	S = agent.Script
	C = agent.Call
)

// calls is a Step proposing the calls.
func calls(cs ...agent.StepCall) agent.Step { return agent.Step{Calls: cs} }

func finish(answer string) agent.Step {
	b, _ := json.Marshal(map[string]string{"answer": answer})
	return calls(agent.StepCall{Tool: "finish", Args: b})
}

func run(t *testing.T, a *agent.Agent, goal string) *agent.Summary {
	t.Helper()
	sum, err := a.Run(context.Background(), "", goal)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func wantReason(t *testing.T, sum *agent.Summary, want agent.Reason) {
	t.Helper()
	if sum.Reason != want {
		t.Fatalf("reason = %s (%s), want %s; summary %+v", sum.Reason, sum.Detail, want, sum)
	}
	if sum.Success != (want == agent.ReasonFinished) {
		t.Errorf("success = %v for reason %s", sum.Success, want)
	}
}

// recorder is a scripted planner that keeps every request it was sent.
type recorder struct {
	steps []agent.Step
	reqs  []*model.Request
}

func (r *recorder) planner() *agent.Scripted {
	return &agent.Scripted{Next: func(n int, req *model.Request) (agent.Step, bool) {
		r.reqs = append(r.reqs, req)
		if n < len(r.steps) {
			return r.steps[n], true
		}
		return agent.Step{}, false
	}}
}

// toolResults are the tool result messages of the last request.
func (r *recorder) toolResults() []model.Message {
	var out []model.Message
	for _, m := range r.reqs[len(r.reqs)-1].Messages {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestFinishes(t *testing.T) {
	h := newHarness(t, "", 0)
	rec := &recorder{steps: []agent.Step{
		calls(C("calculate", `{"expression":"12*(3+4)"}`)),
		finish("84"),
	}}
	sum := run(t, h.agent(rec.planner(), agent.Options{}), "What is 12*(3+4)?")
	wantReason(t, sum, agent.ReasonFinished)
	if sum.Answer != "84" || sum.Steps != 2 || sum.Model != agent.ScriptModel || sum.Attempts != 2 || sum.Tokens != 240 {
		t.Errorf("summary = %+v", sum)
	}
	res := rec.toolResults()
	if len(res) != 1 || !strings.Contains(res[0].Text, "84") || res[0].IsError {
		t.Errorf("the planner was told %+v, want the calculation's 84", res)
	}
	// The system prompt carries the trust boundary, and the goal is
	// wrapped apart from it.
	msgs := rec.reqs[0].Messages
	if msgs[0].Role != model.RoleSystem || !strings.Contains(msgs[0].Text, untrusted.Instructions) {
		t.Errorf("the system prompt lacks the trust-boundary text: %q", msgs[0].Text)
	}
	if msgs[1].Role != model.RoleUser || !strings.Contains(msgs[1].Text, "<goal>\nWhat is 12*(3+4)?\n</goal>") {
		t.Errorf("the goal message = %q", msgs[1].Text)
	}
	// The planner is shown the gate's tools with their bounded schemas,
	// and the planning tools.
	names := map[string]bool{}
	for _, d := range rec.reqs[0].Tools {
		names[d.Name] = true
	}
	for _, n := range []string{"calculate", "read_file", "run_command", "web_fetch", "finish", "todo", "scratchpad", "ask_user"} {
		if !names[n] {
			t.Errorf("the planner is not shown %s", n)
		}
	}
	// The checkpoint records the end.
	r, err := h.db.Run(context.Background(), sum.Session)
	if err != nil || r.State != store.RunEnded {
		t.Errorf("checkpoint = %+v, %v; want ended", r, err)
	}
}

func TestTextAnswerFinishes(t *testing.T) {
	h := newHarness(t, "", 0)
	sum := run(t, h.agent(S(agent.Step{Text: "Hello."}), agent.Options{}), "Say hello")
	wantReason(t, sum, agent.ReasonFinished)
	if sum.Answer != "Hello." {
		t.Errorf("answer = %q", sum.Answer)
	}
}

func TestStepBudget(t *testing.T) {
	h := newHarness(t, "", 0)
	// A planner that never finishes, each call new.
	p := &agent.Scripted{Next: func(n int, _ *model.Request) (agent.Step, bool) {
		return calls(C("calculate", fmt.Sprintf(`{"expression":"%d+1"}`, n))), true
	}}
	sum := run(t, h.agent(p, agent.Options{Limits: agent.Limits{MaxSteps: 3}}), "count")
	wantReason(t, sum, agent.ReasonMaxSteps)
	if sum.Steps != 3 {
		t.Errorf("steps = %d, want 3", sum.Steps)
	}
	s, err := h.db.Session(context.Background(), sum.Session)
	if err != nil || s.Step != 3 {
		t.Errorf("the store counts %d steps (%v), want 3", s.Step, err)
	}
}

func TestRepetition(t *testing.T) {
	h := newHarness(t, "", 0)
	same := C("calculate", `{"expression":"2+2"}`)
	sameReordered := C("calculate", `{ "expression" : "2+2" }`)
	rec := &recorder{steps: []agent.Step{calls(same), calls(sameReordered), calls(same), finish("never")}}
	sum := run(t, h.agent(rec.planner(), agent.Options{}), "add")
	wantReason(t, sum, agent.ReasonRepetition)
	if sum.Steps != 3 || sum.Denials != 1 {
		t.Errorf("steps %d, denials %d; want 3 and 1", sum.Steps, sum.Denials)
	}
	res := rec.toolResults()
	if len(res) != 2 || !res[1].IsError || !strings.Contains(res[1].Text, string(agent.CodeRepeatedCall)) {
		t.Errorf("the second identical call was answered %+v, want a repeated_call error value", res)
	}
}

func TestRepeatAfterChangeRuns(t *testing.T) {
	h := newHarness(t, "", 0)
	os.WriteFile(filepath.Join(h.ws.Dir(), "n.txt"), []byte("one\n"), 0o644)
	read := C("read_file", `{"path":"n.txt"}`)
	rec := &recorder{steps: []agent.Step{
		calls(read),
		calls(C("write_file", `{"path":"n.txt","content":"two\n"}`)),
		calls(read),
		finish("done"),
	}}
	sum := run(t, h.agent(rec.planner(), agent.Options{}), "rewrite n.txt")
	wantReason(t, sum, agent.ReasonFinished)
	res := rec.toolResults()
	if len(res) != 3 || res[2].IsError || !strings.Contains(res[2].Text, "two") {
		t.Errorf("the read after the write was answered %+v, want the new content", res)
	}
}

func TestTooManyCallsPerStep(t *testing.T) {
	h := newHarness(t, "", 0)
	var many []agent.StepCall
	for i := range 5 {
		many = append(many, C("calculate", fmt.Sprintf(`{"expression":"%d*2"}`, i)))
	}
	rec := &recorder{steps: []agent.Step{calls(many...), finish("ok")}}
	sum := run(t, h.agent(rec.planner(), agent.Options{Limits: agent.Limits{MaxCallsPerStep: 2}}), "double")
	wantReason(t, sum, agent.ReasonFinished)
	res := rec.toolResults()
	if len(res) != 5 {
		t.Fatalf("%d tool results, want one for each of the 5 calls", len(res))
	}
	refused := 0
	for _, m := range res {
		if strings.Contains(m.Text, string(agent.CodeTooManyCalls)) {
			refused++
		}
	}
	if refused != 3 || sum.Denials != 3 {
		t.Errorf("%d calls refused as too many (denials %d), want 3", refused, sum.Denials)
	}
}

func TestTokenBudget(t *testing.T) {
	h := newHarness(t, "", 0)
	big := &model.Usage{InputTokens: 3000, OutputTokens: 500}
	p := &agent.Scripted{Next: func(n int, _ *model.Request) (agent.Step, bool) {
		s := calls(C("calculate", fmt.Sprintf(`{"expression":"%d+1"}`, n)))
		s.Usage = big
		return s, true
	}}
	const budget = 10_000
	sum := run(t, h.agent(p, agent.Options{Limits: agent.Limits{MaxTokens: budget, AnswerTokens: 500}}), "spend")
	wantReason(t, sum, agent.ReasonBudget)
	if sum.Tokens > budget {
		t.Errorf("spent %d tokens, over the budget of %d", sum.Tokens, budget)
	}
	if sum.Tokens < budget-2*3500 {
		t.Errorf("spent %d tokens; the budget of %d allowed more calls", sum.Tokens, budget)
	}
	s, _ := h.db.Session(context.Background(), sum.Session)
	if s.Tokens != sum.Tokens {
		t.Errorf("the store holds %d tokens, the summary %d", s.Tokens, sum.Tokens)
	}
}

func TestCostBudget(t *testing.T) {
	h := newHarness(t, "", 0)
	prices := model.PriceTable{}
	if err := prices.Set("script=2,8"); err != nil { // USD per million tokens
		t.Fatal(err)
	}
	usage := &model.Usage{InputTokens: 1000, OutputTokens: 200}
	p := &agent.Scripted{Next: func(n int, _ *model.Request) (agent.Step, bool) {
		s := calls(C("calculate", fmt.Sprintf(`{"expression":"%d+1"}`, n)))
		s.Usage = usage
		return s, true
	}}
	// Each step costs 1000*2 + 200*8 = 3600 micro-dollars; reserved at
	// about 2 * input + 8 * 200.
	budget := model.PicoUSD(20_000_000_000) // $0.02
	a := h.agent(p, agent.Options{Prices: prices, Limits: agent.Limits{MaxCost: budget, AnswerTokens: 200}})
	sum := run(t, a, "spend money")
	wantReason(t, sum, agent.ReasonBudget)
	if !strings.Contains(sum.Detail, "money") {
		t.Errorf("detail = %q, want it to name the money budget", sum.Detail)
	}
	if sum.Cost > budget || sum.Cost < budget-2*3_600_000_000 {
		t.Errorf("spent %s, want close under the budget of %s", sum.Cost, budget)
	}
	if sum.Cost != model.PicoUSD(sum.Steps)*3_600_000_000 {
		t.Errorf("cost %s for %d steps, want 3600 micro-dollars a step", sum.Cost, sum.Steps)
	}
	b, _ := json.Marshal(sum)
	if !strings.Contains(string(b), `"cost_usd":0.0`) {
		t.Errorf("summary JSON %s lacks an exact cost_usd", b)
	}
}

func TestDeadline(t *testing.T) {
	h := newHarness(t, "", 0)
	p := &agent.Scripted{Next: func(n int, _ *model.Request) (agent.Step, bool) {
		time.Sleep(50 * time.Millisecond)
		return calls(C("calculate", fmt.Sprintf(`{"expression":"%d+1"}`, n))), true
	}}
	start := time.Now()
	sum := run(t, h.agent(p, agent.Options{Limits: agent.Limits{Deadline: 400 * time.Millisecond, MaxSteps: 1000}}), "forever")
	wantReason(t, sum, agent.ReasonDeadline)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the run took %s past a 400ms deadline", el)
	}
}

func TestAskUser(t *testing.T) {
	h := newHarness(t, "", 0)
	ask := C("ask_user", `{"question":"Which file?"}`)
	sum := run(t, h.agent(S(calls(ask), finish("x")), agent.Options{}), "edit the file")
	wantReason(t, sum, agent.ReasonNeedsInput)
	if sum.Question != "Which file?" {
		t.Errorf("question = %q", sum.Question)
	}
	rec := &recorder{steps: []agent.Step{calls(ask), finish("got it")}}
	a := h.agent(rec.planner(), agent.Options{Ask: func(_ context.Context, q string) (string, error) { return "notes.txt", nil }})
	sum = run(t, a, "edit the file")
	wantReason(t, sum, agent.ReasonFinished)
	if res := rec.toolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "notes.txt") {
		t.Errorf("the planner was told %+v", res)
	}
}

func TestPlanningTools(t *testing.T) {
	h := newHarness(t, "", 0)
	rec := &recorder{steps: []agent.Step{
		calls(C("todo", `{"action":"add","text":"read the notes"}`), C("scratchpad", `{"action":"write","text":"the notes are in notes.txt"}`)),
		calls(C("todo", `{"action":"done","item":1}`), C("todo", `{"action":"done","item":9}`)),
		finish("ok"),
	}}
	sum := run(t, h.agent(rec.planner(), agent.Options{}), "plan")
	wantReason(t, sum, agent.ReasonFinished)
	sys := rec.reqs[2].Messages[0].Text
	if !strings.Contains(sys, "1. [x] read the notes") || !strings.Contains(sys, "the notes are in notes.txt") {
		t.Errorf("the system prompt does not carry the plan:\n%s", sys)
	}
	res := rec.toolResults()
	if !res[3].IsError {
		t.Errorf("marking item 9 done was answered %+v, want an error value", res[3])
	}
}

func TestToolFallback(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string","maxLength":100}}}`)
	primary := tool.Tool{Name: "lookup", Description: "look up", Schema: schema, Risk: tool.RiskLow, Effect: tool.EffectRead,
		Fallback: "lookup_mirror",
		Run: func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{}, errors.New("the primary index is down")
		}}
	mirror := tool.Tool{Name: "lookup_mirror", Description: "look up, from the mirror", Schema: schema, Risk: tool.RiskLow, Effect: tool.EffectRead,
		Run: func(_ context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Result{Content: "mirror says 42"}, nil
		}}
	h := newHarness(t, "", 0, primary, mirror)
	rec := &recorder{steps: []agent.Step{calls(C("lookup", `{"q":"answer"}`)), finish("42")}}
	sum := run(t, h.agent(rec.planner(), agent.Options{}), "look up the answer")
	wantReason(t, sum, agent.ReasonFinished)
	res := rec.toolResults()
	if len(res) != 1 || res[0].IsError || !strings.Contains(res[0].Text, "mirror says 42") || !strings.Contains(res[0].Text, "lookup_mirror") {
		t.Errorf("the planner was told %+v, want the mirror's answer, named", res)
	}
}

func TestContextTrimmed(t *testing.T) {
	h := newHarness(t, "", 0)
	os.WriteFile(filepath.Join(h.ws.Dir(), "big.txt"), []byte(strings.Repeat("lorem ipsum dolor sit amet\n", 300)), 0o644)
	rec := &recorder{}
	p := &agent.Scripted{Next: func(n int, req *model.Request) (agent.Step, bool) {
		rec.reqs = append(rec.reqs, req)
		if n == 6 {
			return finish("read"), true
		}
		return calls(C("read_file", fmt.Sprintf(`{"path":"big.txt","offset":%d}`, n+1))), true
	}}
	const budget = 8000
	sum := run(t, h.agent(p, agent.Options{Limits: agent.Limits{ContextTokens: budget}}), "read it all")
	wantReason(t, sum, agent.ReasonFinished)
	trimmed := false
	for i, req := range rec.reqs {
		if est := agent.EstimateTokens(req.Messages, req.Tools); est > budget {
			t.Errorf("request %d is estimated at %d tokens, over the budget of %d", i, est, budget)
		}
		if strings.Contains(req.Messages[1].Text, "were trimmed") {
			trimmed = true
		}
		// A trimmed conversation still starts with a whole turn.
		if len(req.Messages) > 2 && req.Messages[2].Role != model.RoleAssistant {
			t.Errorf("request %d's history starts with a %s message", i, req.Messages[2].Role)
		}
	}
	if !trimmed {
		t.Error("no request was trimmed")
	}
}

func TestDegradedPlannerEnds(t *testing.T) {
	h := newHarness(t, "", 0)
	sum := run(t, h.agent(degraded{}, agent.Options{}), "anything")
	wantReason(t, sum, agent.ReasonDegraded)
	if sum.Answer != model.DefaultDegradedText {
		t.Errorf("answer = %q, want the safe default", sum.Answer)
	}
}

// degraded answers as a chain whose models all failed.
type degraded struct{}

func (degraded) Complete(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Text: model.DefaultDegradedText, StopReason: model.StopDegraded,
		Reason: &model.Error{Code: model.CodeAllModelsFailed, Message: "every model failed"}, Badge: model.Badge{Attempts: 4}}, nil
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, "", 0)
	a := h.agent(S(), agent.Options{})
	for _, goal := range []string{"", "   ", strings.Repeat("x", agent.MaxGoalBytes+1), "\xff"} {
		if _, err := a.Run(context.Background(), "", goal); err == nil {
			t.Errorf("goal %.20q: no error", goal)
		}
	}
	sum := run(t, a, "once")
	if _, err := a.Run(context.Background(), sum.Session, "again"); err == nil {
		t.Error("a second run in the same session was not refused")
	}
	if _, err := agent.New(&agent.Options{Gate: h.gate, Planner: S(), Sessions: h.db, Limits: agent.Limits{MaxSteps: -1}}); err == nil {
		t.Error("a negative step budget was accepted")
	}
	if _, err := agent.New(&agent.Options{Gate: h.gate, Planner: S()}); err == nil {
		t.Error("an agent with no session store was accepted")
	}
}
