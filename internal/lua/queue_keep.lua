-- The queue's Lua, in pieces, so that a script defines only the
-- functions it may call: queue_keep.lua makes a queue outlive each entry
-- written (expiry ms): when less than the expiry is left, it gives the
-- queue twice that, so that a busy queue costs a write only once per
-- expiry; queue_wait.lua is an acquiring script's (wait, joined),
-- queue_leave.lua a waiter's leave, queue_hand.lua a hand-off's (nextWaiter,
-- putBack, offer). The first is needed by the second and the last.

local function keepQueue(queue, expiry)
  if redis.call('PTTL', queue) < tonumber(expiry) then
    redis.call('PEXPIRE', queue, 2 * expiry)
  end
end
