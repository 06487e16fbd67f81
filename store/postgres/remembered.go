package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"airlock.dev/airlock/store"
)

// rememberedColumns is the column list every read and RETURNING clause of
// remembered approvals uses, in the order scanRemembered expects.
const rememberedColumns = `id, scope, tool, args, hash, session, role, mode, rule, reason,
	approved_by, created, expires, uses, last_used, revoked, revoked_by`

// rememberLock is the advisory lock RememberApproval holds while it counts
// the remembered approvals in force, so that two replicas cannot both take
// the last place.
const rememberLock = "airlock-remember-approval"

func scanRemembered(r pgx.Row) (store.Remembered, error) {
	var (
		rm                store.Remembered
		scope, args       string
		lastUsed, revoked *time.Time
	)
	if err := r.Scan(&rm.ID, &scope, &rm.Tool, &args, &rm.Hash, &rm.Session, &rm.Role, &rm.Mode, &rm.Rule, &rm.Reason,
		&rm.ApprovedBy, &rm.Created, &rm.Expires, &rm.Uses, &lastUsed, &revoked, &rm.RevokedBy); err != nil {
		return store.Remembered{}, err
	}
	rm.Scope, rm.Args = store.Scope(scope), json.RawMessage(args)
	rm.Created, rm.Expires = utc(rm.Created), utc(rm.Expires)
	if lastUsed != nil {
		rm.LastUsed = lastUsed.UTC()
	}
	if revoked != nil {
		rm.Revoked = revoked.UTC()
	}
	return rm, nil
}

// RememberApproval implements store.Remembering: the decision and the
// remembered approval are one transaction, so a refusal leaves the
// approval pending.
func (db *DB) RememberApproval(ctx context.Context, id string, scope store.Scope, by string, now, expires time.Time) (a store.Approval, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/postgres: remembering approval %q: %w", id, err)
		}
	}()
	if err := store.CheckRemember(scope, now, expires); err != nil {
		return store.Approval{}, err
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return store.Approval{}, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1::text || current_schema()))", rememberLock); err != nil {
		return store.Approval{}, err
	}
	if a, err = decide(ctx, tx, id, store.StatusApproved, by, now); err != nil {
		return a, err
	}
	hash := a.ScopeHash(scope)
	if hash == "" {
		return store.Approval{}, store.ErrCannotRemember
	}
	var inForce int
	if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM remembered WHERE revoked IS NULL AND expires > $1", now).Scan(&inForce); err != nil {
		return store.Approval{}, err
	}
	if inForce >= store.MaxRemembered {
		return store.Approval{}, fmt.Errorf("%w: %d are in force", store.ErrTooManyRemembered, inForce)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO remembered
		(id, scope, tool, args, hash, session, role, mode, rule, reason, approved_by, created, expires)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		a.ID, string(scope), a.Tool, string(a.Args), hash, a.Session, a.Role, a.Mode, a.Rule, a.Reason, by, now, expires,
	); err != nil {
		return store.Approval{}, err
	}
	return a, tx.Commit(ctx)
}

// UseRemembered implements store.Remembering. Unlike ConsumeApproval it
// skips no locked row: two concurrent uses of one remembered approval both
// succeed, the second after the first's count; a concurrent revocation
// fails the re-checked condition instead.
func (db *DB) UseRemembered(ctx context.Context, scope store.Scope, tool, hash string, now time.Time) (store.Remembered, bool, error) {
	if err := checkNow(now); err != nil || hash == "" {
		return store.Remembered{}, false, err
	}
	r, err := scanRemembered(db.pool.QueryRow(ctx, `UPDATE remembered SET uses = uses + 1, last_used = $1
		WHERE id = (
			SELECT id FROM remembered
			WHERE scope = $2 AND tool = $3 AND hash = $4 AND revoked IS NULL AND expires > $1
			ORDER BY created, id LIMIT 1
		) AND revoked IS NULL AND expires > $1
		RETURNING `+rememberedColumns, now, string(scope), tool, hash))
	if noRows(err) {
		return store.Remembered{}, false, nil
	}
	if err != nil {
		return store.Remembered{}, false, fmt.Errorf("store/postgres: using a remembered approval for %q: %w", tool, err)
	}
	return r, true, nil
}

// RememberedApprovals implements store.Remembering.
func (db *DB) RememberedApprovals(ctx context.Context, now time.Time) ([]store.Remembered, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: listing remembered approvals: %w", err) }
	if err := checkNow(now); err != nil {
		return nil, fail(err)
	}
	rows, err := db.pool.Query(ctx, "SELECT "+rememberedColumns+` FROM remembered
		WHERE revoked IS NULL AND expires > $1 ORDER BY created, id LIMIT $2`, now, store.MaxRemembered)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	var list []store.Remembered
	for rows.Next() {
		r, err := scanRemembered(rows)
		if err != nil {
			return nil, fail(err)
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return list, nil
}

// RevokeRemembered implements store.Remembering.
func (db *DB) RevokeRemembered(ctx context.Context, id, by string, now time.Time) (store.Remembered, error) {
	fail := func(err error) error {
		return fmt.Errorf("store/postgres: revoking remembered approval %q: %w", id, err)
	}
	if err := checkNow(now); err != nil {
		return store.Remembered{}, fail(err)
	}
	r, err := scanRemembered(db.pool.QueryRow(ctx, `UPDATE remembered SET revoked = $1, revoked_by = $2
		WHERE id = $3 AND revoked IS NULL AND expires > $1
		RETURNING `+rememberedColumns, now, by, id))
	if noRows(err) {
		r, err := scanRemembered(db.pool.QueryRow(ctx, "SELECT "+rememberedColumns+" FROM remembered WHERE id = $1", id))
		if noRows(err) {
			return store.Remembered{}, fail(store.ErrNotFound)
		}
		if err != nil {
			return store.Remembered{}, fail(err)
		}
		return r, fail(store.ErrNotInForce)
	}
	if err != nil {
		return store.Remembered{}, fail(err)
	}
	return r, nil
}
