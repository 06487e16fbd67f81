package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"airlock.dev/airlock/store"
)

// Keys of the sessions, under the prefix P:
//
//	P s:r:<id>        hash: one session
//	P s:i:updated     sorted set of every session, by updated (for Prune)
//	P s:o:<id>        sorted set: the session's observations by seq, each
//	                  member the kind of its source ('u' the user, 't'
//	                  untrusted) followed by the value
//	P s:src:<id>      hash: each observation's source, by the same member
//	P s:seq           the last seq given to an observation (INCR), never
//	                  pruned
//	P kill_all        "1" while every session is killed
//
// Every script that writes a session's hash moves its index entry in the
// same script, so Prune never sees one without the other; Prune deletes a
// session's observations with its hash.

func (db *DB) sessionKey(id string) string      { return db.prefix + "s:r:" + id }
func (db *DB) sessionIndex() string             { return db.prefix + "s:i:updated" }
func (db *DB) killAllKey() string               { return db.prefix + "kill_all" }
func (db *DB) observationsKey(id string) string { return db.prefix + "s:o:" + id }
func (db *DB) sourcesKey(id string) string      { return db.prefix + "s:src:" + id }
func (db *DB) seqKey() string                   { return db.prefix + "s:seq" }

// The kinds of source an observation's member begins with.
const (
	kindUser      = "u"
	kindUntrusted = "t"
)

// chargeSession applies store.Charge.Apply inside Redis. The sums are
// compared as Lua numbers, exact because every operand is at most
// store.MaxCounter; the counters are then moved with HINCRBY on the
// decimal strings, exact as int64. KEYS: the session, the global flag,
// the session index.
var chargeSession = goredis.NewScript(`
if redis.call('GET', KEYS[2]) == '1' then return {'killed_all', redis.call('HGETALL', KEYS[1])} end
local s = redis.call('HMGET', KEYS[1], 'killed', 'step', 'tokens', 'micro_usd')
if s[1] == '1' then return {'killed', redis.call('HGETALL', KEYS[1])} end
local function over(spent, add, max)
	local limit = tonumber(max)
	if limit == 0 then limit = tonumber(ARGV[8]) end
	return tonumber(spent or '0') + tonumber(add) > limit
end
if over(s[2], ARGV[2], ARGV[5]) or over(s[3], ARGV[3], ARGV[6]) or over(s[4], ARGV[4], ARGV[7]) then
	return {'over', redis.call('HGETALL', KEYS[1])}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
	redis.call('HSET', KEYS[1], 'id', ARGV[9], 'created', ARGV[1], 'mode', '', 'killed', '0', 'step', '0', 'tokens', '0', 'micro_usd', '0')
end
redis.call('HINCRBY', KEYS[1], 'step', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'micro_usd', ARGV[4])
redis.call('HSET', KEYS[1], 'updated', ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[9])
return {'ok', redis.call('HGETALL', KEYS[1])}
`)

// setSessionField sets one field of a session, creating it when new.
// KEYS: the session, the session index.
var setSessionField = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	redis.call('HSET', KEYS[1], 'id', ARGV[2], 'created', ARGV[1], 'mode', '', 'killed', '0', 'step', '0', 'tokens', '0', 'micro_usd', '0')
end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4], 'updated', ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
`)

func sessionOf(h hash) store.Session {
	return store.Session{
		ID: h["id"], Step: h.int("step"), Tokens: h.int("tokens"), MicroUSD: h.int("micro_usd"),
		Mode: h["mode"], Killed: h["killed"] == "1", Flagged: h["flagged"] == "1",
		Tainted: h["tainted"] == "1", Truncated: h["truncated"] == "1",
		Created: h.time("created"), Updated: h.time("updated"),
	}
}

// Session implements store.Sessions.
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	h, err := db.c.HGetAll(ctx, db.sessionKey(id)).Result()
	if err == nil && len(h) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store/redis: reading session %q: %w", id, err)
	}
	return sessionOf(h), nil
}

// ChargeSession implements store.Sessions.
func (db *DB) ChargeSession(ctx context.Context, id string, c store.Charge, now time.Time) (store.Session, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: charging session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return store.Session{}, fail(err)
	}
	if err := c.Validate(); err != nil {
		return store.Session{}, fail(err)
	}
	n, err := micros("now", now)
	if err != nil {
		return store.Session{}, fail(err)
	}
	res, err := chargeSession.Run(ctx, db.c, []string{db.sessionKey(id), db.killAllKey(), db.sessionIndex()},
		n, c.Steps, c.Tokens, c.MicroUSD, c.MaxSteps, c.MaxTokens, c.MaxMicroUSD, int64(store.MaxCounter), id).Slice()
	if err != nil {
		return store.Session{}, fail(err)
	}
	h, err := hashOf(res[1])
	if err != nil {
		return store.Session{}, fail(err)
	}
	s := sessionOf(h)
	if res[0] == "ok" {
		return s, nil
	}
	if len(h) == 0 {
		s = store.Session{ID: id, Created: time.UnixMicro(n).UTC(), Updated: time.UnixMicro(n).UTC()}
	}
	// The script refused; the shared rule, on the same state, says why.
	if _, err := c.Apply(s, res[0] == "killed_all", now); err != nil {
		return s, fail(err)
	}
	return s, fail(errors.New("the store refused a charge the shared rule allows"))
}

func (db *DB) setField(ctx context.Context, id, field, value string, now time.Time) (store.Session, error) {
	if err := store.ValidSessionID(id); err != nil {
		return store.Session{}, err
	}
	n, err := micros("now", now)
	if err != nil {
		return store.Session{}, err
	}
	v, err := setSessionField.Run(ctx, db.c, []string{db.sessionKey(id), db.sessionIndex()}, n, id, field, value).Result()
	if err != nil {
		return store.Session{}, err
	}
	h, err := hashOf(v)
	if err != nil {
		return store.Session{}, err
	}
	return sessionOf(h), nil
}

// SetSessionMode implements store.Sessions.
func (db *DB) SetSessionMode(ctx context.Context, id, mode string, now time.Time) (store.Session, error) {
	if err := store.ValidMode(mode); err != nil {
		return store.Session{}, fmt.Errorf("store/redis: setting the mode of session %q: %w", id, err)
	}
	s, err := db.setField(ctx, id, "mode", mode, now)
	if err != nil {
		return s, fmt.Errorf("store/redis: setting the mode of session %q: %w", id, err)
	}
	return s, nil
}

// KillSession implements store.Sessions.
func (db *DB) KillSession(ctx context.Context, id string, killed bool, now time.Time) (store.Session, error) {
	v := "0"
	if killed {
		v = "1"
	}
	s, err := db.setField(ctx, id, "killed", v, now)
	if err != nil {
		return s, fmt.Errorf("store/redis: killing session %q: %w", id, err)
	}
	return s, nil
}

// SetKillAll implements store.Sessions.
func (db *DB) SetKillAll(ctx context.Context, killed bool) error {
	v := "0"
	if killed {
		v = "1"
	}
	if err := db.c.Set(ctx, db.killAllKey(), v, 0).Err(); err != nil {
		return fmt.Errorf("store/redis: setting the global kill flag: %w", err)
	}
	return nil
}

// KillAll implements store.Sessions.
func (db *DB) KillAll(ctx context.Context) (bool, error) {
	v, err := db.c.Get(ctx, db.killAllKey()).Result()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store/redis: reading the global kill flag: %w", err)
	}
	return v == "1", nil
}

// pruneSessions deletes, of the first ARGV[3] sessions in the index
// updated before ARGV[2], those whose record agrees, with their
// observations; an index entry
// without a record goes too, and one behind its record's updated is moved
// up to it. The global kill flag is not a session and is never touched.
// It returns {deleted, looked at}.
var pruneSessions = goredis.NewScript(`
local P = ARGV[1]
local index = P .. 's:i:updated'
local cut = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. ARGV[2], 'LIMIT', 0, ARGV[3])
local deleted = 0
for _, id in ipairs(ids) do
	local k = P .. 's:r:' .. id
	local up = redis.call('HGET', k, 'updated')
	if not up or tonumber(up) < cut then
		if redis.call('DEL', k) == 1 then deleted = deleted + 1 end
		redis.call('DEL', P .. 's:o:' .. id, P .. 's:src:' .. id)
		redis.call('ZREM', index, id)
	else
		redis.call('ZADD', index, up, id)
	end
end
return {deleted, #ids}
`)

// observe adds observations to a session, creating it when new, in one
// script: Redis runs one script at a time, so the seqs are given and
// become visible in one order. It checks first that the seq counter has
// room (store.MaxCounter, what a score keeps exactly) for every member,
// so that it never stops half way. (ZPOPMIN needs Redis 5.0 or later.)
// KEYS: the session, the session index, its observations, their sources,
// the seq counter. ARGV: now, the id, the store.Marks as a number
// (MarkTainted, 1, sets tainted; MarkFlagged, 2, sets flagged),
// store.MaxObservations, store.MaxCounter, then a member and its source
// for each observation.
var observe = goredis.NewScript(`
local last = tonumber(redis.call('GET', KEYS[5]) or '0')
if last + (#ARGV - 5) / 2 > tonumber(ARGV[5]) then
	return redis.error_reply('the observation seq would pass ' .. ARGV[5] .. ' (store.MaxCounter)')
end
if redis.call('EXISTS', KEYS[1]) == 0 then
	redis.call('HSET', KEYS[1], 'id', ARGV[2], 'created', ARGV[1], 'mode', '', 'killed', '0', 'step', '0', 'tokens', '0', 'micro_usd', '0')
end
redis.call('HSET', KEYS[1], 'updated', ARGV[1])
local marks = tonumber(ARGV[3])
if marks % 2 == 1 then redis.call('HSET', KEYS[1], 'tainted', '1') end
if math.floor(marks / 2) % 2 == 1 then redis.call('HSET', KEYS[1], 'flagged', '1') end
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
for i = 6, #ARGV, 2 do
	if not redis.call('ZSCORE', KEYS[3], ARGV[i]) then
		redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[5]), ARGV[i])
		redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
	end
end
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[4])
if over > 0 then
	local gone = redis.call('ZPOPMIN', KEYS[3], over)
	for j = 1, #gone, 2 do redis.call('HDEL', KEYS[4], gone[j]) end
	redis.call('HSET', KEYS[1], 'truncated', '1')
end
return 0
`)

// Observe implements store.Sessions.
func (db *DB) Observe(ctx context.Context, id string, obs []store.Observation, marks store.Marks, now time.Time) error {
	fail := func(err error) error { return fmt.Errorf("store/redis: observing for session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return fail(err)
	}
	if err := store.ValidObservations(obs); err != nil {
		return fail(err)
	}
	n, err := micros("now", now)
	if err != nil {
		return fail(err)
	}
	args := make([]any, 0, 5+2*len(obs))
	args = append(args, n, id, int(marks&(store.MarkTainted|store.MarkFlagged)), store.MaxObservations, int64(store.MaxCounter))
	for _, o := range obs {
		kind := kindUntrusted
		if o.FromUser() {
			kind = kindUser
		}
		args = append(args, kind+o.Value, o.Source)
	}
	keys := []string{db.sessionKey(id), db.sessionIndex(), db.observationsKey(id), db.sourcesKey(id), db.seqKey()}
	if err := observe.Run(ctx, db.c, keys, args...).Err(); err != nil {
		return fail(err)
	}
	return nil
}

// state reads a session, the global flag and the observations after a
// seq in one script, so in one consistent read. KEYS: the session, the
// global flag, its observations, their sources. ARGV: after. It returns
// the session's fields, the flag, and a member, seq and source for each
// observation.
var state = goredis.NewScript(`
local obs = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '+inf', 'WITHSCORES')
local out = {}
for i = 1, #obs, 2 do
	out[#out + 1] = obs[i]
	out[#out + 1] = obs[i + 1]
	out[#out + 1] = redis.call('HGET', KEYS[4], obs[i]) or ''
end
return {redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2]) or '0', out}
`)

// State implements store.Sessions.
func (db *DB) State(ctx context.Context, id string, after int64) (store.SessionState, error) {
	fail := func(err error) error { return fmt.Errorf("store/redis: reading the state of session %q: %w", id, err) }
	if err := store.ValidSessionID(id); err != nil {
		return store.SessionState{}, fail(err)
	}
	keys := []string{db.sessionKey(id), db.killAllKey(), db.observationsKey(id), db.sourcesKey(id)}
	res, err := state.Run(ctx, db.c, keys, after).Slice()
	if err != nil {
		return store.SessionState{}, fail(err)
	}
	if len(res) != 3 {
		return store.SessionState{}, fail(fmt.Errorf("unexpected reply of %d elements", len(res)))
	}
	h, err := hashOf(res[0])
	if err != nil {
		return store.SessionState{}, fail(err)
	}
	st := store.SessionState{Session: store.Session{ID: id}, Exists: len(h) > 0, KillAll: res[1] == "1"}
	if st.Exists {
		st.Session = sessionOf(h)
	}
	st.Observations, err = observationsOf(res[2])
	if err != nil {
		return store.SessionState{}, fail(err)
	}
	return st, nil
}

// observationsOf reads the state script's flat [member, seq, source, ...]
// list.
func observationsOf(v any) ([]store.Observation, error) {
	list, ok := v.([]any)
	if !ok || len(list)%3 != 0 {
		return nil, fmt.Errorf("unexpected observations %T from a script", v)
	}
	var obs []store.Observation
	for i := 0; i < len(list); i += 3 {
		member, ok1 := list[i].(string)
		score, ok2 := list[i+1].(string)
		source, ok3 := list[i+2].(string)
		if !ok1 || !ok2 || !ok3 || member == "" {
			return nil, fmt.Errorf("unexpected observation %v from a script", list[i:i+3])
		}
		seq, err := strconv.ParseFloat(score, 64)
		if err != nil || seq != math.Trunc(seq) || seq < 1 || seq > store.MaxCounter {
			return nil, fmt.Errorf("observation seq %q is not a whole number from 1 to store.MaxCounter", score)
		}
		obs = append(obs, store.Observation{Seq: int64(seq), Source: source, Value: member[1:]})
	}
	return obs, nil
}
