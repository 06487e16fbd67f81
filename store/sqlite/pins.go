package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"airlock.dev/airlock/store"
)

var _ store.Pins = (*DB)(nil)

// pinColumns is the column list every read and RETURNING clause of pins
// uses, in the order scanPin expects.
const pinColumns = `server, kind, name, hash, definition, accepted, signals, seen_hash, seen, seen_signals,
	accepted_by, created, updated, version`

func scanPin(r scanner) (store.Pin, error) {
	var (
		p                    store.Pin
		signals, seenSignals string
		created, updated     int64
		definition, seen     []byte
	)
	if err := r.Scan(&p.Server, &p.Kind, &p.Name, &p.Hash, &definition, &p.Accepted, &signals, &p.SeenHash, &seen, &seenSignals,
		&p.AcceptedBy, &created, &updated, &p.Version); err != nil {
		return store.Pin{}, err
	}
	p.Definition = definition
	if len(seen) > 0 {
		p.Seen = seen
	}
	var err error
	if p.Signals, err = signalsOf(signals); err != nil {
		return store.Pin{}, err
	}
	if p.SeenSignals, err = signalsOf(seenSignals); err != nil {
		return store.Pin{}, err
	}
	p.Created, p.Updated = fromNanos(created), fromNanos(updated)
	return p, nil
}

// signalsText is how a pin's signals are kept: a JSON array, or ” for
// none.
func signalsText(signals []string) string {
	if len(signals) == 0 {
		return ""
	}
	b, _ := json.Marshal(signals) // a []string always encodes
	return string(b)
}

func signalsOf(text string) ([]string, error) {
	if text == "" {
		return nil, nil
	}
	var signals []string
	if err := json.Unmarshal([]byte(text), &signals); err != nil {
		return nil, fmt.Errorf("the pin's signals in the file are not a JSON list of strings: %w", err)
	}
	return signals, nil
}

// pinArgs is p as named arguments (:server, :kind, ...) of the columns
// of pinColumns but version, with its times checked.
func pinArgs(p store.Pin) ([]any, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	created, err := nanos("created", p.Created)
	if err != nil {
		return nil, err
	}
	updated, err := nanos("updated", p.Updated)
	if err != nil {
		return nil, err
	}
	// NULL, not an empty BLOB, for no seen definition.
	var seen any
	if len(p.Seen) > 0 {
		seen = []byte(p.Seen)
	}
	return []any{
		sql.Named("server", p.Server), sql.Named("kind", p.Kind), sql.Named("name", p.Name),
		sql.Named("hash", p.Hash), sql.Named("definition", []byte(p.Definition)), sql.Named("accepted", p.Accepted),
		sql.Named("signals", signalsText(p.Signals)), sql.Named("seen_hash", p.SeenHash), sql.Named("seen", seen),
		sql.Named("seen_signals", signalsText(p.SeenSignals)), sql.Named("accepted_by", p.AcceptedBy),
		sql.Named("created", created), sql.Named("updated", updated), sql.Named("version", p.Version),
	}, nil
}

// AddPin implements store.Pins: one IMMEDIATE transaction that inserts
// unless the key is taken and reads what is there if it is, so of two
// adds, also from two processes, the second finds the first.
func (db *DB) AddPin(ctx context.Context, p store.Pin) (stored store.Pin, added bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: adding the pin of %v: %w", p.PinKey, err)
		}
	}()
	args, err := pinArgs(p)
	if err != nil {
		return store.Pin{}, false, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Pin{}, false, db.classify(err)
	}
	defer tx.Rollback()
	stored, err = scanPin(tx.QueryRowContext(ctx, "INSERT INTO pins ("+pinColumns+`)
		VALUES (:server, :kind, :name, :hash, :definition, :accepted, :signals, :seen_hash, :seen, :seen_signals,
			:accepted_by, :created, :updated, 1)
		ON CONFLICT (server, kind, name) DO NOTHING
		RETURNING `+pinColumns, args...))
	added = err == nil
	if errors.Is(err, sql.ErrNoRows) {
		stored, err = scanPin(tx.QueryRowContext(ctx, "SELECT "+pinColumns+" FROM pins WHERE server = ? AND kind = ? AND name = ?",
			p.Server, p.Kind, p.Name))
	}
	if err != nil {
		return store.Pin{}, false, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Pin{}, false, db.classify(err)
	}
	return stored, added, nil
}

// Pin implements store.Pins.
func (db *DB) Pin(ctx context.Context, k store.PinKey) (store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: reading the pin of %v: %w", k, err) }
	if err := k.Validate(); err != nil {
		return store.Pin{}, fail(err)
	}
	p, err := scanPin(db.sql.QueryRowContext(ctx, "SELECT "+pinColumns+" FROM pins WHERE server = ? AND kind = ? AND name = ?",
		k.Server, k.Kind, k.Name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Pin{}, fail(store.ErrNotFound)
	}
	if err != nil {
		return store.Pin{}, fail(db.classify(err))
	}
	return p, nil
}

// ListPins implements store.Pins.
func (db *DB) ListPins(ctx context.Context, server string) ([]store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: listing the pins of %q: %w", server, err) }
	if err := store.ValidPinServer(server); err != nil {
		return nil, fail(err)
	}
	rows, err := db.sql.QueryContext(ctx, "SELECT "+pinColumns+` FROM pins
		WHERE ? = '' OR server = ? ORDER BY server, kind, name`, server, server)
	if err != nil {
		return nil, fail(db.classify(err))
	}
	defer rows.Close()
	var list []store.Pin
	for rows.Next() {
		p, err := scanPin(rows)
		if err != nil {
			return nil, fail(db.classify(err))
		}
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(db.classify(err))
	}
	return list, nil
}

// UpdatePin implements store.Pins: one conditional UPDATE on the version,
// under the file's write lock, so of two updates of one version, also
// from two processes, exactly one changes the pin.
func (db *DB) UpdatePin(ctx context.Context, p store.Pin) (stored store.Pin, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/sqlite: updating the pin of %v: %w", p.PinKey, err)
		}
	}()
	args, err := pinArgs(p)
	if err != nil {
		return store.Pin{}, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return store.Pin{}, db.classify(err)
	}
	defer tx.Rollback()
	// Created stays as first stored.
	stored, err = scanPin(tx.QueryRowContext(ctx, `UPDATE pins SET hash = :hash, definition = :definition, accepted = :accepted,
			signals = :signals, seen_hash = :seen_hash, seen = :seen, seen_signals = :seen_signals, accepted_by = :accepted_by,
			updated = :updated, version = version + 1
		WHERE server = :server AND kind = :kind AND name = :name AND version = :version
		RETURNING `+pinColumns, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pins WHERE server = ? AND kind = ? AND name = ?)",
			p.Server, p.Kind, p.Name).Scan(&exists); err != nil {
			return store.Pin{}, db.classify(err)
		}
		if exists {
			return store.Pin{}, store.ErrPinChanged
		}
		return store.Pin{}, store.ErrNotFound
	}
	if err != nil {
		return store.Pin{}, db.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return store.Pin{}, db.classify(err)
	}
	return stored, nil
}

// DeletePin implements store.Pins.
func (db *DB) DeletePin(ctx context.Context, k store.PinKey) error {
	fail := func(err error) error { return fmt.Errorf("store/sqlite: deleting the pin of %v: %w", k, err) }
	if err := k.Validate(); err != nil {
		return fail(err)
	}
	res, err := db.sql.ExecContext(ctx, "DELETE FROM pins WHERE server = ? AND kind = ? AND name = ?", k.Server, k.Kind, k.Name)
	if err != nil {
		return fail(db.classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fail(err)
	}
	if n == 0 {
		return fail(store.ErrNotFound)
	}
	return nil
}
