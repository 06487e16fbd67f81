package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"time"

	"airlock.dev/airlock/store"
)

// The ledger's transitions each run in one IMMEDIATE transaction: read
// the row under the file's write lock, apply the rule store shares with
// every backend (store.LedgerAcquire.Acquire, LedgerEntry.Renew,
// LedgerFinish.Finish), write the row back.

const ledgerColumns = `key, fingerprint, state, owner, token, attempt, previous, lease,
	result, error, retryable, created, updated, expires`

func scanEntry(r scanner) (store.LedgerEntry, error) {
	var (
		e                         store.LedgerEntry
		state, previous           string
		lease                     sql.NullInt64
		result                    []byte
		created, updated, expires int64
	)
	if err := r.Scan(&e.Key, &e.Fingerprint, &state, &e.Owner, &e.Token, &e.Attempt, &previous, &lease,
		&result, &e.Error, &e.Retryable, &created, &updated, &expires); err != nil {
		return store.LedgerEntry{}, err
	}
	e.State, e.Previous = store.LedgerState(state), store.LedgerState(previous)
	if lease.Valid {
		e.Lease = fromNanos(lease.Int64)
	}
	if e.State == store.LedgerCompleted && result == nil {
		result = []byte{}
	}
	e.Result = result
	e.Created, e.Updated, e.Expires = fromNanos(created), fromNanos(updated), fromNanos(expires)
	return e, nil
}

// entryArgs are e's columns in ledgerColumns order, times as nanoseconds.
func entryArgs(e store.LedgerEntry) ([]any, error) {
	var lease any
	if !e.Lease.IsZero() {
		n, err := nanos("lease", e.Lease)
		if err != nil {
			return nil, err
		}
		lease = n
	}
	times := make([]int64, 3)
	for i, t := range []struct {
		name string
		t    time.Time
	}{{"created", e.Created}, {"updated", e.Updated}, {"expires", e.Expires}} {
		n, err := nanos(t.name, t.t)
		if err != nil {
			return nil, err
		}
		times[i] = n
	}
	var result any
	if e.Result != nil {
		result = e.Result
	}
	return []any{e.Key, e.Fingerprint, string(e.State), e.Owner, e.Token, e.Attempt, string(e.Previous), lease,
		result, e.Error, e.Retryable, times[0], times[1], times[2]}, nil
}

// update runs change on the entry key under the write lock and writes back
// what it returns when write is true. A missing entry is passed as nil.
func (db *DB) update(ctx context.Context, key string, change func(prev *store.LedgerEntry) (e store.LedgerEntry, write bool, err error)) (store.LedgerEntry, bool, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.LedgerEntry{}, false, db.classify(err)
	}
	defer tx.Rollback()
	var prev *store.LedgerEntry
	e, err := scanEntry(tx.QueryRowContext(ctx, "SELECT "+ledgerColumns+" FROM ledger WHERE key = ?", key))
	switch {
	case err == nil:
		prev = &e
	case !errors.Is(err, sql.ErrNoRows):
		return store.LedgerEntry{}, false, db.classify(err)
	}
	next, write, err := change(prev)
	if err != nil || !write {
		return next, false, err
	}
	args, err := entryArgs(next)
	if err != nil {
		return store.LedgerEntry{}, false, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO ledger ("+ledgerColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", args...); err != nil {
		return store.LedgerEntry{}, false, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.LedgerEntry{}, false, db.classify(err)
	}
	return next, true, nil
}

// AcquireLedgerKey implements store.Ledger.
func (db *DB) AcquireLedgerKey(ctx context.Context, a store.LedgerAcquire) (store.LedgerEntry, bool, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: acquiring ledger key %q: %w", a.Key, err) }
	if err := a.Validate(); err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	e, acquired, err := db.update(ctx, a.Key, func(prev *store.LedgerEntry) (store.LedgerEntry, bool, error) {
		e, ok := a.Acquire(prev)
		return e, ok, nil
	})
	if err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	return e, acquired, nil
}

// RenewLedgerKey implements store.Ledger.
func (db *DB) RenewLedgerKey(ctx context.Context, key, token string, now, lease, expires time.Time) (store.LedgerEntry, error) {
	e, _, err := db.update(ctx, key, func(prev *store.LedgerEntry) (store.LedgerEntry, bool, error) {
		if prev == nil {
			return store.LedgerEntry{}, false, store.ErrLeaseLost
		}
		e, err := prev.Renew(token, now, lease, expires)
		return e, err == nil, err
	})
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("store/sqlite: renewing ledger key %q: %w", key, err)
	}
	return e, nil
}

// FinishLedgerKey implements store.Ledger.
func (db *DB) FinishLedgerKey(ctx context.Context, f store.LedgerFinish) (store.LedgerEntry, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: finishing ledger key %q: %w", f.Key, err) }
	if err := f.Validate(); err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	e, _, err := db.update(ctx, f.Key, func(prev *store.LedgerEntry) (store.LedgerEntry, bool, error) {
		if prev == nil {
			return store.LedgerEntry{}, false, store.ErrLeaseLost
		}
		e, err := f.Finish(*prev)
		return e, err == nil, err
	})
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	return e, nil
}

// LedgerEntry implements store.Ledger.
func (db *DB) LedgerEntry(ctx context.Context, key string) (store.LedgerEntry, error) {
	e, err := scanEntry(db.sql.QueryRowContext(ctx, "SELECT "+ledgerColumns+" FROM ledger WHERE key = ?", key))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("store/sqlite: reading ledger key %q: %w", key, db.classify(err))
	}
	return e, nil
}

// PruneLedger implements store.Ledger.
func (db *DB) PruneLedger(ctx context.Context, now time.Time) (int64, error) {
	n, err := nanos("now", now)
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning the ledger: %w", err)
	}
	res, err := db.sql.ExecContext(ctx, "DELETE FROM ledger WHERE expires <= ?", n)
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning the ledger: %w", db.classify(err))
	}
	return res.RowsAffected()
}
