-- Acquire makes one attempt (see attemptArgs for ARGV[1..5]): SET
-- NX the token under a new fence, Redis's clock, which is all a grant of a
-- free lock needs (see new_fence.lua); a waiter in the queue (op "r" or
-- "x") has found the lock taken, so it looks first and spares the clock
-- while it still is; a first attempt ("" or "q") sets at once. Replies the
-- fence when it set the lock, the cheapest reply for Redis to make; {1,
-- fence} when the lock is ours otherwise, when a release has just handed
-- it to us (then the whole lease restarts in place of the claim, so that
-- it starts after the caller sent the attempt), and {0, holder, {}} when
-- it is taken. Up to the reply of a set lock it defines no function, and
-- writes the holder's value as fenced does, for the Redis CPU of the most
-- common attempt; TestAcquireScript_writesTheValueAsFencedDoes checks
-- that both agree.

local op, cur, fence = ARGV[4], nil, nil
if op == 'r' or op == 'x' then
  cur = redis.call('GET', KEYS[1])
end
if not cur then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  local value = ARGV[1] .. ' ' .. t[1] .. ('000000'):sub(#t[2] + 1) .. t[2]
  if ARGV[2] == '0' then
    cur = redis.call('SET', KEYS[1], value, 'NX', 'GET')
  else
    cur = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2], 'GET')
  end
  if not cur and op ~= 'r' and op ~= 'x' then
    return fence
  end
end
--#include holds
--#include fence_of
--#include queue_keep
--#include queue_wait
if cur and holds(cur, ARGV[1]) then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, fenceOf(cur) or 0}
end
if cur then
  wait(KEYS[3])
  return {0, cur, {}}
end
joined(KEYS[3])
return {1, fence}
