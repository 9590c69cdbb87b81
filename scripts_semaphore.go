package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/driver"

// The Semaphore's scripts. KEYS[1] is the set of holders, KEYS[2] a hash of
// each holder's fence, KEYS[3] the fence counter, the highest fence it has
// granted to a holder still there (see newFenceLua), and KEYS[4] the queue
// (see attemptArgs). The first three expire with the latest holder's lease
// (see expireWith). An entry's kind is the number of permits of the
// semaphore its waiter asks.

// semFenceLua makes a holder's fence: nextFence returns one above the
// counter, or nil when the counter is not an integer; keepFence sets the
// counter to the fence a holder got.
const semFenceLua = clockLua + newFenceLua + fenceOfLua + `
local function nextFence()
  local c = redis.pcall('GET', KEYS[3])
  local above = c and fenceNumber(c)
  if type(c) == 'table' or c and not above then
    return nil
  end
  return newFence(above)
end
local function keepFence(f)
  redis.call('SET', KEYS[3], string.format('%d', f), 'KEEPTTL')
end
`

// semHandOff is the Lua of a release: it hands the permit to the oldest
// waiter that is alive and listens, if that waiter's number of permits
// lets it in, under a new fence; an offer nobody heard spends none.
// Returns its token, or 1.
const semHandOff = semFenceLua + timeLua + queueKeepLua + queueHandLua + `
local function free(w)
  return redis.call('ZCARD', KEYS[1]) < (tonumber(w.kind) or 0)
end
local function handOff()
  local fence
  while true do
    local w = nextWaiter(KEYS[4], free)
    if not w then
      return 1
    end
    fence = fence or nextFence()
    if not fence then
      putBack(KEYS[4], w)
      return 1
    end
    if offer(w, fence) then
      keepFence(fence)
      redis.call('ZADD', KEYS[1], expiry(now(), w.claim), w.token)
      redis.call('HSET', KEYS[2], w.token, ms(fence))
      return w.token
    end
  end
end
`

// semAcquireScript makes one attempt (see attemptArgs for ARGV[1..5]) on a
// semaphore of ARGV[6] permits. With a stale holder's token ARGV[7] (a
// take-over), it first evicts that holder, but only if that leaves a
// permit for the caller. Replies {1, fence} when the caller holds a
// permit, also when it already did (a hand-off, or a lost reply asked
// again: the lease restarts), and {0, "", holders} when every permit is
// taken. The counter is read before any write, so a broken counter
// changes nothing. Only a success drops the expired holders; the counts
// before it leave them out. Up to 64 permits, one read of the live holders
// both counts them and names them for a blocked reply. An attempt that
// joins the queue ("q") holds nothing yet, so it does not look for its own
// permit.
var semAcquireScript = driver.NewScript(4, semFenceLua+timeLua+queueKeepLua+queueWaitLua+`
local t = now()
if ARGV[4] ~= 'q' and live(KEYS[1], ARGV[1], t) then
  local mine = redis.call('HGET', KEYS[2], ARGV[1])
  if mine then
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
    expireWith(KEYS[1], KEYS[2], KEYS[3])
    return {1, tonumber(mine)}
  end
end
local alive, permits = '(' .. ms(t), tonumber(ARGV[6])
local holders, taken
if permits <= 64 then
  holders = redis.call('ZRANGEBYSCORE', KEYS[1], alive, '+inf')
  taken = #holders
else
  taken = redis.call('ZCOUNT', KEYS[1], alive, '+inf')
end
local evict = ARGV[7] ~= '' and live(KEYS[1], ARGV[7], t)
if evict then
  taken = taken - 1
end
if taken >= permits then
  wait(KEYS[4])
  return {0, '', holders or redis.call('ZRANGEBYSCORE', KEYS[1], alive, '+inf')}
end
local fence = nextFence()
if not fence then
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[3])
end
keepFence(fence)
prune(KEYS[1], KEYS[2], t)
if evict then
  redis.call('ZREM', KEYS[1], ARGV[7])
  redis.call('HDEL', KEYS[2], ARGV[7])
end
redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ms(fence))
expireWith(KEYS[1], KEYS[2], KEYS[3])
joined(KEYS[4])
return {1, fence}
`)

// semReleaseScript gives back the permit of one of the tokens ARGV[2..]
// and hands it on. A waiter that gives up passes "q" or "-" as ARGV[1]
// (else ""), as releaseScript takes it. Replies 0 when no token holds a
// permit (its lease ended, or it was taken over), else what semHandOff
// returns.
var semReleaseScript = driver.NewScript(4, semHandOff+queueLeaveLua+`
leave(KEYS[4])
local t = now()
prune(KEYS[1], KEYS[2], t)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if released == 0 then
  return 0
end
local next = handOff()
expireWith(KEYS[1], KEYS[2], KEYS[3])
return next
`)

// semRefreshScript, if one of the tokens ARGV[3..] holds a permit,
// replaces it with ARGV[2], which keeps its fence, and restarts the lease
// ARGV[1]. Replies 1, or 0 when no token holds a permit.
var semRefreshScript = driver.NewScript(3, clockLua+timeLua+`
local t = now()
prune(KEYS[1], KEYS[2], t)
for i = 3, #ARGV do
  local fence = redis.call('HGET', KEYS[2], ARGV[i])
  if fence and redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[1]), ARGV[2])
    redis.call('HSET', KEYS[2], ARGV[2], fence)
    expireWith(KEYS[1], KEYS[2], KEYS[3])
    return 1
  end
end
return 0
`)
