-- The queue's Lua, in pieces, so that a script defines only the
-- functions it may call: queue_keep.lua makes a queue and its entries
-- outlive each entry written (expiry ms): when less than the expiry is
-- left to either, it gives it twice that, so that a busy queue costs a
-- write only once per expiry; queue_wait.lua is an acquiring script's
-- (wait, joined), queue_leave.lua a waiter's leave, queue_hand.lua a
-- hand-off's (nextWaiter, putBack, offer). The first is needed by the
-- second and the last, which also need clock.lua.
--
-- A queue is a list of tokens, and its entries a hash beside it, each
-- waiter's under its token: "<deadline> <entry>", where deadline is when
-- the waiter stops counting as alive, in milliseconds of Redis's clock,
-- and entry what its attempt wrote (see wire.QueueEntry). Both are the
-- script's KEYS, as every key it touches.

local function keepQueue(queue, entries, expiry)
  expiry = tonumber(expiry)
  if redis.call('PTTL', queue) < expiry then
    redis.call('PEXPIRE', queue, 2 * expiry)
  end
  if redis.call('PTTL', entries) < expiry then
    redis.call('PEXPIRE', entries, 2 * expiry)
  end
end
-- deadlineOf reads the deadline of an entries hash's value, 0 for none.
local function deadlineOf(value)
  return tonumber(value and string.match(value, '^(%d+) ') or 0)
end
