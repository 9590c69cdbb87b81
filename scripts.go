package uncomplicated

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// Every change to a lock is one Lua script, so it is atomic. The scripts read
// user data only from KEYS and ARGV. KEYS[1] is the lock, KEYS[2] its fence
// counter; a lease argument is in milliseconds, "0" meaning no expiry.

// acquireScript takes a free lock: SET NX with the lease, then INCR the
// fence. Replies {1, fence} on success and {0, holder's token} when taken.
// A fence counter that is not an integer undoes the SET and fails.
var acquireScript = redis.NewScript(2, `
local ok
if ARGV[2] == '0' then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
if not ok then
  return {0, redis.call('GET', KEYS[1])}
end
local fence = redis.pcall('INCR', KEYS[2])
if type(fence) ~= 'number' then
  redis.call('DEL', KEYS[1])
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[2])
end
return {1, fence}
`)

// takeOverScript replaces a stuck holder: only if the lock still holds
// ARGV[1] (the token the waiter watched), or is free, it stores ARGV[2] with
// lease ARGV[3] under a new fence. Replies like acquireScript. The INCR comes
// first, so a broken counter fails before anything is written.
var takeOverScript = redis.NewScript(2, `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {0, cur}
end
local fence = redis.call('INCR', KEYS[2])
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {1, fence}
`)

// releaseScript deletes the lock only if it holds one of our tokens,
// ARGV[1..]: usually one, more after a Refresh whose reply was lost.
// Replies 1 when deleted, 0 when no token was ours.
var releaseScript = redis.NewScript(1, `
local cur = redis.call('GET', KEYS[1])
for i = 1, #ARGV do
  if cur == ARGV[i] then
    return redis.call('DEL', KEYS[1])
  end
end
return 0
`)

// refreshScript, if the lock holds one of our tokens ARGV[3..], replaces it
// with ARGV[2] and restarts the lease ARGV[1]. Replies 1, or 0 when no
// token was ours.
var refreshScript = redis.NewScript(1, `
local cur = redis.call('GET', KEYS[1])
for i = 3, #ARGV do
  if cur == ARGV[i] then
    if ARGV[1] == '0' then
      redis.call('SET', KEYS[1], ARGV[2])
    else
      redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
    end
    return 1
  end
end
return 0
`)

// errReply reports a reply the scripts cannot give: a Redis that is not
// Redis, or a proxy that mangles replies.
var errReply = errors.New("uncomplicated: unexpected reply from Redis")

// eval runs s on a connection from the pool. sent reports whether the
// script may have reached Redis, even when err says the reply did not come.
func (c *Client) eval(ctx context.Context, s *redis.Script, keysAndArgs ...any) (reply any, sent bool, err error) {
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, false, err
	}
	if conn == nil {
		return nil, false, errNilConn
	}
	defer conn.Close()
	reply, err = s.DoContext(ctx, conn, keysAndArgs...)
	return reply, true, err
}

var errNilConn = errors.New("uncomplicated: Pool returned a nil connection")

// anys converts tokens to script arguments.
func anys(tokens []string) []any {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return args
}

// outcome is the reply of acquireScript and takeOverScript: a fence when
// the lock is ours, else the holder's token.
type outcome struct {
	fence  uint64 // > 0 when acquired
	holder string // the current holder's token when not acquired
}

func parseOutcome(reply any) (outcome, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 2 {
		return outcome{}, fmt.Errorf("%w: %T", errReply, reply)
	}
	switch r[0] {
	case int64(1):
		if f, ok := r[1].(int64); ok && f > 0 {
			return outcome{fence: uint64(f)}, nil
		}
	case int64(0):
		if h, ok := r[1].([]byte); ok {
			return outcome{holder: string(h)}, nil
		}
	}
	return outcome{}, fmt.Errorf("%w: [%T %T]", errReply, r[0], r[1])
}

// parseFlag reads the 1 or 0 of releaseScript and refreshScript.
func parseFlag(reply any) (bool, error) {
	switch reply {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w: %T", errReply, reply)
}

// newToken returns 16 random bytes, base64url: the secret that proves a
// hold is ours. Every acquisition and every Refresh gets a new one.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
