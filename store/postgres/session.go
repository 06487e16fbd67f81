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

// sessionColumns are what scanSession reads. Flagged, Tainted and
// Truncated are set only by
// Observe, so updateSession never writes it.
const sessionColumns = "id, step, tokens, micro_usd, mode, killed, flagged, tainted, truncated, created, updated"

func scanSession(r pgx.Row) (store.Session, error) {
	var s store.Session
	if err := r.Scan(&s.ID, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &s.Flagged, &s.Tainted, &s.Truncated, &s.Created, &s.Updated); err != nil {
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
			tag, err := tx.Exec(ctx, `INSERT INTO sessions (id, step, tokens, micro_usd, mode, killed, created, updated)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`, args...)
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
// store.KeepSessions, and with them (the foreign key cascades) their
// observations. A charge or an Observe under way holds its session's row
// locked, so the delete waits for it and then sees its new updated. The
// flags table, and with it the global kill flag, is left alone.
func (db *DB) pruneSessions(ctx context.Context, now time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, "DELETE FROM sessions WHERE updated < $1", now.Add(-store.KeepSessions))
	if err != nil {
		return 0, fmt.Errorf("store/postgres: pruning sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Observe implements store.Sessions in one batch, one round trip, which
// Postgres runs as one implicit transaction. Its first statement creates
// or updates the session's row, locking it, and only then does the
// second number the new observations: two Observes of one session take
// their seqs in the order they commit, so no reader sees a higher seq
// before a lower one. (Numbered first, a later seq could commit before an
// earlier one, and a reader's cursor would pass the earlier for good.)
func (db *DB) Observe(ctx context.Context, id string, obs []store.Observation, marks store.Marks, now time.Time) error {
	fail := func(err error) error { return fmt.Errorf("store/postgres: observing for session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return fail(err)
	}
	if err := store.ValidObservations(obs); err != nil {
		return fail(err)
	}
	if err := checkNow(now); err != nil {
		return fail(err)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO sessions (id, created, updated, flagged, tainted) VALUES ($1, $2, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET updated = EXCLUDED.updated,
			flagged = sessions.flagged OR EXCLUDED.flagged, tainted = sessions.tainted OR EXCLUDED.tainted`,
		id, now.UTC(), marks.Has(store.MarkFlagged), marks.Has(store.MarkTainted))
	if len(obs) > 0 {
		fromUser := make([]bool, len(obs))
		sources := make([][]byte, len(obs))
		values := make([][]byte, len(obs))
		for i, o := range obs {
			fromUser[i], sources[i], values[i] = o.FromUser(), []byte(o.Source), []byte(o.Value)
		}
		// The seqs follow the batch's order: the identity is drawn as
		// rows leave the ORDER BY.
		b.Queue(`WITH added AS (
				INSERT INTO observations (session, from_user, source, value)
				SELECT $1, o.from_user, o.source, o.value
				FROM unnest($2::boolean[], $3::bytea[], $4::bytea[]) WITH ORDINALITY AS o (from_user, source, value, n)
				ORDER BY o.n
				ON CONFLICT (session, from_user, value) DO NOTHING
				RETURNING 1)
			UPDATE sessions SET observation_count = observation_count + (SELECT count(*) FROM added) WHERE id = $1`,
			id, fromUser, sources, values)
		b.Queue(`WITH s AS (SELECT observation_count - $2 AS over, observation_floor AS floor FROM sessions WHERE id = $1),
			gone AS (
				DELETE FROM observations WHERE seq IN (
					SELECT seq FROM observations WHERE session = $1 AND seq > (SELECT floor FROM s)
					ORDER BY seq LIMIT greatest((SELECT over FROM s), 0))
				RETURNING seq)
			UPDATE sessions SET observation_count = observation_count - (SELECT count(*) FROM gone),
				observation_floor = (SELECT max(seq) FROM gone), truncated = true
			WHERE id = $1 AND observation_count > $2`,
			id, int64(store.MaxObservations))
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fail(err)
	}
	return nil
}

// State implements store.Sessions in one SELECT, which Postgres answers
// from one snapshot.
func (db *DB) State(ctx context.Context, id string, after int64) (store.SessionState, error) {
	fail := func(err error) error {
		return fmt.Errorf("store/postgres: reading the state of session %q: %w", id, err)
	}
	if err := store.ValidSessionID(id); err != nil {
		return store.SessionState{}, fail(err)
	}
	rows, err := db.pool.Query(ctx, `SELECT s.id IS NOT NULL,
			COALESCE(s.step, 0), COALESCE(s.tokens, 0), COALESCE(s.micro_usd, 0), COALESCE(s.mode, ''),
			COALESCE(s.killed, false), COALESCE(s.flagged, false), COALESCE(s.tainted, false), COALESCE(s.truncated, false),
			s.created, s.updated,
			EXISTS (SELECT 1 FROM flags WHERE name = $3 AND value),
			o.seq, o.source, o.value
		FROM (SELECT $1::text AS id) AS k
		LEFT JOIN sessions AS s ON s.id = k.id
		LEFT JOIN observations AS o ON o.session = s.id AND o.seq > $2
		ORDER BY o.seq`, id, after, killAllFlag)
	if err != nil {
		return store.SessionState{}, fail(err)
	}
	defer rows.Close()
	st := store.SessionState{Session: store.Session{ID: id}}
	for rows.Next() {
		var (
			s                store.Session
			created, updated *time.Time
			seq              *int64
			source, value    []byte
		)
		if err := rows.Scan(&st.Exists, &s.Step, &s.Tokens, &s.MicroUSD, &s.Mode, &s.Killed, &s.Flagged, &s.Tainted, &s.Truncated, &created, &updated,
			&st.KillAll, &seq, &source, &value); err != nil {
			return store.SessionState{}, fail(err)
		}
		if st.Exists && created != nil && updated != nil {
			s.ID, s.Created, s.Updated = id, created.UTC(), updated.UTC()
			st.Session = s
		}
		if seq != nil {
			st.Observations = append(st.Observations, store.Observation{Seq: *seq, Source: string(source), Value: string(value)})
		}
	}
	if err := rows.Err(); err != nil {
		return store.SessionState{}, fail(err)
	}
	return st, nil
}
