package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"airlock.dev/airlock/store"
)

// approvalColumns is the column list every read and RETURNING clause uses,
// in the order scanApproval expects.
const approvalColumns = `id, tool, args, args_hash, session_hash, workspace_hash, session, role, mode, rule, reason,
	status, created, expires, decided, decided_by`

// createLock is the advisory lock CreateApproval holds while it counts the
// pending approvals, so that two replicas cannot both take the last place.
const createLock = "airlock-create-approval"

func scanApproval(r pgx.Row, now time.Time) (store.Approval, error) {
	var (
		a       store.Approval
		args    string
		status  string
		decided *time.Time
	)
	if err := r.Scan(&a.ID, &a.Tool, &args, &a.ArgsHash, &a.SessionHash, &a.WorkspaceHash, &a.Session, &a.Role, &a.Mode, &a.Rule, &a.Reason,
		&status, &a.Created, &a.Expires, &decided, &a.DecidedBy); err != nil {
		return store.Approval{}, err
	}
	a.Args = json.RawMessage(args)
	a.Status = store.Status(status)
	if (a.Status == store.StatusPending || a.Status == store.StatusApproved) && !a.Expires.After(now) {
		a.Status = store.StatusExpired
	}
	a.Created, a.Expires = utc(a.Created), utc(a.Expires)
	if decided != nil {
		a.Decided = decided.UTC()
	}
	return a, nil
}

func checkNow(now time.Time) error {
	if now.IsZero() {
		return errors.New("now is the zero time")
	}
	return nil
}

// CreateApproval implements store.Approvals, with the same checks as
// store/sqlite.
func (db *DB) CreateApproval(ctx context.Context, a store.Approval) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/postgres: creating approval %q: %w", a.ID, err)
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
	case a.Created.IsZero() || a.Expires.IsZero():
		return errors.New("created and expires must be set")
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1::text || current_schema()))", createLock); err != nil {
		return err
	}
	var pending int
	if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM approvals WHERE status = 'pending' AND expires > $1", a.Created).Scan(&pending); err != nil {
		return err
	}
	if pending >= db.maxPending {
		return fmt.Errorf("%w: %d are pending, the limit is %d", ErrTooManyPending, pending, db.maxPending)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO approvals
		(id, tool, args, args_hash, session_hash, workspace_hash, session, role, mode, rule, reason, status, created, expires)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13)
		ON CONFLICT (id) DO NOTHING`,
		a.ID, a.Tool, string(a.Args), a.ArgsHash, a.SessionHash, a.WorkspaceHash, a.Session, a.Role, a.Mode, a.Rule, a.Reason, a.Created, a.Expires)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errors.New("the id is taken")
	}
	return tx.Commit(ctx)
}

// Approval implements store.Approvals.
func (db *DB) Approval(ctx context.Context, id string, now time.Time) (store.Approval, error) {
	if err := checkNow(now); err != nil {
		return store.Approval{}, fmt.Errorf("store/postgres: reading approval %q: %w", id, err)
	}
	a, err := scanApproval(db.pool.QueryRow(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = $1", id), now)
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store/postgres: reading approval %q: %w", id, err)
	}
	return a, nil
}

// PendingApprovals implements store.Approvals: at most Options.MaxPending,
// oldest first.
func (db *DB) PendingApprovals(ctx context.Context, now time.Time) ([]store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: listing pending approvals: %w", err) }
	if err := checkNow(now); err != nil {
		return nil, fail(err)
	}
	rows, err := db.pool.Query(ctx, "SELECT "+approvalColumns+` FROM approvals
		WHERE status = 'pending' AND expires > $1 ORDER BY created, id LIMIT $2`, now, db.maxPending)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	var list []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows, now)
		if err != nil {
			return nil, fail(err)
		}
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return list, nil
}

// DecideApproval implements store.Approvals. The UPDATE re-checks its
// condition after waiting for a concurrent decision's row lock, so exactly
// one of two decisions succeeds.
func (db *DB) DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: deciding approval %q: %w", id, err) }
	if err := checkNow(now); err != nil {
		return store.Approval{}, fail(err)
	}
	status := store.StatusDenied
	if approve {
		status = store.StatusApproved
	}
	a, err := decide(ctx, db.pool, id, status, by, now)
	if err != nil {
		return a, fail(err)
	}
	return a, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// decide sets the approval id, if pending and unexpired at now, to status.
// store.ErrNotFound otherwise, or store.ErrNotPending with the approval as
// it stands.
func decide(ctx context.Context, q querier, id string, status store.Status, by string, now time.Time) (store.Approval, error) {
	a, err := scanApproval(q.QueryRow(ctx, `UPDATE approvals SET status = $1, decided = $2, decided_by = $3
		WHERE id = $4 AND status = 'pending' AND expires > $2
		RETURNING `+approvalColumns, string(status), now, by, id), now)
	if noRows(err) {
		// Say what became of it, as of now.
		a, err := scanApproval(q.QueryRow(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = $1", id), now)
		if noRows(err) {
			return store.Approval{}, store.ErrNotFound
		}
		if err != nil {
			return store.Approval{}, err
		}
		return a, store.ErrNotPending
	}
	return a, err
}

// ConsumeApproval implements store.Approvals. The inner SELECT skips rows
// another consumer has locked, so two consumers of two approvals for one
// call each get one, and of one approval exactly one gets it.
func (db *DB) ConsumeApproval(ctx context.Context, tool, argsHash string, now time.Time) (store.Approval, bool, error) {
	fail := func(err error) error {
		return fmt.Errorf("store/postgres: consuming an approval for %q: %w", tool, err)
	}
	if err := checkNow(now); err != nil {
		return store.Approval{}, false, fail(err)
	}
	a, err := scanApproval(db.pool.QueryRow(ctx, `UPDATE approvals SET status = 'used', used = $1
		WHERE id = (
			SELECT id FROM approvals
			WHERE tool = $2 AND args_hash = $3 AND status = 'approved' AND expires > $1
			ORDER BY created, id LIMIT 1
			FOR UPDATE SKIP LOCKED
		) AND status = 'approved' AND expires > $1
		RETURNING `+approvalColumns, now, tool, argsHash), now)
	if noRows(err) {
		return store.Approval{}, false, nil
	}
	if err != nil {
		return store.Approval{}, false, fail(err)
	}
	return a, true, nil
}
