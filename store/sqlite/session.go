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

// sessionColumns are what scanSession reads. Flagged, Tainted and
// Truncated are set only by Observe, so updateSession never writes them.
const sessionColumns = "id, step, tokens, micro_usd, mode, killed, flagged, tainted, truncated, created, updated"

func scanSession(r scanner) (store.Session, error) {
	var (
		s                store.Session
		created, updated int64
	)
	if err := r.Scan(&s.ID, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &s.Flagged, &s.Tainted, &s.Truncated, &created, &updated); err != nil {
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
	s, err := scanSession(tx.StmtContext(ctx, db.stmts.session).QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		s, err = store.Session{ID: id, Created: fromNanos(n), Updated: fromNanos(n)}, nil
	}
	if err != nil {
		return store.Session{}, db.classify(err)
	}
	var killAll bool
	if err := tx.StmtContext(ctx, db.stmts.killAll).QueryRowContext(ctx, killAllFlag).Scan(&killAll); err != nil {
		return store.Session{}, db.classify(err)
	}
	s, err = change(s, killAll)
	if err != nil {
		return s, err
	}
	s.Updated = fromNanos(n)
	if _, err := tx.StmtContext(ctx, db.stmts.saveSession).ExecContext(ctx, s.ID, s.Step, s.Tokens, s.MicroUSD, s.Mode, s.Killed, s.Created.UnixNano(), n); err != nil {
		return store.Session{}, db.classify(err)
	}
	return s, db.classify(tx.Commit())
}

// Session implements store.Sessions.
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	s, err := scanSession(db.stmts.session.QueryRowContext(ctx, id))
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
	if err := db.stmts.killAll.QueryRowContext(ctx, killAllFlag).Scan(&killed); err != nil {
		return false, fmt.Errorf("store/sqlite: reading the global kill flag: %w", db.classify(err))
	}
	return killed, nil
}

// Observe implements store.Sessions. SQLite's write lock orders every
// Observe, and what one adds becomes visible at its commit, all at once,
// so a reader never sees a higher seq before a lower one; AUTOINCREMENT
// never gives a seq twice, not after a delete.
func (db *DB) Observe(ctx context.Context, id string, obs []store.Observation, marks store.Marks, now time.Time) error {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: observing for session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return fail(err)
	}
	if err := store.ValidObservations(obs); err != nil {
		return fail(err)
	}
	n, err := nanos("now", now)
	if err != nil {
		return fail(err)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fail(db.classify(err))
	}
	defer tx.Rollback()
	if _, err := tx.StmtContext(ctx, db.stmts.markSession).ExecContext(ctx, id, n, n, marks.Has(store.MarkFlagged), marks.Has(store.MarkTainted)); err != nil {
		return fail(db.classify(err))
	}
	if len(obs) > 0 {
		if err := db.addObservations(ctx, tx, id, obs); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(db.classify(err))
	}
	return nil
}

// addObservations adds the values of obs that session id does not hold
// from the same kind of source, then drops its oldest past
// store.MaxObservations.
func (db *DB) addObservations(ctx context.Context, tx *sql.Tx, id string, obs []store.Observation) error {
	insert := tx.StmtContext(ctx, db.stmts.addObservation)
	var added int64
	for _, o := range obs {
		res, err := insert.ExecContext(ctx, id, o.FromUser(), []byte(o.Source), []byte(o.Value))
		if err != nil {
			return db.classify(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		added += n
	}
	var count int64
	if err := tx.StmtContext(ctx, db.stmts.countObservations).QueryRowContext(ctx, added, id).Scan(&count); err != nil {
		return db.classify(err)
	}
	if over := count - store.MaxObservations; over > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM observations WHERE seq IN (
			SELECT seq FROM observations WHERE session = ? ORDER BY seq LIMIT ?)`, id, over); err != nil {
			return db.classify(err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET observation_count = ?, truncated = 1 WHERE id = ?", store.MaxObservations, id); err != nil {
			return db.classify(err)
		}
	}
	return nil
}

// State implements store.Sessions in one SELECT, which SQLite answers
// from one snapshot of the file.
func (db *DB) State(ctx context.Context, id string, after int64) (store.SessionState, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: reading the state of session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return store.SessionState{}, fail(err)
	}
	rows, err := db.stmts.state.QueryContext(ctx, killAllFlag, id, after)
	if err != nil {
		return store.SessionState{}, fail(db.classify(err))
	}
	defer rows.Close()
	st := store.SessionState{Session: store.Session{ID: id}}
	for rows.Next() {
		var (
			s                store.Session
			created, updated int64
			seq              sql.NullInt64
			source, value    []byte
		)
		if err := rows.Scan(&st.Exists, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &s.Flagged, &s.Tainted, &s.Truncated, &created, &updated,
			&st.KillAll, &seq, &source, &value); err != nil {
			return store.SessionState{}, fail(db.classify(err))
		}
		if st.Exists {
			s.ID, s.Created, s.Updated = id, fromNanos(created), fromNanos(updated)
			st.Session = s
		}
		if seq.Valid {
			st.Observations = append(st.Observations, store.Observation{Seq: seq.Int64, Source: string(source), Value: string(value)})
		}
	}
	if err := rows.Err(); err != nil {
		return store.SessionState{}, fail(db.classify(err))
	}
	return st, nil
}

// pruneSessions deletes the sessions last updated before now minus
// store.KeepSessions, and their observations, in one transaction. The
// flags table, and with it the global kill flag, stays.
func (db *DB) pruneSessions(ctx context.Context, now time.Time) (int64, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: pruning sessions: %w", err) }
	cut, err := nanos("the sessions retention cut", now.Add(-store.KeepSessions))
	if err != nil {
		return 0, fail(err)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fail(db.classify(err))
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM observations WHERE session IN (SELECT id FROM sessions WHERE updated < ?)", cut); err != nil {
		return 0, fail(db.classify(err))
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE updated < ?", cut)
	if err != nil {
		return 0, fail(db.classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fail(err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fail(db.classify(err))
	}
	return n, nil
}
