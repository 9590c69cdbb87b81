-- Refresh, if the lock holds one of our tokens ARGV[3..], replaces it
-- with ARGV[2], keeping its fence, and restarts the lease ARGV[1]. Replies
-- 1, or 0 when no token was ours.

--#include holds
--#include lease
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
for i = 3, #ARGV do
  if holds(cur, ARGV[i]) then
    setLease(KEYS[1], ARGV[2] .. string.sub(cur, #ARGV[i] + 1), ARGV[1])
    return 1
  end
end
return 0
