-- QuickRelease is the release of a Mutex's hold that took the lock free
-- (see wire.Grant): it deletes the lock if it holds one of the hold's
-- values ARGV[1..] (see release.lua) unmarked, and replies 1; it replies
-- -1, and changes nothing, when the value is ours but marked (see
-- queued.lua), for the caller to release with Release, which hands the
-- lock on; 0 when no value was ours. It declares the lock's key alone,
-- which makes it half the cost of Release in Redis.

--#include queued
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
local value, queued = unmark(cur)
for i = 1, #ARGV do
  if value == ARGV[i] then
    if queued then
      return -1
    end
    redis.call('DEL', KEYS[1])
    return 1
  end
end
return 0
