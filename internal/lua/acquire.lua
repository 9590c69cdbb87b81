-- Acquire makes one attempt (see wire.AttemptArgs for ARGV[1..5]): a waiter
-- in the queue (op "r" or "x") has found the lock taken, so it looks first
-- and spares the clock while it still is; a first attempt ("" or "q") sets
-- the lock at once if free (see set_if_free.lua). Replies the fence when it
-- set the lock, the cheapest reply for Redis to make; {1, fence} when the
-- lock is ours otherwise, when a release has just handed it to us (see
-- restart_lease.lua), and {0, holder, {}} when it is taken, whose value
-- a waiter that joins the queue marks (see queued.lua). An attempt
-- with no op touches KEYS[1] alone, and declares it alone (see
-- wire.AttemptArgs.Keys).

local op, cur, fence = ARGV[4], nil, nil
if op == 'r' or op == 'x' then
  cur = redis.call('GET', KEYS[1])
end
if not cur then
--#include set_if_free
  if not cur and op ~= 'r' and op ~= 'x' then
    return fence
  end
end
--#include clock
clockUs = fence -- Redis's clock, if set_if_free read it
--#include holds
--#include fence_of
--#include restart_lease
--#include queue_keep
--#include queue_wait
--#include queued
--#include mark_queued
if cur and holds(cur, ARGV[1]) then
  return restartLease(KEYS[1], cur, ARGV[2])
end
if cur then
  if wait(KEYS[2], KEYS[3]) then
    markQueued(KEYS[1], cur)
  end
  return {0, cur, {}}
end
joined(KEYS[2], KEYS[3])
return {1, fence}
