-- RWRRefresh, if one of the tokens ARGV[3..] is a reader in KEYS[2]
-- (KEYS[1] is the writer, unused), replaces it with ARGV[2] and restarts
-- the lease ARGV[1]. Replies 1, or 0 when no token is a reader.

--#include clock
--#include time
local t = now()
prune(KEYS[2], nil, t)
for i = 3, #ARGV do
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], expiry(t, ARGV[1]), ARGV[2])
    expireWith(KEYS[2])
    return 1
  end
end
return 0
