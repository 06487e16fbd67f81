package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Keys of the ledger, under the prefix P:
//
//	P l:r:<key>    hash: one entry
//	P l:i:expires  sorted set of every key, by Expires (for PruneLedger)

func (db *DB) entryKey(key string) string { return db.prefix + "l:r:" + key }

// acquireKey applies store.LedgerEntry.Takeable inside Redis: the same
// four cases in the same order.
var acquireKey = goredis.NewScript(`
local P = ARGV[1]
local now = tonumber(ARGV[6])
local e = redis.call('HMGET', KEYS[1], 'fingerprint', 'state', 'lease', 'retryable', 'expires', 'attempt', 'created')
local attempt, previous, created = '1', '', ARGV[6]
if e[2] then
	local from = false
	if now >= tonumber(e[5]) then
		from = ''
	elseif e[1] == ARGV[3] then
		if e[2] == 'in_progress' and now >= tonumber(e[3]) then
			from = 'in_progress'
		elseif e[2] == 'failed' and e[4] == '1' then
			from = 'failed'
		end
	end
	if not from then return {0, redis.call('HGETALL', KEYS[1])} end
	if from ~= '' then
		attempt, previous, created = tostring(tonumber(e[6]) + 1), from, e[7]
	end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'key', ARGV[2], 'fingerprint', ARGV[3], 'state', 'in_progress',
	'owner', ARGV[4], 'token', ARGV[5], 'attempt', attempt, 'previous', previous, 'lease', ARGV[7],
	'error', '', 'retryable', '0', 'created', created, 'updated', ARGV[6], 'expires', ARGV[8])
redis.call('ZADD', P .. 'l:i:expires', ARGV[8], ARGV[2])
return {1, redis.call('HGETALL', KEYS[1])}
`)

var renewKey = goredis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'state', 'token')
if st[1] ~= 'in_progress' or st[2] ~= ARGV[3] then return {0} end
redis.call('HSET', KEYS[1], 'lease', ARGV[5], 'updated', ARGV[4], 'expires', ARGV[6])
redis.call('ZADD', ARGV[1] .. 'l:i:expires', ARGV[6], ARGV[2])
return {1, redis.call('HGETALL', KEYS[1])}
`)

var finishKey = goredis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'state', 'token')
if st[1] ~= 'in_progress' or st[2] ~= ARGV[3] then return {0} end
if ARGV[4] == 'completed' then
	redis.call('HSET', KEYS[1], 'state', 'completed', 'result', ARGV[5], 'error', '', 'retryable', '0')
else
	redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[6], 'retryable', ARGV[7])
	redis.call('HDEL', KEYS[1], 'result')
end
redis.call('HDEL', KEYS[1], 'lease')
redis.call('HSET', KEYS[1], 'updated', ARGV[8], 'expires', ARGV[9])
redis.call('ZADD', ARGV[1] .. 'l:i:expires', ARGV[9], ARGV[2])
return {1, redis.call('HGETALL', KEYS[1])}
`)

var pruneLedger = goredis.NewScript(`
local P = ARGV[1]
local now = tonumber(ARGV[2])
local keys = redis.call('ZRANGEBYSCORE', P .. 'l:i:expires', '-inf', ARGV[2], 'LIMIT', 0, ARGV[3])
local deleted = 0
for _, k in ipairs(keys) do
	local ex = redis.call('HGET', P .. 'l:r:' .. k, 'expires')
	if not ex or tonumber(ex) <= now then
		redis.call('DEL', P .. 'l:r:' .. k)
		redis.call('ZREM', P .. 'l:i:expires', k)
		deleted = deleted + 1
	else
		redis.call('ZADD', P .. 'l:i:expires', ex, k)
	end
end
return {deleted, #keys}
`)

func entryOf(h hash) store.LedgerEntry {
	e := store.LedgerEntry{
		Key: h["key"], Fingerprint: h["fingerprint"], State: store.LedgerState(h["state"]),
		Owner: h["owner"], Token: h["token"], Attempt: h.int("attempt"), Previous: store.LedgerState(h["previous"]),
		Lease: h.time("lease"), Error: h["error"], Retryable: h["retryable"] == "1",
		Created: h.time("created"), Updated: h.time("updated"), Expires: h.time("expires"),
	}
	if r, ok := h["result"]; ok {
		e.Result = []byte(r)
	}
	return e
}

// scriptEntry reads a {ok, entry} script reply.
func scriptEntry(res []any) (store.LedgerEntry, bool, error) {
	ok, _ := res[0].(int64)
	if len(res) < 2 {
		return store.LedgerEntry{}, ok == 1, nil
	}
	h, err := hashOf(res[1])
	if err != nil {
		return store.LedgerEntry{}, false, err
	}
	return entryOf(h), ok == 1, nil
}

// AcquireLedgerKey implements store.Ledger.
func (db *DB) AcquireLedgerKey(ctx context.Context, a store.LedgerAcquire) (store.LedgerEntry, bool, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: acquiring ledger key %q: %w", a.Key, err) }
	if err := a.Validate(); err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	ts, err := timesOf("now", a.Now, "lease", a.Lease, "expires", a.Expires)
	if err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	res, err := acquireKey.Run(ctx, db.c, []string{db.entryKey(a.Key)},
		db.prefix, a.Key, a.Fingerprint, a.Owner, a.Token, ts[0], ts[1], ts[2]).Slice()
	if err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	e, ok, err := scriptEntry(res)
	if err != nil {
		return store.LedgerEntry{}, false, fail(err)
	}
	return e, ok, nil
}

// RenewLedgerKey implements store.Ledger.
func (db *DB) RenewLedgerKey(ctx context.Context, key, token string, now, lease, expires time.Time) (store.LedgerEntry, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: renewing ledger key %q: %w", key, err) }
	if !lease.After(now) || expires.Before(lease) {
		return store.LedgerEntry{}, fail(errors.New("the renewed lease must run past now, and retention past the lease"))
	}
	ts, err := timesOf("now", now, "lease", lease, "expires", expires)
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	res, err := renewKey.Run(ctx, db.c, []string{db.entryKey(key)}, db.prefix, key, token, ts[0], ts[1], ts[2]).Slice()
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	e, ok, err := scriptEntry(res)
	if err == nil && !ok {
		err = store.ErrLeaseLost
	}
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	return e, nil
}

// FinishLedgerKey implements store.Ledger.
func (db *DB) FinishLedgerKey(ctx context.Context, f store.LedgerFinish) (store.LedgerEntry, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: finishing ledger key %q: %w", f.Key, err) }
	if err := f.Validate(); err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	ts, err := timesOf("now", f.Now, "expires", f.Expires)
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	retryable := "0"
	if f.Retryable {
		retryable = "1"
	}
	res, err := finishKey.Run(ctx, db.c, []string{db.entryKey(f.Key)},
		db.prefix, f.Key, f.Token, string(f.State), f.Result, f.Error, retryable, ts[0], ts[1]).Slice()
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	e, ok, err := scriptEntry(res)
	if err == nil && !ok {
		err = store.ErrLeaseLost
	}
	if err != nil {
		return store.LedgerEntry{}, fail(err)
	}
	return e, nil
}

// LedgerEntry implements store.Ledger.
func (db *DB) LedgerEntry(ctx context.Context, key string) (store.LedgerEntry, error) {
	h, err := db.c.HGetAll(ctx, db.entryKey(key)).Result()
	if err == nil && len(h) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("store/redis: reading ledger key %q: %w", key, err)
	}
	return entryOf(h), nil
}

// PruneLedger implements store.Ledger, PruneBatch entries per script.
func (db *DB) PruneLedger(ctx context.Context, now time.Time) (int64, error) {
	n, err := micros("now", now)
	if err != nil {
		return 0, fmt.Errorf("store/redis: pruning the ledger: %w", err)
	}
	var total int64
	for {
		res, err := pruneLedger.Run(ctx, db.c, nil, db.prefix, n, PruneBatch).Int64Slice()
		if err != nil {
			return total, fmt.Errorf("store/redis: pruning the ledger: %w", err)
		}
		total += res[0]
		if res[1] < PruneBatch || res[0] == 0 {
			return total, nil
		}
	}
}
