// Package ledger is airlock's idempotency ledger: a side-effecting call is
// keyed, the key is recorded IN_PROGRESS before the effect starts, and the
// outcome is recorded COMPLETED (with the result) or FAILED after, so that
// a repeat of the call returns the stored result instead of running again
// and a concurrent duplicate is refused while the first one runs.
//
// The ledger is pure logic over a store.Ledger; the backends (store/sqlite,
// store/postgres, store/redis) make each transition atomic, also across
// processes and machines sharing the store.
//
//	l, err := ledger.New(backend, nil)
//	key, err := ledger.KeyFor(ledger.Call{Session: s, Step: n, Tool: "run_command", Args: args})
//	result, err := l.Do(ctx, key, "gateway-1", func(ctx context.Context, t *ledger.Ticket) ([]byte, error) {
//		return runIt(ctx, t.Retry) // ctx ends if the lease is lost
//	})
//
// # Keys
//
// KeyFor derives a call's key: the caller's own idempotency key when it
// gives one (Call.IdempotencyKey, 1 to MaxCallerKey printable ASCII bytes;
// it is global, not scoped to a session, so that a retry after a restart
// finds it), else the SHA-256 of the session, the step, the tool and the
// canonical JSON of the arguments. Either way the entry also keeps the
// fingerprint of the tool and canonical arguments, and a key is never
// taken for a different call: that is idempotency_key_reused.
//
// # Outcomes of Acquire
//
//   - Acquired: run the effect, then Complete or Fail the ticket. While it
//     runs, the ticket renews its lease (DefaultLease, renewed every
//     DefaultRenewEvery), so a long command is never taken over. A renewal
//     that finds the lease lost stops, closes Lost() and makes Err report
//     it; Complete and Fail then refuse with lease_lost.
//   - Completed: the effect ran before; Ticket.Result is what it returned.
//     Do not run it.
//   - in_progress (an error value): another owner holds an unexpired lease.
//     With Options.Wait, Acquire first waits that long for it to finish.
//   - previously_failed (an error value): the effect failed and the failure
//     was recorded as not retryable.
//
// An IN_PROGRESS key whose lease ran out (its owner crashed or hung past
// the lease) is taken over by the next Acquire: Ticket.TakenOver and
// Ticket.Retry are set. A FAILED key recorded as retryable is acquired
// again: Ticket.Retry is set. Entries are kept for Options.Retention after
// their last write (DefaultRetention); past it a key counts as never used,
// and Cleanup deletes it.
//
// # What the ledger can and cannot promise
//
// Inside airlock's reach, the promise is exact: of all the owners racing on
// one key, at most one at a time holds it, every write is fenced by the
// holder's token, and once an outcome is recorded nobody runs the effect
// again under that key for as long as the entry is retained. Leases are
// judged by each owner's own clock, so owners sharing a store need clocks
// that agree to well within the lease (NTP does). One gap remains even
// inside: an owner paused for longer than its lease (a frozen VM, a stopped
// process) may still be running its effect when the next owner takes the
// key over. The token fences the paused owner's writes to the ledger, not
// its effect; its effect's context ends at the first renewal that notices.
// Keep the lease well above any pause the host may take.
//
// For an effect outside airlock's reach (a remote API, a payment, a
// message), the ledger cannot know whether an owner that crashed, or lost
// its lease, got as far as the remote side: the effect may have happened
// once without its result being recorded. The takeover then runs it again,
// and says so: Ticket.Retry is true (and TakenOver after a lost lease).
// Exactly-once for such an effect needs the remote side's help: a tool
// should send Ticket.UpstreamKey (stable for the key, the same in every
// attempt) as the remote API's own idempotency key, so that the remote side
// drops the duplicate; and when Retry is set and the remote side offers no
// such key, the tool should check the remote state before acting again, or
// Fail the ticket as not retryable and leave the decision to a person. The
// ledger promises at-most-once per attempt and tells each attempt whether
// an earlier one may have acted; it cannot undo a remote effect, and it
// cannot make an effect that has no idempotency of its own exactly-once
// across a crash.
package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// Defaults for Options.
const (
	// DefaultLease is how long an acquisition holds a key without
	// renewing: how long a crashed owner blocks its key.
	DefaultLease = 30 * time.Second
	// DefaultRenewEvery is how often a running ticket renews its lease: a
	// third of the lease, so that two renewals in a row may fail (a store
	// hiccup) before the lease is at risk.
	DefaultRenewEvery = 10 * time.Second
	// DefaultRetention is how long an entry is kept after its last write:
	// a repeat within it returns the stored result.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultPoll is how often Acquire looks again while it waits for
	// another owner (Options.Wait).
	DefaultPoll = 100 * time.Millisecond
	// DefaultMaxResult bounds the bytes of a stored result (1 MiB).
	DefaultMaxResult = 1 << 20
	// MaxCallerKey bounds the bytes of a caller's idempotency key.
	MaxCallerKey = 255
	// MaxOwner bounds the bytes of an owner name.
	MaxOwner = 128
)

// Options tunes a Ledger. A nil *Options, or a zero field, means the
// default.
type Options struct {
	// Lease is how long an acquisition holds its key between renewals;
	// DefaultLease when zero.
	Lease time.Duration
	// RenewEvery is how often a ticket renews its lease; must be shorter
	// than Lease. DefaultRenewEvery when zero (or Lease/3 when Lease is
	// set and RenewEvery is not).
	RenewEvery time.Duration
	// Retention is how long an entry lives after its last write;
	// DefaultRetention when zero.
	Retention time.Duration
	// Wait is how long Acquire waits for another owner to finish before
	// it refuses with in_progress; zero refuses at once.
	Wait time.Duration
	// Poll is how often Acquire looks again while waiting; DefaultPoll
	// when zero.
	Poll time.Duration
	// MaxResult bounds a stored result, at most store.MaxLedgerResult;
	// DefaultMaxResult when zero.
	MaxResult int
	// Now is the clock; time.Now when nil. Tests set it.
	Now func() time.Time
}

// Error codes of the ledger's refusals, stable snake_case words.
const (
	CodeInProgress       tool.Code = "in_progress"
	CodePreviouslyFailed tool.Code = "previously_failed"
	CodeKeyReused        tool.Code = "idempotency_key_reused"
	CodeLeaseLost        tool.Code = "lease_lost"
	CodeInvalidKey       tool.Code = "invalid_idempotency_key"
	CodeResultTooLarge   tool.Code = "result_too_large"
)

// Sentinels for errors.Is: every refusal is a *tool.Error with one of
// these codes, a message and a hint.
var (
	ErrInProgress       = &tool.Error{Code: CodeInProgress}
	ErrPreviouslyFailed = &tool.Error{Code: CodePreviouslyFailed}
	ErrKeyReused        = &tool.Error{Code: CodeKeyReused}
	ErrLeaseLost        = &tool.Error{Code: CodeLeaseLost}
	ErrInvalidKey       = &tool.Error{Code: CodeInvalidKey}
	ErrResultTooLarge   = &tool.Error{Code: CodeResultTooLarge}
)

// Key names one call in the ledger.
type Key struct {
	// ID is what the entry is stored under.
	ID string
	// Fingerprint is the hash of the tool and its canonical arguments.
	Fingerprint string
}

// Call is what KeyFor derives a key from.
type Call struct {
	Session string
	Step    int64
	Tool    string
	Args    json.RawMessage
	// IdempotencyKey is the caller's own key; when set it is the key, and
	// Session and Step do not enter it.
	IdempotencyKey string
}

// KeyFor returns the ledger key of c: its caller key (Call.IdempotencyKey)
// when it has one, else the SHA-256 of session, step, tool and canonical
// arguments. A refusal is an invalid_idempotency_key error value.
func KeyFor(c Call) (Key, error) {
	if c.Tool == "" {
		return Key{}, tool.Errorf(CodeInvalidKey, "Name the tool the call is for.", "the call names no tool")
	}
	args, err := canon.JSON(c.Args)
	if err != nil {
		return Key{}, tool.Errorf(CodeInvalidKey, "Send the arguments as one JSON object.", "the arguments are not valid JSON: %v", err)
	}
	fp := canon.Bind(nil, "airlock-call", c.Tool, string(args))
	if c.IdempotencyKey != "" {
		if err := checkCallerKey(c.IdempotencyKey); err != nil {
			return Key{}, err
		}
		return Key{ID: "key:" + c.IdempotencyKey, Fingerprint: fp}, nil
	}
	id := canon.Bind(nil, "airlock-step", c.Session, strconv.FormatInt(c.Step, 10), c.Tool, string(args))
	return Key{ID: "call:" + id, Fingerprint: fp}, nil
}

// checkCallerKey accepts 1 to MaxCallerKey printable ASCII bytes, no
// spaces: what fits a header, a flag and a log line unchanged.
func checkCallerKey(k string) error {
	if len(k) > MaxCallerKey {
		return tool.Errorf(CodeInvalidKey, fmt.Sprintf("Use a key of at most %d characters, such as a UUID.", MaxCallerKey),
			"the idempotency key is %d bytes long, the limit is %d (ledger.MaxCallerKey)", len(k), MaxCallerKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return tool.Errorf(CodeInvalidKey, "Use only printable ASCII without spaces in the key, such as a UUID.",
				"the idempotency key has byte 0x%02x at offset %d", k[i], i)
		}
	}
	return nil
}

// Ledger gives each key's effect at most one running owner and a recorded
// outcome. It is safe for concurrent use.
type Ledger struct {
	s store.Ledger
	o Options
}

// New returns a ledger over s. It refuses negative options, a RenewEvery
// not shorter than Lease, and a MaxResult past store.MaxLedgerResult.
func New(s store.Ledger, opts *Options) (*Ledger, error) {
	if s == nil {
		return nil, errors.New("ledger: the store is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Lease < 0 || o.RenewEvery < 0 || o.Retention < 0 || o.Wait < 0 || o.Poll < 0 || o.MaxResult < 0 {
		return nil, errors.New("ledger: an option is negative; use zero for the default")
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
		if o.RenewEvery == 0 {
			o.RenewEvery = DefaultRenewEvery
		}
	}
	if o.RenewEvery == 0 {
		o.RenewEvery = o.Lease / 3
	}
	if o.RenewEvery >= o.Lease || o.RenewEvery <= 0 {
		return nil, fmt.Errorf("ledger: Options.RenewEvery %v must be shorter than Options.Lease %v", o.RenewEvery, o.Lease)
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if o.MaxResult == 0 {
		o.MaxResult = DefaultMaxResult
	}
	if o.MaxResult > store.MaxLedgerResult {
		return nil, fmt.Errorf("ledger: Options.MaxResult %d is past store.MaxLedgerResult %d", o.MaxResult, store.MaxLedgerResult)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Ledger{s: s, o: o}, nil
}

// Outcome is what Acquire found.
type Outcome int

const (
	// Acquired: the caller holds the key and runs the effect.
	Acquired Outcome = iota + 1
	// Completed: the effect ran before; the ticket carries its result.
	Completed
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Completed:
		return "completed"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Acquire asks for key k on behalf of owner (a name for people: a host and
// process, a gateway replica). It returns a ticket whose Outcome is Acquired
// or Completed, or a refusal: in_progress, previously_failed or
// idempotency_key_reused (*tool.Error values), or a Go error when the store
// fails.
func (l *Ledger) Acquire(ctx context.Context, k Key, owner string) (*Ticket, error) {
	if err := checkKey(k); err != nil {
		return nil, err
	}
	if owner == "" || len(owner) > MaxOwner || !utf8.ValidString(owner) {
		return nil, fmt.Errorf("ledger: the owner must be 1 to %d bytes of UTF-8 (ledger.MaxOwner)", MaxOwner)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	for {
		now := l.o.Now()
		if deadline.IsZero() {
			deadline = now.Add(l.o.Wait)
		}
		e, acquired, err := l.s.AcquireLedgerKey(ctx, store.LedgerAcquire{
			Key: k.ID, Fingerprint: k.Fingerprint, Owner: owner, Token: token,
			Now: now, Lease: now.Add(l.o.Lease), Expires: now.Add(l.o.Lease + l.o.Retention),
		})
		if err != nil {
			return nil, fmt.Errorf("ledger: acquiring %s: %w", k.ID, err)
		}
		if acquired {
			return l.start(k, e), nil
		}
		if e.Fingerprint != k.Fingerprint {
			return nil, tool.Errorf(CodeKeyReused,
				"Use a new idempotency key for a different call; repeat a call with exactly the same tool and arguments to get its result.",
				"the idempotency key was used for a different call (another tool or other arguments)")
		}
		switch e.State {
		case store.LedgerCompleted:
			return &Ticket{Outcome: Completed, Key: k, Entry: e, Result: e.Result, UpstreamKey: upstreamKey(k.ID)}, nil
		case store.LedgerFailed:
			return nil, tool.Errorf(CodePreviouslyFailed,
				"Change the call, or use a new idempotency key, to try it again; a failure recorded as final is not retried under the same key.",
				"the call already ran and failed: %s", e.Error)
		}
		// In progress elsewhere.
		if !now.Before(deadline) {
			return nil, tool.Errorf(CodeInProgress,
				"Wait for the running call to finish, then repeat exactly the same call to get its result; do not change the key.",
				"the same call is running under another owner (%s, attempt %d, lease until %s)",
				e.Owner, e.Attempt, e.Lease.UTC().Format(time.RFC3339))
		}
		wait := min(l.o.Poll, deadline.Sub(now))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ledger: waiting for %s: %w", k.ID, ctx.Err())
		case <-time.After(wait):
		}
	}
}

func checkKey(k Key) error {
	switch {
	case k.ID == "" || len(k.ID) > store.MaxLedgerKey:
		return tool.Errorf(CodeInvalidKey, "Derive the key with ledger.KeyFor.", "the ledger key must be 1 to %d bytes, not %d", store.MaxLedgerKey, len(k.ID))
	case k.Fingerprint == "" || len(k.Fingerprint) > store.MaxLedgerField:
		return tool.Errorf(CodeInvalidKey, "Derive the key with ledger.KeyFor.", "the key's fingerprint must be 1 to %d bytes", store.MaxLedgerField)
	}
	return nil
}

// newToken returns 128 random bits in hex: an acquisition's fencing token.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ledger: making a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Cleanup deletes the entries past their retention, and returns how many.
func (l *Ledger) Cleanup(ctx context.Context) (int64, error) {
	n, err := l.s.PruneLedger(ctx, l.o.Now())
	if err != nil {
		return n, fmt.Errorf("ledger: cleaning up: %w", err)
	}
	return n, nil
}

// Retryable marks err, returned by a Do function, as a failure that may be
// tried again under the same key.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryable{err}
}

type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// IsRetryable reports whether err was marked with Retryable.
func IsRetryable(err error) bool {
	var r *retryable
	return errors.As(err, &r)
}

// Do acquires k and, when acquired, runs run with a context that ends when
// the lease is lost, and records its outcome: the result on success, else
// the error (retryable when marked with Retryable). A key completed before
// returns its stored result without running anything; a refusal is
// returned as Acquire returns it. run's own error is returned as it is. If
// run panics, the key is recorded as failed for good before the panic goes
// on.
func (l *Ledger) Do(ctx context.Context, k Key, owner string, run func(ctx context.Context, t *Ticket) ([]byte, error)) ([]byte, error) {
	t, err := l.Acquire(ctx, k, owner)
	if err != nil {
		return nil, err
	}
	if t.Outcome == Completed {
		return t.Result, nil
	}
	// The outcome is recorded even when ctx has ended: the effect ran.
	rec := context.WithoutCancel(ctx)
	runCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.held, cancel)
	defer func() {
		stop()
		cancel()
		// A panicking effect may have done part of its work: record a
		// final failure, so the key is neither held forever nor run again,
		// and let the panic go on.
		if p := recover(); p != nil {
			t.Fail(rec, "the tool panicked; its effect is unknown", false)
			panic(p)
		}
	}()
	result, runErr := run(runCtx, t)
	if runErr != nil {
		if err := t.Fail(rec, runErr.Error(), IsRetryable(runErr)); err != nil {
			return nil, errors.Join(runErr, err)
		}
		return nil, runErr
	}
	if err := t.Complete(rec, result); err != nil {
		return nil, err
	}
	return result, nil
}
