-- Announce publishes ARGV[2] on the channel KEYS[2], sharded where
-- Redis has sharded pub/sub, as the hand-offs are (see queue_hand.lua), unless
-- the lock KEYS[1] no longer holds the fence ARGV[1]: a newer leader has
-- come, or none is left. Replies 1 when it published, else 0.

--#include fence_of
if fenceOf(redis.call('GET', KEYS[1])) ~= tonumber(ARGV[1]) then
  return 0
end
if not pcall(redis.call, 'SPUBLISH', KEYS[2], ARGV[2]) then
  redis.call('PUBLISH', KEYS[2], ARGV[2])
end
return 1
