-- rwHandOff is the Lua of a release that left the lock free: it hands it
-- to the oldest waiter that is alive and listens, a writer, or the readers
-- queued before the next writer, all under one new fence above above (the
-- releasing writer's, or nil), which their hand-off messages carry; an
-- offer nobody heard spends no fence.
-- Returns the token of the writer, the tokens of the readers (the
-- messages of the releasing Client's: see offer), or 1 when nobody waits.

--#include clock
--#include new_fence
--#include fenced
--#include time
--#include lease
--#include queue_keep
--#include queue_hand
local function reading(w)
  return w.kind == 's'
end
local function handOff(above)
  local readers = {}
  local fence
  while true do
    local fits
    if #readers > 0 then
      fits = reading
    end
    local w = nextWaiter(KEYS[4], KEYS[5], fits)
    if not w then
      break
    end
    if not reading(w) then
      redis.call('ZREM', KEYS[3], w.token)
    end
    fence = fence or newFence(above)
    if offer(w, fence) then
      if not reading(w) then
        setLease(KEYS[1], fenced(w.token, fence), w.claim)
        return w.reply
      end
      redis.call('ZADD', KEYS[2], expiry(now(), w.claim), w.token)
      readers[#readers + 1] = w.reply
    end
  end
  if #readers > 0 then
    expireWith(KEYS[2])
    return readers
  end
  return 1
end
