package postgres

import (
	"context"
	"fmt"

	"airlock.dev/airlock/store"
)

const runColumns = "session, state, approval, checkpoint, updated"

// SaveRun implements store.Runs: one upsert, which Postgres applies to
// the whole row under its lock, so of concurrent saves one wins whole.
func (db *DB) SaveRun(ctx context.Context, r store.Run) error {
	fail := func(err error) error {
		return fmt.Errorf("store/postgres: saving the run of session %q: %w", r.Session, err)
	}
	if err := r.Validate(); err != nil {
		return fail(err)
	}
	if err := checkNow(r.Updated); err != nil {
		return fail(fmt.Errorf("updated: %w", err))
	}
	// NULL, not an empty bytea, for no checkpoint: Run reads it back nil.
	var checkpoint any
	if len(r.Checkpoint) > 0 {
		checkpoint = []byte(r.Checkpoint)
	}
	if _, err := db.pool.Exec(ctx, "INSERT INTO runs ("+runColumns+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (session) DO UPDATE SET state = EXCLUDED.state, approval = EXCLUDED.approval,
			checkpoint = EXCLUDED.checkpoint, updated = EXCLUDED.updated`,
		r.Session, string(r.State), r.Approval, checkpoint, r.Updated); err != nil {
		return fail(err)
	}
	return nil
}

// Run implements store.Runs.
func (db *DB) Run(ctx context.Context, session string) (store.Run, error) {
	var (
		r          store.Run
		state      string
		checkpoint []byte
	)
	err := db.pool.QueryRow(ctx, "SELECT "+runColumns+" FROM runs WHERE session = $1", session).
		Scan(&r.Session, &state, &r.Approval, &checkpoint, &r.Updated)
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("store/postgres: reading the run of session %q: %w", session, err)
	}
	r.State = store.RunState(state)
	if len(checkpoint) > 0 {
		r.Checkpoint = checkpoint
	}
	r.Updated = utc(r.Updated)
	return r, nil
}
