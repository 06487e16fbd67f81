package store_test

import (
	"errors"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

func TestTakeable(t *testing.T) {
	base := store.LedgerEntry{Fingerprint: "fp", State: store.LedgerInProgress, Lease: t0.Add(time.Minute), Expires: t0.Add(time.Hour)}
	with := func(change func(e *store.LedgerEntry)) store.LedgerEntry {
		e := base
		change(&e)
		return e
	}
	for _, tc := range []struct {
		name string
		e    store.LedgerEntry
		fp   string
		now  time.Time
		from store.LedgerState
		ok   bool
	}{
		{"held", base, "fp", t0, "", false},
		{"lease just running", base, "fp", t0.Add(time.Minute - time.Nanosecond), "", false},
		{"lease ran out", base, "fp", t0.Add(time.Minute), store.LedgerInProgress, true},
		{"lease ran out, other call", base, "other", t0.Add(time.Minute), "", false},
		{"past retention", base, "fp", t0.Add(time.Hour), "", true},
		{"past retention, other call", base, "other", t0.Add(time.Hour), "", true},
		{"completed", with(func(e *store.LedgerEntry) { e.State = store.LedgerCompleted }), "fp", t0.Add(30 * time.Minute), "", false},
		{"failed for good", with(func(e *store.LedgerEntry) { e.State = store.LedgerFailed }), "fp", t0, "", false},
		{"failed, retryable", with(func(e *store.LedgerEntry) { e.State, e.Retryable = store.LedgerFailed, true }), "fp", t0, store.LedgerFailed, true},
		{"failed, retryable, other call", with(func(e *store.LedgerEntry) { e.State, e.Retryable = store.LedgerFailed, true }), "x", t0, "", false},
	} {
		from, ok := tc.e.Takeable(tc.fp, tc.now)
		if from != tc.from || ok != tc.ok {
			t.Errorf("%s: Takeable = %q, %v; want %q, %v", tc.name, from, ok, tc.from, tc.ok)
		}
	}
}

func TestChargeCheck(t *testing.T) {
	s := store.Session{ID: "s", Step: 2, Tokens: 100, MicroUSD: 5}
	for _, tc := range []struct {
		c     store.Charge
		limit string // "" when allowed
	}{
		{store.Charge{Steps: 1, MaxSteps: 3}, ""},
		{store.Charge{Steps: 2, MaxSteps: 3}, "steps"},
		{store.Charge{Tokens: 1, MaxTokens: 100}, "tokens"},
		{store.Charge{MicroUSD: 995, MaxMicroUSD: 1000}, ""},
		{store.Charge{MicroUSD: 996, MaxMicroUSD: 1000}, "micro_usd"},
		{store.Charge{Tokens: store.MaxCounter - 100}, ""},
		{store.Charge{Tokens: store.MaxCounter - 99}, "tokens"}, // no limit set: MaxCounter bounds it
	} {
		err := tc.c.Check(s)
		var be *store.BudgetError
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%+v: %v, want allowed", tc.c, err)
		case tc.limit != "" && (!errors.As(err, &be) || be.Limit != tc.limit || !errors.Is(err, store.ErrOverBudget)):
			t.Errorf("%+v: err = %v, want over budget on %s", tc.c, err, tc.limit)
		}
	}
	if _, err := (store.Charge{Steps: 1}).Apply(store.Session{Killed: true}, false, t0); !errors.Is(err, store.ErrKilled) {
		t.Errorf("Apply to a killed session: %v", err)
	}
	if _, err := (store.Charge{Steps: 1}).Apply(store.Session{}, true, t0); !errors.Is(err, store.ErrKilled) {
		t.Errorf("Apply under the global kill: %v", err)
	}
	got, err := (store.Charge{Steps: 1, Tokens: 2, MicroUSD: 3}).Apply(s, false, t0)
	if err != nil || got.Step != 3 || got.Tokens != 102 || got.MicroUSD != 8 || !got.Updated.Equal(t0) {
		t.Errorf("Apply = %+v, %v", got, err)
	}
}
