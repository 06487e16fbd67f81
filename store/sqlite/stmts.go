package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// The SQL of the statements on the gate's path, run on every call: SQLite
// parsing them anew each time cost more than running them. Each is
// prepared once at Open (see stmts).
const (
	// sessionSQL reads one session row for scanSession.
	sessionSQL = "SELECT " + sessionColumns + " FROM sessions WHERE id = ?"
	// killAllSQL reads the global kill flag, given killAllFlag.
	killAllSQL = "SELECT EXISTS (SELECT 1 FROM flags WHERE name = ? AND value <> 0)"
	// saveSessionSQL is updateSession's write: an upsert, not INSERT OR
	// REPLACE, which would reset the columns it does not name (flagged,
	// tainted, truncated, observation_count).
	saveSessionSQL = `INSERT INTO sessions (id, step, tokens, micro_usd, mode, killed, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET step = excluded.step, tokens = excluded.tokens, micro_usd = excluded.micro_usd,
			mode = excluded.mode, killed = excluded.killed, updated = excluded.updated`
	// markSessionSQL is Observe's write to the session row.
	markSessionSQL = `INSERT INTO sessions (id, created, updated, flagged, tainted) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET updated = excluded.updated,
			flagged = flagged OR excluded.flagged, tainted = tainted OR excluded.tainted`
	// addObservationSQL adds one observation unless the session holds it.
	addObservationSQL = `INSERT INTO observations (session, from_user, source, value) VALUES (?, ?, ?, ?)
		ON CONFLICT (session, from_user, value) DO NOTHING`
	// countObservationsSQL adds to a session's observation count and
	// returns the new count.
	countObservationsSQL = "UPDATE sessions SET observation_count = observation_count + ? WHERE id = ? RETURNING observation_count"
	// stateSQL is State's one SELECT, given killAllFlag, the session id and
	// the seq to read after.
	stateSQL = `SELECT s.id IS NOT NULL,
			COALESCE(s.step, 0), COALESCE(s.tokens, 0), COALESCE(s.micro_usd, 0), COALESCE(s.mode, ''),
			COALESCE(s.killed, 0), COALESCE(s.flagged, 0), COALESCE(s.tainted, 0), COALESCE(s.truncated, 0),
			COALESCE(s.created, 0), COALESCE(s.updated, 0),
			EXISTS (SELECT 1 FROM flags WHERE name = ? AND value <> 0),
			o.seq, o.source, o.value
		FROM (SELECT ? AS id) AS k
		LEFT JOIN sessions AS s ON s.id = k.id
		LEFT JOIN observations AS o ON o.session = s.id AND o.seq > ?
		ORDER BY o.seq`
)

// stmts are the statements prepared once at Open and closed at Close.
// database/sql prepares each again on every connection that first runs it
// and keeps it there; inside a transaction use them through
// tx.StmtContext, which reuses what the transaction's connection holds.
type stmts struct {
	session, killAll, saveSession, markSession, addObservation, countObservations, state *sql.Stmt
}

// all pairs each statement with its SQL, the one list prepare and close
// walk.
func (s *stmts) all() []struct {
	stmt **sql.Stmt
	sql  string
} {
	return []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.session, sessionSQL},
		{&s.killAll, killAllSQL},
		{&s.saveSession, saveSessionSQL},
		{&s.markSession, markSessionSQL},
		{&s.addObservation, addObservationSQL},
		{&s.countObservations, countObservationsSQL},
		{&s.state, stateSQL},
	}
}

// prepare prepares every statement on db, after the schema is migrated;
// on failure it closes those it prepared.
func (s *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range s.all() {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			s.close()
			return err
		}
		*p.stmt = st
	}
	return nil
}

// close closes the statements prepared. It leaves them in place, not nil,
// so a call after Close fails with database/sql's "statement is closed"
// error instead of dereferencing nil, and races no call still running.
func (s *stmts) close() error {
	var errs []error
	for _, p := range s.all() {
		if *p.stmt != nil {
			errs = append(errs, (*p.stmt).Close())
		}
	}
	return errors.Join(errs...)
}
