package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Keys of the remembered approvals, under the prefix P, beside those of
// the approvals (see approvals.go):
//
//	P rm:r:<id>                                  hash: one remembered approval
//	P rm:i:all                                   sorted set of every id, by created
//	P rm:i:match:<scope>:<len>:<tool>:<hash>     sorted set of the ids of one call shape, by created
//
// A record has a revoked field only once revoked, a last_used field only
// once used.

func (db *DB) rememberedKey(id string) string { return db.prefix + "rm:r:" + id }

func (db *DB) rememberedMatchKey(scope store.Scope, tool, hash string) string {
	return db.prefix + "rm:i:match:" + string(scope) + ":" + strconv.Itoa(len(tool)) + ":" + tool + ":" + hash
}

// rememberApproval decides the approval KEYS[1] as decideApproval does and
// keeps the remembered approval KEYS[2], or does neither. ARGV: prefix,
// id, now, by, scope, expires, MaxRemembered.
var rememberApproval = goredis.NewScript(`
local P = ARGV[1]
local id = ARGV[2]
local now = tonumber(ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local st = redis.call('HMGET', KEYS[1], 'status', 'expires', 'tool', 'args_hash', 'created', 'session_hash', 'workspace_hash')
if st[1] ~= 'pending' or tonumber(st[2]) <= now then return {'not_pending', redis.call('HGETALL', KEYS[1])} end
local hash = st[6]
if ARGV[5] == 'workspace' then hash = st[7] end
if not hash or hash == '' then return {'cannot'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'taken'} end
local n = 0
for _, rid in ipairs(redis.call('ZRANGE', P .. 'rm:i:all', 0, -1)) do
	local r = redis.call('HMGET', P .. 'rm:r:' .. rid, 'revoked', 'expires')
	if not r[1] and r[2] and tonumber(r[2]) > now then n = n + 1 end
end
if n >= tonumber(ARGV[7]) then return {'full'} end
redis.call('HSET', KEYS[1], 'status', 'approved', 'decided', ARGV[3], 'decided_by', ARGV[4])
redis.call('ZREM', P .. 'ap:i:pending', id)
redis.call('ZADD', P .. 'ap:i:match:' .. string.len(st[3]) .. ':' .. st[3] .. ':' .. st[4], st[5], id)
local f = redis.call('HMGET', KEYS[1], 'tool', 'args', 'session', 'role', 'mode', 'rule', 'reason')
for i = 1, #f do if not f[i] then f[i] = '' end end
redis.call('HSET', KEYS[2], 'id', id, 'scope', ARGV[5], 'tool', f[1], 'args', f[2], 'hash', hash,
	'session', f[3], 'role', f[4], 'mode', f[5], 'rule', f[6], 'reason', f[7],
	'approved_by', ARGV[4], 'created', ARGV[3], 'expires', ARGV[6], 'uses', '0', 'revoked_by', '')
redis.call('ZADD', P .. 'rm:i:all', ARGV[3], id)
redis.call('ZADD', P .. 'rm:i:match:' .. ARGV[5] .. ':' .. string.len(f[1]) .. ':' .. f[1] .. ':' .. hash, ARGV[3], id)
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// useRemembered counts a use of the oldest remembered approval in force
// in the index KEYS[1]. A revoked one leaves the index; an expired one
// stays until pruned: asked at an earlier instant it was in force.
var useRemembered = goredis.NewScript(`
local P = ARGV[1]
local now = tonumber(ARGV[2])
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
	local k = P .. 'rm:r:' .. id
	local r = redis.call('HMGET', k, 'revoked', 'expires')
	if not r[2] or r[1] then
		redis.call('ZREM', KEYS[1], id)
	elseif tonumber(r[2]) > now then
		redis.call('HINCRBY', k, 'uses', 1)
		redis.call('HSET', k, 'last_used', ARGV[2])
		return {'ok', redis.call('HGETALL', k)}
	end
end
return {'none'}
`)

// revokeRemembered revokes the remembered approval KEYS[1] if it is in
// force at ARGV[2]. ARGV: prefix, now, by.
var revokeRemembered = goredis.NewScript(`
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local r = redis.call('HMGET', KEYS[1], 'revoked', 'expires', 'scope', 'tool', 'hash', 'id')
if r[1] or tonumber(r[2]) <= tonumber(ARGV[2]) then return {'not_in_force', redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'revoked', ARGV[2], 'revoked_by', ARGV[3])
redis.call('ZREM', P .. 'rm:i:match:' .. r[3] .. ':' .. string.len(r[4]) .. ':' .. r[4] .. ':' .. r[5], r[6])
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// pruneRemembered deletes, of at most ARGV[4] remembered approvals
// created before the cut (from offset ARGV[3]), those revoked or expired
// before it.
var pruneRemembered = goredis.NewScript(`
local P = ARGV[1]
local cut = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', P .. 'rm:i:all', '-inf', '(' .. ARGV[2], 'LIMIT', ARGV[3], ARGV[4])
local deleted = 0
for _, id in ipairs(ids) do
	local k = P .. 'rm:r:' .. id
	local r = redis.call('HMGET', k, 'revoked', 'expires', 'scope', 'tool', 'hash')
	local gone = not r[2] or (r[1] and tonumber(r[1]) < cut) or tonumber(r[2]) < cut
	if gone then
		redis.call('DEL', k)
		redis.call('ZREM', P .. 'rm:i:all', id)
		if r[3] then
			redis.call('ZREM', P .. 'rm:i:match:' .. r[3] .. ':' .. string.len(r[4]) .. ':' .. r[4] .. ':' .. r[5], id)
		end
		deleted = deleted + 1
	end
end
return {deleted, #ids}
`)

// rememberedOf reads a remembered approval's hash.
func rememberedOf(h hash) store.Remembered {
	return store.Remembered{
		ID: h["id"], Scope: store.Scope(h["scope"]), Tool: h["tool"], Args: json.RawMessage(h["args"]), Hash: h["hash"],
		Session: h["session"], Role: h["role"], Mode: h["mode"], Rule: h["rule"], Reason: h["reason"],
		ApprovedBy: h["approved_by"], Created: h.time("created"), Expires: h.time("expires"),
		Uses: h.int("uses"), LastUsed: h.time("last_used"), Revoked: h.time("revoked"), RevokedBy: h["revoked_by"],
	}
}

// reply splits a script's {status, record} reply; the record is nil when
// the script sent none.
func reply(res []any) (string, hash, error) {
	if len(res) == 0 {
		return "", nil, fmt.Errorf("an empty reply from a script")
	}
	status, _ := res[0].(string)
	if len(res) < 2 {
		return status, nil, nil
	}
	h, err := hashOf(res[1])
	return status, h, err
}

// RememberApproval implements store.Remembering: one script decides and
// remembers, or does neither.
func (db *DB) RememberApproval(ctx context.Context, id string, scope store.Scope, by string, now, expires time.Time) (store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: remembering approval %q: %w", id, err) }
	if err := store.CheckRemember(scope, now, expires); err != nil {
		return store.Approval{}, fail(err)
	}
	ts, err := timesOf("now", now, "expires", expires)
	if err != nil {
		return store.Approval{}, fail(err)
	}
	res, err := rememberApproval.Run(ctx, db.c, []string{db.approvalKey(id), db.rememberedKey(id)},
		db.prefix, id, ts[0], by, string(scope), ts[1], store.MaxRemembered).Slice()
	if err != nil {
		return store.Approval{}, fail(err)
	}
	status, h, err := reply(res)
	if err != nil {
		return store.Approval{}, fail(err)
	}
	switch status {
	case "ok":
		return approvalOf(h, ts[0]), nil
	case "not_found":
		return store.Approval{}, fail(store.ErrNotFound)
	case "not_pending":
		return approvalOf(h, ts[0]), fail(store.ErrNotPending)
	case "cannot":
		return store.Approval{}, fail(store.ErrCannotRemember)
	case "full":
		return store.Approval{}, fail(fmt.Errorf("%w: %d are in force", store.ErrTooManyRemembered, store.MaxRemembered))
	case "taken":
		return store.Approval{}, fail(fmt.Errorf("a remembered approval %q exists already", id))
	}
	return store.Approval{}, fail(fmt.Errorf("unexpected reply %q from the remember script", status))
}

// UseRemembered implements store.Remembering.
func (db *DB) UseRemembered(ctx context.Context, scope store.Scope, tool, hash string, now time.Time) (store.Remembered, bool, error) {
	fail := func(err error) error {
		return fmt.Errorf("store/redis: using a remembered approval for %q: %w", tool, err)
	}
	n, err := micros("now", now)
	if err != nil {
		return store.Remembered{}, false, fail(err)
	}
	if hash == "" || (scope != store.ScopeSession && scope != store.ScopeWorkspace) {
		return store.Remembered{}, false, nil
	}
	res, err := useRemembered.Run(ctx, db.c, []string{db.rememberedMatchKey(scope, tool, hash)}, db.prefix, n).Slice()
	if err != nil {
		return store.Remembered{}, false, fail(err)
	}
	status, h, err := reply(res)
	if err != nil {
		return store.Remembered{}, false, fail(err)
	}
	if status != "ok" {
		return store.Remembered{}, false, nil
	}
	return rememberedOf(h), true, nil
}

// RememberedApprovals implements store.Remembering.
func (db *DB) RememberedApprovals(ctx context.Context, now time.Time) ([]store.Remembered, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: listing remembered approvals: %w", err) }
	if _, err := micros("now", now); err != nil {
		return nil, fail(err)
	}
	ids, err := db.c.ZRange(ctx, db.prefix+"rm:i:all", 0, -1).Result()
	if err != nil {
		return nil, fail(err)
	}
	pipe := db.c.Pipeline()
	cmds := make([]*goredis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, db.rememberedKey(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fail(err)
		}
	}
	var list []store.Remembered
	for _, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		if r := rememberedOf(h); r.InForce(now) {
			list = append(list, r)
			if len(list) == store.MaxRemembered {
				break
			}
		}
	}
	return list, nil
}

// RevokeRemembered implements store.Remembering.
func (db *DB) RevokeRemembered(ctx context.Context, id, by string, now time.Time) (store.Remembered, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: revoking remembered approval %q: %w", id, err) }
	n, err := micros("now", now)
	if err != nil {
		return store.Remembered{}, fail(err)
	}
	res, err := revokeRemembered.Run(ctx, db.c, []string{db.rememberedKey(id)}, db.prefix, n, by).Slice()
	if err != nil {
		return store.Remembered{}, fail(err)
	}
	status, h, err := reply(res)
	if err != nil {
		return store.Remembered{}, fail(err)
	}
	switch status {
	case "ok":
		return rememberedOf(h), nil
	case "not_found":
		return store.Remembered{}, fail(store.ErrNotFound)
	case "not_in_force":
		return rememberedOf(h), fail(store.ErrNotInForce)
	}
	return store.Remembered{}, fail(fmt.Errorf("unexpected reply %q from the revoke script", status))
}
