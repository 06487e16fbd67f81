// Package redis keeps airlock's store in Redis, for deployments that
// already run one: approvals, sessions, the ledger, agent run checkpoints
// and the gateway's pins, shared by every airlock process that uses the
// same server and key prefix.
//
// It uses github.com/redis/go-redis/v9. Every state change is one Lua
// script, which Redis runs atomically: the script reads the record,
// applies the rule package store shares with every backend, and writes it
// back, so no other client's command can fall between the check and the
// write. Reads that change nothing are plain commands.
//
//	db, err := redis.Open(ctx, "redis://127.0.0.1:6379/0?prefix=airlock:", nil)
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	// db is a store.Backend.
//
// Every key begins with the prefix (Options.Prefix, or the URL's prefix
// parameter; DefaultPrefix otherwise): each record is a hash, each index a
// sorted set. The scripts touch keys they compute from the prefix, so the
// backend needs one Redis server (standalone or behind Sentinel), not
// Redis Cluster.
//
// Times are kept as Unix microseconds, which Lua's numbers hold exactly
// between the years 1685 and 2255; a time outside them is refused. Redis
// must keep what it is told: a server without persistence (no RDB, no AOF)
// loses approvals, sessions and the ledger when it restarts, and with them
// the exactly-once promise for calls that ran before.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Defaults and limits.
const (
	// DefaultPrefix begins every key.
	DefaultPrefix = "airlock:"
	// DefaultMaxPending bounds the approvals pending at once, as in
	// store/sqlite.
	DefaultMaxPending = 1000
	// PruneBatch bounds the records one pruning script looks at, so a
	// long prune never blocks the server for long.
	PruneBatch = 500
	// maxMicros bounds a time's Unix microseconds: 2^53, what a Lua
	// number keeps exactly.
	maxMicros = 1 << 53
)

// Options tunes Open. A nil *Options, or a zero field, means the default.
type Options struct {
	// Prefix begins every key; the URL's prefix parameter when empty,
	// else DefaultPrefix. Letters, digits and _ . : - only.
	Prefix string
	// MaxPending bounds the approvals pending and unexpired at once;
	// DefaultMaxPending when zero.
	MaxPending int
}

// ErrTooManyPending: Options.MaxPending approvals are already pending.
var ErrTooManyPending = errors.New("store/redis: too many pending approvals (Options.MaxPending)")

// prefixPattern is what a prefix may be: no glob characters, so that
// DeleteAll's SCAN pattern matches exactly the prefix.
var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// DB is an open Redis store. It implements store.Backend and is safe for
// concurrent use, also alongside other processes using the same prefix.
type DB struct {
	c          *goredis.Client
	prefix     string
	maxPending int
}

var _ store.Backend = (*DB)(nil)

// Open connects to the server at rawURL (redis://[user:password@]host:port/db
// or rediss:// for TLS; go-redis's parameters apply, plus prefix=P) and
// checks that it answers.
func Open(ctx context.Context, rawURL string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	fail := func(err error) error { return fmt.Errorf("store/redis: opening %s: %w", redactURL(rawURL), err) }
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fail(errors.New("want a URL redis://host:port/db"))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fail(fmt.Errorf("the URL's parameters: %w", err))
	}
	if o.Prefix == "" {
		o.Prefix = q.Get("prefix")
	}
	q.Del("prefix")
	u.RawQuery = q.Encode()
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	switch {
	case !prefixPattern.MatchString(o.Prefix):
		return nil, fail(fmt.Errorf("prefix %q: use letters, digits and _ . : -, at most 64", o.Prefix))
	case o.MaxPending < 0:
		return nil, fail(errors.New("MaxPending is negative; use zero for the default"))
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	ro, err := goredis.ParseURL(u.String())
	if err != nil {
		return nil, fail(err)
	}
	c := goredis.NewClient(ro)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fail(fmt.Errorf("%w (is Redis running? scripts/start-services.sh starts it on a development machine)", err))
	}
	return &DB{c: c, prefix: o.Prefix, maxPending: o.MaxPending}, nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the URL"
	}
	return u.Redacted()
}

// Close closes the connections. The data stays on the server.
func (db *DB) Close() error { return db.c.Close() }

// DeleteAll deletes every key under the prefix, then closes db. It is for
// tests and for removing airlock's state on purpose.
func (db *DB) DeleteAll(ctx context.Context) error {
	defer db.c.Close()
	iter := db.c.Scan(ctx, 0, db.prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("store/redis: deleting %s*: %w", db.prefix, err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		if err := db.c.Del(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("store/redis: deleting %s*: %w", db.prefix, err)
		}
		keys = keys[n:]
	}
	return nil
}

// micros is t as Unix microseconds; an error when t is zero or outside
// what Lua keeps exactly.
func micros(what string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, fmt.Errorf("%s is the zero time", what)
	}
	m := t.UnixMicro()
	if m <= -maxMicros || m >= maxMicros {
		return 0, fmt.Errorf("%s %v is outside the years 1685 to 2255 the Redis store keeps", what, t)
	}
	return m, nil
}

// timesOf converts several times at once, naming the first bad one.
func timesOf(ts ...any) ([]int64, error) {
	out := make([]int64, 0, len(ts)/2)
	for i := 0; i+1 < len(ts); i += 2 {
		m, err := micros(ts[i].(string), ts[i+1].(time.Time))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// hash is one record as HGETALL returns it.
type hash map[string]string

// hashOf reads a script's flat [field, value, ...] reply.
func hashOf(v any) (hash, error) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("unexpected reply %T from a script", v)
	}
	h := make(hash, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, ok1 := list[i].(string)
		val, ok2 := list[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("unexpected reply element %T from a script", list[i+1])
		}
		h[k] = val
	}
	return h, nil
}

func (h hash) int(field string) int64 {
	n, _ := strconv.ParseInt(h[field], 10, 64)
	return n
}

// time reads a field of Unix microseconds; "" or missing is the zero time.
func (h hash) time(field string) time.Time {
	s := h[field]
	if s == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// Prune implements store.Backend: finished approvals older than
// store.KeepFinished, remembered approvals revoked or expired before then,
// ledger entries past their Expires, run checkpoints
// last updated before now minus store.KeepRuns, and sessions last updated
// before now minus store.KeepSessions. The global kill flag and the pins
// stay.
func (db *DB) Prune(ctx context.Context, now time.Time) (int64, error) {
	cut, err := micros("now", now.Add(-store.KeepFinished))
	if err != nil {
		return 0, fmt.Errorf("store/redis: pruning: %w", err)
	}
	total, err := db.pruneBatches(ctx, pruneApprovals, "approvals", cut)
	if err != nil {
		return total, err
	}
	remembered, err := db.pruneBatches(ctx, pruneRemembered, "remembered approvals", cut)
	total += remembered
	if err != nil {
		return total, err
	}
	runs, err := db.pruneBefore(ctx, pruneRuns, "runs", store.KeepRuns, now)
	if err != nil {
		return total, err
	}
	sessions, err := db.pruneBefore(ctx, pruneSessions, "sessions", store.KeepSessions, now)
	if err != nil {
		return total + runs + sessions, err
	}
	n, err := db.PruneLedger(ctx, now)
	return total + runs + sessions + n, err
}

// pruneBatches runs a pruning script over its index in batches of at most
// PruneBatch records, each batch starting where the records the last one
// kept end, and returns how many it deleted.
func (db *DB) pruneBatches(ctx context.Context, script *goredis.Script, what string, cut int64) (int64, error) {
	var total, offset int64
	for {
		res, err := script.Run(ctx, db.c, nil, db.prefix, cut, offset, PruneBatch).Int64Slice()
		if err != nil {
			return total, fmt.Errorf("store/redis: pruning %s: %w", what, err)
		}
		if len(res) != 2 {
			return total, fmt.Errorf("store/redis: pruning %s: unexpected reply of %d elements", what, len(res))
		}
		deleted, scanned := res[0], res[1]
		total += deleted
		offset += scanned - deleted
		if scanned < PruneBatch {
			return total, nil
		}
	}
}
