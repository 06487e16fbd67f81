package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Keys of the run checkpoints, under the prefix P:
//
//	P run:r:<session>   hash: one session's run (session, state, approval, checkpoint, updated)
//	P run:i:updated     sorted set of every session with a run, by updated (for Prune)

func (db *DB) runKey(session string) string { return db.prefix + "run:r:" + session }

// saveRun replaces a run's hash whole and moves its index entry, in one
// script, so a concurrent save or prune never sees half of it.
var saveRun = goredis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'session', ARGV[2], 'state', ARGV[3], 'approval', ARGV[4], 'checkpoint', ARGV[5], 'updated', ARGV[6])
redis.call('ZADD', ARGV[1] .. 'run:i:updated', ARGV[6], ARGV[2])
return 'ok'
`)

// pruneRuns deletes, of the first ARGV[3] sessions in the index updated
// before ARGV[2], those whose record agrees; an index entry without a
// record goes too. It returns {deleted, looked at}.
var pruneRuns = goredis.NewScript(`
local P = ARGV[1]
local cut = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', P .. 'run:i:updated', '-inf', '(' .. ARGV[2], 'LIMIT', 0, ARGV[3])
local deleted = 0
for _, id in ipairs(ids) do
	local k = P .. 'run:r:' .. id
	local up = redis.call('HGET', k, 'updated')
	if not up or tonumber(up) < cut then
		if up then deleted = deleted + 1 end
		redis.call('DEL', k)
		redis.call('ZREM', P .. 'run:i:updated', id)
	else
		redis.call('ZADD', P .. 'run:i:updated', up, id)
	end
end
return {deleted, #ids}
`)

// SaveRun implements store.Runs.
func (db *DB) SaveRun(ctx context.Context, r store.Run) error {
	fail := func(err error) error {
		return fmt.Errorf("store/redis: saving the run of session %q: %w", r.Session, err)
	}
	if err := r.Validate(); err != nil {
		return fail(err)
	}
	updated, err := micros("updated", r.Updated)
	if err != nil {
		return fail(err)
	}
	if err := saveRun.Run(ctx, db.c, []string{db.runKey(r.Session)},
		db.prefix, r.Session, string(r.State), r.Approval, []byte(r.Checkpoint), updated).Err(); err != nil {
		return fail(err)
	}
	return nil
}

// Run implements store.Runs.
func (db *DB) Run(ctx context.Context, session string) (store.Run, error) {
	h, err := db.c.HGetAll(ctx, db.runKey(session)).Result()
	if err == nil && len(h) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("store/redis: reading the run of session %q: %w", session, err)
	}
	r := store.Run{Session: h["session"], State: store.RunState(h["state"]), Approval: h["approval"], Updated: hash(h).time("updated")}
	if c := h["checkpoint"]; c != "" {
		r.Checkpoint = []byte(c)
	}
	return r, nil
}

// pruneBefore runs script, a pruning script over one time index
// (pruneRuns, pruneSessions), PruneBatch index entries at a time, until
// every record of what last updated before now minus keep is gone.
func (db *DB) pruneBefore(ctx context.Context, script *goredis.Script, what string, keep time.Duration, now time.Time) (int64, error) {
	cut, err := micros("the "+what+" retention cut", now.Add(-keep))
	if err != nil {
		return 0, fmt.Errorf("store/redis: pruning %s: %w", what, err)
	}
	var total int64
	for {
		res, err := script.Run(ctx, db.c, nil, db.prefix, cut, PruneBatch).Int64Slice()
		if err != nil {
			return total, fmt.Errorf("store/redis: pruning %s: %w", what, err)
		}
		total += res[0]
		// Every entry looked at left the range or had its score moved
		// to a time at or after the cut, so the next batch is new.
		if res[1] < PruneBatch {
			return total, nil
		}
	}
}
