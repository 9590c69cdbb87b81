-- SemAcquire makes one attempt (see attemptArgs for ARGV[1..5]) on a
-- semaphore of ARGV[6] permits. With a stale holder's token ARGV[7] (a
-- take-over), it first evicts that holder, but only if that leaves a
-- permit for the caller. Replies {1, fence} when the caller holds a
-- permit, also when it already did (a hand-off, or a lost reply asked
-- again: the lease restarts), and {0, "", holders} when every permit is
-- taken. The counter is read before any write, so a broken counter
-- changes nothing. Only a success drops the expired holders; the counts
-- before it leave them out. Up to 64 permits, one read of the live holders
-- both counts them and names them for a blocked reply. An attempt that
-- joins the queue ("q") holds nothing yet, so it does not look for its own
-- permit.

--#include sem_fence
--#include time
--#include queue_keep
--#include queue_wait
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
