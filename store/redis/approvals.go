package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Keys of the approvals, under the prefix P:
//
//	P ap:r:<id>                      hash: one approval
//	P ap:i:all                       sorted set of every id, by created
//	P ap:i:pending                   sorted set of the pending ids, by created
//	P ap:i:match:<len>:<tool>:<hash> sorted set of the approved ids of one call, by created
//
// Records (r:) and indexes (i:) have their own spaces, so that no id, however
// chosen, names an index.
//
// Sorted sets order equal scores by member, so each lists by (created, id),
// as the SQL backends do.

func (db *DB) approvalKey(id string) string { return db.prefix + "ap:r:" + id }

func (db *DB) matchKey(tool, argsHash string) string {
	return db.prefix + "ap:i:match:" + strconv.Itoa(len(tool)) + ":" + tool + ":" + argsHash
}

var createApproval = goredis.NewScript(`
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 1 then return 'taken' end
local created = tonumber(ARGV[3])
local n = 0
for _, id in ipairs(redis.call('ZRANGE', P .. 'ap:i:pending', 0, -1)) do
	local st = redis.call('HMGET', P .. 'ap:r:' .. id, 'status', 'expires')
	if st[1] == 'pending' and tonumber(st[2]) > created then n = n + 1 end
end
if n >= tonumber(ARGV[4]) then return 'full:' .. n end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('ZADD', P .. 'ap:i:pending', ARGV[3], ARGV[2])
redis.call('ZADD', P .. 'ap:i:all', ARGV[3], ARGV[2])
return 'ok'
`)

var decideApproval = goredis.NewScript(`
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local st = redis.call('HMGET', KEYS[1], 'status', 'expires', 'tool', 'args_hash', 'created')
if st[1] ~= 'pending' or tonumber(st[2]) <= tonumber(ARGV[4]) then return {'not_pending', redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'decided', ARGV[4], 'decided_by', ARGV[5])
redis.call('ZREM', P .. 'ap:i:pending', ARGV[2])
if ARGV[3] == 'approved' then
	redis.call('ZADD', P .. 'ap:i:match:' .. string.len(st[3]) .. ':' .. st[3] .. ':' .. st[4], st[5], ARGV[2])
end
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// consumeApproval takes the oldest approved, unexpired approval of one
// call. An expired one stays in the index: asked at an earlier instant it
// would still be valid, as in the SQL backends.
var consumeApproval = goredis.NewScript(`
local P = ARGV[1]
local now = tonumber(ARGV[2])
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
	local k = P .. 'ap:r:' .. id
	local st = redis.call('HMGET', k, 'status', 'expires')
	if st[1] == 'approved' then
		if tonumber(st[2]) > now then
			redis.call('HSET', k, 'status', 'used', 'used', ARGV[2])
			redis.call('ZREM', KEYS[1], id)
			return {'ok', redis.call('HGETALL', k)}
		end
	else
		redis.call('ZREM', KEYS[1], id)
	end
end
return {'none'}
`)

// pruneApprovals deletes, of at most ARGV[4] approvals created before the
// cut (from offset ARGV[3]), those finished before it or expired before it.
var pruneApprovals = goredis.NewScript(`
local P = ARGV[1]
local cut = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', P .. 'ap:i:all', '-inf', '(' .. ARGV[2], 'LIMIT', ARGV[3], ARGV[4])
local deleted = 0
for _, id in ipairs(ids) do
	local k = P .. 'ap:r:' .. id
	local st = redis.call('HMGET', k, 'status', 'used', 'decided', 'created', 'expires', 'tool', 'args_hash')
	local gone = not st[1]
	if not gone then
		local fin = (st[2] and tonumber(st[2])) or (st[3] and tonumber(st[3])) or tonumber(st[4])
		gone = ((st[1] == 'used' or st[1] == 'denied') and fin < cut) or tonumber(st[5]) < cut
	end
	if gone then
		redis.call('DEL', k)
		redis.call('ZREM', P .. 'ap:i:all', id)
		redis.call('ZREM', P .. 'ap:i:pending', id)
		if st[6] then
			redis.call('ZREM', P .. 'ap:i:match:' .. string.len(st[6]) .. ':' .. st[6] .. ':' .. st[7], id)
		end
		deleted = deleted + 1
	end
end
return {deleted, #ids}
`)

// approvalOf reads an approval hash and gives it its status as of now.
func approvalOf(h hash, now int64) store.Approval {
	a := store.Approval{
		ID: h["id"], Tool: h["tool"], Args: json.RawMessage(h["args"]), ArgsHash: h["args_hash"],
		SessionHash: h["session_hash"], WorkspaceHash: h["workspace_hash"], Session: h["session"], Role: h["role"], Mode: h["mode"], Rule: h["rule"], Reason: h["reason"],
		Status: store.Status(h["status"]), Created: h.time("created"), Expires: h.time("expires"),
		Decided: h.time("decided"), DecidedBy: h["decided_by"],
	}
	if (a.Status == store.StatusPending || a.Status == store.StatusApproved) && h.int("expires") <= now {
		a.Status = store.StatusExpired
	}
	return a
}

// CreateApproval implements store.Approvals, with the same checks as
// store/sqlite.
func (db *DB) CreateApproval(ctx context.Context, a store.Approval) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store/redis: creating approval %q: %w", a.ID, err)
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
	}
	ts, err := timesOf("created", a.Created, "expires", a.Expires)
	if err != nil {
		return err
	}
	res, err := createApproval.Run(ctx, db.c, []string{db.approvalKey(a.ID)},
		db.prefix, a.ID, ts[0], db.maxPending,
		"id", a.ID, "tool", a.Tool, "args", string(a.Args), "args_hash", a.ArgsHash,
		"session_hash", a.SessionHash, "workspace_hash", a.WorkspaceHash, "session", a.Session, "role", a.Role, "mode", a.Mode, "rule", a.Rule, "reason", a.Reason,
		"status", "pending", "created", ts[0], "expires", ts[1], "decided_by", "",
	).Text()
	switch {
	case err != nil:
		return err
	case res == "taken":
		return errors.New("the id is taken")
	case strings.HasPrefix(res, "full:"):
		return fmt.Errorf("%w: %s are pending, the limit is %d", ErrTooManyPending, strings.TrimPrefix(res, "full:"), db.maxPending)
	}
	return nil
}

// Approval implements store.Approvals.
func (db *DB) Approval(ctx context.Context, id string, now time.Time) (store.Approval, error) {
	n, err := micros("now", now)
	if err != nil {
		return store.Approval{}, fmt.Errorf("store/redis: reading approval %q: %w", id, err)
	}
	h, err := db.c.HGetAll(ctx, db.approvalKey(id)).Result()
	if err == nil && len(h) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store/redis: reading approval %q: %w", id, err)
	}
	return approvalOf(h, n), nil
}

// PendingApprovals implements store.Approvals: at most Options.MaxPending,
// oldest first.
func (db *DB) PendingApprovals(ctx context.Context, now time.Time) ([]store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: listing pending approvals: %w", err) }
	n, err := micros("now", now)
	if err != nil {
		return nil, fail(err)
	}
	ids, err := db.c.ZRange(ctx, db.prefix+"ap:i:pending", 0, -1).Result()
	if err != nil {
		return nil, fail(err)
	}
	pipe := db.c.Pipeline()
	cmds := make([]*goredis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, db.approvalKey(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fail(err)
		}
	}
	var list []store.Approval
	for _, c := range cmds {
		h := c.Val()
		if len(h) == 0 || h["status"] != string(store.StatusPending) || hash(h).int("expires") <= n {
			continue
		}
		list = append(list, approvalOf(h, n))
		if len(list) == db.maxPending {
			break
		}
	}
	return list, nil
}

// DecideApproval implements store.Approvals.
func (db *DB) DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (store.Approval, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: deciding approval %q: %w", id, err) }
	n, err := micros("now", now)
	if err != nil {
		return store.Approval{}, fail(err)
	}
	status := store.StatusDenied
	if approve {
		status = store.StatusApproved
	}
	res, err := decideApproval.Run(ctx, db.c, []string{db.approvalKey(id)}, db.prefix, id, string(status), n, by).Slice()
	if err != nil {
		return store.Approval{}, fail(err)
	}
	if len(res) > 0 && res[0] == "not_found" {
		return store.Approval{}, fail(store.ErrNotFound)
	}
	if len(res) != 2 {
		return store.Approval{}, fail(fmt.Errorf("unexpected reply of %d elements from the decide script", len(res)))
	}
	h, err := hashOf(res[1])
	if err != nil {
		return store.Approval{}, fail(err)
	}
	if res[0] == "not_pending" { // returned as it stands, to say what became of it
		return approvalOf(h, n), fail(store.ErrNotPending)
	}
	return approvalOf(h, n), nil
}

// ConsumeApproval implements store.Approvals.
func (db *DB) ConsumeApproval(ctx context.Context, tool, argsHash string, now time.Time) (store.Approval, bool, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: consuming an approval for %q: %w", tool, err) }
	n, err := micros("now", now)
	if err != nil {
		return store.Approval{}, false, fail(err)
	}
	res, err := consumeApproval.Run(ctx, db.c, []string{db.matchKey(tool, argsHash)}, db.prefix, n).Slice()
	if err != nil {
		return store.Approval{}, false, fail(err)
	}
	if res[0] != "ok" {
		return store.Approval{}, false, nil
	}
	h, err := hashOf(res[1])
	if err != nil {
		return store.Approval{}, false, fail(err)
	}
	return approvalOf(h, n), true, nil
}
