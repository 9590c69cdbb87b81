-- sem_only.lua writes grants of a semaphore. The hash of fences keeps
-- each holder's fence, and in its field counter ("fence") the highest
-- fence granted to a holder still there (see sem_fence.lua): keepFence
-- writes both in one HSET. onlyHolder makes token the one holder of a
-- semaphore whose set and hash do not exist, under fence f (a string),
-- until at (ms, a string; nil for no lease): the keys expire with it, as
-- expireWith makes them, in four commands at most and no read. The first
-- attempt on a free semaphore and a hand-off to a waiter when nobody else
-- holds a permit grant so.

local counter = 'fence'
local function keepFence(token, f)
  redis.call('HSET', KEYS[2], token, f, counter, f)
end
local function onlyHolder(token, f, at)
  keepFence(token, f)
  if not at then
    redis.call('ZADD', KEYS[1], '+inf', token)
    return
  end
  redis.call('ZADD', KEYS[1], at, token)
  redis.call('PEXPIREAT', KEYS[1], at)
  redis.call('PEXPIREAT', KEYS[2], at)
end
