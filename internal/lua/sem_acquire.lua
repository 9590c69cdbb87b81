-- SemAcquire makes one attempt (see wire.AttemptArgs for ARGV[1..5]) on a
-- semaphore of ARGV[6] permits (ARGV[3] in the lean form of an attempt
-- with no op). With a stale holder's token ARGV[7] (a take-over), it first
-- evicts that holder, but only if that leaves a permit for the caller. An
-- attempt with no op on a semaphore with neither a holder nor a hash of
-- fences makes the caller its one holder at once, under Redis's clock as
-- fence, defining no function before that reply but sem_only.lua's; one
-- that joins the queue ("q") does not look, as it finds the semaphore
-- taken most often and the look would cost a call. Replies the fence
-- then; {1, fence} when the caller holds a permit otherwise, also when it
-- already did (a hand-off, or a lost reply asked again: the lease
-- restarts), and {0, "", holders} when every permit is taken. The counter
-- is read before any write, so a broken counter changes nothing. Only a
-- success drops the expired holders; the counts before it leave them out.
-- Up to 64 permits, one read of the live holders both counts them and
-- names them for a blocked reply. An attempt that joins the queue holds
-- nothing yet, so it does not look for its own permit.

--#include sem_only
local op, permits, stale = ARGV[4], tonumber(ARGV[6] or ARGV[3]), ARGV[7] or ''
if (op or '') == '' and stale == '' and redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  local c = redis.call('TIME')
  local fence = c[1] * 1000000 + c[2]
  local at = nil
  if ARGV[2] ~= '0' then
    at = string.format('%d', math.floor(fence / 1000) + tonumber(ARGV[2]))
  end
  onlyHolder(ARGV[1], string.format('%d', fence), at)
  return fence
end
--#include sem_fence
--#include time
--#include queue_keep
--#include queue_wait
local t = now()
if op ~= 'q' and live(KEYS[1], ARGV[1], t) then
  local mine = redis.call('HGET', KEYS[2], ARGV[1])
  if mine then
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
    expireWith(KEYS[1], KEYS[2])
    return {1, tonumber(mine)}
  end
end
local alive = '(' .. ms(t)
local holders, taken
if permits <= 64 then
  holders = redis.call('ZRANGEBYSCORE', KEYS[1], alive, '+inf')
  taken = #holders
else
  taken = redis.call('ZCOUNT', KEYS[1], alive, '+inf')
end
local evict = stale ~= '' and live(KEYS[1], stale, t)
if evict then
  taken = taken - 1
end
if taken >= permits then
  wait(KEYS[3], KEYS[4])
  return {0, '', holders or redis.call('ZRANGEBYSCORE', KEYS[1], alive, '+inf')}
end
local fence = nextFence()
if not fence then
  return redis.error_reply('uncomplicated: fence counter is not an integer, or its hash not a hash: ' .. KEYS[2] .. ' ' .. counter)
end
prune(KEYS[1], KEYS[2], t)
if evict then
  redis.call('ZREM', KEYS[1], stale)
  redis.call('HDEL', KEYS[2], stale)
end
redis.call('ZADD', KEYS[1], expiry(t, ARGV[2]), ARGV[1])
keepFence(ARGV[1], ms(fence))
expireWith(KEYS[1], KEYS[2])
joined(KEYS[3], KEYS[4])
return {1, fence}
