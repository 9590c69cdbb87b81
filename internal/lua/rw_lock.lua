-- RWLock makes one writer's attempt (see wire.AttemptArgs for ARGV[1..5]; its
-- expiry is ARGV[3] in the lean form of an attempt with no op). With
-- ARGV[6] = "x" (a take-over) it first evicts the blockers the caller saw,
-- writer ARGV[7] ("" none) and readers ARGV[8..], but only if they are
-- still exactly what blocks it. A first attempt ("" or "q") on a lock
-- without readers' key sets it at once if free, as Acquire does (see
-- set_if_free.lua). Replies as Acquire does: the fence when it set the
-- lock, {1, fence} when it holds the lock otherwise, also when it already
-- did (see restart_lease.lua), and {0, writer, readers} when blocked. A
-- blocked writer that waits counts among the waiting writers for its
-- expiry, queued or not, and leaves them when it gets the lock; their set
-- lives until the latest expiry written to it (outlive), which a writer
-- that leaves does not shorten, so that a leave costs one command.

local op, expiryMs, cur, fence = ARGV[4], ARGV[5] or ARGV[3], nil, nil
local first = op ~= 'r' and op ~= 'x' and ARGV[6] ~= 'x'
if first then
--#include set_if_free
  if not cur and redis.call('EXISTS', KEYS[2]) == 1 then -- readers hold it
    redis.call('DEL', KEYS[1])
    first = false
  elseif not cur then
    if expiryMs ~= '0' then
      redis.call('ZREM', KEYS[3], ARGV[1])
    end
    return fence
  end
else
  cur = redis.call('GET', KEYS[1])
end
--#include clock
--#include new_fence
--#include fenced
--#include holds
--#include fence_of
--#include restart_lease
--#include time
--#include lease
--#include queue_keep
--#include queue_wait
local function outlive(key, at) -- key lives until at at least
  if redis.call('PEXPIREAT', key, at, 'GT') == 0 then
    redis.call('PEXPIREAT', key, at, 'NX')
  end
end
if cur and holds(cur, ARGV[1]) then
  return restartLease(KEYS[1], cur, ARGV[2])
end
local t, readers = nil, {}
if first then -- a writer holds it, so no reader does; the clock that set_if_free read
  t = math.floor(fence / 1000)
else
  t = now()
  readers = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(t), '+inf')
end
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
  if expiryMs ~= '0' then
    local at = ms(t + tonumber(expiryMs))
    redis.call('ZADD', KEYS[3], at, ARGV[1])
    outlive(KEYS[3], at)
    wait(KEYS[4], KEYS[5])
  end
  return {0, cur or '', readers}
end
fence = newFence(fenceOf(cur))
redis.call('DEL', KEYS[2])
setLease(KEYS[1], fenced(ARGV[1], fence), ARGV[2])
if expiryMs ~= '0' then
  redis.call('ZREM', KEYS[3], ARGV[1])
end
joined(KEYS[4], KEYS[5])
return {1, fence}
