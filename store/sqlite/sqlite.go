// Package sqlite keeps airlock's store in one embedded SQLite file, the
// default backend: nothing to run beside airlock, and several airlock
// processes on one machine may share the file. It holds the approvals, the
// session state, the idempotency ledger, the agent run checkpoints and the
// gateway's pins (a store.Backend).
//
// It uses modernc.org/sqlite (pure Go, no cgo) in WAL mode. Every state
// change is one IMMEDIATE transaction around a conditional UPDATE that
// returns the row it changed, or none, so two connections, or two processes, sharing
// the file can never both decide or both consume one approval: SQLite's
// file lock serializes the writers and the condition re-checks the state
// under that lock.
//
//	db, err := sqlite.Open("/var/lib/airlock/airlock.db", nil)
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	// db is a store.Backend: approvals, sessions, the ledger and runs.
//
// Times are stored as Unix nanoseconds, so the file keeps instants between
// the years 1678 and 2262; the arguments are stored as the canonical JSON
// text they were matched by, a run's checkpoint as the bytes it was given.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"airlock.dev/airlock/store"
)

// Defaults for Options.
const (
	// DefaultBusyTimeout is how long a statement waits for a write lock
	// another connection or process holds before it fails. Writes here are
	// single short transactions, so a wait this long means something is
	// stuck.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultMaxOpenConns bounds the connections one DB keeps. WAL lets
	// readers run beside the one writer; more writers only queue.
	DefaultMaxOpenConns = 8
	// DefaultMaxPending bounds the approvals pending at once, so a runaway
	// session cannot grow the queue (and every listing of it) without end.
	DefaultMaxPending = 1000
)

// Options tunes Open. A nil *Options, or a zero field, means the default.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process; DefaultBusyTimeout when zero.
	BusyTimeout time.Duration
	// MaxOpenConns bounds this handle's open connections;
	// DefaultMaxOpenConns when zero.
	MaxOpenConns int
	// MaxPending bounds the approvals pending and unexpired at once:
	// CreateApproval beyond it fails with ErrTooManyPending, and
	// PendingApprovals never lists more. DefaultMaxPending when zero.
	MaxPending int
}

// Errors callers branch on, beside store.ErrNotFound and
// store.ErrNotPending.
var (
	// ErrNotDatabase: the file exists but is not an SQLite database, or is
	// damaged. Open leaves such a file as it found it.
	ErrNotDatabase = errors.New("store/sqlite: the file is not an SQLite database, or it is corrupt")
	// ErrSchemaVersion: the file was migrated by a newer airlock than this
	// one, which must not write to it.
	ErrSchemaVersion = errors.New("store/sqlite: the file's schema is newer than this airlock knows")
	// ErrTooManyPending: Options.MaxPending approvals are already pending.
	ErrTooManyPending = errors.New("store/sqlite: too many pending approvals (Options.MaxPending)")
	// ErrBusy: the file stayed locked by another connection or process
	// for longer than Options.BusyTimeout.
	ErrBusy = errors.New("store/sqlite: the database stayed locked past Options.BusyTimeout")
)

// File and directory modes Open creates: the approvals carry the arguments
// of calls a person is asked about, which may be sensitive.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// DB is an open store file. It implements store.Backend and is safe for
// concurrent use, also alongside other processes that opened the same file.
type DB struct {
	sql        *sql.DB
	path       string
	maxPending int
	busy       time.Duration
	stmts      stmts
}

var _ store.Backend = (*DB)(nil)

// Open opens the SQLite store at path, creating the file (mode 0600) and its
// parent directories (mode 0700) when they are missing, and migrates its
// schema to the current version. An existing file keeps its mode.
func Open(path string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if path == "" {
		return nil, errors.New("store/sqlite: opening: the path is empty")
	}
	fail := func(err error) error { return fmt.Errorf("store/sqlite: opening %s: %w", path, err) }
	switch {
	case o.BusyTimeout < 0:
		return nil, fail(errors.New("Options.BusyTimeout is negative"))
	case o.MaxOpenConns < 0:
		return nil, fail(errors.New("Options.MaxOpenConns is negative"))
	case o.MaxPending < 0:
		return nil, fail(errors.New("Options.MaxPending is negative"))
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.MaxOpenConns == 0 {
		o.MaxOpenConns = DefaultMaxOpenConns
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fail(err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), dirMode); err != nil {
		return nil, fail(err)
	}
	// Create the file ourselves: SQLite would create it world-readable.
	// Its -wal and -shm files take the database file's mode.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode); err == nil {
		err = f.Chmod(fileMode) // whatever the umask left
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fail(err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fail(err)
	} else if err := checkHeader(abs); err != nil {
		return nil, fail(err)
	}

	sqldb, err := sql.Open("sqlite", dsn(abs, o.BusyTimeout))
	if err != nil {
		return nil, fail(err)
	}
	sqldb.SetMaxOpenConns(o.MaxOpenConns)
	sqldb.SetMaxIdleConns(o.MaxOpenConns)
	db := &DB{sql: sqldb, path: path, maxPending: o.MaxPending, busy: o.BusyTimeout}
	if err := db.setUp(context.Background()); err != nil {
		sqldb.Close()
		return nil, fail(err)
	}
	if err := db.stmts.prepare(context.Background(), sqldb); err != nil {
		sqldb.Close()
		return nil, fail(fmt.Errorf("preparing statements: %w", db.classify(err)))
	}
	return db, nil
}

// header is how every SQLite database file begins.
const header = "SQLite format 3\x00"

// checkHeader refuses an existing file that is not empty and does not begin
// as an SQLite database. SQLite itself would take a file shorter than a page
// for an empty database and write over it.
func checkHeader(abs string) error {
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	if fi.Size() == 0 {
		return nil // created by an Open that stopped before SQLite wrote it
	}
	buf := make([]byte, len(header))
	if _, err := io.ReadFull(f, buf); err != nil || string(buf) != header {
		return fmt.Errorf("%w: it does not begin with the SQLite header", ErrNotDatabase)
	}
	return nil
}

// dsn is the modernc.org/sqlite data source name for the file at abs. The
// path is escaped as a file: URI so that '?', '#' and '%' in it stay part of
// the name. Every connection waits busy for locks, enforces foreign keys,
// runs in WAL mode with full fsync, and begins its transactions IMMEDIATE,
// taking the write lock up front: a deferred transaction that reads and
// then writes can fail on a snapshot another writer made stale.
func dsn(abs string, busy time.Duration) string {
	ms := max(busy.Milliseconds(), 1)
	q := url.Values{
		"_busy_timeout": {strconv.FormatInt(ms, 10)},
		"_foreign_keys": {"on"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
		"_txlock":       {"immediate"},
	}
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
}

// setUp checks the connection really is in WAL mode and migrates the schema.
func (db *DB) setUp(ctx context.Context) error {
	var mode string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return db.classify(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal (does the file system support shared memory?)", mode)
	}
	return db.migrate(ctx)
}

// migrations are the schema's versions, in order: migrations[i] takes the
// file from version i to i+1. Never edit one that has shipped; append.
var migrations = []string{
	// 1: approvals. Status holds only what a person or a call did;
	// expiry is computed against the caller's now, never stored. Times are
	// Unix nanoseconds; decided and used are NULL until they happen.
	`CREATE TABLE approvals (
		id         TEXT    NOT NULL PRIMARY KEY,
		tool       TEXT    NOT NULL,
		args       TEXT    NOT NULL,
		args_hash  TEXT    NOT NULL,
		session    TEXT    NOT NULL DEFAULT '',
		role       TEXT    NOT NULL DEFAULT '',
		mode       TEXT    NOT NULL DEFAULT '',
		rule       TEXT    NOT NULL DEFAULT '',
		reason     TEXT    NOT NULL DEFAULT '',
		status     TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
		created    INTEGER NOT NULL,
		expires    INTEGER NOT NULL,
		decided    INTEGER,
		decided_by TEXT    NOT NULL DEFAULT '',
		used       INTEGER
	) STRICT;
	CREATE INDEX approvals_match ON approvals (tool, args_hash, status);
	CREATE INDEX approvals_status_created ON approvals (status, created);`,
	// 2: the idempotency ledger, session state and the global flags.
	// lease is NULL once an entry is finished, result NULL unless it
	// completed.
	`CREATE TABLE ledger (
		key         TEXT    NOT NULL PRIMARY KEY,
		fingerprint TEXT    NOT NULL,
		state       TEXT    NOT NULL CHECK (state IN ('in_progress', 'completed', 'failed')),
		owner       TEXT    NOT NULL,
		token       TEXT    NOT NULL,
		attempt     INTEGER NOT NULL,
		previous    TEXT    NOT NULL DEFAULT '',
		lease       INTEGER,
		result      BLOB,
		error       TEXT    NOT NULL DEFAULT '',
		retryable   INTEGER NOT NULL DEFAULT 0,
		created     INTEGER NOT NULL,
		updated     INTEGER NOT NULL,
		expires     INTEGER NOT NULL
	) STRICT;
	CREATE INDEX ledger_expires ON ledger (expires);
	CREATE TABLE sessions (
		id        TEXT    NOT NULL PRIMARY KEY,
		step      INTEGER NOT NULL DEFAULT 0,
		tokens    INTEGER NOT NULL DEFAULT 0,
		micro_usd INTEGER NOT NULL DEFAULT 0,
		mode      TEXT    NOT NULL DEFAULT '',
		killed    INTEGER NOT NULL DEFAULT 0,
		created   INTEGER NOT NULL,
		updated   INTEGER NOT NULL
	) STRICT;
	CREATE TABLE flags (
		name  TEXT    NOT NULL PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT;`,
	// 3: agent run checkpoints, one per session. The checkpoint is a
	// BLOB so its bytes come back exactly as given (the store never reads
	// them); NULL when the run has none. updated is indexed for Prune.
	`CREATE TABLE runs (
		session    TEXT    NOT NULL PRIMARY KEY,
		state      TEXT    NOT NULL CHECK (state IN ('running', 'waiting_approval', 'ended')),
		approval   TEXT    NOT NULL DEFAULT '',
		checkpoint BLOB,
		updated    INTEGER NOT NULL
	) STRICT;
	CREATE INDEX runs_updated ON runs (updated);`,
	// 4: sessions are pruned by updated (store.KeepSessions).
	`CREATE INDEX sessions_updated ON sessions (updated);`,
	// 5: remembered approvals (store.Remembered), and the hashes an
	// approval is remembered by; an approval from before has none and
	// cannot be remembered. revoked is NULL until revoked, last_used until
	// used.
	`ALTER TABLE approvals ADD COLUMN session_hash TEXT NOT NULL DEFAULT '';
	ALTER TABLE approvals ADD COLUMN workspace_hash TEXT NOT NULL DEFAULT '';
	CREATE TABLE remembered (
		id          TEXT    NOT NULL PRIMARY KEY,
		scope       TEXT    NOT NULL CHECK (scope IN ('session', 'workspace')),
		tool        TEXT    NOT NULL,
		args        TEXT    NOT NULL,
		hash        TEXT    NOT NULL,
		session     TEXT    NOT NULL DEFAULT '',
		role        TEXT    NOT NULL DEFAULT '',
		mode        TEXT    NOT NULL DEFAULT '',
		rule        TEXT    NOT NULL DEFAULT '',
		reason      TEXT    NOT NULL DEFAULT '',
		approved_by TEXT    NOT NULL DEFAULT '',
		created     INTEGER NOT NULL,
		expires     INTEGER NOT NULL,
		uses        INTEGER NOT NULL DEFAULT 0,
		last_used   INTEGER,
		revoked     INTEGER,
		revoked_by  TEXT    NOT NULL DEFAULT ''
	) STRICT;
	CREATE INDEX remembered_match ON remembered (scope, tool, hash);
	CREATE INDEX remembered_created ON remembered (created);`,
	// 6: the values that reached a session (store.Observation), and its
	// flagged bit. seq is AUTOINCREMENT so that no seq is ever given
	// twice, not after a delete; from_user is the kind of source a value
	// is held once for. Source and value are BLOBs, kept as the bytes
	// they were given. observation_count counts the session's rows, so
	// that Observe finds what is past store.MaxObservations without
	// counting them. There is no foreign key: a session row that an
	// airlock from before this version replaces (INSERT OR REPLACE)
	// would take its observations with it; Prune deletes them instead.
	`ALTER TABLE sessions ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN observation_count INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE observations (
		seq       INTEGER PRIMARY KEY AUTOINCREMENT,
		session   TEXT    NOT NULL,
		from_user INTEGER NOT NULL,
		source    BLOB    NOT NULL,
		value     BLOB    NOT NULL,
		UNIQUE (session, from_user, value)
	) STRICT;
	CREATE INDEX observations_session ON observations (session, seq);`,
	// 7: a session's tainted bit (it took in untrusted content) and its
	// truncated bit (it lost observations past store.MaxObservations).
	`ALTER TABLE sessions ADD COLUMN tainted INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;`,
	// 8: the gateway's pins of upstream definitions (store.Pin), never
	// pruned. Definitions are BLOBs, kept as the bytes they were given;
	// seen is NULL when the upstream offers nothing new. Signals are a
	// JSON array of strings, '' for none. The key's BINARY collation
	// orders it by bytes, as ListPins lists.
	`CREATE TABLE pins (
		server       TEXT    NOT NULL,
		kind         TEXT    NOT NULL CHECK (kind IN ('tool', 'prompt', 'resource')),
		name         TEXT    NOT NULL,
		hash         TEXT    NOT NULL,
		definition   BLOB    NOT NULL,
		accepted     INTEGER NOT NULL,
		signals      TEXT    NOT NULL DEFAULT '',
		seen_hash    TEXT    NOT NULL DEFAULT '',
		seen         BLOB,
		seen_signals TEXT    NOT NULL DEFAULT '',
		accepted_by  TEXT    NOT NULL DEFAULT '',
		created      INTEGER NOT NULL,
		updated      INTEGER NOT NULL,
		version      INTEGER NOT NULL,
		PRIMARY KEY (server, kind, name)
	) STRICT, WITHOUT ROWID;`,
}

// migrate brings the file to len(migrations) in one IMMEDIATE transaction,
// so two processes opening a new file at once migrate it once.
func (db *DB) migrate(ctx context.Context) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.classify(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER NOT NULL PRIMARY KEY,
		applied INTEGER NOT NULL
	) STRICT`); err != nil {
		return db.classify(err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&version); err != nil {
		return db.classify(err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: the file is at version %d, this airlock knows up to %d", ErrSchemaVersion, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating the schema to version %d: %w", v+1, db.classify(err))
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version, applied) VALUES (?, ?)", v+1, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("migrating the schema to version %d: %w", v+1, db.classify(err))
		}
	}
	return db.classify(tx.Commit())
}

// KeepFinished is how long an approval stays in the file once it can no
// longer change (used, denied, or past its expiry): long enough to answer
// `airlock approvals` about it, short enough that the file does not grow
// without end. The audit log keeps the lasting record.
const KeepFinished = store.KeepFinished

// Prune deletes the approvals that finished before now minus
// KeepFinished, the remembered approvals revoked or expired before then,
// the ledger entries past their Expires, the run
// checkpoints last updated before now minus store.KeepRuns and the
// sessions last updated before now minus store.KeepSessions, with their
// observations, and returns how many (a session counts once, whatever it
// observed). The global kill flag and the pins stay.
func (db *DB) Prune(ctx context.Context, now time.Time) (int64, error) {
	cut := now.Add(-KeepFinished).UnixNano()
	res, err := db.sql.ExecContext(ctx, `DELETE FROM approvals
		WHERE (status IN ('used', 'denied') AND COALESCE(used, decided, created) < ?)
		   OR expires < ?`, cut, cut)
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning %s: %w", db.path, db.classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: pruning %s: %w", db.path, err)
	}
	res, err = db.sql.ExecContext(ctx, `DELETE FROM remembered
		WHERE (revoked IS NOT NULL AND revoked < ?) OR expires < ?`, cut, cut)
	if err != nil {
		return n, fmt.Errorf("store/sqlite: pruning %s: %w", db.path, db.classify(err))
	}
	m, err := res.RowsAffected()
	if err != nil {
		return n, fmt.Errorf("store/sqlite: pruning %s: %w", db.path, err)
	}
	n += m
	runs, err := db.pruneOlder(ctx, "runs", store.KeepRuns, now)
	if err != nil {
		return n, err
	}
	sessions, err := db.pruneSessions(ctx, now)
	if err != nil {
		return n + runs, err
	}
	m, err = db.PruneLedger(ctx, now)
	return n + runs + sessions + m, err
}

// Close closes the database. Approvals stay in the file.
func (db *DB) Close() error {
	serr := db.stmts.close()
	if err := errors.Join(db.sql.Close(), serr); err != nil {
		return fmt.Errorf("store/sqlite: closing %s: %w", db.path, err)
	}
	return nil
}

// classify turns the SQLite result codes callers can act on into this
// package's errors, keeping the driver's error behind them.
func (db *DB) classify(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("%w: %w", ErrNotDatabase, err)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w (%v): %w", ErrBusy, db.busy, err)
	}
	return err
}

// columns is the column list every read and RETURNING clause uses, in the
// order scan expects.
const columns = `id, tool, args, args_hash, session_hash, workspace_hash, session, role, mode, rule, reason,
	status, created, expires, decided, decided_by`

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scan reads one approval and gives it its status as of now.
func scan(r scanner, now int64) (store.Approval, error) {
	var (
		a                store.Approval
		args, status     string
		created, expires int64
		decided          sql.NullInt64
	)
	if err := r.Scan(&a.ID, &a.Tool, &args, &a.ArgsHash, &a.SessionHash, &a.WorkspaceHash, &a.Session, &a.Role, &a.Mode, &a.Rule, &a.Reason,
		&status, &created, &expires, &decided, &a.DecidedBy); err != nil {
		return store.Approval{}, err
	}
	a.Args = json.RawMessage(args)
	a.Status = store.Status(status)
	if (a.Status == store.StatusPending || a.Status == store.StatusApproved) && expires <= now {
		a.Status = store.StatusExpired
	}
	a.Created = fromNanos(created)
	a.Expires = fromNanos(expires)
	if decided.Valid {
		a.Decided = fromNanos(decided.Int64)
	}
	return a, nil
}

// The instants a Unix-nanosecond int64 can hold.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos is t as Unix nanoseconds; an error when t is zero or out of range
// (before 1678 or after 2262), which would otherwise wrap silently.
func nanos(what string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, fmt.Errorf("%s is the zero time", what)
	}
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("%s %v is outside the years 1678 to 2262 the store keeps", what, t)
	}
	return t.UnixNano(), nil
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// CreateApproval stores a as a new pending approval. a.ID must be unused,
// a.Tool, a.ArgsHash and a.ID non-empty, a.Args valid JSON, a.Created and
// a.Expires set. A Status other than pending is refused; Decided and
// DecidedBy are ignored. a.Created is the now against which
// Options.MaxPending counts the approvals still pending.
func (db *DB) CreateApproval(ctx context.Context, a store.Approval) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: creating approval %q: %w", a.ID, err)
		}
	}()
	switch {
	case a.ID == "":
		return errors.New("the id is empty")
	case a.Tool == "":
		return errors.New("the tool is empty")
	case a.ArgsHash == "":
		return errors.New("the args hash is empty")
	case !json.Valid(a.Args):
		return errors.New("the args are not valid JSON")
	case a.Status != "" && a.Status != store.StatusPending:
		return fmt.Errorf("a new approval is pending, not %q", a.Status)
	}
	created, err := nanos("created", a.Created)
	if err != nil {
		return err
	}
	expires, err := nanos("expires", a.Expires)
	if err != nil {
		return err
	}

	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.classify(err)
	}
	defer tx.Rollback()
	var pending int
	if err := tx.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM approvals WHERE status = 'pending' AND expires > ?", created,
	).Scan(&pending); err != nil {
		return db.classify(err)
	}
	if pending >= db.maxPending {
		return fmt.Errorf("%w: %d are pending, the limit is %d", ErrTooManyPending, pending, db.maxPending)
	}
	var taken bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM approvals WHERE id = ?)", a.ID).Scan(&taken); err != nil {
		return db.classify(err)
	}
	if taken {
		return errors.New("the id is taken")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals
		(id, tool, args, args_hash, session_hash, workspace_hash, session, role, mode, rule, reason, status, created, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
		a.ID, a.Tool, string(a.Args), a.ArgsHash, a.SessionHash, a.WorkspaceHash, a.Session, a.Role, a.Mode, a.Rule, a.Reason, created, expires,
	); err != nil {
		return db.classify(err)
	}
	return db.classify(tx.Commit())
}

// Approval returns the approval id with its status as of now.
func (db *DB) Approval(ctx context.Context, id string, now time.Time) (store.Approval, error) {
	n, err := nanos("now", now)
	if err != nil {
		return store.Approval{}, fmt.Errorf("store/sqlite: reading approval %q: %w", id, err)
	}
	a, err := scan(db.sql.QueryRowContext(ctx, "SELECT "+columns+" FROM approvals WHERE id = ?", id), n)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("store/sqlite: reading approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store/sqlite: reading approval %q: %w", id, db.classify(err))
	}
	return a, nil
}

// PendingApprovals lists the approvals pending at now, oldest first, at most
// Options.MaxPending of them.
func (db *DB) PendingApprovals(ctx context.Context, now time.Time) ([]store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: listing pending approvals: %w", err) }
	n, err := nanos("now", now)
	if err != nil {
		return nil, fail(err)
	}
	rows, err := db.sql.QueryContext(ctx, "SELECT "+columns+` FROM approvals
		WHERE status = 'pending' AND expires > ? ORDER BY created, id LIMIT ?`, n, db.maxPending)
	if err != nil {
		return nil, fail(db.classify(err))
	}
	defer rows.Close()
	var list []store.Approval
	for rows.Next() {
		a, err := scan(rows, n)
		if err != nil {
			return nil, fail(db.classify(err))
		}
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(db.classify(err))
	}
	return list, nil
}

// DecideApproval approves or denies the approval id if it is pending and
// unexpired at now, recording now and by. store.ErrNotFound otherwise, or
// store.ErrNotPending with the approval as it stands; of two concurrent
// decisions, also from two processes, exactly one succeeds.
func (db *DB) DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (a store.Approval, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: deciding approval %q: %w", id, err)
		}
	}()
	n, err := nanos("now", now)
	if err != nil {
		return store.Approval{}, err
	}
	status := store.StatusDenied
	if approve {
		status = store.StatusApproved
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Approval{}, db.classify(err)
	}
	defer tx.Rollback()
	if a, err = db.decide(ctx, tx, id, status, by, n); err != nil {
		return a, err
	}
	if err := tx.Commit(); err != nil {
		return store.Approval{}, db.classify(err)
	}
	return a, nil
}

// decide sets the approval id, if pending and unexpired at n, to status,
// within tx. store.ErrNotFound otherwise, or store.ErrNotPending with the
// approval as it stands.
func (db *DB) decide(ctx context.Context, tx *sql.Tx, id string, status store.Status, by string, n int64) (store.Approval, error) {
	a, err := scan(tx.QueryRowContext(ctx, `UPDATE approvals SET status = ?, decided = ?, decided_by = ?
		WHERE id = ? AND status = 'pending' AND expires > ?
		RETURNING `+columns, string(status), n, by, id, n), n)
	if errors.Is(err, sql.ErrNoRows) {
		// Say what became of it, as of now, under the same lock.
		a, err := scan(tx.QueryRowContext(ctx, "SELECT "+columns+" FROM approvals WHERE id = ?", id), n)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Approval{}, store.ErrNotFound
		}
		if err != nil {
			return store.Approval{}, db.classify(err)
		}
		return a, store.ErrNotPending
	}
	if err != nil {
		return store.Approval{}, db.classify(err)
	}
	return a, nil
}

// ConsumeApproval marks used the oldest approval approved and unexpired at
// now for exactly tool and argsHash, and returns it; ok is false when there
// is none. Of concurrent calls, also from two processes, exactly one
// consumes a given approval.
func (db *DB) ConsumeApproval(ctx context.Context, tool, argsHash string, now time.Time) (a store.Approval, ok bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: consuming an approval for %q: %w", tool, err)
		}
	}()
	n, err := nanos("now", now)
	if err != nil {
		return store.Approval{}, false, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Approval{}, false, db.classify(err)
	}
	defer tx.Rollback()
	// The outer status condition repeats the inner one on purpose: the
	// UPDATE is what must never turn anything but an approved row into a
	// used one, whatever the subquery picked.
	a, err = scan(tx.QueryRowContext(ctx, `UPDATE approvals SET status = 'used', used = ?
		WHERE id = (
			SELECT id FROM approvals
			WHERE tool = ? AND args_hash = ? AND status = 'approved' AND expires > ?
			ORDER BY created, id LIMIT 1
		) AND status = 'approved' AND expires > ?
		RETURNING `+columns, n, tool, argsHash, n, n), n)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, false, nil
	}
	if err != nil {
		return store.Approval{}, false, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Approval{}, false, db.classify(err)
	}
	return a, true, nil
}
