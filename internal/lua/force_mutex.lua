-- ForceMutex removes the holder of a Mutex and hands the lock on
-- (see mutexHandOff). Replies the holder it removed, as the lock held it,
-- or nothing.

--#include fence_of
--#include queued
--#include mutex_hand_off
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {}
end
redis.call('DEL', KEYS[1])
handOff(nil, fenceOf(cur))
return {cur}
