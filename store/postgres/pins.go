package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"airlock.dev/airlock/store"
)

var _ store.Pins = (*DB)(nil)

// pinColumns is the column list every read and RETURNING clause of pins
// uses, in the order scanPin expects.
const pinColumns = `server, kind, name, hash, definition, accepted, signals, seen_hash, seen, seen_signals,
	accepted_by, created, updated, version`

// pinWhere finds the pin of the named arguments' key.
const pinWhere = "server = @server AND kind = @kind AND name = @name"

func scanPin(r pgx.Row) (store.Pin, error) {
	var (
		p                store.Pin
		definition, seen []byte
	)
	if err := r.Scan(&p.Server, &p.Kind, &p.Name, &p.Hash, &definition, &p.Accepted, &p.Signals, &p.SeenHash, &seen, &p.SeenSignals,
		&p.AcceptedBy, &p.Created, &p.Updated, &p.Version); err != nil {
		return store.Pin{}, err
	}
	p.Definition = definition
	if len(seen) > 0 {
		p.Seen = seen
	}
	// An empty array reads as an empty slice; the suite's pins, and the
	// other backends', have none.
	if len(p.Signals) == 0 {
		p.Signals = nil
	}
	if len(p.SeenSignals) == 0 {
		p.SeenSignals = nil
	}
	p.Created, p.Updated = utc(p.Created), utc(p.Updated)
	return p, nil
}

// pinArgs is p as named arguments (@server, @kind, ...) of every column of
// pinColumns, once p is checked.
func pinArgs(p store.Pin) (pgx.NamedArgs, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// NULL, not an empty bytea, for no seen definition; an empty array,
	// not NULL, for no signals.
	var seen any
	if len(p.Seen) > 0 {
		seen = []byte(p.Seen)
	}
	return pgx.NamedArgs{
		"server": p.Server, "kind": p.Kind, "name": p.Name,
		"hash": p.Hash, "definition": []byte(p.Definition), "accepted": p.Accepted,
		"signals": nonNil(p.Signals), "seen_hash": p.SeenHash, "seen": seen, "seen_signals": nonNil(p.SeenSignals),
		"accepted_by": p.AcceptedBy, "created": p.Created, "updated": p.Updated, "version": p.Version,
	}, nil
}

// nonNil is list, or an empty list for nil, which pgx would send as NULL.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// keyArgs is k as the named arguments of pinWhere, once k is checked.
func keyArgs(k store.PinKey) (pgx.NamedArgs, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	return pgx.NamedArgs{"server": k.Server, "kind": k.Kind, "name": k.Name}, nil
}

// AddPin implements store.Pins: an INSERT ... ON CONFLICT DO NOTHING, which
// waits for a racing insert of the key to commit, then the read of the pin
// that won; a pin deleted between the two starts it over.
func (db *DB) AddPin(ctx context.Context, p store.Pin) (stored store.Pin, added bool, err error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: adding the pin of %v: %w", p.PinKey, err) }
	args, err := pinArgs(p)
	if err != nil {
		return store.Pin{}, false, fail(err)
	}
	err = db.retry(ctx, func(tx pgx.Tx) (lost bool, err error) {
		stored, err = scanPin(tx.QueryRow(ctx, "INSERT INTO pins ("+pinColumns+`)
			VALUES (@server, @kind, @name, @hash, @definition, @accepted, @signals, @seen_hash, @seen, @seen_signals,
				@accepted_by, @created, @updated, 1)
			ON CONFLICT (server, kind, name) DO NOTHING
			RETURNING `+pinColumns, args))
		if added = err == nil; !noRows(err) {
			return false, err
		}
		stored, err = scanPin(tx.QueryRow(ctx, "SELECT "+pinColumns+" FROM pins WHERE "+pinWhere, args))
		if noRows(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return store.Pin{}, false, fail(err)
	}
	return stored, added, nil
}

// Pin implements store.Pins.
func (db *DB) Pin(ctx context.Context, k store.PinKey) (store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: reading the pin of %v: %w", k, err) }
	args, err := keyArgs(k)
	if err != nil {
		return store.Pin{}, fail(err)
	}
	p, err := scanPin(db.pool.QueryRow(ctx, "SELECT "+pinColumns+" FROM pins WHERE "+pinWhere, args))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Pin{}, fail(err)
	}
	return p, nil
}

// ListPins implements store.Pins.
func (db *DB) ListPins(ctx context.Context, server string) ([]store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: listing the pins of %q: %w", server, err) }
	if err := store.ValidPinServer(server); err != nil {
		return nil, fail(err)
	}
	rows, err := db.pool.Query(ctx, "SELECT "+pinColumns+` FROM pins
		WHERE $1 = '' OR server = $1 ORDER BY server, kind, name`, server)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	var list []store.Pin
	for rows.Next() {
		p, err := scanPin(rows)
		if err != nil {
			return nil, fail(err)
		}
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return list, nil
}

// UpdatePin implements store.Pins: one UPDATE conditional on the version,
// which Postgres re-checks after waiting for the row's lock, so of two
// updates of one version exactly one changes the pin. Created stays.
func (db *DB) UpdatePin(ctx context.Context, p store.Pin) (store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/postgres: updating the pin of %v: %w", p.PinKey, err) }
	args, err := pinArgs(p)
	if err != nil {
		return store.Pin{}, fail(err)
	}
	stored, err := scanPin(db.pool.QueryRow(ctx, `UPDATE pins SET hash = @hash, definition = @definition, accepted = @accepted,
			signals = @signals, seen_hash = @seen_hash, seen = @seen, seen_signals = @seen_signals, accepted_by = @accepted_by,
			updated = @updated, version = version + 1
		WHERE `+pinWhere+` AND version = @version
		RETURNING `+pinColumns, args))
	if noRows(err) {
		// Say why, as it stands now: no pin, or another version.
		var exists bool
		if err := db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pins WHERE "+pinWhere+")", args).Scan(&exists); err != nil {
			return store.Pin{}, fail(err)
		}
		if exists {
			return store.Pin{}, fail(store.ErrPinChanged)
		}
		return store.Pin{}, fail(store.ErrNotFound)
	}
	if err != nil {
		return store.Pin{}, fail(err)
	}
	return stored, nil
}

// DeletePin implements store.Pins.
func (db *DB) DeletePin(ctx context.Context, k store.PinKey) error {
	fail := func(err error) error { return fmt.Errorf("store/postgres: deleting the pin of %v: %w", k, err) }
	args, err := keyArgs(k)
	if err != nil {
		return fail(err)
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM pins WHERE "+pinWhere, args)
	if err != nil {
		return fail(err)
	}
	if tag.RowsAffected() == 0 {
		return fail(store.ErrNotFound)
	}
	return nil
}
