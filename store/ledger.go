package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LedgerState is where one idempotency key stands.
type LedgerState string

const (
	// LedgerInProgress: an owner holds the key under a lease and is running
	// the effect.
	LedgerInProgress LedgerState = "in_progress"
	// LedgerCompleted: the effect ran; Result holds what it returned.
	LedgerCompleted LedgerState = "completed"
	// LedgerFailed: the effect failed; Error holds why, Retryable whether
	// the key may be acquired again.
	LedgerFailed LedgerState = "failed"
)

// Limits every backend enforces on a ledger entry, so that one key cannot
// grow a record past what all three homes keep comfortably.
const (
	// MaxLedgerKey bounds the bytes of a ledger key.
	MaxLedgerKey = 512
	// MaxLedgerField bounds the bytes of an owner, token or fingerprint.
	MaxLedgerField = 256
	// MaxLedgerResult bounds the bytes of a stored result (4 MiB); the
	// ledger's own Options.MaxResult is usually far lower.
	MaxLedgerResult = 4 << 20
	// MaxLedgerError bounds the bytes of a stored error message.
	MaxLedgerError = 4096
)

// LedgerEntry is the durable record of one idempotency key.
type LedgerEntry struct {
	Key string `json:"key"`
	// Fingerprint names the call the key was first used for (a hash of the
	// tool and its canonical arguments): a key is never taken for another
	// call.
	Fingerprint string      `json:"fingerprint"`
	State       LedgerState `json:"state"`
	// Owner is who holds, or last held, the key; Token is that
	// acquisition's secret, which fences every later write: a renewal or a
	// finish whose token is not the entry's is refused with ErrLeaseLost.
	Owner string `json:"owner"`
	Token string `json:"-"`
	// Attempt counts the acquisitions of the key: 1 for the first.
	Attempt int64 `json:"attempt"`
	// Previous is the state the key was taken from: "" for a new key,
	// LedgerInProgress when an expired lease was taken over, LedgerFailed
	// when a retryable failure is retried.
	Previous  LedgerState `json:"previous,omitempty"`
	Lease     time.Time   `json:"lease,omitzero"` // while in progress: when the lease runs out
	Result    []byte      `json:"result,omitempty"`
	Error     string      `json:"error,omitempty"`
	Retryable bool        `json:"retryable,omitempty"`
	Created   time.Time   `json:"created"`
	Updated   time.Time   `json:"updated"`
	// Expires is when the entry stops counting: past it a key reads as
	// never used and PruneLedger may delete it.
	Expires time.Time `json:"expires"`
}

// Takeable reports whether an acquisition at now, for a call with
// fingerprint fp, may take this entry over, and from which state. Every
// backend applies exactly this rule inside its atomic acquire; it is here so
// that they agree, and so that the ledger can explain a refusal.
//
// An entry past Expires counts as absent (taken as new, from ""). An
// in-progress entry whose lease ran out is taken over, a retryable failure
// retried; both only for the same fingerprint. Nothing else is taken.
func (e LedgerEntry) Takeable(fp string, now time.Time) (from LedgerState, ok bool) {
	switch {
	case !now.Before(e.Expires):
		return "", true
	case e.Fingerprint != fp:
		return "", false
	case e.State == LedgerInProgress && !now.Before(e.Lease):
		return LedgerInProgress, true
	case e.State == LedgerFailed && e.Retryable:
		return LedgerFailed, true
	}
	return "", false
}

// LedgerAcquire asks for a key: the call's fingerprint, the owner and token
// of this acquisition, the instant now, and the lease and retention the new
// in-progress entry gets.
type LedgerAcquire struct {
	Key, Fingerprint, Owner, Token string
	Now, Lease, Expires            time.Time
}

// LedgerFinish records the outcome of the acquisition whose token is Token:
// State is LedgerCompleted (Result) or LedgerFailed (Error, Retryable).
type LedgerFinish struct {
	Key, Token string
	State      LedgerState
	Result     []byte
	Error      string
	Retryable  bool
	Now        time.Time
	Expires    time.Time
}

// ErrLeaseLost: the key is no longer held by the token given (another owner
// took it over after the lease ran out, or it was finished or pruned).
var ErrLeaseLost = errors.New("store: the ledger lease was lost to another owner")

// Ledger holds idempotency entries. Each method is atomic, also across
// processes sharing the backing store; package ledger builds its promises on
// them.
type Ledger interface {
	// AcquireLedgerKey creates the entry for a.Key in progress, or takes
	// an existing entry over when its Takeable(a.Fingerprint, a.Now) says
	// so; acquired tells which. When not acquired it returns the entry as
	// it stands, unchanged.
	AcquireLedgerKey(ctx context.Context, a LedgerAcquire) (e LedgerEntry, acquired bool, err error)
	// RenewLedgerKey moves the lease and retention of an in-progress entry
	// held by token. ErrLeaseLost when the token no longer holds it.
	RenewLedgerKey(ctx context.Context, key, token string, now, lease, expires time.Time) (LedgerEntry, error)
	// FinishLedgerKey completes or fails an in-progress entry held by
	// f.Token. ErrLeaseLost when the token no longer holds it.
	FinishLedgerKey(ctx context.Context, f LedgerFinish) (LedgerEntry, error)
	// LedgerEntry reads one entry as stored (also one past Expires that
	// is not pruned yet). ErrNotFound when there is none.
	LedgerEntry(ctx context.Context, key string) (LedgerEntry, error)
	// PruneLedger deletes the entries whose Expires is at or before now
	// and returns how many.
	PruneLedger(ctx context.Context, now time.Time) (int64, error)
}

// Validate refuses an acquisition no backend may store: a key, fingerprint,
// owner or token that is empty or too long, a zero time, a lease that does
// not run past now, or retention that ends before the lease.
func (a LedgerAcquire) Validate() error {
	if err := validKey(a.Key); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"fingerprint", a.Fingerprint}, {"owner", a.Owner}, {"token", a.Token}} {
		if f.v == "" || len(f.v) > MaxLedgerField {
			return fmt.Errorf("the ledger %s must be 1 to %d bytes (store.MaxLedgerField), not %d", f.name, MaxLedgerField, len(f.v))
		}
	}
	switch {
	case a.Now.IsZero() || a.Lease.IsZero() || a.Expires.IsZero():
		return errors.New("a ledger acquisition needs Now, Lease and Expires")
	case !a.Lease.After(a.Now):
		return errors.New("the ledger lease must run out after now")
	case a.Expires.Before(a.Lease):
		return errors.New("a ledger entry must be retained at least until its lease runs out")
	}
	return nil
}

// Validate refuses an outcome no backend may store.
func (f LedgerFinish) Validate() error {
	if err := validKey(f.Key); err != nil {
		return err
	}
	switch {
	case f.Token == "" || len(f.Token) > MaxLedgerField:
		return fmt.Errorf("the ledger token must be 1 to %d bytes", MaxLedgerField)
	case f.State != LedgerCompleted && f.State != LedgerFailed:
		return fmt.Errorf("a ledger entry finishes completed or failed, not %q", f.State)
	case len(f.Result) > MaxLedgerResult:
		return fmt.Errorf("the result is %d bytes, past store.MaxLedgerResult (%d)", len(f.Result), MaxLedgerResult)
	case len(f.Error) > MaxLedgerError:
		return fmt.Errorf("the error is %d bytes, past store.MaxLedgerError (%d)", len(f.Error), MaxLedgerError)
	case f.Now.IsZero() || f.Expires.IsZero():
		return errors.New("a ledger outcome needs Now and Expires")
	}
	return nil
}

// validKey refuses an empty or over-long key.
func validKey(k string) error {
	if k == "" || len(k) > MaxLedgerKey {
		return fmt.Errorf("the ledger key must be 1 to %d bytes (store.MaxLedgerKey), not %d", MaxLedgerKey, len(k))
	}
	return nil
}

// Acquire applies a to the stored entry prev (nil when there is none) under
// the backend's lock: it returns the entry to write and true, or prev and
// false when Takeable refuses. Backends that lock a row and write it back
// use it, so that they share one rule.
func (a LedgerAcquire) Acquire(prev *LedgerEntry) (LedgerEntry, bool) {
	e := LedgerEntry{
		Key: a.Key, Fingerprint: a.Fingerprint, State: LedgerInProgress,
		Owner: a.Owner, Token: a.Token, Attempt: 1,
		Lease: a.Lease, Created: a.Now, Updated: a.Now, Expires: a.Expires,
	}
	if prev == nil {
		return e, true
	}
	from, ok := prev.Takeable(a.Fingerprint, a.Now)
	if !ok {
		return *prev, false
	}
	if from != "" { // a retry of the same entry, not a new one over an expired one
		e.Attempt, e.Previous, e.Created = prev.Attempt+1, from, prev.Created
	}
	return e, true
}

// Renew applies a renewal to the stored entry e: ErrLeaseLost unless e is
// in progress under token.
func (e LedgerEntry) Renew(token string, now, lease, expires time.Time) (LedgerEntry, error) {
	if e.State != LedgerInProgress || e.Token != token {
		return e, ErrLeaseLost
	}
	if !lease.After(now) || expires.Before(lease) {
		return e, errors.New("the renewed lease must run past now, and retention past the lease")
	}
	e.Lease, e.Updated, e.Expires = lease, now, expires
	return e, nil
}

// Finish applies f to the stored entry e: ErrLeaseLost unless e is in
// progress under f.Token.
func (f LedgerFinish) Finish(e LedgerEntry) (LedgerEntry, error) {
	if e.State != LedgerInProgress || e.Token != f.Token {
		return e, ErrLeaseLost
	}
	e.State, e.Lease, e.Updated, e.Expires = f.State, time.Time{}, f.Now, f.Expires
	e.Result, e.Error, e.Retryable = nil, "", false
	if f.State == LedgerCompleted {
		e.Result = f.Result
		if e.Result == nil {
			e.Result = []byte{}
		}
	} else {
		e.Error, e.Retryable = f.Error, f.Retryable
	}
	return e, nil
}
