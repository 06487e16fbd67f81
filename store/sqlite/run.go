package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"airlock.dev/airlock/store"
)

const runColumns = "session, state, approval, checkpoint, updated"

// SaveRun implements store.Runs: one INSERT OR REPLACE, so a concurrent
// save of the same session replaces the whole row or waits for it.
func (db *DB) SaveRun(ctx context.Context, r store.Run) error {
	fail := func(err error) error {
		return fmt.Errorf("store/sqlite: saving the run of session %q: %w", r.Session, err)
	}
	if err := r.Validate(); err != nil {
		return fail(err)
	}
	updated, err := nanos("updated", r.Updated)
	if err != nil {
		return fail(err)
	}
	// NULL, not an empty BLOB, for no checkpoint: Run reads it back nil.
	var checkpoint any
	if len(r.Checkpoint) > 0 {
		checkpoint = []byte(r.Checkpoint)
	}
	if _, err := db.sql.ExecContext(ctx, "INSERT OR REPLACE INTO runs ("+runColumns+") VALUES (?, ?, ?, ?, ?)",
		r.Session, string(r.State), r.Approval, checkpoint, updated); err != nil {
		return fail(db.classify(err))
	}
	return nil
}

// Run implements store.Runs.
func (db *DB) Run(ctx context.Context, session string) (store.Run, error) {
	var (
		r          store.Run
		state      string
		checkpoint []byte
		updated    int64
	)
	err := db.sql.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE session = ?", session).
		Scan(&r.Session, &state, &r.Approval, &checkpoint, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("store/sqlite: reading the run of session %q: %w", session, db.classify(err))
	}
	r.State = store.RunState(state)
	if len(checkpoint) > 0 {
		r.Checkpoint = checkpoint
	}
	r.Updated = fromNanos(updated)
	return r, nil
}

// pruneOlder deletes the rows of table (runs, named here, never by a
// caller's input) last updated before now minus keep.
func (db *DB) pruneOlder(ctx context.Context, table string, keep time.Duration, now time.Time) (int64, error) {
	cut, err := nanos("the "+table+" retention cut", now.Add(-keep))
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning %s: %w", table, err)
	}
	res, err := db.sql.ExecContext(ctx, "DELETE FROM "+table+" WHERE updated < ?", cut)
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning %s: %w", table, db.classify(err))
	}
	return res.RowsAffected()
}
