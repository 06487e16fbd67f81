package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"airlock.dev/airlock/store"
)

// rememberedColumns is the column list every read and RETURNING clause of
// remembered approvals uses, in the order scanRemembered expects.
const rememberedColumns = `id, scope, tool, args, hash, session, role, mode, rule, reason,
	approved_by, created, expires, uses, last_used, revoked, revoked_by`

func scanRemembered(r scanner) (store.Remembered, error) {
	var (
		rm                store.Remembered
		scope, args       string
		created, expires  int64
		lastUsed, revoked sql.NullInt64
	)
	if err := r.Scan(&rm.ID, &scope, &rm.Tool, &args, &rm.Hash, &rm.Session, &rm.Role, &rm.Mode, &rm.Rule, &rm.Reason,
		&rm.ApprovedBy, &created, &expires, &rm.Uses, &lastUsed, &revoked, &rm.RevokedBy); err != nil {
		return store.Remembered{}, err
	}
	rm.Scope, rm.Args = store.Scope(scope), json.RawMessage(args)
	rm.Created, rm.Expires = fromNanos(created), fromNanos(expires)
	if lastUsed.Valid {
		rm.LastUsed = fromNanos(lastUsed.Int64)
	}
	if revoked.Valid {
		rm.Revoked = fromNanos(revoked.Int64)
	}
	return rm, nil
}

// RememberApproval implements store.Remembering: the decision and the
// remembered approval are one IMMEDIATE transaction, so of concurrent
// decisions exactly one wins, and a refusal leaves the approval pending.
func (db *DB) RememberApproval(ctx context.Context, id string, scope store.Scope, by string, now, expires time.Time) (a store.Approval, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: remembering approval %q: %w", id, err)
		}
	}()
	if err := store.CheckRemember(scope, now, expires); err != nil {
		return store.Approval{}, err
	}
	n, err := nanos("now", now)
	if err != nil {
		return store.Approval{}, err
	}
	until, err := nanos("expires", expires)
	if err != nil {
		return store.Approval{}, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Approval{}, db.classify(err)
	}
	defer tx.Rollback()
	if a, err = db.decide(ctx, tx, id, store.StatusApproved, by, n); err != nil {
		return a, err
	}
	hash := a.ScopeHash(scope)
	if hash == "" {
		return store.Approval{}, store.ErrCannotRemember
	}
	var inForce int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM remembered WHERE revoked IS NULL AND expires > ?", n).Scan(&inForce); err != nil {
		return store.Approval{}, db.classify(err)
	}
	if inForce >= store.MaxRemembered {
		return store.Approval{}, fmt.Errorf("%w: %d are in force", store.ErrTooManyRemembered, inForce)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO remembered
		(id, scope, tool, args, hash, session, role, mode, rule, reason, approved_by, created, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, string(scope), a.Tool, string(a.Args), hash, a.Session, a.Role, a.Mode, a.Rule, a.Reason, by, n, until,
	); err != nil {
		return store.Approval{}, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Approval{}, db.classify(err)
	}
	return a, nil
}

// UseRemembered implements store.Remembering.
func (db *DB) UseRemembered(ctx context.Context, scope store.Scope, tool, hash string, now time.Time) (r store.Remembered, ok bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: using a remembered approval for %q: %w", tool, err)
		}
	}()
	n, err := nanos("now", now)
	if err != nil || hash == "" {
		return store.Remembered{}, false, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Remembered{}, false, db.classify(err)
	}
	defer tx.Rollback()
	r, err = scanRemembered(tx.QueryRowContext(ctx, `UPDATE remembered SET uses = uses + 1, last_used = ?
		WHERE id = (
			SELECT id FROM remembered
			WHERE scope = ? AND tool = ? AND hash = ? AND revoked IS NULL AND expires > ?
			ORDER BY created, id LIMIT 1
		)
		RETURNING `+rememberedColumns, n, string(scope), tool, hash, n))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Remembered{}, false, nil
	}
	if err != nil {
		return store.Remembered{}, false, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Remembered{}, false, db.classify(err)
	}
	return r, true, nil
}

// RememberedApprovals implements store.Remembering.
func (db *DB) RememberedApprovals(ctx context.Context, now time.Time) ([]store.Remembered, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: listing remembered approvals: %w", err) }
	n, err := nanos("now", now)
	if err != nil {
		return nil, fail(err)
	}
	rows, err := db.sql.QueryContext(ctx, "SELECT "+rememberedColumns+` FROM remembered
		WHERE revoked IS NULL AND expires > ? ORDER BY created, id LIMIT ?`, n, store.MaxRemembered)
	if err != nil {
		return nil, fail(db.classify(err))
	}
	defer rows.Close()
	var list []store.Remembered
	for rows.Next() {
		r, err := scanRemembered(rows)
		if err != nil {
			return nil, fail(db.classify(err))
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(db.classify(err))
	}
	return list, nil
}

// RevokeRemembered implements store.Remembering.
func (db *DB) RevokeRemembered(ctx context.Context, id, by string, now time.Time) (r store.Remembered, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: revoking remembered approval %q: %w", id, err)
		}
	}()
	n, err := nanos("now", now)
	if err != nil {
		return store.Remembered{}, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Remembered{}, db.classify(err)
	}
	defer tx.Rollback()
	r, err = scanRemembered(tx.QueryRowContext(ctx, `UPDATE remembered SET revoked = ?, revoked_by = ?
		WHERE id = ? AND revoked IS NULL AND expires > ?
		RETURNING `+rememberedColumns, n, by, id, n))
	if errors.Is(err, sql.ErrNoRows) {
		r, err := scanRemembered(tx.QueryRowContext(ctx, "SELECT "+rememberedColumns+" FROM remembered WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.Remembered{}, store.ErrNotFound
		}
		if err != nil {
			return store.Remembered{}, db.classify(err)
		}
		return r, store.ErrNotInForce
	}
	if err != nil {
		return store.Remembered{}, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Remembered{}, db.classify(err)
	}
	return r, nil
}
