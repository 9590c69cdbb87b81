-- RWUnlock frees the lock if the writer is one of the tokens
-- ARGV[2..] and hands it on. Writers that give up pass "q" or "-" as
-- ARGV[1] (else the hold's channel or ""), as Release takes it, and stop
-- counting as waiting writers. Replies 0 when no token holds it, else what rwHandOff
-- returns.

--#include rw_hand_off
--#include holds
--#include fence_of
--#include queue_leave
if ARGV[1] == 'q' or ARGV[1] == '-' then
  redis.call('ZREM', KEYS[3], unpack(ARGV, 2))
end
handsHere()
leave(KEYS[4], KEYS[5])
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
for i = 2, #ARGV do
  if holds(cur, ARGV[i]) then
    local next = handOff(fenceOf(cur))
    if type(next) ~= 'string' then
      redis.call('DEL', KEYS[1])
    end
    return next
  end
end
return 0
