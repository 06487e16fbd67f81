package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// Ticket is one Acquire's answer. With Outcome Acquired it holds the key
// until Complete or Fail, renewing its lease in the background; with
// Outcome Completed it carries the stored result and holds nothing.
type Ticket struct {
	Outcome Outcome
	Key     Key
	// Entry is the ledger entry as this ticket last wrote or read it.
	Entry store.LedgerEntry
	// Result is the stored result of a Completed ticket.
	Result []byte
	// Retry is set when an earlier attempt of this key may have had its
	// effect: the key was taken over from an expired lease, or a
	// retryable failure is tried again.
	Retry bool
	// TakenOver is set when the key was taken from an owner whose lease
	// ran out: that owner crashed or hung mid-effect.
	TakenOver bool
	// UpstreamKey is stable for the key, the same in every attempt: a tool
	// sends it as a remote API's idempotency key so that the remote side
	// drops a duplicate of an attempt the ledger could not see finish.
	UpstreamKey string

	l *Ledger
	// held ends when the ticket stops holding the key: lost, or finished.
	held    context.Context
	release context.CancelFunc

	stopRenew chan struct{}
	renewDone chan struct{}
	lost      chan struct{}

	mu       sync.Mutex
	lease    time.Time // the lease as last written
	lostErr  error
	finished bool
}

// upstreamKey derives a ticket's UpstreamKey from the ledger key.
func upstreamKey(id string) string { return canon.Bind(nil, "airlock-upstream", id) }

// start returns the ticket of a fresh acquisition and starts its renewals.
func (l *Ledger) start(k Key, e store.LedgerEntry) *Ticket {
	held, release := context.WithCancel(context.Background())
	t := &Ticket{
		Outcome:     Acquired,
		Key:         k,
		Entry:       e,
		Retry:       e.Previous != "",
		TakenOver:   e.Previous == store.LedgerInProgress,
		UpstreamKey: upstreamKey(k.ID),
		l:           l,
		held:        held,
		release:     release,
		stopRenew:   make(chan struct{}),
		renewDone:   make(chan struct{}),
		lost:        make(chan struct{}),
		lease:       e.Lease,
	}
	go t.renew()
	return t
}

// renew moves the lease every RenewEvery until the ticket finishes. A store
// fault is tried again at the next tick while the lease still runs; once it
// has run out, or the store says the token lost the key, the lease counts
// as lost.
func (t *Ticket) renew() {
	defer close(t.renewDone)
	o := t.l.o
	tick := time.NewTicker(o.RenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stopRenew:
			return
		case <-tick.C:
		}
		now := o.Now()
		t.mu.Lock()
		lease := t.lease
		t.mu.Unlock()
		// A slow store is waited for as long as the lease still holds.
		ctx, cancel := context.WithTimeout(context.Background(), max(lease.Sub(now), o.RenewEvery))
		e, err := t.l.s.RenewLedgerKey(ctx, t.Key.ID, t.Entry.Token, now, now.Add(o.Lease), now.Add(o.Lease+o.Retention))
		cancel()
		if err == nil {
			t.mu.Lock()
			t.lease = e.Lease
			t.mu.Unlock()
		}
		now = o.Now()
		switch {
		case err == nil:
		case errors.Is(err, store.ErrLeaseLost) || !now.Before(lease):
			t.markLost(err)
			return
		}
	}
}

func (t *Ticket) markLost(cause error) {
	t.mu.Lock()
	t.lostErr = fmt.Errorf("ledger: the lease on %s was lost: %w", t.Key.ID, cause)
	t.mu.Unlock()
	close(t.lost)
	t.release()
}

// Lost is closed when a renewal finds the lease lost; the effect should
// stop, since another owner may now run it. Nil for a Completed ticket.
func (t *Ticket) Lost() <-chan struct{} { return t.lost }

// Err reports why the lease was lost, or nil.
func (t *Ticket) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lostErr
}

// Complete records the effect's result; repeats of the call get it back.
// A result past Options.MaxResult is refused with result_too_large and the
// key is recorded as failed, not retryable: the effect ran, and must not
// run again because its result could not be kept.
func (t *Ticket) Complete(ctx context.Context, result []byte) error {
	if t.l == nil || t.Outcome != Acquired {
		return errNotHeld
	}
	if len(result) > t.l.o.MaxResult {
		msg := fmt.Sprintf("the result was %d bytes, past the ledger's limit of %d (Options.MaxResult)", len(result), t.l.o.MaxResult)
		if err := t.finish(ctx, store.LedgerFinish{State: store.LedgerFailed, Error: msg}); err != nil {
			return err
		}
		return tool.Errorf(CodeResultTooLarge, "Make the tool return less output, for example by writing it to a file and returning its path.", "%s", msg)
	}
	if result == nil {
		result = []byte{}
	}
	return t.finish(ctx, store.LedgerFinish{State: store.LedgerCompleted, Result: result})
}

// Fail records that the effect failed with message (what is safe to show
// on a repeat; cut to store.MaxLedgerError bytes). A retryable failure lets
// the next Acquire run the call again; a final one answers every repeat
// with previously_failed.
func (t *Ticket) Fail(ctx context.Context, message string, retryable bool) error {
	if t.l == nil || t.Outcome != Acquired {
		return errNotHeld
	}
	if message == "" {
		message = "failed"
	}
	return t.finish(ctx, store.LedgerFinish{State: store.LedgerFailed, Error: cut(message, store.MaxLedgerError), Retryable: retryable})
}

// errNotHeld refuses an outcome for a ticket that holds no key.
var errNotHeld = errors.New("ledger: the ticket does not hold its key (the call was completed before, or the ticket is not from Acquire); there is nothing to record")

// cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// finish stops the renewals and writes the outcome. A store fault is tried
// again, every Options.Poll, while the lease still runs: an entry left in
// progress would be taken over, and the effect run again.
func (t *Ticket) finish(ctx context.Context, f store.LedgerFinish) error {
	t.mu.Lock()
	switch {
	case t.finished:
		t.mu.Unlock()
		return errors.New("ledger: the ticket's outcome was already recorded")
	}
	t.finished = true
	t.mu.Unlock()
	close(t.stopRenew)
	<-t.renewDone
	defer t.release()

	lostRefusal := func(cause error) error {
		return &tool.Error{Code: CodeLeaseLost,
			Message: fmt.Sprintf("the outcome was not recorded: %v", cause),
			Hint:    "The call's lease ran out and another owner took it over; repeat the same call to get that owner's result."}
	}
	if err := t.Err(); err != nil {
		return lostRefusal(err)
	}
	o := t.l.o
	f.Key, f.Token = t.Key.ID, t.Entry.Token
	for {
		now := o.Now()
		f.Now, f.Expires = now, now.Add(o.Retention)
		e, err := t.l.s.FinishLedgerKey(ctx, f)
		if err == nil {
			t.Entry = e
			return nil
		}
		if errors.Is(err, store.ErrLeaseLost) {
			return lostRefusal(err)
		}
		t.mu.Lock()
		lease := t.lease
		t.mu.Unlock()
		if !now.Add(o.Poll).Before(lease) {
			return fmt.Errorf("ledger: recording the outcome of %s: %w", t.Key.ID, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger: recording the outcome of %s: %w (then %w)", t.Key.ID, err, ctx.Err())
		case <-time.After(o.Poll):
		}
	}
}
