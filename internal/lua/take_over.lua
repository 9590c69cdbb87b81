-- TakeOver replaces a stuck holder: only if the lock still holds
-- ARGV[6] (the token the waiter watched), or is free, it stores the
-- waiter's token with its lease under a fence above the stuck holder's,
-- marked (see queued.lua), and takes its entry out of the queue; otherwise it restarts the entry,
-- as a blocked attempt does. Replies like Acquire, also {1, fence}
-- when the lock holds the waiter's token already (a lost reply asked
-- again).

--#include clock
--#include new_fence
--#include fenced
--#include holds
--#include fence_of
--#include restart_lease
--#include lease
--#include queue_keep
--#include queue_wait
--#include queued
--#include mark_queued
local cur = redis.call('GET', KEYS[1])
if cur and holds(cur, ARGV[1]) then
  return restartLease(KEYS[1], cur, ARGV[2])
end
if cur and not holds(cur, ARGV[6]) then
  if wait(KEYS[2], KEYS[3]) then
    markQueued(KEYS[1], cur)
  end
  return {0, cur, {}}
end
local fence = newFence(fenceOf(cur))
setLease(KEYS[1], fenced(ARGV[1], fence) .. queuedMark, ARGV[2])
joined(KEYS[2], KEYS[3])
return {1, fence}
