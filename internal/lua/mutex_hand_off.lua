-- mutexHandOff is the Lua of a release, which includes queued.lua before
-- it: it hands the lock to the oldest waiter that is alive and listens,
-- under a fence above above (the releaser's), its value marked (see
-- queued.lua), and returns that waiter's token (its message, if the
-- releasing Client's: see offer), or deletes the lock and returns 1 when
-- there is none. An offer nobody heard spends no fence.

--#include clock
--#include new_fence
--#include fenced
--#include lease
--#include queue_keep
--#include queue_hand
local function handOff(first, above)
  local fence
  while true do
    local w = nextWaiter(KEYS[2], KEYS[3], nil, first)
    first = nil
    if not w then
      break
    end
    fence = fence or newFence(above)
    if offer(w, fence) then
      setLease(KEYS[1], fenced(w.token, fence) .. queuedMark, w.claim)
      return w.reply
    end
  end
  redis.call('DEL', KEYS[1], KEYS[3])
  return 1
end
