package uncomplicated

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// Every change to a lock is one Lua script, so it is atomic. The scripts read
// user data only from KEYS and ARGV. KEYS[1] is the lock, KEYS[2] its fence
// counter, KEYS[3] its queue of waiters; a lease argument is in
// milliseconds, "0" meaning no expiry.
//
// The queue is a list of entries "<token> <lease> <channel>", oldest first.
// A waiter adds its entry once its Client listens on channel. Releasing the
// lock hands it to the oldest entry whose Client still listens: the script
// sets the lock to that token with that lease, under a new fence, and
// publishes "<token> <fence>" on the channel. PUBLISH replies how many
// connections listen, so an entry whose Client died or lost its connection
// is dropped and the next one gets the lock.

// handOff is the Lua of a release: it hands the lock to the oldest
// listening waiter and returns that waiter's token, or deletes the lock and
// returns 1 when none listens. A fence counter that is not an integer puts
// the entry back and frees the lock, so that the waiters' own attempts
// report it.
const handOff = `
local function handOff()
  for _ = 1, 100 do
    local entry = redis.call('LPOP', KEYS[3])
    if not entry then
      break
    end
    local token, lease, channel = string.match(entry, '^(%S+) (%d+) (.+)$')
    if token then
      local fence = redis.pcall('INCR', KEYS[2])
      if type(fence) ~= 'number' then
        redis.call('LPUSH', KEYS[3], entry)
        break
      end
      if redis.call('PUBLISH', channel, token .. ' ' .. string.format('%d', fence)) > 0 then
        if lease == '0' then
          redis.call('SET', KEYS[1], token)
        else
          redis.call('SET', KEYS[1], token, 'PX', lease)
        end
        return token
      end
    end
  end
  redis.call('DEL', KEYS[1])
  return 1
end
`

// acquireScript makes one attempt for token ARGV[1] with lease ARGV[2]:
// SET NX, and INCR the fence when it is set. A waiter's entry ARGV[3] joins
// the queue when the lock is taken and ARGV[4] is "q" (first time) or "r"
// (again, unless the entry is still there); with "r", or "x" (in the queue
// but not listening), a success removes it.
// Replies {1, fence} when the lock is ours, also when a release has just
// handed it to us (then the lease restarts, so that it starts after the
// caller sent the attempt), and {0, holder's token, fence counter} when it
// is taken: a hand-off message whose fence is not above that counter came
// from a release before this attempt, and is stale. A fence counter that
// is not an integer undoes the SET and fails.
var acquireScript = newScript(3, `
local cur
if ARGV[2] == '0' then
  cur = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET')
else
  cur = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
end
if cur == ARGV[1] then
  if ARGV[2] ~= '0' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, tonumber(redis.call('GET', KEYS[2]))}
end
if cur then
  if ARGV[4] == 'q' or (ARGV[4] == 'r' and not redis.call('LPOS', KEYS[3], ARGV[3])) then
    redis.call('RPUSH', KEYS[3], ARGV[3])
  end
  return {0, cur, tonumber(redis.call('GET', KEYS[2])) or 0}
end
local fence = redis.pcall('INCR', KEYS[2])
if type(fence) ~= 'number' then
  redis.call('DEL', KEYS[1])
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[2])
end
if ARGV[4] == 'r' or ARGV[4] == 'x' then
  redis.call('LREM', KEYS[3], 1, ARGV[3])
end
return {1, fence}
`)

// takeOverScript replaces a stuck holder: only if the lock still holds
// ARGV[1] (the token the waiter watched), or is free, it stores ARGV[2] with
// lease ARGV[3] under a new fence, and removes the waiter's entry ARGV[4]
// ("" when it has none) from the queue. Replies like acquireScript. The
// INCR comes first, so a broken counter fails before anything is written.
var takeOverScript = newScript(3, `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {0, cur, tonumber(redis.call('GET', KEYS[2])) or 0}
end
local fence = redis.call('INCR', KEYS[2])
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if ARGV[4] ~= '' then
  redis.call('LREM', KEYS[3], 1, ARGV[4])
end
return {1, fence}
`)

// releaseScript releases the lock only if it holds one of our tokens,
// ARGV[1..]: usually one, more after a Refresh whose reply was lost.
// Replies 0 when no token was ours, 1 when the lock is free, or the token
// of the waiter it was handed to.
var releaseScript = newScript(3, handOff+`
local cur = redis.call('GET', KEYS[1])
for i = 1, #ARGV do
  if cur == ARGV[i] then
    return handOff()
  end
end
return 0
`)

// leaveScript takes a waiter that gave up out of the queue: it removes its
// entry ARGV[1] and, when a release handed it the lock meanwhile (the lock
// holds its token ARGV[2]), releases it. Replies like releaseScript.
var leaveScript = newScript(3, handOff+`
redis.call('LREM', KEYS[3], 1, ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[2] then
  return handOff()
end
return 0
`)

// refreshScript, if the lock holds one of our tokens ARGV[3..], replaces it
// with ARGV[2] and restarts the lease ARGV[1]. Replies 1, or 0 when no
// token was ours.
var refreshScript = newScript(1, `
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

// A script is a Lua script with its SHA-1 and key count boxed once, so
// that running it allocates only what its call needs.
type script struct {
	*redis.Script
	src  string
	hash any
	keys any
}

func newScript(keys int, src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{Script: redis.NewScript(keys, src), src: src, hash: hex.EncodeToString(sum[:]), keys: keys}
}

// anys converts tokens to script arguments.
func anys(tokens []string) []any {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return args
}

// outcome is the reply of acquireScript and takeOverScript: a fence when
// the lock is ours, else the holder's token and the fence counter.
type outcome struct {
	fence  uint64 // > 0 when acquired
	holder string // the current holder's token when not acquired
	seen   uint64 // the fence counter when not acquired
}

func parseOutcome(reply any) (outcome, error) {
	r, ok := reply.([]any)
	if !ok || len(r) < 2 || len(r) > 3 {
		return outcome{}, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	switch r[0] {
	case int64(1):
		if f, ok := r[1].(int64); ok && f > 0 && len(r) == 2 {
			return outcome{fence: uint64(f)}, nil
		}
	case int64(0):
		h, ok := r[1].([]byte)
		var seen int64
		if len(r) == 3 {
			seen, _ = r[2].(int64)
		}
		if ok && seen >= 0 {
			return outcome{holder: string(h), seen: uint64(seen)}, nil
		}
	}
	return outcome{}, fmt.Errorf("%w: [%T %T]", ErrUnexpectedReply, r[0], r[1])
}

// parseRelease reads the reply of releaseScript and leaveScript: whether
// the lock was ours, and the token of the waiter it went to, if any.
func parseRelease(reply any) (ok bool, next string, err error) {
	switch r := reply.(type) {
	case int64:
		if r == 0 || r == 1 {
			return r == 1, "", nil
		}
	case []byte:
		if len(r) > 0 {
			return true, string(r), nil
		}
	}
	return false, "", fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
}

// parseFlag reads the 1 or 0 of refreshScript.
func parseFlag(reply any) (bool, error) {
	switch reply {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
}

// newToken returns 16 random bytes, base64url: the secret that proves a
// hold is ours. Every acquisition and every Refresh gets a new one.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
