-- SemRefresh, if one of the tokens ARGV[3..] holds a permit,
-- replaces it with ARGV[2], which keeps its fence, and restarts the lease
-- ARGV[1]. Replies 1, or 0 when no token holds a permit.

--#include clock
--#include time
local t = now()
prune(KEYS[1], KEYS[2], t)
for i = 3, #ARGV do
  local fence = redis.call('HGET', KEYS[2], ARGV[i])
  if fence and redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[1]), ARGV[2])
    redis.call('HSET', KEYS[2], ARGV[2], fence)
    expireWith(KEYS[1], KEYS[2])
    return 1
  end
end
return 0
