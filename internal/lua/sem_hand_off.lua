-- semHandOff is the Lua of a release: it hands the permit to the oldest
-- waiter that is alive and listens, if that waiter's number of permits
-- lets it in, under a new fence; an offer nobody heard spends none.
-- taken is how many permits are held, if the caller has counted them.
-- When none is, the waiter becomes the one holder: the set and the hash
-- are deleted, whatever they still list, once the counter is read, and made anew (see sem_only.lua);
-- it returns then the waiter's token and true. Else it returns that
-- token, or 1 when it handed nothing; the caller then deletes the keys
-- (dropKeys) if nobody holds.

--#include sem_only
--#include sem_fence
--#include time
--#include queue_keep
--#include queue_hand
local function dropKeys()
  redis.call('DEL', KEYS[1], KEYS[2])
end
local function handOff(taken)
  local fence
  taken = taken or redis.call('ZCARD', KEYS[1])
  local function free(w)
    return taken < (tonumber(w.kind) or 0)
  end
  while true do
    local w = nextWaiter(KEYS[3], KEYS[4], free)
    if not w then
      return 1
    end
    fence = fence or nextFence()
    if not fence then
      putBack(KEYS[3], KEYS[4], w)
      return 1
    end
    if offer(w, fence) then
      local at = expiry(now(), w.claim)
      if taken == 0 then
        if at == '+inf' then
          at = nil
        end
        dropKeys()
        onlyHolder(w.token, ms(fence), at)
        return w.reply, true
      end
      redis.call('ZADD', KEYS[1], at, w.token)
      keepFence(w.token, ms(fence))
      return w.reply
    end
  end
end
