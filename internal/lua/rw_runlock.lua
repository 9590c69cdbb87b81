-- RWRUnlock takes the reader of one of the tokens ARGV[2..] out of
-- the readers and, when it was the last, hands the lock on. A reader that
-- gives up passes "q" or "-" as ARGV[1] (else the hold's channel or ""). Replies 0 when no token
-- is a reader, else 1 or what rwHandOff returns.

--#include rw_hand_off
--#include queue_leave
leave(KEYS[4], KEYS[5])
handsHere()
local t = now()
prune(KEYS[2], nil, t)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('ZREM', KEYS[2], ARGV[i])
end
if released == 0 then
  return 0
end
expireWith(KEYS[2])
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  return handOff(nil)
end
return 1
