package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
)

// sleeps records the waits of a Policy without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// seeded is a concurrency-safe seeded jitter source.
func seeded(seed uint64) func(time.Duration) time.Duration {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 1))
	return func(max time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(max)))
	}
}

func entryFor(t *testing.T, p model.Provider, srv *modeltest.Server, name string) model.Entry {
	t.Helper()
	e, err := model.New(model.Spec{Provider: p, Model: name, BaseURL: srv.BaseURL()}, &model.ClientOptions{APIKey: model.NewAPIKey(testKey)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newChain(t *testing.T, opts *model.Options, entries ...model.Entry) *model.Chain {
	t.Helper()
	c, err := model.NewChain(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hello() *model.Request {
	return &model.Request{Messages: []model.Message{model.User("hello")}}
}

// failing is a Client that always fails with code.
type failing struct {
	code  model.Code
	calls atomic.Int64
}

func (f *failing) Complete(ctx context.Context, _ *model.Request) (*model.Response, error) {
	f.calls.Add(1)
	return nil, &model.Error{Code: f.code, Message: "injected"}
}

// TestFullJitterEnvelope checks every backoff against its envelope
// min(cap, base·2^n), and the mean of each retry's waits against half the
// envelope, for an injected seeded source and for the default one.
func TestFullJitterEnvelope(t *testing.T) {
	const (
		base     = 100 * time.Millisecond
		cap      = time.Second
		attempts = 8
		calls    = 400
	)
	wantEnv := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for _, src := range []struct {
		name   string
		jitter func(time.Duration) time.Duration
	}{{"seeded", seeded(42)}, {"default", nil}} {
		t.Run(src.name, func(t *testing.T) {
			rec := &sleeps{}
			pol := &model.Policy{MaxAttempts: attempts, BaseDelay: base, MaxDelay: cap, Sleep: rec.sleep, Jitter: src.jitter}
			for n, w := range wantEnv {
				if got := pol.Envelope(n); got != w*time.Millisecond {
					t.Errorf("Envelope(%d) = %s, want %s", n, got, w*time.Millisecond)
				}
			}
			fc := &failing{code: model.CodeServerError}
			c := newChain(t, &model.Options{Policy: pol, Breaker: &model.BreakerOptions{Failures: 1 << 30}, DefaultLimits: &model.Limits{Unlimited: true}},
				model.Entry{Name: "f", Client: fc})
			for range calls {
				resp, err := c.Complete(context.Background(), hello())
				if err != nil || resp.Success || resp.Badge.Attempts != attempts {
					t.Fatalf("got %+v, %v; want a degraded answer after %d attempts", resp, err, attempts)
				}
			}
			got := rec.all()
			if len(got) != calls*(attempts-1) {
				t.Fatalf("got %d waits, want %d", len(got), calls*(attempts-1))
			}
			sums := make([]time.Duration, attempts-1)
			for i, d := range got {
				n := i % (attempts - 1) // calls run one after another
				env := wantEnv[n] * time.Millisecond
				if d < 0 || d >= env {
					t.Fatalf("wait %s after failure %d is outside [0, %s)", d, n, env)
				}
				sums[n] += d
			}
			for n, sum := range sums {
				mean := float64(sum) / calls
				half := float64(wantEnv[n]*time.Millisecond) / 2
				// The mean of 400 uniform draws has a standard deviation of
				// about 1.4% of the envelope; 10% is seven of them.
				if mean < half*0.8 || mean > half*1.2 {
					t.Errorf("retry %d: mean wait %s, want near %s", n, time.Duration(mean), time.Duration(half))
				}
			}
		})
	}
}

// TestDefaults checks the named defaults as a chain given no options
// applies them: four attempts, backoff inside the default envelopes, a
// 60 s attempt timeout and a 10 min deadline.
func TestDefaults(t *testing.T) {
	if model.DefaultMaxAttempts != 4 || model.DefaultAttemptTimeout != time.Minute || model.DefaultDeadline != 10*time.Minute {
		t.Errorf("defaults changed: %d %s %s", model.DefaultMaxAttempts, model.DefaultAttemptTimeout, model.DefaultDeadline)
	}
	rec := &sleeps{}
	fc := &failing{code: model.CodeOverloaded}
	c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}}, model.Entry{Name: "f", Client: fc})
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || resp.Success {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if fc.calls.Load() != model.DefaultMaxAttempts || resp.Badge.Attempts != model.DefaultMaxAttempts {
		t.Errorf("got %d calls, badge %d, want %d", fc.calls.Load(), resp.Badge.Attempts, model.DefaultMaxAttempts)
	}
	var p *model.Policy
	for n, d := range rec.all() {
		if env := p.Envelope(n); d < 0 || d >= env || env != min(model.DefaultMaxDelay, model.DefaultBaseDelay<<n) {
			t.Errorf("wait %d: %s, envelope %s", n, d, env)
		}
	}

	for _, tt := range []struct {
		name string
		pol  *model.Policy
		want time.Duration
	}{
		{"attempt", nil, model.DefaultAttemptTimeout},
		{"deadline", &model.Policy{AttemptTimeout: time.Hour}, model.DefaultDeadline},
	} {
		var left time.Duration
		probe := clientFunc(func(ctx context.Context, _ *model.Request) (*model.Response, error) {
			dl, _ := ctx.Deadline()
			left = time.Until(dl)
			return &model.Response{Text: "ok"}, nil
		})
		c := newChain(t, &model.Options{Policy: tt.pol}, model.Entry{Name: "p", Client: probe})
		if _, err := c.Complete(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
		if left > tt.want || left < tt.want-10*time.Second {
			t.Errorf("%s: the attempt's context had %s left, want about %s", tt.name, left, tt.want)
		}
	}
}

type clientFunc func(context.Context, *model.Request) (*model.Response, error)

func (f clientFunc) Complete(ctx context.Context, r *model.Request) (*model.Response, error) {
	return f(ctx, r)
}

func TestRetryAfterHonoured(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		p     model.Provider
		fault modeltest.Fault
		want  time.Duration
	}{
		{"seconds", model.ProviderOpenAI, modeltest.RateLimited("7"), 7 * time.Second},
		{"http date", model.ProviderAnthropic, modeltest.RateLimited(now.Add(12 * time.Second).Format(http.TimeFormat)), 12 * time.Second},
		{"ms", model.ProviderAnthropic, modeltest.Fault{Kind: modeltest.KindStatus, Status: 529, Header: http.Header{"Retry-After-Ms": {"1500"}}}, 1500 * time.Millisecond},
		{"zero", model.ProviderOpenAI, modeltest.RateLimited("0"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := modeltest.Config{Faults: modeltest.Sequence(tt.fault, tt.fault)}
			srv := modeltest.NewOpenAI(cfg)
			if tt.p == model.ProviderAnthropic {
				srv = modeltest.NewAnthropic(cfg)
			}
			defer srv.Close()
			e, err := model.New(model.Spec{Provider: tt.p, Model: "m", BaseURL: srv.BaseURL()},
				&model.ClientOptions{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			rec := &sleeps{}
			c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep, Jitter: seeded(1)}}, e)
			resp, err := c.Complete(context.Background(), hello())
			if err != nil || !resp.Success || resp.Badge.Attempts != 3 {
				t.Fatalf("got %+v, %v; want success on the third attempt", resp, err)
			}
			if got := rec.all(); len(got) != 2 || got[0] != tt.want || got[1] != tt.want {
				t.Errorf("waits %v, want [%s %s]", got, tt.want, tt.want)
			}
		})
	}
}

func TestRetryAfterTooLongFallsBack(t *testing.T) {
	primary := modeltest.NewOpenAI(modeltest.Config{Faults: modeltest.Sequence(modeltest.RateLimited("3600"))})
	defer primary.Close()
	backup := modeltest.NewAnthropic(modeltest.Config{})
	defer backup.Close()
	rec := &sleeps{}
	c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}},
		entryFor(t, model.ProviderOpenAI, primary, "a"), entryFor(t, model.ProviderAnthropic, backup, "b"))
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || !resp.Success {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if len(rec.all()) != 0 || primary.Count() != 1 {
		t.Errorf("waited %v and sent %d to the primary; want no wait and one attempt", rec.all(), primary.Count())
	}
	if fb := resp.Badge.Fallbacks; len(fb) != 1 || fb[0].Reason != model.CodeRetryAfterTooLong {
		t.Errorf("fallbacks %+v", fb)
	}
}

// TestNoRetryOnClientErrors: a 4xx other than 408, 409 and 429 goes
// straight to the next model.
func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		primary := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Status(status) }})
		backup := modeltest.NewOpenAI(modeltest.Config{})
		rec := &sleeps{}
		eb := entryFor(t, model.ProviderOpenAI, backup, "b")
		c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}}, entryFor(t, model.ProviderOpenAI, primary, "a"), eb)
		resp, err := c.Complete(context.Background(), hello())
		if err != nil || !resp.Success || resp.Badge.Model != eb.Name || resp.Badge.Attempts != 2 {
			t.Errorf("%d: got %+v, %v", status, resp, err)
		}
		if primary.Count() != 1 || len(rec.all()) != 0 {
			t.Errorf("%d: %d attempts on the primary and waits %v; want 1 and none", status, primary.Count(), rec.all())
		}
		primary.Close()
		backup.Close()
	}
}

// TestRetriesBoundedThenDegrade: every model failing gives exactly
// MaxAttempts requests per model and a safe default answer.
func TestRetriesBoundedThenDegrade(t *testing.T) {
	always := func(f modeltest.Fault) modeltest.Config {
		return modeltest.Config{Faults: func(int) modeltest.Fault { return f }}
	}
	a := modeltest.NewOpenAI(always(modeltest.Status(500)))
	defer a.Close()
	b := modeltest.NewAnthropic(always(modeltest.Overloaded()))
	defer b.Close()
	rec := &sleeps{}
	c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}},
		entryFor(t, model.ProviderOpenAI, a, "a"), entryFor(t, model.ProviderAnthropic, b, "b"))
	resp, err := c.Complete(context.Background(), hello())
	if err != nil {
		t.Fatalf("got error %v, want a degraded answer", err)
	}
	if a.Count() != model.DefaultMaxAttempts || b.Count() != model.DefaultMaxAttempts {
		t.Errorf("requests: %d and %d, want %d each", a.Count(), b.Count(), model.DefaultMaxAttempts)
	}
	if resp.Success || resp.Text != model.DefaultDegradedText || len(resp.ToolCalls) != 0 || resp.StopReason != model.StopDegraded {
		t.Errorf("got %+v, want the safe default", resp)
	}
	r := resp.Reason
	if r == nil || r.Code != model.CodeAllModelsFailed || r.Hint == "" || len(r.Attempts) != 2 ||
		r.Attempts[0].Code != model.CodeServerError || r.Attempts[1].Code != model.CodeOverloaded || r.Attempts[0].Model == "" {
		t.Errorf("reason %+v", r)
	}
	if resp.Badge.Attempts != 2*model.DefaultMaxAttempts || len(resp.Badge.Fallbacks) != 2 || resp.Badge.Model != "" {
		t.Errorf("badge %+v", resp.Badge)
	}
}

func TestAttemptTimeoutThenFallback(t *testing.T) {
	primary := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Hang() }})
	defer primary.Close()
	backup := modeltest.NewAnthropic(modeltest.Config{Reply: toolReply})
	defer backup.Close()
	rec := &sleeps{}
	pa, pb := entryFor(t, model.ProviderOpenAI, primary, "a"), entryFor(t, model.ProviderAnthropic, backup, "b")
	c := newChain(t, &model.Options{Policy: &model.Policy{MaxAttempts: 2, AttemptTimeout: 100 * time.Millisecond, Sleep: rec.sleep}}, pa, pb)
	start := time.Now()
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || !resp.Success {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s; the attempt timeout did not cut the hangs", el)
	}
	checkToolAnswer(t, resp)
	want := model.Badge{Model: pb.Name, Attempts: 3, Fallbacks: []model.Fallback{{From: pa.Name, Reason: model.CodeAttemptTimeout}}}
	if b := resp.Badge; b.Model != want.Model || b.Attempts != want.Attempts || len(b.Fallbacks) != 1 || b.Fallbacks[0] != want.Fallbacks[0] {
		t.Errorf("badge %+v, want %+v", b, want)
	}
}

func TestDeadlineDegrades(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Hang() }})
	defer srv.Close()
	c := newChain(t, &model.Options{Policy: &model.Policy{Deadline: 200 * time.Millisecond}}, entryFor(t, model.ProviderOpenAI, srv, "a"))
	start := time.Now()
	resp, err := c.Complete(context.Background(), hello())
	if err != nil {
		t.Fatalf("got error %v, want a degraded answer", err)
	}
	if resp.Success || resp.Reason.Code != model.CodeDeadlineExceeded {
		t.Errorf("got %+v", resp)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s past a 200ms deadline", el)
	}
}

func TestCallerCancelIsAnError(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Hang() }})
	defer srv.Close()
	c := newChain(t, nil, entryFor(t, model.ProviderOpenAI, srv, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp, err := c.Complete(ctx, hello())
	if resp != nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, &model.Error{Code: model.CodeCanceled}) {
		t.Errorf("got %+v, %v; want canceled wrapping the context's error", resp, err)
	}
}

func TestInvalidRequestDegrades(t *testing.T) {
	fc := &failing{code: model.CodeServerError}
	c := newChain(t, nil, model.Entry{Name: "f", Client: fc})
	for _, req := range []*model.Request{
		nil, {}, {Messages: []model.Message{{Role: "robot"}}},
		{Messages: []model.Message{{Role: model.RoleTool, Text: "x"}}},
		{Messages: []model.Message{model.User("x")}, MaxTokens: -1},
		{Messages: []model.Message{model.User("x")}, MaxTokens: model.MaxRequestMaxTokens + 1},
		{Messages: make([]model.Message, model.MaxMessages+1)},
		{Messages: []model.Message{model.User("x")}, Tools: make([]model.ToolDef, model.MaxTools+1)},
	} {
		resp, err := c.Complete(context.Background(), req)
		if err != nil || resp.Success || resp.Reason.Code != model.CodeInvalidRequest {
			t.Errorf("%+v: got %+v, %v", req, resp, err)
		}
	}
	if fc.calls.Load() != 0 {
		t.Errorf("%d calls were sent for invalid requests", fc.calls.Load())
	}
}

func TestPanickingClientDegrades(t *testing.T) {
	boom := clientFunc(func(context.Context, *model.Request) (*model.Response, error) { panic("boom") })
	c := newChain(t, nil, model.Entry{Name: "p", Client: boom})
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || resp.Success || resp.Reason.Attempts[0].Code != model.CodeInternal || resp.Badge.Attempts != 1 {
		t.Errorf("got %+v, %v", resp, err)
	}
}

func TestNewChainRefuses(t *testing.T) {
	ok := model.Entry{Name: "a", Client: &failing{}}
	for _, entries := range [][]model.Entry{
		nil,
		{{Name: "a"}},
		{{Client: &failing{}}},
		{ok, ok},
		make([]model.Entry, model.MaxChainModels+1),
	} {
		if _, err := model.NewChain(entries, nil); !errors.Is(err, &model.Error{Code: model.CodeInvalidRequest}) {
			t.Errorf("%v: got %v, want invalid_request", entries, err)
		}
	}
}

// fakeClock is a settable clock for the breakers.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCircuitBreaker(t *testing.T) {
	var healthy atomic.Bool
	primary := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault {
		if healthy.Load() {
			return modeltest.OK()
		}
		return modeltest.Status(503)
	}})
	defer primary.Close()
	backup := modeltest.NewOpenAI(modeltest.Config{})
	defer backup.Close()
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	pa, pb := entryFor(t, model.ProviderOpenAI, primary, "a"), entryFor(t, model.ProviderOpenAI, backup, "b")
	c := newChain(t, &model.Options{
		Policy:  &model.Policy{MaxAttempts: 1},
		Breaker: &model.BreakerOptions{Failures: 3, Cooldown: time.Minute},
		Now:     clock.now,
	}, pa, pb)
	call := func() *model.Response {
		t.Helper()
		resp, err := c.Complete(context.Background(), hello())
		if err != nil || !resp.Success {
			t.Fatalf("got %+v, %v", resp, err)
		}
		return resp
	}
	state := func(want model.BreakerState) {
		t.Helper()
		if got, _ := c.Breaker(pa.Name); got != want {
			t.Errorf("breaker %s, want %s", got, want)
		}
	}
	for range 3 {
		state(model.BreakerClosed)
		call()
	}
	state(model.BreakerOpen)
	resp := call()
	if primary.Count() != 3 || resp.Badge.Fallbacks[0].Reason != model.CodeCircuitOpen {
		t.Errorf("open breaker: %d requests reached the primary, fallback %+v", primary.Count(), resp.Badge.Fallbacks)
	}
	clock.add(time.Minute)
	state(model.BreakerHalfOpen)
	call() // the probe fails: open again
	state(model.BreakerOpen)
	if primary.Count() != 4 {
		t.Errorf("half-open let %d probes through, want 1", primary.Count()-3)
	}
	clock.add(time.Minute)
	healthy.Store(true)
	if resp := call(); resp.Badge.Model != pa.Name {
		t.Errorf("the probe's answer came from %s", resp.Badge.Model)
	}
	state(model.BreakerClosed)
}

// TestReferenceScenario: the primary fails 60% of the time with 429s and
// hangs past the attempt timeout, over 100 concurrent tasks; the fallback
// takes over, every task completes or degrades with a reason, retries
// stay bounded, and every wait is a Retry-After or inside its envelope.
func TestReferenceScenario(t *testing.T) {
	const tasks = 100
	primary := modeltest.NewOpenAI(modeltest.Config{
		Faults: modeltest.Random(7, 0.6, modeltest.RateLimited("1"), modeltest.Hang()),
	})
	defer primary.Close()
	backup := modeltest.NewAnthropic(modeltest.Config{
		Faults: modeltest.Random(8, 0.2, modeltest.Status(500), modeltest.Overloaded()),
	})
	defer backup.Close()
	rec := &sleeps{}
	pol := &model.Policy{AttemptTimeout: 150 * time.Millisecond, Sleep: rec.sleep, Jitter: seeded(3)}
	pa, pb := entryFor(t, model.ProviderOpenAI, primary, "gpt-primary"), entryFor(t, model.ProviderAnthropic, backup, "claude-backup")
	c := newChain(t, &model.Options{
		Policy:        pol,
		Breaker:       &model.BreakerOptions{Cooldown: 50 * time.Millisecond},
		DefaultLimits: &model.Limits{MaxConcurrent: 32, Unlimited: true},
	}, pa, pb)

	start := time.Now()
	resps := make([]*model.Response, tasks)
	errs := make([]error, tasks)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() { resps[i], errs[i] = c.Complete(context.Background(), hello()) })
	}
	wg.Wait()
	elapsed := time.Since(start)

	byModel := map[string]int{}
	degraded := 0
	for i, r := range resps {
		if errs[i] != nil || r == nil {
			t.Fatalf("task %d: got %v, %v; want an answer or a degraded answer", i, r, errs[i])
		}
		if r.Badge.Attempts < 1 || r.Badge.Attempts > 2*model.DefaultMaxAttempts {
			t.Errorf("task %d: %d attempts, outside [1, %d]", i, r.Badge.Attempts, 2*model.DefaultMaxAttempts)
		}
		if !r.Success {
			degraded++
			if r.Reason == nil || r.Reason.Code == "" || r.Text != model.DefaultDegradedText {
				t.Errorf("task %d: degraded without a reason: %+v", i, r)
			}
			continue
		}
		byModel[r.Badge.Model]++
		if r.Badge.Model == pb.Name {
			if len(r.Badge.Fallbacks) != 1 || r.Badge.Fallbacks[0].From != pa.Name {
				t.Errorf("task %d: answered by the fallback with fallbacks %+v", i, r.Badge.Fallbacks)
			}
			switch r.Badge.Fallbacks[0].Reason {
			case model.CodeRateLimited, model.CodeAttemptTimeout, model.CodeCircuitOpen:
			default:
				t.Errorf("task %d: left the primary for %s", i, r.Badge.Fallbacks[0].Reason)
			}
		}
	}
	if byModel[pb.Name] == 0 {
		t.Errorf("the fallback never took over: %v", byModel)
	}
	if n := primary.Count(); n > tasks*model.DefaultMaxAttempts {
		t.Errorf("the primary got %d requests, over %d tasks × %d attempts", n, tasks, model.DefaultMaxAttempts)
	}
	if n := backup.Count(); n > tasks*model.DefaultMaxAttempts {
		t.Errorf("the backup got %d requests, over %d tasks × %d attempts", n, tasks, model.DefaultMaxAttempts)
	}
	for _, d := range rec.all() {
		if d != time.Second && (d < 0 || d >= pol.Envelope(model.DefaultMaxAttempts)) {
			t.Errorf("wait %s is neither the Retry-After nor inside an envelope", d)
		}
	}
	t.Logf("%d tasks in %s: answered by %v, %d degraded; %d requests to the primary, %d to the backup",
		tasks, elapsed, byModel, degraded, primary.Count(), backup.Count())
}

func TestProviderLimits(t *testing.T) {
	var inFlight, peak atomic.Int64
	slow := clientFunc(func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		return &model.Response{Text: "ok"}, nil
	})
	// Two models of one provider share its limits.
	c := newChain(t, &model.Options{Limits: map[string]*model.Limits{"p": {MaxConcurrent: 3, Unlimited: true}}},
		model.Entry{Name: "a", Provider: "p", Client: slow}, model.Entry{Name: "b", Provider: "p", Client: slow})
	c2 := newChain(t, &model.Options{Limits: map[string]*model.Limits{"p": {MaxConcurrent: 3, Unlimited: true}}},
		model.Entry{Name: "b", Provider: "p", Client: slow})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { c.Complete(context.Background(), hello()) })
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Errorf("%d attempts were in flight at once, over MaxConcurrent 3", p)
	}
	// A limit belongs to one chain: another chain has its own.
	peak.Store(0)
	for range 10 {
		wg.Go(func() { c.Complete(context.Background(), hello()) })
		wg.Go(func() { c2.Complete(context.Background(), hello()) })
	}
	wg.Wait()
	if p := peak.Load(); p > 6 {
		t.Errorf("%d attempts in flight across two chains of limit 3", p)
	}

	fast := clientFunc(func(context.Context, *model.Request) (*model.Response, error) { return &model.Response{}, nil })
	rc := newChain(t, &model.Options{DefaultLimits: &model.Limits{RatePerSecond: 20, Burst: 1}}, model.Entry{Name: "a", Client: fast})
	start := time.Now()
	for range 6 {
		rc.Complete(context.Background(), hello())
	}
	// Five waits of 50 ms after the burst of one: at least 250 ms.
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("6 calls at 20/s with burst 1 took %s, under the 250 ms the rate allows", el)
	}
}

// TestBreakerDefaults: with no options a breaker opens after
// DefaultBreakerFailures failed attempts and half-opens after
// DefaultBreakerCooldown.
func TestBreakerDefaults(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	fc := &failing{code: model.CodeServerError}
	c := newChain(t, &model.Options{Policy: &model.Policy{MaxAttempts: 1}, Now: clock.now}, model.Entry{Name: "f", Client: fc})
	for i := range model.DefaultBreakerFailures {
		if st, _ := c.Breaker("f"); st != model.BreakerClosed {
			t.Fatalf("after %d failures the breaker is %s", i, st)
		}
		c.Complete(context.Background(), hello())
	}
	if st, _ := c.Breaker("f"); st != model.BreakerOpen {
		t.Fatalf("after %d failures the breaker is %s, want open", model.DefaultBreakerFailures, st)
	}
	resp, _ := c.Complete(context.Background(), hello())
	if fc.calls.Load() != model.DefaultBreakerFailures || resp.Reason.Attempts[0].Code != model.CodeCircuitOpen || resp.Badge.Attempts != 0 {
		t.Errorf("an open breaker let a call through: %d calls, %+v", fc.calls.Load(), resp.Reason)
	}
	clock.add(model.DefaultBreakerCooldown - time.Second)
	if st, _ := c.Breaker("f"); st != model.BreakerOpen {
		t.Errorf("before the cool-down the breaker is %s", st)
	}
	clock.add(time.Second)
	if st, _ := c.Breaker("f"); st != model.BreakerHalfOpen {
		t.Errorf("after the cool-down the breaker is %s, want half-open", st)
	}
}

// TestLimitDefaults: with no options a provider gets DefaultMaxConcurrent
// attempts at once and DefaultRatePerSecond after a DefaultBurst.
func TestLimitDefaults(t *testing.T) {
	var inFlight, peak atomic.Int64
	slow := clientFunc(func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		return &model.Response{}, nil
	})
	c := newChain(t, nil, model.Entry{Name: "s", Client: slow})
	const calls = model.DefaultBurst + 5
	start := time.Now()
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { c.Complete(context.Background(), hello()) })
	}
	wg.Wait()
	if p := peak.Load(); p > model.DefaultMaxConcurrent {
		t.Errorf("%d attempts in flight, over DefaultMaxConcurrent %d", p, model.DefaultMaxConcurrent)
	}
	// After the burst, five more starts at 10/s take at least 0.5 s.
	if el, want := time.Since(start), 5*time.Second/model.DefaultRatePerSecond; el < want*8/10 {
		t.Errorf("%d calls took %s, under the %s the default rate allows", calls, el, want)
	}
}

func TestDefaultMaxTokensSent(t *testing.T) {
	for _, p := range []model.Provider{model.ProviderOpenAI, model.ProviderAnthropic} {
		srv := modeltest.NewOpenAI(modeltest.Config{})
		if p == model.ProviderAnthropic {
			srv = modeltest.NewAnthropic(modeltest.Config{})
		}
		if _, err := newClient(t, p, srv).Complete(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
		body, _ := srv.Request(0)
		var sent struct {
			MaxTokens int `json:"max_tokens"`
		}
		if json.Unmarshal(body, &sent); sent.MaxTokens != model.DefaultMaxTokens {
			t.Errorf("%s: max_tokens %d, want %d in %s", p, sent.MaxTokens, model.DefaultMaxTokens, body)
		}
		srv.Close()
	}
}

// TestMaxRetryAfterBoundary: DefaultMaxRetryAfter itself is honoured, a
// second more is not.
func TestMaxRetryAfterBoundary(t *testing.T) {
	for _, tt := range []struct {
		header string
		waits  int
	}{{"60", 1}, {"61", 0}} {
		srv := modeltest.NewOpenAI(modeltest.Config{Faults: modeltest.Sequence(modeltest.RateLimited(tt.header))})
		rec := &sleeps{}
		c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}}, entryFor(t, model.ProviderOpenAI, srv, "m"))
		resp, err := c.Complete(context.Background(), hello())
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); len(got) != tt.waits || (tt.waits == 1 && got[0] != model.DefaultMaxRetryAfter) {
			t.Errorf("Retry-After %s: waits %v, success %v", tt.header, got, resp.Success)
		}
		srv.Close()
	}
}

func TestFromSpecs(t *testing.T) {
	a := modeltest.NewOpenAI(modeltest.Config{Faults: modeltest.Sequence(modeltest.Status(401))})
	defer a.Close()
	b := modeltest.NewAnthropic(modeltest.Config{})
	defer b.Close()
	specs := []string{"openai:llama3.2:3b@" + a.BaseURL(), "anthropic:claude-haiku-4-5@" + b.BaseURL()}
	c, err := model.FromSpecs(specs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || !resp.Success || resp.Badge.Model != specs[1] || resp.Badge.Fallbacks[0] != (model.Fallback{From: specs[0], Reason: model.CodeAuthFailed}) {
		t.Errorf("got %+v, %v", resp, err)
	}
	for _, bad := range [][]string{nil, {"nope"}, {specs[0], specs[0]}, make([]string, model.MaxChainModels+1)} {
		if _, err := model.FromSpecs(bad, nil, nil); !errors.Is(err, &model.Error{Code: model.CodeInvalidRequest}) {
			t.Errorf("%q: got %v, want invalid_request", bad, err)
		}
	}
}

// TestResetRetriedMalformedFallsBack: a reset connection is retried on the
// same model; a malformed answer moves on to the next.
func TestResetRetriedMalformedFallsBack(t *testing.T) {
	a := modeltest.NewAnthropic(modeltest.Config{Faults: modeltest.Sequence(modeltest.Reset(), modeltest.Malformed())})
	defer a.Close()
	b := modeltest.NewOpenAI(modeltest.Config{})
	defer b.Close()
	rec := &sleeps{}
	ea, eb := entryFor(t, model.ProviderAnthropic, a, "a"), entryFor(t, model.ProviderOpenAI, b, "b")
	c := newChain(t, &model.Options{Policy: &model.Policy{Sleep: rec.sleep}}, ea, eb)
	resp, err := c.Complete(context.Background(), hello())
	if err != nil || !resp.Success || resp.Badge.Model != eb.Name || resp.Badge.Attempts != 3 || len(rec.all()) != 1 {
		t.Fatalf("got %+v, %v, waits %v", resp, err, rec.all())
	}
	if fb := resp.Badge.Fallbacks; len(fb) != 1 || fb[0].Reason != model.CodeMalformedResponse {
		t.Errorf("fallbacks %+v", fb)
	}
	if got := a.Faults(); len(got) != 2 || got[0] != modeltest.KindReset || got[1] != modeltest.KindMalformed {
		t.Errorf("the primary met %v", got)
	}
}
