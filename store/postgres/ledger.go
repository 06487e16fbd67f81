package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"airlock.dev/airlock/store"
)

const ledgerColumns = `key, fingerprint, state, owner, token, attempt, previous, lease,
	result, error, retryable, created, updated, expires`

func scanEntry(r pgx.Row) (store.LedgerEntry, error) {
	var (
		e               store.LedgerEntry
		state, previous string
		lease           *time.Time
	)
	if err := r.Scan(&e.Key, &e.Fingerprint, &state, &e.Owner, &e.Token, &e.Attempt, &previous, &lease,
		&e.Result, &e.Error, &e.Retryable, &e.Created, &e.Updated, &e.Expires); err != nil {
		return store.LedgerEntry{}, err
	}
	e.State, e.Previous = store.LedgerState(state), store.LedgerState(previous)
	if lease != nil {
		e.Lease = lease.UTC()
	}
	if e.State == store.LedgerCompleted && e.Result == nil {
		e.Result = []byte{}
	}
	e.Created, e.Updated, e.Expires = utc(e.Created), utc(e.Updated), utc(e.Expires)
	return e, nil
}

func entryArgs(e store.LedgerEntry) []any {
	var result any
	if e.Result != nil {
		result = e.Result
	}
	return []any{e.Key, e.Fingerprint, string(e.State), e.Owner, e.Token, e.Attempt, string(e.Previous), nullTime(e.Lease),
		result, e.Error, e.Retryable, e.Created, e.Updated, e.Expires}
}

// update runs change on the entry key, locked FOR UPDATE (nil when
// missing), and writes back what it returns when write is true: a new row
// with ON CONFLICT DO NOTHING, starting over when a concurrent insert won.
func (db *DB) update(ctx context.Context, key string, change func(prev *store.LedgerEntry) (e store.LedgerEntry, write bool, err error)) (store.LedgerEntry, bool, error) {
	var (
		out     store.LedgerEntry
		written bool
	)
	err := db.retry(ctx, func(tx pgx.Tx) (bool, error) {
		var prev *store.LedgerEntry
		e, err := scanEntry(tx.QueryRow(ctx, "SELECT "+ledgerColumns+" FROM ledger WHERE key = $1 FOR UPDATE", key))
		switch {
		case err == nil:
			prev = &e
		case !noRows(err):
			return false, err
		}
		next, write, err := change(prev)
		out, written = next, write
		if err != nil || !write {
			return false, err
		}
		if prev == nil {
			tag, err := tx.Exec(ctx, "INSERT INTO ledger ("+ledgerColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
				ON CONFLICT (key) DO NOTHING`, entryArgs(next)...)
			if err != nil {
				return false, err
			}
			return tag.RowsAffected() == 0, nil
		}
		_, err = tx.Exec(ctx, `UPDATE ledger SET fingerprint = $2, state = $3, owner = $4, token = $5, attempt = $6,
			previous = $7, lease = $8, result = $9, error = $10, retryable = $11, created = $12, updated = $13, expires = $14
			WHERE key = $1`, entryArgs(next)...)
		return false, err
	})
	if err != nil {
		return store.LedgerEntry{}, false, err
	}
	return out, written, nil
}

// AcquireLedgerKey implements store.Ledger.
func (db *DB) AcquireLedgerKey(ctx context.Context, a store.LedgerAcquire) (store.LedgerEntry, bool, error) {
	if err := a.Validate(); err != nil {
		return store.LedgerEntry{}, false, fmt.Errorf("store/postgres: acquiring ledger key %q: %w", a.Key, err)
	}
	e, ok, err := db.update(ctx, a.Key, func(prev *store.LedgerEntry) (store.LedgerEntry, bool, error) {
		e, ok := a.Acquire(prev)
		return e, ok, nil
	})
	if err != nil {
		return store.LedgerEntry{}, false, fmt.Errorf("store/postgres: acquiring ledger key %q: %w", a.Key, err)
	}
	return e, ok, nil
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
		return store.LedgerEntry{}, fmt.Errorf("store/postgres: renewing ledger key %q: %w", key, err)
	}
	return e, nil
}

// FinishLedgerKey implements store.Ledger.
func (db *DB) FinishLedgerKey(ctx context.Context, f store.LedgerFinish) (store.LedgerEntry, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: finishing ledger key %q: %w", f.Key, err) }
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
	e, err := scanEntry(db.pool.QueryRow(ctx, "SELECT "+ledgerColumns+" FROM ledger WHERE key = $1", key))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("store/postgres: reading ledger key %q: %w", key, err)
	}
	return e, nil
}

// PruneLedger implements store.Ledger.
func (db *DB) PruneLedger(ctx context.Context, now time.Time) (int64, error) {
	if err := checkNow(now); err != nil {
		return 0, fmt.Errorf("store/postgres: pruning the ledger: %w", err)
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM ledger WHERE expires <= $1", now)
	if err != nil {
		return 0, fmt.Errorf("store/postgres: pruning the ledger: %w", err)
	}
	return tag.RowsAffected(), nil
}
