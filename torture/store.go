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
