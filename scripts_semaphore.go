package uncomplicated

// The Semaphore's scripts. KEYS[1] is the set of holders, KEYS[2] a hash of
// each holder's fence, KEYS[3] the fence counter, KEYS[4] the set of
// waiters, each with a short expiry that its attempts push back, so that a
// release wakes the waiters only when there are some.

// semAcquireScript makes one attempt for token ARGV[1] with lease ARGV[2]
// on a semaphore of ARGV[3] permits. With a stale holder's token ARGV[4]
// (a take-over), it first evicts that holder, but only if that leaves a
// permit for the caller. When it is blocked and ARGV[5] is not "0", the
// caller counts as waiting for ARGV[5] ms. Replies {1, fence} when the
// caller holds a permit, also when it already did (a lost reply asked
// again: the lease restarts), and {0, 0, "", holders} when every permit is
// taken. The INCR comes before
// any write, so a broken counter changes nothing.
var semAcquireScript = newScript(4, holdersLua+`
local t = now()
prune(KEYS[1], KEYS[2], t)
prune(KEYS[4], nil, t)
local mine = redis.call('HGET', KEYS[2], ARGV[1])
if mine and redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
  return {1, tonumber(mine)}
end
local permits = tonumber(ARGV[3])
local taken = redis.call('ZCARD', KEYS[1])
local evict = ARGV[4] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[4])
if evict then
  taken = taken - 1
end
if taken >= permits then
  if ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[4], ms(t + tonumber(ARGV[5])), ARGV[1])
  end
  return {0, 0, '', redis.call('ZRANGE', KEYS[1], 0, -1)}
end
local fence = redis.pcall('INCR', KEYS[3])
if type(fence) ~= 'number' then
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[3])
end
if evict then
  redis.call('ZREM', KEYS[1], ARGV[4])
  redis.call('HDEL', KEYS[2], ARGV[4])
end
redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], fence)
redis.call('ZREM', KEYS[4], ARGV[1])
return {1, fence}
`)

// semReleaseScript gives back the permit of one of the tokens ARGV[2..]
// and, if any wait (KEYS[3]), wakes the waiters on channel ARGV[1].
// Replies 1, or 0 when no token holds a permit (its lease ended, or it was
// taken over).
var semReleaseScript = newScript(3, holdersLua+`
local t = now()
prune(KEYS[1], KEYS[2], t)
prune(KEYS[3], nil, t)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if released > 0 then
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('PUBLISH', ARGV[1], '`+wakeAll+`')
  end
  return 1
end
return 0
`)

// semRefreshScript, if one of the tokens ARGV[3..] holds a permit,
// replaces it with ARGV[2], which keeps its fence, and restarts the lease
// ARGV[1]. Replies 1, or 0 when no token holds a permit.
var semRefreshScript = newScript(2, holdersLua+`
local t = now()
prune(KEYS[1], KEYS[2], t)
for i = 3, #ARGV do
  local fence = redis.call('HGET', KEYS[2], ARGV[i])
  if fence and redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[1]), ARGV[2])
    redis.call('HSET', KEYS[2], ARGV[2], fence)
    return 1
  end
end
return 0
`)
