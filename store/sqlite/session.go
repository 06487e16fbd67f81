package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"airlock.dev/airlock/store"
)

// killAllFlag is the flags row of the global kill flag.
const killAllFlag = "kill_all"

const sessionColumns = "id, step, tokens, micro_usd, mode, killed, created, updated"

func scanSession(r scanner) (store.Session, error) {
	var (
		s                store.Session
		created, updated int64
	)
	if err := r.Scan(&s.ID, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &created, &updated); err != nil {
		return store.Session{}, err
	}
	s.Created, s.Updated = fromNanos(created), fromNanos(updated)
	return s, nil
}

// updateSession runs change on session id (new, created at now, when
// missing) under the write lock, and writes back what it returns unless it
// fails.
func (db *DB) updateSession(ctx context.Context, id string, now time.Time, change func(s store.Session, killAll bool) (store.Session, error)) (store.Session, error) {
	if err := store.ValidSessionID(id); err != nil {
		return store.Session{}, err
	}
	n, err := nanos("now", now)
	if err != nil {
		return store.Session{}, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Session{}, db.classify(err)
	}
	defer tx.Rollback()
	s, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		s, err = store.Session{ID: id, Created: fromNanos(n), Updated: fromNanos(n)}, nil
	}
	if err != nil {
		return store.Session{}, db.classify(err)
	}
	var killAll bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM flags WHERE name = ? AND value <> 0)", killAllFlag).Scan(&killAll); err != nil {
		return store.Session{}, db.classify(err)
	}
	s, err = change(s, killAll)
	if err != nil {
		return s, err
	}
	s.Updated = fromNanos(n)
	if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO sessions ("+sessionColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		s.ID, s.Step, s.Tokens, s.MicroUSD, s.Mode, s.Killed, s.Created.UnixNano(), n); err != nil {
		return store.Session{}, db.classify(err)
	}
	return s, db.classify(tx.Commit())
}

// Session implements store.Sessions.
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	s, err := scanSession(db.sql.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store/sqlite: reading session %q: %w", id, db.classify(err))
	}
	return s, nil
}

// ChargeSession implements store.Sessions.
func (db *DB) ChargeSession(ctx context.Context, id string, c store.Charge, now time.Time) (store.Session, error) {
	if err := c.Validate(); err != nil {
		return store.Session{}, fmt.Errorf("store/sqlite: charging session %q: %w", id, err)
	}
	s, err := db.updateSession(ctx, id, now, func(s store.Session, killAll bool) (store.Session, error) {
		return c.Apply(s, killAll, now)
	})
	if err != nil {
		return s, fmt.Errorf("store/sqlite: charging session %q: %w", id, err)
	}
	return s, nil
}

// SetSessionMode implements store.Sessions.
func (db *DB) SetSessionMode(ctx context.Context, id, mode string, now time.Time) (store.Session, error) {
	if err := store.ValidMode(mode); err != nil {
		return store.Session{}, fmt.Errorf("store/sqlite: setting the mode of session %q: %w", id, err)
	}
	s, err := db.updateSession(ctx, id, now, func(s store.Session, _ bool) (store.Session, error) {
		s.Mode = mode
		return s, nil
	})
	if err != nil {
		return s, fmt.Errorf("store/sqlite: setting the mode of session %q: %w", id, err)
	}
	return s, nil
}

// KillSession implements store.Sessions.
func (db *DB) KillSession(ctx context.Context, id string, killed bool, now time.Time) (store.Session, error) {
	s, err := db.updateSession(ctx, id, now, func(s store.Session, _ bool) (store.Session, error) {
		s.Killed = killed
		return s, nil
	})
	if err != nil {
		return s, fmt.Errorf("store/sqlite: killing session %q: %w", id, err)
	}
	return s, nil
}

// SetKillAll implements store.Sessions.
func (db *DB) SetKillAll(ctx context.Context, killed bool) error {
	if _, err := db.sql.ExecContext(ctx, "INSERT OR REPLACE INTO flags (name, value) VALUES (?, ?)", killAllFlag, killed); err != nil {
		return fmt.Errorf("store/sqlite: setting the global kill flag: %w", db.classify(err))
	}
	return nil
}

// KillAll implements store.Sessions.
func (db *DB) KillAll(ctx context.Context) (bool, error) {
	var killed bool
	if err := db.sql.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM flags WHERE name = ? AND value <> 0)", killAllFlag).Scan(&killed); err != nil {
		return false, fmt.Errorf("store/sqlite: reading the global kill flag: %w", db.classify(err))
	}
	return killed, nil
}
