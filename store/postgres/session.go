package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"airlock.dev/airlock/store"
)

// killAllFlag is the flags row of the global kill flag.
const killAllFlag = "kill_all"

const sessionColumns = "id, step, tokens, micro_usd, mode, killed, created, updated"

func scanSession(r pgx.Row) (store.Session, error) {
	var s store.Session
	if err := r.Scan(&s.ID, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &s.Created, &s.Updated); err != nil {
		return store.Session{}, err
	}
	s.Created, s.Updated = utc(s.Created), utc(s.Updated)
	return s, nil
}

// updateSession runs change on session id, locked FOR UPDATE (new, created
// at now, when missing), and writes back what it returns unless it fails.
// The global flag is read FOR SHARE, so a kill waits for charges under
// way and every later charge sees it.
func (db *DB) updateSession(ctx context.Context, id string, now time.Time, change func(s store.Session, killAll bool) (store.Session, error)) (store.Session, error) {
	if err := store.ValidSessionID(id); err != nil {
		return store.Session{}, err
	}
	if err := checkNow(now); err != nil {
		return store.Session{}, err
	}
	var out store.Session
	err := db.retry(ctx, func(tx pgx.Tx) (bool, error) {
		s, err := scanSession(tx.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = $1 FOR UPDATE", id))
		isNew := noRows(err)
		if isNew {
			s, err = store.Session{ID: id, Created: now.UTC(), Updated: now.UTC()}, nil
		}
		if err != nil {
			return false, err
		}
		var killAll bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM flags WHERE name = $1 AND value FOR SHARE)", killAllFlag).Scan(&killAll); err != nil {
			return false, err
		}
		s, err = change(s, killAll)
		out = s
		if err != nil {
			return false, err
		}
		s.Updated = now.UTC()
		out = s
		args := []any{s.ID, s.Step, s.Tokens, s.MicroUSD, s.Mode, s.Killed, s.Created, s.Updated}
		if isNew {
			tag, err := tx.Exec(ctx, "INSERT INTO sessions ("+sessionColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING", args...)
			if err != nil {
				return false, err
			}
			return tag.RowsAffected() == 0, nil
		}
		_, err = tx.Exec(ctx, "UPDATE sessions SET step = $2, tokens = $3, micro_usd = $4, mode = $5, killed = $6, created = $7, updated = $8 WHERE id = $1", args...)
		return false, err
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// Session implements store.Sessions.
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = $1", id))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store/postgres: reading session %q: %w", id, err)
	}
	return s, nil
}

// ChargeSession implements store.Sessions.
func (db *DB) ChargeSession(ctx context.Context, id string, c store.Charge, now time.Time) (store.Session, error) {
	if err := c.Validate(); err != nil {
		return store.Session{}, fmt.Errorf("store/postgres: charging session %q: %w", id, err)
	}
	s, err := db.updateSession(ctx, id, now, func(s store.Session, killAll bool) (store.Session, error) {
		return c.Apply(s, killAll, now.UTC())
	})
	if err != nil {
		return s, fmt.Errorf("store/postgres: charging session %q: %w", id, err)
	}
	return s, nil
}

// SetSessionMode implements store.Sessions.
func (db *DB) SetSessionMode(ctx context.Context, id, mode string, now time.Time) (store.Session, error) {
	if err := store.ValidMode(mode); err != nil {
		return store.Session{}, fmt.Errorf("store/postgres: setting the mode of session %q: %w", id, err)
	}
	s, err := db.updateSession(ctx, id, now, func(s store.Session, _ bool) (store.Session, error) {
		s.Mode = mode
		return s, nil
	})
	if err != nil {
		return s, fmt.Errorf("store/postgres: setting the mode of session %q: %w", id, err)
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
		return s, fmt.Errorf("store/postgres: killing session %q: %w", id, err)
	}
	return s, nil
}

// SetKillAll implements store.Sessions.
func (db *DB) SetKillAll(ctx context.Context, killed bool) error {
	if _, err := db.pool.Exec(ctx, `INSERT INTO flags (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, killAllFlag, killed); err != nil {
		return fmt.Errorf("store/postgres: setting the global kill flag: %w", err)
	}
	return nil
}

// KillAll implements store.Sessions.
func (db *DB) KillAll(ctx context.Context) (bool, error) {
	var killed bool
	if err := db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM flags WHERE name = $1 AND value)", killAllFlag).Scan(&killed); err != nil {
		return false, fmt.Errorf("store/postgres: reading the global kill flag: %w", err)
	}
	return killed, nil
}

// pruneSessions deletes the sessions last updated before now minus
// store.KeepSessions. A charge under way holds its session's row FOR
// UPDATE, so the delete waits for it and then sees its new updated. The
// flags table, and with it the global kill flag, is left alone.
func (db *DB) pruneSessions(ctx context.Context, now time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, "DELETE FROM sessions WHERE updated < $1", now.Add(-store.KeepSessions))
	if err != nil {
		return 0, fmt.Errorf("store/postgres: pruning sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}
