-- ForceRW removes the writer and the live readers of an RWMutex and
-- hands the lock on (see rwHandOff). Replies the writer, as the lock held
-- it, "" when there was none, and then the readers' tokens.

--#include rw_hand_off
--#include fence_of
local t = now()
prune(KEYS[2], nil, t)
local gone = redis.call('ZRANGE', KEYS[2], 0, -1)
local writer = redis.call('GET', KEYS[1]) or ''
table.insert(gone, 1, writer)
if #gone == 1 and writer == '' then
  return {}
end
redis.call('DEL', KEYS[1], KEYS[2])
handOff(fenceOf(writer))
return gone
