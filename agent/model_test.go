package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
)

// toolThenAnswer is a fake model's plan: first a calculate call, then,
// once the request carries its result, a text answer.
func toolThenAnswer(n int, body []byte) modeltest.Reply {
	if strings.Contains(string(body), "call_calc") { // the request answers the call
		return modeltest.Reply{Text: "The answer is 84.", InputTokens: 300, OutputTokens: 8}
	}
	return modeltest.Reply{Calls: []modeltest.Call{{ID: "call_calc", Name: "calculate", Args: `{"expression":"12*(3+4)"}`}},
		InputTokens: 250, OutputTokens: 15}
}

func chainOf(t *testing.T, opts *model.Options, servers ...*modeltest.Server) *model.Chain {
	t.Helper()
	var specs []string
	for i, s := range servers {
		prov := "openai"
		if strings.HasSuffix(s.BaseURL(), "/v1") == false {
			prov = "anthropic"
		}
		specs = append(specs, prov+":model-"+string(rune('a'+i))+"@"+s.BaseURL())
	}
	c, err := model.FromSpecs(specs, &model.ClientOptions{APIKey: model.NewAPIKey("test-key")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The model planner drives the loop over both wire formats: the tool call
// the model proposes goes through the gate, and its result goes back in
// the provider's own tool-result form.
func TestModelPlannerOverBothWireFormats(t *testing.T) {
	for _, flavor := range []string{"openai", "anthropic"} {
		t.Run(flavor, func(t *testing.T) {
			cfg := modeltest.Config{Reply: toolThenAnswer}
			srv := modeltest.NewOpenAI(cfg)
			if flavor == "anthropic" {
				srv = modeltest.NewAnthropic(cfg)
			}
			defer srv.Close()
			h := newHarness(t, "", 0)
			sum := run(t, h.agent(chainOf(t, nil, srv), agent.Options{}), "What is 12*(3+4)?")
			wantReason(t, sum, agent.ReasonFinished)
			if sum.Answer != "The answer is 84." || sum.Steps != 2 || sum.Tokens != 250+15+300+8 {
				t.Errorf("summary = %+v", sum)
			}
			if srv.Count() != 2 {
				t.Fatalf("%d requests, want 2", srv.Count())
			}
			first, _ := srv.Request(0)
			second, _ := srv.Request(1)
			if !strings.Contains(string(first), `"calculate"`) || !strings.Contains(string(first), "untrusted-BOUNDARY") {
				t.Errorf("the first request lacks the tool definitions or the trust boundary: %.300s", first)
			}
			if !strings.Contains(string(second), "call_calc") {
				t.Errorf("the second request does not answer the tool call: %.500s", second)
			}
			var max struct {
				MaxTokens           int `json:"max_tokens"`
				MaxCompletionTokens int `json:"max_completion_tokens"`
			}
			json.Unmarshal(first, &max)
			if max.MaxTokens+max.MaxCompletionTokens == 0 {
				t.Errorf("the request carries no answer bound: %.300s", first)
			}
		})
	}
}

// When the primary keeps failing, the fallback answers, and the summary
// says so.
func TestModelFallback(t *testing.T) {
	primary := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Status(503) }})
	defer primary.Close()
	backup := modeltest.NewAnthropic(modeltest.Config{Reply: toolThenAnswer})
	defer backup.Close()
	pol := &model.Policy{Sleep: func(context.Context, time.Duration) error { return nil }}
	h := newHarness(t, "", 0)
	sum := run(t, h.agent(chainOf(t, &model.Options{Policy: pol}, primary, backup), agent.Options{}), "What is 12*(3+4)?")
	wantReason(t, sum, agent.ReasonFinished)
	if sum.Model != "anthropic:model-b@"+backup.BaseURL() || sum.Fallbacks < 1 || sum.Attempts < model.DefaultMaxAttempts+1 {
		t.Errorf("summary = %+v; want the backup named, with fallbacks and the primary's attempts", sum)
	}
}

// When every model fails, the run degrades with its reason and the safe
// answer; nothing crashes.
func TestAllModelsFailDegrades(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Status(500) }})
	defer srv.Close()
	pol := &model.Policy{Sleep: func(context.Context, time.Duration) error { return nil }}
	h := newHarness(t, "", 0)
	sum := run(t, h.agent(chainOf(t, &model.Options{Policy: pol}, srv), agent.Options{}), "anything")
	wantReason(t, sum, agent.ReasonDegraded)
	if sum.Answer != model.DefaultDegradedText || !strings.Contains(sum.Detail, "server_error") {
		t.Errorf("summary = %+v", sum)
	}
}

// The reference scenario, whole runs: 100 concurrent tasks, the primary
// failing 60% of the time with 429s and hangs, a fallback taking over.
// Every task finishes or degrades with a reason, and attempts stay
// bounded. (The delays' full-jitter envelope and Retry-After are checked
// on the chain itself, in package model's TestReferenceScenario.)
func TestReferenceScenarioRuns(t *testing.T) {
	const tasks = 100
	primary := modeltest.NewOpenAI(modeltest.Config{Reply: toolThenAnswer,
		Faults: modeltest.Random(11, 0.6, modeltest.RateLimited("1"), modeltest.Hang())})
	defer primary.Close()
	backup := modeltest.NewAnthropic(modeltest.Config{Reply: toolThenAnswer,
		Faults: modeltest.Random(12, 0.1, modeltest.Status(500))})
	defer backup.Close()
	pol := &model.Policy{AttemptTimeout: 150 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
	chain := chainOf(t, &model.Options{Policy: pol, Breaker: &model.BreakerOptions{Cooldown: 50 * time.Millisecond},
		DefaultLimits: &model.Limits{MaxConcurrent: 32, Unlimited: true}}, primary, backup)
	h := newHarness(t, "", 0)
	a := h.agent(chain, agent.Options{})
	sums := make([]*agent.Summary, tasks)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			s, err := a.Run(context.Background(), "", "What is 12*(3+4)?")
			if err != nil {
				t.Error(err)
			}
			sums[i] = s
		})
	}
	wg.Wait()
	finished, degraded := 0, 0
	for i, s := range sums {
		if s == nil {
			t.Fatalf("task %d has no summary", i)
		}
		switch s.Reason {
		case agent.ReasonFinished:
			finished++
			if s.Answer != "The answer is 84." {
				t.Errorf("task %d answered %q", i, s.Answer)
			}
		case agent.ReasonDegraded:
			degraded++
			if s.Detail == "" {
				t.Errorf("task %d degraded with no reason", i)
			}
		default:
			t.Errorf("task %d ended %s (%s)", i, s.Reason, s.Detail)
		}
		// Two model calls a task, each at most every attempt of both models.
		if s.Attempts < 1 || s.Attempts > 2*2*model.DefaultMaxAttempts {
			t.Errorf("task %d: %d attempts, outside [1, %d]", i, s.Attempts, 4*model.DefaultMaxAttempts)
		}
	}
	if finished < tasks*9/10 {
		t.Errorf("%d of %d tasks finished (%d degraded); the fallback should carry most", finished, tasks, degraded)
	}
	t.Logf("%d finished, %d degraded; primary %d requests, backup %d", finished, degraded, primary.Count(), backup.Count())
}

// A model with no known price has no known cost: the summary says so and
// names it, instead of pricing its answers at a made-up rate; with a price
// the cost is exact.
func TestUnpricedModelCost(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: toolThenAnswer})
	defer srv.Close()
	var events []agent.Event
	h := newHarness(t, "", 0)
	sum := run(t, h.agent(chainOf(t, nil, srv), agent.Options{OnEvent: func(e agent.Event) { events = append(events, e) }}), "What is 12*(3+4)?")
	wantReason(t, sum, agent.ReasonFinished)
	if sum.CostUSD.Known || len(sum.Unpriced) != 1 || sum.Unpriced[0] != "model-a" {
		t.Errorf("cost %v, unpriced %q; want unknown, naming model-a", sum.CostUSD, sum.Unpriced)
	}
	b, _ := json.Marshal(sum)
	if !strings.Contains(string(b), `"cost_usd":null,"unpriced_models":["model-a"]`) {
		t.Errorf("summary JSON %s", b)
	}
	models := 0
	for _, e := range events {
		if e.Type != agent.EventModel {
			continue
		}
		models++
		if b, _ := json.Marshal(e); !strings.Contains(string(b), `"cost_usd":null`) {
			t.Errorf("model event %s, want cost_usd null", b)
		}
	}
	if models != srv.Count() || models == 0 {
		t.Errorf("%d model events for %d requests", models, srv.Count())
	}

	// Priced at $1 and $2 per million tokens: (250+300)*1 + (15+8)*2 = 596 micro-dollars.
	prices := model.PriceTable{}
	if err := prices.Set("model-a=1,2"); err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, "", 0)
	sum = run(t, h.agent(chainOf(t, nil, srv), agent.Options{Prices: prices}), "What is 12*(3+4)?")
	if !sum.CostUSD.Known || sum.CostUSD.Amount != 596_000_000 || len(sum.Unpriced) != 0 {
		t.Errorf("cost %v, unpriced %q; want $0.000596", sum.CostUSD, sum.Unpriced)
	}
}
