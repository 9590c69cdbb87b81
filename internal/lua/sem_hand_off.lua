-- semHandOff is the Lua of a release: it hands the permit to the oldest
-- waiter that is alive and listens, if that waiter's number of permits
-- lets it in, under a new fence; an offer nobody heard spends none.
-- Returns its token, or 1.

--#include sem_fence
--#include time
--#include queue_keep
--#include queue_hand
local function free(w)
  return redis.call('ZCARD', KEYS[1]) < (tonumber(w.kind) or 0)
end
local function handOff()
  local fence
  while true do
    local w = nextWaiter(KEYS[4], free)
    if not w then
      return 1
    end
    fence = fence or nextFence()
    if not fence then
      putBack(KEYS[4], w)
      return 1
    end
    if offer(w, fence) then
      keepFence(fence)
      redis.call('ZADD', KEYS[1], expiry(now(), w.claim), w.token)
      redis.call('HSET', KEYS[2], w.token, ms(fence))
      return w.token
    end
  end
end
