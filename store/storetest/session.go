package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// TestSessions runs the conformance suite for store.Sessions. open must
// return a fresh, empty store each time it is called.
func TestSessions(t *testing.T, open func(t *testing.T) store.Sessions) {
	t.Run("ChargeAndRead", func(t *testing.T) { testCharge(t, open(t)) })
	t.Run("Budget", func(t *testing.T) { testBudget(t, open(t)) })
	t.Run("ModeAndKill", func(t *testing.T) { testModeAndKill(t, open(t)) })
	t.Run("KillAll", func(t *testing.T) { testKillAll(t, open(t)) })
	t.Run("Refusals", func(t *testing.T) { testSessionRefusals(t, open(t)) })
	t.Run("ConcurrentCharges", func(t *testing.T) { testConcurrentCharges(t, open(t)) })
	testObservations(t, open)
}

func checkSession(t *testing.T, what string, got, want store.Session) {
	t.Helper()
	g := fmt.Sprint(got.ID, got.Step, got.Tokens, got.MicroUSD, got.Mode, got.Killed, got.Flagged)
	w := fmt.Sprint(want.ID, want.Step, want.Tokens, want.MicroUSD, want.Mode, want.Killed, want.Flagged)
	if g != w {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
	checkTime(t, what+" Created", got.Created, want.Created)
	checkTime(t, what+" Updated", got.Updated, want.Updated)
}

func testCharge(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	if _, err := s.Session(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session of a new id: err = %v, want ErrNotFound", err)
	}
	got, err := s.ChargeSession(ctx, "s1", store.Charge{Steps: 1, Tokens: 120, MicroUSD: 3500}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Session{ID: "s1", Step: 1, Tokens: 120, MicroUSD: 3500, Created: t0, Updated: t0}
	checkSession(t, "first charge", got, want)
	at := t0.Add(time.Second)
	got, err = s.ChargeSession(ctx, "s1", store.Charge{Steps: 1, Tokens: 80, MicroUSD: store.MaxCounter - 3500}, at)
	if err != nil {
		t.Fatal(err)
	}
	want.Step, want.Tokens, want.MicroUSD, want.Updated = 2, 200, store.MaxCounter, at
	checkSession(t, "second charge", got, want)
	read, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	checkSession(t, "read back", read, want)
	// Each session is its own.
	other, err := s.ChargeSession(ctx, "s2", store.Charge{Steps: 1}, at)
	if err != nil || other.Step != 1 || other.Tokens != 0 {
		t.Errorf("another session = %+v, %v", other, err)
	}
}

func testBudget(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	limits := store.Charge{MaxSteps: 3, MaxTokens: 1000, MaxMicroUSD: 50_000}
	charge := func(steps, tokens, usd int64) store.Charge {
		c := limits
		c.Steps, c.Tokens, c.MicroUSD = steps, tokens, usd
		return c
	}
	if _, err := s.ChargeSession(ctx, "b", charge(1, 900, 10_000), t0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c     store.Charge
		limit string
	}{
		{charge(1, 101, 0), "tokens"},
		{charge(1, 0, 40_001), "micro_usd"},
		{charge(3, 0, 0), "steps"},
	} {
		got, err := s.ChargeSession(ctx, "b", tc.c, t0.Add(time.Second))
		var be *store.BudgetError
		if !errors.As(err, &be) || !errors.Is(err, store.ErrOverBudget) || be.Limit != tc.limit {
			t.Errorf("charge %+v: err = %v, want a *BudgetError on %s", tc.c, err, tc.limit)
		}
		if got.Step != 1 || got.Tokens != 900 || got.MicroUSD != 10_000 {
			t.Errorf("a refused charge returned %+v, want the session unchanged", got)
		}
	}
	// Exactly at the limits is allowed.
	got, err := s.ChargeSession(ctx, "b", charge(2, 100, 40_000), t0.Add(2*time.Second))
	if err != nil || got.Step != 3 || got.Tokens != 1000 || got.MicroUSD != 50_000 {
		t.Errorf("a charge up to the limits = %+v, %v", got, err)
	}
	read, _ := s.Session(ctx, "b")
	checkTime(t, "Updated", read.Updated, t0.Add(2*time.Second))
	// Past MaxCounter is refused as over budget even without limits.
	if _, err := s.ChargeSession(ctx, "big", store.Charge{Tokens: store.MaxCounter}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChargeSession(ctx, "big", store.Charge{Tokens: 1}, t0); !errors.Is(err, store.ErrOverBudget) {
		t.Errorf("a charge past MaxCounter: err = %v, want ErrOverBudget", err)
	}
}

func testModeAndKill(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	got, err := s.SetSessionMode(ctx, "m", "read-only", t0)
	if err != nil || got.Mode != "read-only" || got.Step != 0 {
		t.Fatalf("SetSessionMode = %+v, %v", got, err)
	}
	checkTime(t, "Created", got.Created, t0)
	// A session killed before its first step stays killed.
	if _, err := s.KillSession(ctx, "k", true, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChargeSession(ctx, "k", store.Charge{Steps: 1}, t0); !errors.Is(err, store.ErrKilled) {
		t.Errorf("charging a killed session: err = %v, want ErrKilled", err)
	}
	if _, err := s.ChargeSession(ctx, "m", store.Charge{Steps: 1}, t0); err != nil {
		t.Errorf("another session is not killed: %v", err)
	}
	if _, err := s.KillSession(ctx, "k", false, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = s.ChargeSession(ctx, "k", store.Charge{Steps: 1}, t0.Add(2*time.Second))
	if err != nil || got.Step != 1 || got.Killed {
		t.Errorf("after un-killing: %+v, %v", got, err)
	}
	read, err := s.Session(ctx, "m")
	if err != nil || read.Mode != "read-only" || read.Step != 1 {
		t.Errorf("Session(m) = %+v, %v; the mode must survive a charge", read, err)
	}
}

func testKillAll(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	if killed, err := s.KillAll(ctx); err != nil || killed {
		t.Fatalf("KillAll of a new store = %v, %v; want false", killed, err)
	}
	if _, err := s.ChargeSession(ctx, "a", store.Charge{Steps: 1}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetKillAll(ctx, true); err != nil {
		t.Fatal(err)
	}
	if killed, err := s.KillAll(ctx); err != nil || !killed {
		t.Errorf("KillAll = %v, %v; want true", killed, err)
	}
	for _, id := range []string{"a", "new"} {
		if _, err := s.ChargeSession(ctx, id, store.Charge{Steps: 1}, t0); !errors.Is(err, store.ErrKilled) {
			t.Errorf("charging %q under the global kill: err = %v, want ErrKilled", id, err)
		}
	}
	if err := s.SetKillAll(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ChargeSession(ctx, "a", store.Charge{Steps: 1}, t0); err != nil || got.Step != 2 {
		t.Errorf("after clearing the global kill: %+v, %v", got, err)
	}
}

func testSessionRefusals(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		id   string
		c    store.Charge
	}{
		{"empty id", "", store.Charge{Steps: 1}},
		{"long id", strings.Repeat("s", store.MaxSessionID+1), store.Charge{Steps: 1}},
		{"negative steps", "r", store.Charge{Steps: -1}},
		{"negative tokens", "r", store.Charge{Tokens: -5}},
		{"negative limit", "r", store.Charge{Steps: 1, MaxSteps: -1}},
		{"past MaxCounter", "r", store.Charge{MicroUSD: store.MaxCounter + 1}},
	} {
		if _, err := s.ChargeSession(ctx, tc.id, tc.c, t0); err == nil {
			t.Errorf("%s: ChargeSession succeeded", tc.name)
		}
	}
	if _, err := s.Session(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused charge created the session: err = %v", err)
	}
	if _, err := s.SetSessionMode(ctx, "r", strings.Repeat("m", store.MaxMode+1), t0); err == nil {
		t.Error("SetSessionMode with a long mode succeeded")
	}
}

func testConcurrentCharges(t *testing.T, s store.Sessions) {
	// Contenders goroutines charge one step each, 10 times, against a step
	// limit below the total: exactly the limit is charged, never more.
	const each, limit = 10, Contenders * 10 / 2
	var wg sync.WaitGroup
	var ok, over sync.Map
	for i := range Contenders {
		wg.Go(func() {
			for j := range each {
				_, err := s.ChargeSession(context.Background(), "race", store.Charge{Steps: 1, Tokens: 2, MaxSteps: limit}, t0)
				switch {
				case err == nil:
					ok.Store(fmt.Sprint(i, j), true)
				case errors.Is(err, store.ErrOverBudget):
					over.Store(fmt.Sprint(i, j), true)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	ok.Range(func(any, any) bool { n++; return true })
	if n != limit {
		t.Errorf("%d charges succeeded, want exactly %d", n, limit)
	}
	got, err := s.Session(context.Background(), "race")
	if err != nil || got.Step != limit || got.Tokens != 2*limit {
		t.Errorf("after the race: %+v, %v; want step %d, tokens %d", got, err, limit, 2*limit)
	}
}
