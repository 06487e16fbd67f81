// Package postgres keeps airlock's store in PostgreSQL, so that several
// gateway replicas share one set of approvals, sessions, ledger entries,
// agent run checkpoints and pins.
//
// It uses github.com/jackc/pgx/v5 and its pool. Every table lives in one
// schema (Options.Schema, or the URL's schema parameter; "airlock" by
// default), created and migrated by Open under an advisory lock, so
// replicas starting together migrate once. Every state change is one
// transaction: a conditional UPDATE that re-checks the state after waiting
// for the row's lock, or a SELECT ... FOR UPDATE whose row is changed by
// the rule package store shares with every backend. A new row is only ever
// inserted with ON CONFLICT DO NOTHING, and a lost insert race starts the
// transaction over, so two replicas never both create one entry. A run's
// checkpoint, which replaces whatever was there without reading it, is one
// INSERT ... ON CONFLICT DO UPDATE. Observe, which adds to a session
// without reading it, begins with one too, which locks the session's row:
// the observations of one session are numbered and committed in one
// order, so a reader following their seq never skips one.
//
//	db, err := postgres.Open(ctx, "postgres://airlock@db/airlock?schema=airlock", nil)
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	// db is a store.Backend.
//
// Times are timestamptz: microseconds, returned in UTC.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"airlock.dev/airlock/store"
)

// Defaults for Options.
const (
	// DefaultSchema is the schema the tables live in.
	DefaultSchema = "airlock"
	// DefaultMaxConns bounds one DB's pool of connections.
	DefaultMaxConns = 8
	// DefaultMaxPending bounds the approvals pending at once, as in
	// store/sqlite.
	DefaultMaxPending = 1000
	// DefaultConnectTimeout bounds Open's first connection.
	DefaultConnectTimeout = 10 * time.Second
	// MaxRetries bounds how often a transaction that lost an insert race
	// starts over.
	MaxRetries = 8
)

// Options tunes Open. A nil *Options, or a zero field, means the default.
type Options struct {
	// Schema is where the tables live; the URL's schema parameter when
	// empty, else DefaultSchema. Lower-case letters, digits and _.
	Schema string
	// MaxConns bounds the pool; DefaultMaxConns when zero.
	MaxConns int32
	// MaxPending bounds the approvals pending and unexpired at once;
	// DefaultMaxPending when zero.
	MaxPending int
}

// Errors callers branch on, beside those of package store.
var (
	// ErrTooManyPending: Options.MaxPending approvals are already pending.
	ErrTooManyPending = errors.New("store/postgres: too many pending approvals (Options.MaxPending)")
	// ErrSchemaVersion: the schema was migrated by a newer airlock.
	ErrSchemaVersion = errors.New("store/postgres: the schema is newer than this airlock knows")
	// ErrContention: a transaction lost MaxRetries insert races in a row.
	ErrContention = errors.New("store/postgres: too much contention on one row (MaxRetries)")
)

// schemaPattern is what a schema name may be: never quoted into SQL
// unchecked.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// DB is an open Postgres store. It implements store.Backend and is safe
// for concurrent use, also alongside other processes using the same schema.
type DB struct {
	pool       *pgxpool.Pool
	schema     string
	maxPending int
}

var _ store.Backend = (*DB)(nil)

// Open connects to the database at rawURL (postgres://... or
// postgresql://...; pgx's parameters apply, plus schema=NAME), creates the
// schema when it is missing and migrates it.
func Open(ctx context.Context, rawURL string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	fail := func(err error) error { return fmt.Errorf("store/postgres: opening %s: %w", redactURL(rawURL), err) }
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fail(errors.New("want a URL postgres://user@host:port/database"))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fail(fmt.Errorf("the URL's parameters: %w", err))
	}
	if o.Schema == "" {
		o.Schema = q.Get("schema")
	}
	q.Del("schema")
	u.RawQuery = q.Encode()
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	switch {
	case !schemaPattern.MatchString(o.Schema):
		return nil, fail(fmt.Errorf("schema %q: use lower-case letters, digits and _, at most 63", o.Schema))
	case o.MaxConns < 0 || o.MaxPending < 0:
		return nil, fail(errors.New("an option is negative; use zero for the default"))
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fail(err)
	}
	cfg.MaxConns = o.MaxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fail(err)
	}
	db := &DB{pool: pool, schema: o.Schema, maxPending: o.MaxPending}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fail(fmt.Errorf("%w (is Postgres running? scripts/start-services.sh starts it on a development machine)", err))
	}
	return db, nil
}

// redactURL drops the password from a URL before it enters an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the URL"
	}
	return u.Redacted()
}

// Close closes the pool. The data stays in the database.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// DropSchema deletes the schema and everything in it, then closes db. It
// is for tests and for removing airlock's state on purpose.
func (db *DB) DropSchema(ctx context.Context) error {
	defer db.pool.Close()
	if _, err := db.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{db.schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("store/postgres: dropping schema %s: %w", db.schema, err)
	}
	return nil
}

// migrations are the schema's versions, in order; never edit one that has
// shipped, append.
var migrations = []string{
	// 1: approvals, the ledger, sessions and flags.
	`CREATE TABLE approvals (
		id         text        NOT NULL PRIMARY KEY,
		tool       text        NOT NULL,
		args       text        NOT NULL,
		args_hash  text        NOT NULL,
		session    text        NOT NULL DEFAULT '',
		role       text        NOT NULL DEFAULT '',
		mode       text        NOT NULL DEFAULT '',
		rule       text        NOT NULL DEFAULT '',
		reason     text        NOT NULL DEFAULT '',
		status     text        NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
		created    timestamptz NOT NULL,
		expires    timestamptz NOT NULL,
		decided    timestamptz,
		decided_by text        NOT NULL DEFAULT '',
		used       timestamptz
	);
	CREATE INDEX approvals_match ON approvals (tool, args_hash, status);
	CREATE INDEX approvals_status_created ON approvals (status, created);
	CREATE TABLE ledger (
		key         text        NOT NULL PRIMARY KEY,
		fingerprint text        NOT NULL,
		state       text        NOT NULL CHECK (state IN ('in_progress', 'completed', 'failed')),
		owner       text        NOT NULL,
		token       text        NOT NULL,
		attempt     bigint      NOT NULL,
		previous    text        NOT NULL DEFAULT '',
		lease       timestamptz,
		result      bytea,
		error       text        NOT NULL DEFAULT '',
		retryable   boolean     NOT NULL DEFAULT false,
		created     timestamptz NOT NULL,
		updated     timestamptz NOT NULL,
		expires     timestamptz NOT NULL
	);
	CREATE INDEX ledger_expires ON ledger (expires);
	CREATE TABLE sessions (
		id        text        NOT NULL PRIMARY KEY,
		step      bigint      NOT NULL DEFAULT 0,
		tokens    bigint      NOT NULL DEFAULT 0,
		micro_usd bigint      NOT NULL DEFAULT 0,
		mode      text        NOT NULL DEFAULT '',
		killed    boolean     NOT NULL DEFAULT false,
		created   timestamptz NOT NULL,
		updated   timestamptz NOT NULL
	);
	CREATE TABLE flags (
		name  text    NOT NULL PRIMARY KEY,
		value boolean NOT NULL
	);`,
	// 2: agent run checkpoints, one per session. The checkpoint is bytea,
	// not jsonb, which would reorder and re-space it: the store keeps the
	// agent's bytes exactly. NULL when the run has none.
	`CREATE TABLE runs (
		session    text        NOT NULL PRIMARY KEY,
		state      text        NOT NULL CHECK (state IN ('running', 'waiting_approval', 'ended')),
		approval   text        NOT NULL DEFAULT '',
		checkpoint bytea,
		updated    timestamptz NOT NULL
	);
	CREATE INDEX runs_updated ON runs (updated);`,
	// 3: sessions are pruned by updated (store.KeepSessions).
	`CREATE INDEX sessions_updated ON sessions (updated);`,
	// 4: remembered approvals (store.Remembered), and the hashes an
	// approval is remembered by; an approval from before has none and
	// cannot be remembered.
	`ALTER TABLE approvals ADD COLUMN session_hash text NOT NULL DEFAULT '',
		ADD COLUMN workspace_hash text NOT NULL DEFAULT '';
	CREATE TABLE remembered (
		id          text        NOT NULL PRIMARY KEY,
		scope       text        NOT NULL CHECK (scope IN ('session', 'workspace')),
		tool        text        NOT NULL,
		args        text        NOT NULL,
		hash        text        NOT NULL,
		session     text        NOT NULL DEFAULT '',
		role        text        NOT NULL DEFAULT '',
		mode        text        NOT NULL DEFAULT '',
		rule        text        NOT NULL DEFAULT '',
		reason      text        NOT NULL DEFAULT '',
		approved_by text        NOT NULL DEFAULT '',
		created     timestamptz NOT NULL,
		expires     timestamptz NOT NULL,
		uses        bigint      NOT NULL DEFAULT 0,
		last_used   timestamptz,
		revoked     timestamptz,
		revoked_by  text        NOT NULL DEFAULT ''
	);
	CREATE INDEX remembered_match ON remembered (scope, tool, hash);
	CREATE INDEX remembered_created ON remembered (created);`,
	// 5: the values that reached a session (store.Observation), and its
	// flagged bit. seq comes from an identity sequence, which never
	// gives a value twice; from_user is the kind of source a value is
	// held once for. Source and value are bytea, kept as the bytes they
	// were given (text would refuse a value cut inside a UTF-8
	// sequence). A session's observations go with it (Prune).
	// observation_count counts them, so that Observe finds what is past
	// store.MaxObservations without counting them; observation_floor is
	// the highest seq dropped for that, so that the next drop's index scan
	// starts above the entries of deleted rows, which stay in the index
	// until a vacuum.
	`ALTER TABLE sessions ADD COLUMN flagged boolean NOT NULL DEFAULT false,
		ADD COLUMN observation_count bigint NOT NULL DEFAULT 0,
		ADD COLUMN observation_floor bigint NOT NULL DEFAULT 0;
	CREATE TABLE observations (
		seq       bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		session   text    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		from_user boolean NOT NULL,
		source    bytea   NOT NULL,
		value     bytea   NOT NULL,
		UNIQUE (session, from_user, value)
	);
	CREATE INDEX observations_session ON observations (session, seq);`,
	// 6: a session's tainted bit (it took in untrusted content) and its
	// truncated bit (it lost observations past store.MaxObservations).
	`ALTER TABLE sessions ADD COLUMN tainted boolean NOT NULL DEFAULT false,
		ADD COLUMN truncated boolean NOT NULL DEFAULT false;`,
	// 7: the gateway's pins of upstream definitions (store.Pin), never
	// pruned. Definitions are bytea, kept as the bytes they were given
	// (jsonb would reorder them, text refuse a byte that is not UTF-8);
	// seen is NULL when the upstream offers nothing new. The key is
	// collated "C", so that it sorts by bytes, as ListPins lists, in
	// whatever collation the database has.
	`CREATE TABLE pins (
		server       text COLLATE "C" NOT NULL,
		kind         text COLLATE "C" NOT NULL CHECK (kind IN ('tool', 'prompt', 'resource')),
		name         text COLLATE "C" NOT NULL,
		hash         text        NOT NULL,
		definition   bytea       NOT NULL,
		accepted     boolean     NOT NULL,
		signals      text[]      NOT NULL DEFAULT '{}',
		seen_hash    text        NOT NULL DEFAULT '',
		seen         bytea,
		seen_signals text[]      NOT NULL DEFAULT '{}',
		accepted_by  text        NOT NULL DEFAULT '',
		created      timestamptz NOT NULL,
		updated      timestamptz NOT NULL,
		version      bigint      NOT NULL,
		PRIMARY KEY (server, kind, name)
	);`,
}

// migrate creates the schema and brings it to len(migrations), in one
// transaction under an advisory lock named after the schema.
func (db *DB) migrate(ctx context.Context) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('airlock-migrate:' || $1::text))", db.schema); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{db.schema}.Sanitize()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version integer     NOT NULL PRIMARY KEY,
		applied timestamptz NOT NULL
	)`); err != nil {
		return err
	}
	var version int
	if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&version); err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: schema %s is at version %d, this airlock knows up to %d", ErrSchemaVersion, db.schema, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating schema %s to version %d: %w", db.schema, v+1, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_version (version, applied) VALUES ($1, now())", v+1); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// Prune implements store.Backend: finished approvals older than
// store.KeepFinished, remembered approvals revoked or expired before then,
// ledger entries past their Expires, run checkpoints
// last updated before now minus store.KeepRuns, and sessions last updated
// before now minus store.KeepSessions, with their observations (a session
// counts once, whatever it observed). The global kill flag and the pins
// stay.
func (db *DB) Prune(ctx context.Context, now time.Time) (int64, error) {
	cut := now.Add(-store.KeepFinished)
	tag, err := db.pool.Exec(ctx, `DELETE FROM approvals
		WHERE (status IN ('used', 'denied') AND COALESCE(used, decided, created) < $1)
		   OR expires < $1`, cut)
	if err != nil {
		return 0, fmt.Errorf("store/postgres: pruning approvals: %w", err)
	}
	rm, err := db.pool.Exec(ctx, `DELETE FROM remembered
		WHERE (revoked IS NOT NULL AND revoked < $1) OR expires < $1`, cut)
	if err != nil {
		return tag.RowsAffected(), fmt.Errorf("store/postgres: pruning remembered approvals: %w", err)
	}
	approvals := tag.RowsAffected() + rm.RowsAffected()
	runs, err := db.pool.Exec(ctx, "DELETE FROM runs WHERE updated < $1", now.Add(-store.KeepRuns))
	if err != nil {
		return approvals, fmt.Errorf("store/postgres: pruning runs: %w", err)
	}
	sessions, err := db.pruneSessions(ctx, now)
	if err != nil {
		return approvals + runs.RowsAffected(), err
	}
	n, err := db.PruneLedger(ctx, now)
	return approvals + runs.RowsAffected() + sessions + n, err
}

// retry runs f in a transaction, starting over (at most MaxRetries times)
// when f reports that it lost an insert race.
func (db *DB) retry(ctx context.Context, f func(tx pgx.Tx) (lost bool, err error)) error {
	for range MaxRetries {
		tx, err := db.pool.Begin(ctx)
		if err != nil {
			return err
		}
		lost, err := f(tx)
		if err != nil || lost {
			tx.Rollback(ctx)
			if err != nil {
				return err
			}
			continue
		}
		return tx.Commit(ctx)
	}
	return ErrContention
}

// utc is t in UTC; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// noRows tells pgx's "no rows" apart.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
