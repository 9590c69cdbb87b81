package main

import (
	"context"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// The fenced store keeps, per lock key, a hash torture:store:<key> with
// value (the counter the critical sections increment), highest (the
// highest fence that has read it) and accepted (how many writes it took).
// It lives on the STORE server, which no fault touches.
//
// Mutex holders and RWMutex writers READ and WRITE it with their fence.
// RWMutex readers only LOOK, twice: a reader has no fence, so it cannot
// keep a writer out; instead, as a seqlock reader does, it checks that
// neither highest nor accepted moved between its two looks, that is that
// no writer read or wrote while it was reading. Permit holders only ask the
// store's clock: a Semaphore lets several holders in at once, so one fence
// order cannot tell a store which of them lost its permit, and their check
// is the count of holders at each instant (see analysis_sem.go).

// readScript is READ(fence): it refuses a fence below the highest seen,
// raises the highest to fence and returns {ok, value, server time in µs}.
var readScript = redis.NewScript(1, `
local highest = tonumber(redis.call('HGET', KEYS[1], 'highest') or '0')
local fence = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
if fence < highest then
  return {0, 0, now}
end
redis.call('HSET', KEYS[1], 'highest', ARGV[1])
return {1, tonumber(redis.call('HGET', KEYS[1], 'value') or '0'), now}
`)

// writeScript is WRITE(fence, value): it stores value and counts the write
// only when fence is the highest seen, that is when no hold with a higher
// fence has read since; otherwise it counts a rejection. It returns {ok,
// server time in µs}.
var writeScript = redis.NewScript(1, `
local highest = tonumber(redis.call('HGET', KEYS[1], 'highest') or '0')
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
if tonumber(ARGV[1]) ~= highest then
  redis.call('HINCRBY', KEYS[1], 'rejected', 1)
  return {0, now}
end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'accepted', 1)
return {1, now}
`)

// lookScript is LOOK: it returns {highest, accepted, server time in µs}
// and changes nothing.
var lookScript = redis.NewScript(1, `
local t = redis.call('TIME')
local v = redis.call('HMGET', KEYS[1], 'highest', 'accepted')
return {tonumber(v[1] or '0'), tonumber(v[2] or '0'), t[1] * 1000000 + t[2]}
`)

// A store is the fenced store, used through a pool of STORE connections.
// It is safe for concurrent use.
type store struct{ pool *redis.Pool }

// storeKey names the hash of a lock key's counter.
func storeKey(key string) string { return "torture:store:" + key }

// read is READ(fence) on key: ok is false when the store rejected fence;
// at is the server's time of the read in Unix nanoseconds.
func (s store) read(ctx context.Context, key string, fence uint64) (ok bool, value, at int64, err error) {
	vals, err := s.run(ctx, readScript, key, fence)
	if err != nil {
		return false, 0, 0, err
	}
	if len(vals) != 3 {
		return false, 0, 0, fmt.Errorf("store: READ replied %v", vals)
	}
	return vals[0] == 1, vals[1], vals[2] * 1000, nil
}

// write is WRITE(fence, value) on key: ok is false when the store rejected
// it; at is the server's time of the write in Unix nanoseconds.
func (s store) write(ctx context.Context, key string, fence uint64, value int64) (ok bool, at int64, err error) {
	vals, err := s.run(ctx, writeScript, key, fence, value)
	if err != nil {
		return false, 0, err
	}
	if len(vals) != 2 {
		return false, 0, fmt.Errorf("store: WRITE replied %v", vals)
	}
	return vals[0] == 1, vals[1] * 1000, nil
}

// A look is what a reader's LOOK saw: the highest fence read and the writes
// accepted so far. Two looks differ when a writer read or wrote between them.
type look struct{ highest, accepted int64 }

// look is LOOK on key; at is the server's time in Unix nanoseconds.
func (s store) look(ctx context.Context, key string) (l look, at int64, err error) {
	vals, err := s.run(ctx, lookScript, key)
	if err != nil {
		return look{}, 0, err
	}
	if len(vals) != 3 {
		return look{}, 0, fmt.Errorf("store: LOOK replied %v", vals)
	}
	return look{vals[0], vals[1]}, vals[2] * 1000, nil
}

// now is the store server's time (TIME) in Unix nanoseconds.
func (s store) now(ctx context.Context) (int64, error) {
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	vals, err := redis.Int64s(redis.DoContext(c, ctx, "TIME"))
	if err != nil {
		return 0, err
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("store: TIME replied %v", vals)
	}
	return vals[0]*1e9 + vals[1]*1e3, nil
}

func (s store) run(ctx context.Context, sc *redis.Script, key string, args ...any) ([]int64, error) {
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return redis.Int64s(sc.DoContext(ctx, c, append([]any{storeKey(key)}, args...)...))
}

// reset starts key's counter afresh: value, highest fence and counts 0.
func (s store) reset(ctx context.Context, key string) error {
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = redis.DoContext(c, ctx, "HSET", storeKey(key), "value", 0, "highest", 0, "accepted", 0, "rejected", 0)
	return err
}

// A tally is what the store holds for one key.
type tally struct {
	Value, Accepted, Rejected int64
}

// tally returns key's value and write counts; reset must have made them.
func (s store) tally(ctx context.Context, key string) (tally, error) {
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return tally{}, err
	}
	defer c.Close()
	vals, err := redis.Int64s(redis.DoContext(c, ctx, "HMGET", storeKey(key), "value", "accepted", "rejected"))
	if err != nil {
		return tally{}, err
	}
	return tally{Value: vals[0], Accepted: vals[1], Rejected: vals[2]}, nil
}
