package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/store"
)

// Sizes of the ledger's concurrency tests.
const (
	// RaceKeys is how many keys the exactly-once test races on.
	RaceKeys = 24
	// RaceRounds is how many times each contender goes through every key.
	RaceRounds = 2
)

// lease is the lease the store-level tests give an acquisition.
const lease = 30 * time.Second

// keep is the retention the store-level tests give an entry.
const keep = time.Hour

// TestLedger runs the conformance suite for store.Ledger, first at the
// store's own level with explicit instants, then through package ledger
// with the real clock (leases of a fraction of a second). open must return
// a fresh, empty store each time it is called.
func TestLedger(t *testing.T, open func(t *testing.T) store.Ledger) {
	t.Run("AcquireNew", func(t *testing.T) { testAcquireNew(t, open(t)) })
	t.Run("HeldKeyIsRefused", func(t *testing.T) { testHeld(t, open(t)) })
	t.Run("Complete", func(t *testing.T) { testComplete(t, open(t)) })
	t.Run("Fail", func(t *testing.T) { testFail(t, open(t)) })
	t.Run("TakeoverAfterLeaseExpiry", func(t *testing.T) { testTakeover(t, open(t)) })
	t.Run("Renew", func(t *testing.T) { testRenew(t, open(t)) })
	t.Run("Fingerprint", func(t *testing.T) { testFingerprint(t, open(t)) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open(t)) })
	t.Run("Refusals", func(t *testing.T) { testLedgerRefusals(t, open(t)) })
	t.Run("ConcurrentAcquire", func(t *testing.T) { testConcurrentAcquire(t, open(t)) })
	t.Run("ExactlyOnce", func(t *testing.T) { testExactlyOnce(t, open(t)) })
	t.Run("LongEffectIsRenewed", func(t *testing.T) { testLongEffect(t, open(t)) })
	t.Run("LostLeaseIsReported", func(t *testing.T) { testLostLease(t, open(t)) })
	t.Run("CrashedOwnerIsTakenOver", func(t *testing.T) { testCrashedOwner(t, open(t)) })
	t.Run("WaitForTheOwner", func(t *testing.T) { testWait(t, open(t)) })
}

func acq(key, fp, owner string, now time.Time) store.LedgerAcquire {
	return store.LedgerAcquire{Key: key, Fingerprint: fp, Owner: owner, Token: "tok-" + owner + "-" + now.Format("150405.000000"),
		Now: now, Lease: now.Add(lease), Expires: now.Add(lease + keep)}
}

func acquire(t *testing.T, s store.Ledger, a store.LedgerAcquire) (store.LedgerEntry, bool) {
	t.Helper()
	e, ok, err := s.AcquireLedgerKey(context.Background(), a)
	if err != nil {
		t.Fatalf("AcquireLedgerKey(%q by %s): %v", a.Key, a.Owner, err)
	}
	return e, ok
}

func finish(t *testing.T, s store.Ledger, f store.LedgerFinish) store.LedgerEntry {
	t.Helper()
	e, err := s.FinishLedgerKey(context.Background(), f)
	if err != nil {
		t.Fatalf("FinishLedgerKey(%q, %s): %v", f.Key, f.State, err)
	}
	return e
}

func entry(t *testing.T, s store.Ledger, key string) store.LedgerEntry {
	t.Helper()
	e, err := s.LedgerEntry(context.Background(), key)
	if err != nil {
		t.Fatalf("LedgerEntry(%q): %v", key, err)
	}
	return e
}

// checkEntry compares every field of got with want; times with Equal.
func checkEntry(t *testing.T, what string, got, want store.LedgerEntry) {
	t.Helper()
	type fields struct {
		Key, Fingerprint, Owner, Token, Error string
		State, Previous                       store.LedgerState
		Attempt                               int64
		Retryable, ResultNil                  bool
	}
	g := fields{got.Key, got.Fingerprint, got.Owner, got.Token, got.Error, got.State, got.Previous, got.Attempt, got.Retryable, got.Result == nil}
	w := fields{want.Key, want.Fingerprint, want.Owner, want.Token, want.Error, want.State, want.Previous, want.Attempt, want.Retryable, want.Result == nil}
	if g != w {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
	if !bytes.Equal(got.Result, want.Result) {
		t.Errorf("%s: result %q, want %q", what, got.Result, want.Result)
	}
	checkTime(t, what+" Lease", got.Lease, want.Lease)
	checkTime(t, what+" Created", got.Created, want.Created)
	checkTime(t, what+" Updated", got.Updated, want.Updated)
	checkTime(t, what+" Expires", got.Expires, want.Expires)
}

// fresh is the entry a first acquisition a writes.
func fresh(a store.LedgerAcquire) store.LedgerEntry {
	return store.LedgerEntry{Key: a.Key, Fingerprint: a.Fingerprint, State: store.LedgerInProgress, Owner: a.Owner, Token: a.Token,
		Attempt: 1, Lease: a.Lease, Created: a.Now, Updated: a.Now, Expires: a.Expires}
}

func testAcquireNew(t *testing.T, s store.Ledger) {
	a := acq("call:new", "fp-1", "alice", t0)
	e, ok := acquire(t, s, a)
	if !ok {
		t.Fatal("a new key was not acquired")
	}
	checkEntry(t, "acquired", e, fresh(a))
	checkEntry(t, "read back", entry(t, s, a.Key), fresh(a))
	// Another key is another entry.
	b := acq("call:other", "fp-1", "bob", t0)
	if _, ok := acquire(t, s, b); !ok {
		t.Error("a second key was not acquired")
	}
	// Keys that look like a backend's own names are plain keys.
	for _, k := range []string{"expires", "i:expires", "l:i:expires", "r:call:new", "*"} {
		c := acq(k, "fp-1", "carol", t0)
		if e, ok := acquire(t, s, c); !ok {
			t.Errorf("key %q was not acquired: %+v", k, e)
		}
		checkEntry(t, k, entry(t, s, k), fresh(c))
	}
	checkEntry(t, "after the odd keys", entry(t, s, a.Key), fresh(a))
}

func testHeld(t *testing.T, s store.Ledger) {
	a := acq("call:held", "fp", "alice", t0)
	acquire(t, s, a)
	for _, d := range []time.Duration{0, time.Second, lease - time.Microsecond} {
		b := acq(a.Key, a.Fingerprint, "bob", t0.Add(d))
		e, ok := acquire(t, s, b)
		if ok {
			t.Fatalf("acquired a key held under an unexpired lease, at lease%v", d-lease)
		}
		checkEntry(t, "refused", e, fresh(a))
	}
	checkEntry(t, "after refusals", entry(t, s, a.Key), fresh(a))
}

func testComplete(t *testing.T, s store.Ledger) {
	for _, result := range [][]byte{[]byte(`{"ok":true}`), {0, 0xff, '\n', 0x80}, {}} {
		key := fmt.Sprintf("call:complete-%x", result)
		a := acq(key, "fp", "alice", t0)
		acquire(t, s, a)
		at := t0.Add(5 * time.Second)
		got := finish(t, s, store.LedgerFinish{Key: key, Token: a.Token, State: store.LedgerCompleted, Result: result, Now: at, Expires: at.Add(keep)})
		want := fresh(a)
		want.State, want.Result, want.Lease, want.Updated, want.Expires = store.LedgerCompleted, result, time.Time{}, at, at.Add(keep)
		checkEntry(t, "completed", got, want)
		checkEntry(t, "read back", entry(t, s, key), want)
		// Every later acquisition, even long past the lease, gets it back.
		for _, d := range []time.Duration{time.Second, 2 * lease, keep} {
			e, ok := acquire(t, s, acq(key, "fp", "bob", at.Add(d-time.Microsecond)))
			if ok {
				t.Fatalf("acquired a completed key at +%v", d)
			}
			checkEntry(t, "repeat", e, want)
		}
		// Finished once, for good.
		if _, err := s.FinishLedgerKey(context.Background(), store.LedgerFinish{Key: key, Token: a.Token, State: store.LedgerFailed, Error: "x", Now: at, Expires: at.Add(keep)}); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("finishing a completed key again: err = %v, want ErrLeaseLost", err)
		}
		if _, err := s.RenewLedgerKey(context.Background(), key, a.Token, at, at.Add(lease), at.Add(lease+keep)); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("renewing a completed key: err = %v, want ErrLeaseLost", err)
		}
	}
}

func testFail(t *testing.T, s store.Ledger) {
	at := t0.Add(time.Second)
	// A final failure is returned to every repeat.
	final := acq("call:final", "fp", "alice", t0)
	acquire(t, s, final)
	got := finish(t, s, store.LedgerFinish{Key: final.Key, Token: final.Token, State: store.LedgerFailed, Error: "exit status 3", Now: at, Expires: at.Add(keep)})
	want := fresh(final)
	want.State, want.Error, want.Lease, want.Updated, want.Expires = store.LedgerFailed, "exit status 3", time.Time{}, at, at.Add(keep)
	checkEntry(t, "failed", got, want)
	if e, ok := acquire(t, s, acq(final.Key, "fp", "bob", at.Add(2*lease))); ok {
		t.Error("acquired a key that failed for good")
	} else {
		checkEntry(t, "repeat of a final failure", e, want)
	}

	// A retryable failure is acquired again, as attempt 2.
	retry := acq("call:retry", "fp", "alice", t0)
	acquire(t, s, retry)
	finish(t, s, store.LedgerFinish{Key: retry.Key, Token: retry.Token, State: store.LedgerFailed, Error: "503", Retryable: true, Now: at, Expires: at.Add(keep)})
	again := acq(retry.Key, "fp", "bob", at.Add(time.Second))
	e, ok := acquire(t, s, again)
	if !ok {
		t.Fatal("a retryable failure was not acquired again")
	}
	want = fresh(again)
	want.Attempt, want.Previous, want.Created = 2, store.LedgerFailed, t0
	checkEntry(t, "retried", e, want)
	if _, err := s.FinishLedgerKey(context.Background(), store.LedgerFinish{Key: retry.Key, Token: retry.Token, State: store.LedgerCompleted, Now: at, Expires: at.Add(keep)}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the first attempt's token finished the retry: err = %v, want ErrLeaseLost", err)
	}
}

func testTakeover(t *testing.T, s store.Ledger) {
	ctx := context.Background()
	a := acq("call:takeover", "fp", "alice", t0)
	acquire(t, s, a)
	// At the instant the lease runs out, the key is taken over.
	b := acq(a.Key, "fp", "bob", a.Lease)
	e, ok := acquire(t, s, b)
	if !ok {
		t.Fatal("an expired lease was not taken over")
	}
	want := fresh(b)
	want.Attempt, want.Previous, want.Created = 2, store.LedgerInProgress, t0
	checkEntry(t, "taken over", e, want)
	// The crashed owner, back, is fenced out.
	if _, err := s.RenewLedgerKey(ctx, a.Key, a.Token, b.Now, b.Now.Add(lease), b.Now.Add(lease+keep)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal by the old owner: err = %v, want ErrLeaseLost", err)
	}
	if _, err := s.FinishLedgerKey(ctx, store.LedgerFinish{Key: a.Key, Token: a.Token, State: store.LedgerCompleted, Result: []byte("old"), Now: b.Now, Expires: b.Now.Add(keep)}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("finish by the old owner: err = %v, want ErrLeaseLost", err)
	}
	checkEntry(t, "after the old owner's writes", entry(t, s, a.Key), want)
	// The new owner finishes; a third takeover attempt counts from there.
	done := finish(t, s, store.LedgerFinish{Key: b.Key, Token: b.Token, State: store.LedgerCompleted, Result: []byte("new"), Now: b.Now.Add(time.Second), Expires: b.Now.Add(keep)})
	if string(done.Result) != "new" || done.Attempt != 2 {
		t.Errorf("finished %q at attempt %d, want \"new\" at 2", done.Result, done.Attempt)
	}
}

func testRenew(t *testing.T, s store.Ledger) {
	ctx := context.Background()
	a := acq("call:renew", "fp", "alice", t0)
	acquire(t, s, a)
	at := t0.Add(lease - time.Second)
	got, err := s.RenewLedgerKey(ctx, a.Key, a.Token, at, at.Add(lease), at.Add(lease+keep))
	if err != nil {
		t.Fatal(err)
	}
	want := fresh(a)
	want.Lease, want.Updated, want.Expires = at.Add(lease), at, at.Add(lease+keep)
	checkEntry(t, "renewed", got, want)
	// The old lease's end no longer frees the key; the new one's does.
	if _, ok := acquire(t, s, acq(a.Key, "fp", "bob", a.Lease)); ok {
		t.Error("a renewed key was taken over at the old lease's end")
	}
	if _, err := s.RenewLedgerKey(ctx, a.Key, "tok-wrong", at, at.Add(lease), at.Add(lease+keep)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if _, err := s.RenewLedgerKey(ctx, "call:missing", a.Token, at, at.Add(lease), at.Add(lease+keep)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal of a missing key: err = %v, want ErrLeaseLost", err)
	}
	if _, ok := acquire(t, s, acq(a.Key, "fp", "bob", at.Add(lease))); !ok {
		t.Error("not taken over at the renewed lease's end")
	}
}

func testFingerprint(t *testing.T, s store.Ledger) {
	a := acq("key:client-1", "fp-a", "alice", t0)
	acquire(t, s, a)
	// Another call under the same key is never given the key: not while
	// it runs, not after its lease runs out, not after it failed.
	for _, at := range []time.Time{t0, a.Lease.Add(time.Second)} {
		if e, ok := acquire(t, s, acq(a.Key, "fp-b", "bob", at)); ok || e.Fingerprint != "fp-a" {
			t.Errorf("another call took the key at %v: acquired %v, fingerprint %q", at.Sub(t0), ok, e.Fingerprint)
		}
	}
	at := t0.Add(time.Second)
	finish(t, s, store.LedgerFinish{Key: a.Key, Token: a.Token, State: store.LedgerFailed, Error: "503", Retryable: true, Now: at, Expires: at.Add(keep)})
	if _, ok := acquire(t, s, acq(a.Key, "fp-b", "bob", at)); ok {
		t.Error("another call retried a retryable failure")
	}
	// Past retention the key is free for anything.
	late := acq(a.Key, "fp-b", "bob", at.Add(keep))
	e, ok := acquire(t, s, late)
	if !ok {
		t.Fatal("a key past retention was not acquired")
	}
	checkEntry(t, "reused past retention", e, fresh(late))
}

func testRetention(t *testing.T, s store.Ledger) {
	ctx := context.Background()
	done := acq("call:done", "fp", "alice", t0)
	acquire(t, s, done)
	finish(t, s, store.LedgerFinish{Key: done.Key, Token: done.Token, State: store.LedgerCompleted, Result: []byte("r"), Now: t0, Expires: t0.Add(keep)})
	running := acq("call:running", "fp", "alice", t0) // expires at t0+lease+keep
	acquire(t, s, running)
	later := acq("call:later", "fp", "alice", t0.Add(time.Hour))
	acquire(t, s, later)

	if n, err := s.PruneLedger(ctx, t0.Add(keep-time.Microsecond)); err != nil || n != 0 {
		t.Errorf("PruneLedger before any expiry = %d, %v; want 0", n, err)
	}
	// At its expiry a completed key counts as new, before any pruning.
	if e, ok := acquire(t, s, acq(done.Key, "fp", "bob", t0.Add(keep))); !ok || e.Attempt != 1 || e.Previous != "" {
		t.Errorf("a completed key at its expiry: acquired %v, attempt %d, previous %q; want a new entry", ok, e.Attempt, e.Previous)
	}
	// done is in progress again (until t0+keep+lease+keep); running goes at t0+lease+keep.
	n, err := s.PruneLedger(ctx, t0.Add(lease+keep))
	if err != nil || n != 1 {
		t.Errorf("PruneLedger = %d, %v; want 1", n, err)
	}
	if _, err := s.LedgerEntry(ctx, running.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a pruned entry reads err = %v, want ErrNotFound", err)
	}
	for _, k := range []string{done.Key, later.Key} {
		entry(t, s, k)
	}
	if n, err := s.PruneLedger(ctx, t0.Add(100*keep)); err != nil || n != 2 {
		t.Errorf("PruneLedger of everything = %d, %v; want 2", n, err)
	}
}

func testLedgerRefusals(t *testing.T, s store.Ledger) {
	ctx := context.Background()
	good := acq("call:good", "fp", "alice", t0)
	for _, tc := range []struct {
		name   string
		change func(a *store.LedgerAcquire)
	}{
		{"empty key", func(a *store.LedgerAcquire) { a.Key = "" }},
		{"long key", func(a *store.LedgerAcquire) { a.Key = strings.Repeat("k", store.MaxLedgerKey+1) }},
		{"empty fingerprint", func(a *store.LedgerAcquire) { a.Fingerprint = "" }},
		{"empty owner", func(a *store.LedgerAcquire) { a.Owner = "" }},
		{"long owner", func(a *store.LedgerAcquire) { a.Owner = strings.Repeat("o", store.MaxLedgerField+1) }},
		{"empty token", func(a *store.LedgerAcquire) { a.Token = "" }},
		{"zero now", func(a *store.LedgerAcquire) { a.Now = time.Time{} }},
		{"lease at now", func(a *store.LedgerAcquire) { a.Lease = a.Now }},
		{"expires before lease", func(a *store.LedgerAcquire) { a.Expires = a.Lease.Add(-time.Second) }},
	} {
		a := good
		tc.change(&a)
		if _, ok, err := s.AcquireLedgerKey(ctx, a); err == nil || ok {
			t.Errorf("%s: AcquireLedgerKey = %v, %v; want an error", tc.name, ok, err)
		}
	}
	if _, err := s.LedgerEntry(ctx, good.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused acquisition left an entry: err = %v", err)
	}
	acquire(t, s, good)
	at := t0.Add(time.Second)
	for _, tc := range []struct {
		name string
		f    store.LedgerFinish
	}{
		{"no state", store.LedgerFinish{Key: good.Key, Token: good.Token, Now: at, Expires: at}},
		{"in progress", store.LedgerFinish{Key: good.Key, Token: good.Token, State: store.LedgerInProgress, Now: at, Expires: at}},
		{"result too large", store.LedgerFinish{Key: good.Key, Token: good.Token, State: store.LedgerCompleted, Result: make([]byte, store.MaxLedgerResult+1), Now: at, Expires: at}},
		{"error too long", store.LedgerFinish{Key: good.Key, Token: good.Token, State: store.LedgerFailed, Error: strings.Repeat("e", store.MaxLedgerError+1), Now: at, Expires: at}},
		{"zero now", store.LedgerFinish{Key: good.Key, Token: good.Token, State: store.LedgerCompleted, Expires: at}},
	} {
		if _, err := s.FinishLedgerKey(ctx, tc.f); err == nil {
			t.Errorf("%s: FinishLedgerKey succeeded", tc.name)
		}
	}
	checkEntry(t, "after refused finishes", entry(t, s, good.Key), fresh(good))
	if _, err := s.FinishLedgerKey(ctx, store.LedgerFinish{Key: "call:missing", Token: "t", State: store.LedgerCompleted, Now: at, Expires: at}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("finishing a missing key: err = %v, want ErrLeaseLost", err)
	}
}

func testConcurrentAcquire(t *testing.T, s store.Ledger) {
	type outcome struct {
		e   store.LedgerEntry
		ok  bool
		err error
	}
	results := race(func(i int) outcome {
		a := acq("call:race", "fp", fmt.Sprintf("owner-%d", i), t0)
		e, ok, err := s.AcquireLedgerKey(context.Background(), a)
		return outcome{e, ok, err}
	})
	var winner string
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("owner-%d: %v", i, r.err)
		}
		if r.ok {
			if winner != "" {
				t.Errorf("owner-%d acquired the key too, after %s", i, winner)
			}
			winner = r.e.Owner
		}
	}
	if winner == "" {
		t.Fatal("no owner acquired the key")
	}
	for i, r := range results {
		if !r.ok && r.e.Owner != winner {
			t.Errorf("owner-%d was refused with owner %q, want the winner %q", i, r.e.Owner, winner)
		}
	}
	if got := entry(t, s, "call:race"); got.Owner != winner || got.Attempt != 1 {
		t.Errorf("stored owner %q attempt %d, want %q attempt 1", got.Owner, got.Attempt, winner)
	}
}

// newLedger is a ledger over s with leases short enough for tests that
// wait them out and long enough that a loaded machine renews in time.
func newLedger(t *testing.T, s store.Ledger, o *ledger.Options) *ledger.Ledger {
	t.Helper()
	if o == nil {
		o = &ledger.Options{Lease: 2 * time.Second, RenewEvery: 200 * time.Millisecond}
	}
	l, err := ledger.New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func callKey(t *testing.T, session string, step int64) ledger.Key {
	t.Helper()
	k, err := ledger.KeyFor(ledger.Call{Session: session, Step: step, Tool: "run_command", Args: []byte(`{"cmd":"make"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testExactlyOnce(t *testing.T, s store.Ledger) {
	// Contenders goroutines go RaceRounds times through RaceKeys keys, each
	// through ledger.Do; every effect must run exactly once, and every
	// caller get its result or in_progress.
	l := newLedger(t, s, nil)
	session := fmt.Sprintf("once-%d", time.Now().UnixNano())
	keys := make([]ledger.Key, RaceKeys)
	for i := range keys {
		keys[i] = callKey(t, session, int64(i))
	}
	var runs [RaceKeys]atomic.Int64
	var results, inProgress atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, Contenders*RaceKeys*RaceRounds)
	for c := range Contenders {
		wg.Go(func() {
			for r := range RaceRounds {
				for j := range keys {
					i := (j + c) % RaceKeys // contenders start on different keys, then collide
					want := fmt.Sprintf("result-%d", i)
					got, err := l.Do(context.Background(), keys[i], fmt.Sprintf("owner-%d-%d", c, r), func(context.Context, *ledger.Ticket) ([]byte, error) {
						runs[i].Add(1)
						return []byte(want), nil
					})
					switch {
					case errors.Is(err, ledger.ErrInProgress):
						inProgress.Add(1)
					case err != nil:
						errs <- fmt.Errorf("key %d: %w", i, err)
					case string(got) != want:
						errs <- fmt.Errorf("key %d: got %q, want %q", i, got, want)
					default:
						results.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("key %d ran %d times, want exactly once", i, n)
		}
	}
	if total := results.Load() + inProgress.Load(); total != Contenders*RaceKeys*RaceRounds {
		t.Errorf("%d outcomes, want %d", total, Contenders*RaceKeys*RaceRounds)
	}
	t.Logf("%d results, %d in_progress", results.Load(), inProgress.Load())
}

func testLongEffect(t *testing.T, s store.Ledger) {
	// An effect that runs three leases long keeps its key: every attempt
	// by another owner meanwhile is refused. Ten renewals fit in a lease,
	// so a loaded machine has room.
	o := &ledger.Options{Lease: time.Second, RenewEvery: 100 * time.Millisecond}
	l := newLedger(t, s, o)
	k := callKey(t, fmt.Sprintf("long-%d", time.Now().UnixNano()), 1)
	var runs atomic.Int64
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Do(context.Background(), k, "long", func(ctx context.Context, _ *ledger.Ticket) ([]byte, error) {
			runs.Add(1)
			close(started)
			select {
			case <-time.After(3 * o.Lease):
				return []byte("long done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		done <- err
	}()
	<-started
	other := newLedger(t, s, o)
	for deadline := time.Now().Add(2 * o.Lease); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := other.Do(context.Background(), k, "other", func(context.Context, *ledger.Ticket) ([]byte, error) {
			runs.Add(1)
			return []byte("other"), nil
		}); !errors.Is(err, ledger.ErrInProgress) {
			e, _ := s.LedgerEntry(context.Background(), k.ID)
			t.Fatalf("while the long effect runs: err = %v, want in_progress; the entry is %+v", err, e)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the long effect: %v", err)
	}
	got, err := other.Do(context.Background(), k, "other", func(context.Context, *ledger.Ticket) ([]byte, error) {
		runs.Add(1)
		return nil, nil
	})
	if err != nil || string(got) != "long done" {
		t.Errorf("after it: %q, %v; want the stored result", got, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the effect ran %d times, want once", n)
	}
}

func testLostLease(t *testing.T, s store.Ledger) {
	// Another owner takes the key over at the store (as it would after a
	// pause longer than the lease); the next renewal notices, stops and
	// reports it, and the outcome is refused.
	l := newLedger(t, s, &ledger.Options{Lease: 5 * time.Second, RenewEvery: 50 * time.Millisecond})
	k := callKey(t, fmt.Sprintf("lost-%d", time.Now().UnixNano()), 1)
	ticket, err := l.Acquire(context.Background(), k, "paused")
	if err != nil || ticket.Outcome != ledger.Acquired {
		t.Fatalf("Acquire = %v, %v", ticket, err)
	}
	now := time.Now()
	thief := store.LedgerAcquire{Key: k.ID, Fingerprint: k.Fingerprint, Owner: "thief", Token: "thief-token",
		Now: ticket.Entry.Lease, Lease: ticket.Entry.Lease.Add(time.Hour), Expires: ticket.Entry.Lease.Add(2 * time.Hour)}
	if _, ok := acquire(t, s, thief); !ok {
		t.Fatal("the thief did not take the key over")
	}
	select {
	case <-ticket.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the renewals did not report the lost lease within 10s")
	}
	if !errors.Is(ticket.Err(), store.ErrLeaseLost) {
		t.Errorf("Err() = %v, want ErrLeaseLost", ticket.Err())
	}
	t.Logf("noticed after %v", time.Since(now))
	if err := ticket.Complete(context.Background(), []byte("late")); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("Complete after the loss: err = %v, want lease_lost", err)
	}
	if e := entry(t, s, k.ID); e.Owner != "thief" || e.State != store.LedgerInProgress {
		t.Errorf("the entry is %s by %q, want in progress by the thief", e.State, e.Owner)
	}
}

func testCrashedOwner(t *testing.T, s store.Ledger) {
	// An owner acquires and "crashes" (its clock stops and it never
	// renews); at the lease's end another owner takes over with Retry and
	// TakenOver set, and the crashed owner's late Complete is refused.
	var mu sync.Mutex
	clock := t0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	// The renewals' ticker never fires within this test.
	o := &ledger.Options{Lease: time.Hour, RenewEvery: 30 * time.Minute, Now: now}
	crashed, other := newLedger(t, s, o), newLedger(t, s, o)
	k := callKey(t, "crash", 7)
	first, err := crashed.Acquire(context.Background(), k, "crashed")
	if err != nil || first.Retry || first.TakenOver {
		t.Fatalf("first Acquire = %+v, %v", first, err)
	}
	if _, err := other.Acquire(context.Background(), k, "other"); !errors.Is(err, ledger.ErrInProgress) {
		t.Fatalf("before the lease ends: err = %v, want in_progress", err)
	}
	mu.Lock()
	clock = clock.Add(time.Hour)
	mu.Unlock()
	second, err := other.Acquire(context.Background(), k, "other")
	if err != nil || second.Outcome != ledger.Acquired || !second.Retry || !second.TakenOver || second.Entry.Attempt != 2 {
		t.Fatalf("after the lease ends: %+v, %v; want acquired, retry, taken over, attempt 2", second, err)
	}
	if first.UpstreamKey == "" || second.UpstreamKey != first.UpstreamKey {
		t.Errorf("upstream keys %q and %q, want one stable key", first.UpstreamKey, second.UpstreamKey)
	}
	if err := first.Complete(context.Background(), []byte("ghost")); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("the crashed owner's Complete: err = %v, want lease_lost", err)
	}
	if err := second.Complete(context.Background(), []byte("real")); err != nil {
		t.Fatal(err)
	}
	third, err := crashed.Acquire(context.Background(), k, "crashed")
	if err != nil || third.Outcome != ledger.Completed || string(third.Result) != "real" {
		t.Errorf("a repeat = %+v, %v; want completed with \"real\"", third, err)
	}
	// Retention then frees the key; Cleanup deletes it.
	mu.Lock()
	clock = clock.Add(ledger.DefaultRetention)
	mu.Unlock()
	if n, err := other.Cleanup(context.Background()); err != nil || n < 1 {
		t.Errorf("Cleanup = %d, %v; want at least 1", n, err)
	}
	if _, err := s.LedgerEntry(context.Background(), k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Cleanup: err = %v, want ErrNotFound", err)
	}
}

func testWait(t *testing.T, s store.Ledger) {
	l := newLedger(t, s, nil)
	k := callKey(t, fmt.Sprintf("wait-%d", time.Now().UnixNano()), 1)
	ticket, err := l.Acquire(context.Background(), k, "first")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		ticket.Complete(context.Background(), []byte("waited for"))
	}()
	waiter := newLedger(t, s, &ledger.Options{Lease: 2 * time.Second, RenewEvery: 200 * time.Millisecond, Wait: 20 * time.Second, Poll: 20 * time.Millisecond})
	got, err := waiter.Acquire(context.Background(), k, "waiter")
	if err != nil || got.Outcome != ledger.Completed || string(got.Result) != "waited for" {
		t.Fatalf("waiting Acquire = %+v, %v; want the result", got, err)
	}
}
