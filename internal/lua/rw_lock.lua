-- RWLock makes one writer's attempt (see attemptArgs for ARGV[1..5]).
-- With ARGV[6] = "x" (a take-over) it first evicts the blockers the caller
-- saw, writer ARGV[7] ("" none) and readers ARGV[8..], but only if they
-- are still exactly what blocks it. Replies {1, fence} when it holds the
-- lock, also when it already did (a hand-off, or a lost reply asked again:
-- the lease restarts), and {0, writer, readers} when blocked. A blocked
-- writer that waits counts among the waiting writers for its expiry,
-- queued or not.

--#include clock
--#include new_fence
--#include fenced
--#include holds
--#include fence_of
--#include time
--#include lease
--#include queue_keep
--#include queue_wait
local cur = redis.call('GET', KEYS[1])
if cur and holds(cur, ARGV[1]) then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, fenceOf(cur) or 0}
end
local t = now()
local readers = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(t), '+inf')
local evict = false
if ARGV[6] == 'x' and (not cur and ARGV[7] == '' or cur and ARGV[7] ~= '' and holds(cur, ARGV[7])) then
  local seen = {}
  for i = 8, #ARGV do
    seen[ARGV[i]] = true
  end
  evict = true
  for _, r in ipairs(readers) do
    if not seen[r] then
      evict = false
    end
  end
end
if not evict and (cur or #readers > 0) then
  if ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[3], ms(t + tonumber(ARGV[5])), ARGV[1])
    expireWith(KEYS[3])
    wait(KEYS[5])
  end
  return {0, cur or '', readers}
end
local fence = newFence(fenceOf(cur))
redis.call('DEL', KEYS[2])
setLease(KEYS[1], fenced(ARGV[1], fence), ARGV[2])
if ARGV[5] ~= '0' then
  redis.call('ZREM', KEYS[3], ARGV[1])
  expireWith(KEYS[3])
end
joined(KEYS[5])
return {1, fence}
