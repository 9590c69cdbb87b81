-- sem_only.lua makes token the one holder of a semaphore none of whose
-- keys holds anyone else, under fence f (a string), until at (ms, a
-- string; nil for no lease): the keys expire with it, as expireWith makes
-- them, in five commands at most and no read. The first attempt on a free
-- semaphore and a hand-off to a waiter when nobody else holds a permit
-- grant so.

local function onlyHolder(token, f, at)
  redis.call('HSET', KEYS[2], token, f)
  if not at then
    redis.call('ZADD', KEYS[1], '+inf', token)
    redis.call('PERSIST', KEYS[2])
    redis.call('SET', KEYS[3], f)
    return
  end
  redis.call('ZADD', KEYS[1], at, token)
  redis.call('PEXPIREAT', KEYS[1], at)
  redis.call('PEXPIREAT', KEYS[2], at)
  redis.call('SET', KEYS[3], f, 'PXAT', at)
end
