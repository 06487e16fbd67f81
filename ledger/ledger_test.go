package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// memStore is a store.Ledger in memory, applying the rules package store
// shares with every backend, with faults to inject: the ledger's own tests
// need no server.
type memStore struct {
	mu         sync.Mutex
	entries    map[string]store.LedgerEntry
	failRenew  atomic.Int64 // renewals to fail with a transient error
	failFinish atomic.Int64 // finishes to fail with a transient error
	renewals   atomic.Int64
}

var errTransient = errors.New("memstore: connection reset")

func newMem() *memStore { return &memStore{entries: map[string]store.LedgerEntry{}} }

func (m *memStore) AcquireLedgerKey(_ context.Context, a store.LedgerAcquire) (store.LedgerEntry, bool, error) {
	if err := a.Validate(); err != nil {
		return store.LedgerEntry{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var prev *store.LedgerEntry
	if e, ok := m.entries[a.Key]; ok {
		prev = &e
	}
	e, ok := a.Acquire(prev)
	if ok {
		m.entries[a.Key] = e
	}
	return e, ok, nil
}

func (m *memStore) RenewLedgerKey(_ context.Context, key, token string, now, lease, expires time.Time) (store.LedgerEntry, error) {
	m.renewals.Add(1)
	if m.failRenew.Add(-1) >= 0 {
		return store.LedgerEntry{}, errTransient
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return store.LedgerEntry{}, store.ErrLeaseLost
	}
	e, err := e.Renew(token, now, lease, expires)
	if err == nil {
		m.entries[key] = e
	}
	return e, err
}

func (m *memStore) FinishLedgerKey(_ context.Context, f store.LedgerFinish) (store.LedgerEntry, error) {
	if err := f.Validate(); err != nil {
		return store.LedgerEntry{}, err
	}
	if m.failFinish.Add(-1) >= 0 {
		return store.LedgerEntry{}, errTransient
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[f.Key]
	if !ok {
		return store.LedgerEntry{}, store.ErrLeaseLost
	}
	e, err := f.Finish(e)
	if err == nil {
		m.entries[f.Key] = e
	}
	return e, err
}

func (m *memStore) LedgerEntry(_ context.Context, key string) (store.LedgerEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return store.LedgerEntry{}, store.ErrNotFound
	}
	return e, nil
}

func (m *memStore) PruneLedger(_ context.Context, now time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, e := range m.entries {
		if !now.Before(e.Expires) {
			delete(m.entries, k)
			n++
		}
	}
	return n, nil
}

func newLedger(t *testing.T, s store.Ledger, o *ledger.Options) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func key(t *testing.T, c ledger.Call) ledger.Key {
	t.Helper()
	if c.Tool == "" {
		c.Tool = "run_command"
	}
	if c.Args == nil {
		c.Args = []byte(`{"cmd":"make"}`)
	}
	k, err := ledger.KeyFor(c)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func code(err error) tool.Code {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

func TestKeyFor(t *testing.T) {
	base := ledger.Call{Session: "s1", Step: 3, Tool: "write_file", Args: []byte(`{"path":"a","content":"x"}`)}
	k := key(t, base)
	if !strings.HasPrefix(k.ID, "call:") || len(k.ID) != len("call:")+64 {
		t.Errorf("KeyFor = %q, want call: and a hex SHA-256", k.ID)
	}
	same := base
	same.Args = []byte(` { "content" : "x", "path":"a" } `)
	if got := key(t, same); got != k {
		t.Errorf("the same arguments, written otherwise, gave %+v, want %+v", got, k)
	}
	for name, change := range map[string]func(c *ledger.Call){
		"session": func(c *ledger.Call) { c.Session = "s2" },
		"step":    func(c *ledger.Call) { c.Step = 4 },
		"tool":    func(c *ledger.Call) { c.Tool = "delete_file" },
		"args":    func(c *ledger.Call) { c.Args = []byte(`{"path":"b","content":"x"}`) },
	} {
		c := base
		change(&c)
		if got := key(t, c); got.ID == k.ID {
			t.Errorf("another %s gave the same key", name)
		}
	}
	// Parts do not run together: session "a", step 12 is not session "a1", step 2.
	if key(t, ledger.Call{Session: "a", Step: 12}).ID == key(t, ledger.Call{Session: "a1", Step: 2}).ID {
		t.Error("session and step run together")
	}
	// A caller's key is the key; the fingerprint is still the call's.
	withKey := base
	withKey.IdempotencyKey = "4f1c-charge-42"
	ck := key(t, withKey)
	if ck.ID != "key:4f1c-charge-42" || ck.Fingerprint != k.Fingerprint {
		t.Errorf("caller key = %+v; want key:4f1c-charge-42 and fingerprint %s", ck, k.Fingerprint)
	}
	withKey.Session, withKey.Step = "other", 99
	if got := key(t, withKey); got != ck {
		t.Errorf("a caller key depends on the session: %+v, want %+v", got, ck)
	}
}

func TestKeyForRefuses(t *testing.T) {
	for name, c := range map[string]ledger.Call{
		"no tool":            {Args: []byte(`{}`)},
		"invalid JSON":       {Tool: "t", Args: []byte(`{"a":`)},
		"two values":         {Tool: "t", Args: []byte(`{} {}`)},
		"space in key":       {Tool: "t", Args: []byte(`{}`), IdempotencyKey: "a b"},
		"non-ASCII key":      {Tool: "t", Args: []byte(`{}`), IdempotencyKey: "clé"},
		"control in key":     {Tool: "t", Args: []byte(`{}`), IdempotencyKey: "a\x00"},
		"over-long key":      {Tool: "t", Args: []byte(`{}`), IdempotencyKey: strings.Repeat("k", ledger.MaxCallerKey+1)},
		"missing arguments?": {Tool: "t"},
	} {
		_, err := ledger.KeyFor(c)
		if code(err) != ledger.CodeInvalidKey {
			t.Errorf("%s: err = %v, want %s", name, err, ledger.CodeInvalidKey)
			continue
		}
		var te *tool.Error
		errors.As(err, &te)
		if te.Message == "" || te.Hint == "" {
			t.Errorf("%s: the refusal %+v lacks a message or a hint", name, te)
		}
	}
	if _, err := ledger.KeyFor(ledger.Call{Tool: "t", Args: []byte(`{}`), IdempotencyKey: strings.Repeat("k", ledger.MaxCallerKey)}); err != nil {
		t.Errorf("a key of exactly MaxCallerKey: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	for name, o := range map[string]*ledger.Options{
		"negative lease":        {Lease: -time.Second},
		"negative wait":         {Wait: -time.Second},
		"renew not below lease": {Lease: time.Second, RenewEvery: time.Second},
		"renew above default":   {RenewEvery: time.Minute},
		"max result too large":  {MaxResult: store.MaxLedgerResult + 1},
	} {
		if _, err := ledger.New(newMem(), o); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := ledger.New(nil, nil); err == nil {
		t.Error("New(nil store) succeeded")
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, newMem(), nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	var runs int
	run := func(result string, err error) func(context.Context, *ledger.Ticket) ([]byte, error) {
		return func(context.Context, *ledger.Ticket) ([]byte, error) {
			runs++
			return []byte(result), err
		}
	}
	got, err := l.Do(ctx, k, "a", run("first", nil))
	if err != nil || string(got) != "first" || runs != 1 {
		t.Fatalf("Do = %q, %v after %d runs", got, err, runs)
	}
	got, err = l.Do(ctx, k, "b", run("second", nil))
	if err != nil || string(got) != "first" || runs != 1 {
		t.Errorf("a repeat = %q, %v after %d runs; want the stored result, no run", got, err, runs)
	}
	// The caller's key under another call is refused.
	withKey := ledger.Call{Tool: "charge", Args: []byte(`{"cents":100}`), IdempotencyKey: "order-7"}
	if _, err := l.Do(ctx, key(t, withKey), "a", run("charged", nil)); err != nil {
		t.Fatal(err)
	}
	withKey.Args = []byte(`{"cents":999}`)
	if _, err := l.Do(ctx, key(t, withKey), "a", run("charged again", nil)); code(err) != ledger.CodeKeyReused {
		t.Errorf("a reused caller key: err = %v, want %s", err, ledger.CodeKeyReused)
	}
}

func TestDoFailures(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, newMem(), nil)
	// A retryable failure runs again, told it is a retry.
	k := key(t, ledger.Call{Session: "s", Step: 2})
	var retries []bool
	flaky := func(_ context.Context, tk *ledger.Ticket) ([]byte, error) {
		retries = append(retries, tk.Retry)
		if len(retries) == 1 {
			return nil, ledger.Retryable(errors.New("503 from upstream"))
		}
		return []byte("ok"), nil
	}
	if _, err := l.Do(ctx, k, "a", flaky); err == nil || !ledger.IsRetryable(err) {
		t.Fatalf("first attempt err = %v, want the retryable error", err)
	}
	got, err := l.Do(ctx, k, "a", flaky)
	if err != nil || string(got) != "ok" {
		t.Fatalf("second attempt = %q, %v", got, err)
	}
	if len(retries) != 2 || retries[0] || !retries[1] {
		t.Errorf("Retry flags %v, want [false true]", retries)
	}
	// A final failure is returned to every repeat, with its message.
	k = key(t, ledger.Call{Session: "s", Step: 3})
	runs := 0
	final := func(context.Context, *ledger.Ticket) ([]byte, error) { runs++; return nil, errors.New("exit status 2") }
	if _, err := l.Do(ctx, k, "a", final); err == nil || code(err) != "" {
		t.Fatalf("the failing run: err = %v, want its own error", err)
	}
	_, err = l.Do(ctx, k, "b", final)
	if code(err) != ledger.CodePreviouslyFailed || !strings.Contains(err.Error(), "exit status 2") || runs != 1 {
		t.Errorf("a repeat of a final failure: err = %v after %d runs; want %s naming the error, one run", err, runs, ledger.CodePreviouslyFailed)
	}
}

func TestResultTooLarge(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, newMem(), &ledger.Options{MaxResult: 10})
	k := key(t, ledger.Call{Session: "s", Step: 1})
	_, err := l.Do(ctx, k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { return make([]byte, 11), nil })
	if code(err) != ledger.CodeResultTooLarge {
		t.Fatalf("err = %v, want %s", err, ledger.CodeResultTooLarge)
	}
	// The effect ran: it must not run again.
	ran := false
	_, err = l.Do(ctx, k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { ran = true; return nil, nil })
	if ran || code(err) != ledger.CodePreviouslyFailed {
		t.Errorf("after a too-large result: ran %v, err %v; want no run and %s", ran, err, ledger.CodePreviouslyFailed)
	}
	// Exactly MaxResult is kept.
	k = key(t, ledger.Call{Session: "s", Step: 2})
	if got, err := l.Do(ctx, k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { return []byte("0123456789"), nil }); err != nil || len(got) != 10 {
		t.Errorf("a result of exactly MaxResult = %q, %v", got, err)
	}
}

func TestFailMessageIsCut(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	l := newLedger(t, m, nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	tk, err := l.Acquire(ctx, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", store.MaxLedgerError) // two bytes each
	if err := tk.Fail(ctx, long, false); err != nil {
		t.Fatal(err)
	}
	e, _ := m.LedgerEntry(ctx, k.ID)
	if len(e.Error) > store.MaxLedgerError || !utf8.ValidString(e.Error) || len(e.Error) < store.MaxLedgerError-1 {
		t.Errorf("stored error of %d bytes (valid UTF-8: %v), want just under %d", len(e.Error), utf8.ValidString(e.Error), store.MaxLedgerError)
	}
	if err := tk.Complete(ctx, nil); err == nil {
		t.Error("a second outcome was accepted")
	}
}

func TestCompletedTicketRecordsNothing(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, newMem(), nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	if _, err := l.Do(ctx, k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { return []byte("r"), nil }); err != nil {
		t.Fatal(err)
	}
	tk, err := l.Acquire(ctx, k, "b")
	if err != nil || tk.Outcome != ledger.Completed || tk.UpstreamKey == "" {
		t.Fatalf("Acquire = %+v, %v", tk, err)
	}
	if err := tk.Complete(ctx, []byte("x")); err == nil {
		t.Error("Complete on a Completed ticket succeeded")
	}
	if err := tk.Fail(ctx, "x", true); err == nil {
		t.Error("Fail on a Completed ticket succeeded")
	}
}

func TestAcquireRefuses(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, newMem(), nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	for name, owner := range map[string]string{"empty": "", "long": strings.Repeat("o", ledger.MaxOwner+1), "not UTF-8": "\xff"} {
		if _, err := l.Acquire(ctx, k, owner); err == nil {
			t.Errorf("owner %s: Acquire succeeded", name)
		}
	}
	if _, err := l.Acquire(ctx, ledger.Key{ID: "x"}, "a"); code(err) != ledger.CodeInvalidKey {
		t.Errorf("a key without fingerprint: err = %v, want %s", err, ledger.CodeInvalidKey)
	}
}

func TestInProgressRefusal(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	l := newLedger(t, m, nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	tk, err := l.Acquire(ctx, k, "gateway-1")
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Complete(ctx, nil)
	_, err = l.Acquire(ctx, k, "gateway-2")
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != ledger.CodeInProgress || !errors.Is(err, ledger.ErrInProgress) {
		t.Fatalf("err = %v, want in_progress", err)
	}
	if !strings.Contains(te.Message, "gateway-1") || te.Hint == "" {
		t.Errorf("refusal %+v: want the owner named and a hint", te)
	}
	// Waiting is bounded by Options.Wait, and by the context.
	start := time.Now()
	w := newLedger(t, m, &ledger.Options{Wait: 150 * time.Millisecond, Poll: 10 * time.Millisecond})
	if _, err := w.Acquire(ctx, k, "gateway-3"); !errors.Is(err, ledger.ErrInProgress) {
		t.Errorf("after waiting: err = %v, want in_progress", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("gave up after %v, before Options.Wait", d)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	w = newLedger(t, m, &ledger.Options{Wait: time.Hour})
	if _, err := w.Acquire(cctx, k, "gateway-4"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with an ending context: err = %v, want DeadlineExceeded", err)
	}
}

func TestRenewalSurvivesAStoreHiccup(t *testing.T) {
	// One failed renewal is tried again at the next tick; the lease holds.
	m := newMem()
	m.failRenew.Store(1)
	l := newLedger(t, m, &ledger.Options{Lease: 2 * time.Second, RenewEvery: 20 * time.Millisecond})
	k := key(t, ledger.Call{Session: "s", Step: 1})
	got, err := l.Do(context.Background(), k, "a", func(ctx context.Context, _ *ledger.Ticket) ([]byte, error) {
		for m.renewals.Load() < 5 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return []byte("done"), nil
	})
	if err != nil || string(got) != "done" {
		t.Errorf("Do = %q, %v; want done", got, err)
	}
}

func TestRenewalGivesUpWhenTheLeaseRunsOut(t *testing.T) {
	// Renewals that keep failing past the lease's end count as a lost
	// lease: the effect's context ends, and nothing is recorded as done.
	m := newMem()
	m.failRenew.Store(1 << 40)
	l := newLedger(t, m, &ledger.Options{Lease: 300 * time.Millisecond, RenewEvery: 20 * time.Millisecond})
	k := key(t, ledger.Call{Session: "s", Step: 1})
	start := time.Now()
	_, err := l.Do(context.Background(), k, "a", func(ctx context.Context, _ *ledger.Ticket) ([]byte, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return []byte("too late"), nil
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the effect's context canceled", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the lease ran out", d)
	}
	if e, _ := m.LedgerEntry(context.Background(), k.ID); e.State != store.LedgerInProgress {
		t.Errorf("the entry is %s, want in progress (to be taken over)", e.State)
	}
}

func TestFinishRetriesAStoreHiccup(t *testing.T) {
	m := newMem()
	m.failFinish.Store(2)
	l := newLedger(t, m, &ledger.Options{Poll: 5 * time.Millisecond})
	k := key(t, ledger.Call{Session: "s", Step: 1})
	if _, err := l.Do(context.Background(), k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { return []byte("r"), nil }); err != nil {
		t.Fatal(err)
	}
	if e, _ := m.LedgerEntry(context.Background(), k.ID); e.State != store.LedgerCompleted {
		t.Errorf("the entry is %s, want completed", e.State)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[ledger.Outcome]string{ledger.Acquired: "acquired", ledger.Completed: "completed", 0: "Outcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}

func FuzzKeyFor(f *testing.F) {
	f.Add("s1", int64(1), "run_command", []byte(`{"cmd":"make"}`), "")
	f.Add("", int64(-1), "t", []byte(`[1,2,{"a":null}]`), "order-42")
	f.Add("s", int64(0), "t", []byte(`{"a":1e400}`), "k\x00")
	f.Fuzz(func(t *testing.T, session string, step int64, toolName string, args []byte, callerKey string) {
		c := ledger.Call{Session: session, Step: step, Tool: toolName, Args: args, IdempotencyKey: callerKey}
		k, err := ledger.KeyFor(c)
		if err != nil {
			if code(err) != ledger.CodeInvalidKey {
				t.Fatalf("KeyFor refused with %v, want %s", err, ledger.CodeInvalidKey)
			}
			return
		}
		if k.ID == "" || len(k.ID) > store.MaxLedgerKey || k.Fingerprint == "" || len(k.Fingerprint) > store.MaxLedgerField {
			t.Fatalf("KeyFor = %+v: outside the store's limits", k)
		}
		if again, _ := ledger.KeyFor(c); again != k {
			t.Fatalf("KeyFor is not deterministic: %+v then %+v", k, again)
		}
	})
}

func TestDoPanic(t *testing.T) {
	m := newMem()
	l := newLedger(t, m, nil)
	k := key(t, ledger.Call{Session: "s", Step: 1})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		l.Do(context.Background(), k, "a", func(context.Context, *ledger.Ticket) ([]byte, error) { panic("boom") })
	}()
	e, err := m.LedgerEntry(context.Background(), k.ID)
	if err != nil || e.State != store.LedgerFailed || e.Retryable {
		t.Errorf("after a panic the entry is %+v, %v; want failed for good", e, err)
	}
}
