package redis

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

var _ store.Pins = (*DB)(nil)

// Keys of the pins, under the prefix P:
//
//	P pin:r:<server>\0<kind>\0<name>  hash: one pin
//	P pin:i:all                       sorted set of every <server>\0<kind>\0<name>, all at score 0
//
// A key's parts hold no NUL (store.PinKey.Validate), so the member names
// one key only, and NUL, the lowest byte, makes the set's order by bytes
// the order by server, kind and name that ListPins lists in. A record's
// signals are joined by NUL too ("" for none: no signal is empty), its
// seen field "" when the upstream offers nothing new.

const pinIndex = "pin:i:all"

// pinMember is k as the index holds it, and as its record's key ends.
func pinMember(k store.PinKey) string { return k.Server + "\x00" + k.Kind + "\x00" + k.Name }

func (db *DB) pinKey(k store.PinKey) string { return db.prefix + "pin:r:" + pinMember(k) }

// addPin stores the record KEYS[1] (ARGV[2], ...: its fields and values)
// and indexes ARGV[1] in KEYS[2], unless the record exists; it returns
// the record that is there after.
var addPin = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// updatePin sets the fields of the record KEYS[1] (ARGV[2], ...) and
// counts its version up when its version is ARGV[1].
var updatePin = goredis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return {'not_found'} end
if v ~= ARGV[1] then return {'changed'} end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HINCRBY', KEYS[1], 'version', 1)
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// deletePin deletes the record KEYS[1] and its entry ARGV[1] in KEYS[2].
var deletePin = goredis.NewScript(`
if redis.call('DEL', KEYS[1]) == 0 then return 'not_found' end
redis.call('ZREM', KEYS[2], ARGV[1])
return 'ok'
`)

// pinFields is p's fields and values as a record keeps them, after its
// key, its created time and its version, which only AddPin sets; created
// is p.Created in microseconds. p is checked first.
func pinFields(p store.Pin) (fields []any, created int64, err error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	ts, err := timesOf("created", p.Created, "updated", p.Updated)
	if err != nil {
		return nil, 0, err
	}
	accepted := "0"
	if p.Accepted {
		accepted = "1"
	}
	return []any{
		"hash", p.Hash, "definition", []byte(p.Definition), "accepted", accepted,
		"signals", strings.Join(p.Signals, "\x00"), "seen_hash", p.SeenHash, "seen", []byte(p.Seen),
		"seen_signals", strings.Join(p.SeenSignals, "\x00"), "accepted_by", p.AcceptedBy, "updated", ts[1],
	}, ts[0], nil
}

// pinOf reads a pin's record.
func pinOf(h hash) store.Pin {
	p := store.Pin{
		PinKey: store.PinKey{Server: h["server"], Kind: h["kind"], Name: h["name"]},
		Hash:   h["hash"], Definition: []byte(h["definition"]), Accepted: h["accepted"] == "1",
		Signals: signalsOf(h["signals"]), SeenHash: h["seen_hash"], SeenSignals: signalsOf(h["seen_signals"]),
		AcceptedBy: h["accepted_by"], Created: h.time("created"), Updated: h.time("updated"), Version: h.int("version"),
	}
	if s := h["seen"]; s != "" {
		p.Seen = []byte(s)
	}
	return p
}

func signalsOf(joined string) []string {
	if joined == "" {
		return nil
	}
	return strings.Split(joined, "\x00")
}

// AddPin implements store.Pins: one script adds the pin or returns the
// one that is there.
func (db *DB) AddPin(ctx context.Context, p store.Pin) (store.Pin, bool, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: adding the pin of %v: %w", p.PinKey, err) }
	fields, created, err := pinFields(p)
	if err != nil {
		return store.Pin{}, false, fail(err)
	}
	args := append([]any{pinMember(p.PinKey), "server", p.Server, "kind", p.Kind, "name", p.Name, "created", created, "version", 1}, fields...)
	res, err := addPin.Run(ctx, db.c, []string{db.pinKey(p.PinKey), db.prefix + pinIndex}, args...).Slice()
	if err != nil {
		return store.Pin{}, false, fail(err)
	}
	status, h, err := reply(res)
	if err == nil && h == nil {
		err = fmt.Errorf("no record in the reply %q of the add script", status)
	}
	if err != nil {
		return store.Pin{}, false, fail(err)
	}
	return pinOf(h), status == "ok", nil
}

// Pin implements store.Pins.
func (db *DB) Pin(ctx context.Context, k store.PinKey) (store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: reading the pin of %v: %w", k, err) }
	if err := k.Validate(); err != nil {
		return store.Pin{}, fail(err)
	}
	h, err := db.c.HGetAll(ctx, db.pinKey(k)).Result()
	if err == nil && len(h) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Pin{}, fail(err)
	}
	return pinOf(h), nil
}

// ListPins implements store.Pins: the index's members in order, then
// their records in one pipeline. A pin deleted between the two is left
// out, as if listed just after.
func (db *DB) ListPins(ctx context.Context, server string) ([]store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: listing the pins of %q: %w", server, err) }
	if err := store.ValidPinServer(server); err != nil {
		return nil, fail(err)
	}
	// Every member of server begins server\0, and sorts below server\1.
	span := &goredis.ZRangeBy{Min: "-", Max: "+"}
	if server != "" {
		span = &goredis.ZRangeBy{Min: "[" + server + "\x00", Max: "(" + server + "\x01"}
	}
	members, err := db.c.ZRangeByLex(ctx, db.prefix+pinIndex, span).Result()
	if err != nil {
		return nil, fail(err)
	}
	if len(members) == 0 {
		return nil, nil
	}
	pipe := db.c.Pipeline()
	cmds := make([]*goredis.MapStringStringCmd, len(members))
	for i, m := range members {
		cmds[i] = pipe.HGetAll(ctx, db.prefix+"pin:r:"+m)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fail(err)
	}
	var list []store.Pin
	for _, c := range cmds {
		if h := c.Val(); len(h) > 0 {
			list = append(list, pinOf(h))
		}
	}
	return list, nil
}

// UpdatePin implements store.Pins: one script compares the version and
// sets the pin, so of two updates of one version exactly one changes it.
// Created stays.
func (db *DB) UpdatePin(ctx context.Context, p store.Pin) (store.Pin, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: updating the pin of %v: %w", p.PinKey, err) }
	fields, _, err := pinFields(p)
	if err != nil {
		return store.Pin{}, fail(err)
	}
	res, err := updatePin.Run(ctx, db.c, []string{db.pinKey(p.PinKey)}, append([]any{p.Version}, fields...)...).Slice()
	if err != nil {
		return store.Pin{}, fail(err)
	}
	status, h, err := reply(res)
	if err != nil {
		return store.Pin{}, fail(err)
	}
	switch status {
	case "ok":
		return pinOf(h), nil
	case "not_found":
		return store.Pin{}, fail(store.ErrNotFound)
	case "changed":
		return store.Pin{}, fail(store.ErrPinChanged)
	}
	return store.Pin{}, fail(fmt.Errorf("unexpected reply %q from the update script", status))
}

// DeletePin implements store.Pins.
func (db *DB) DeletePin(ctx context.Context, k store.PinKey) error {
	fail := func(err error) error { return fmt.Errorf("store/redis: deleting the pin of %v: %w", k, err) }
	if err := k.Validate(); err != nil {
		return fail(err)
	}
	status, err := deletePin.Run(ctx, db.c, []string{db.pinKey(k), db.prefix + pinIndex}, pinMember(k)).Text()
	if err != nil {
		return fail(err)
	}
	switch status {
	case "ok":
		return nil
	case "not_found":
		return fail(store.ErrNotFound)
	}
	return fail(fmt.Errorf("unexpected reply %q from the delete script", status))
}
