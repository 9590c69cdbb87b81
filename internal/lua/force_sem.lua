-- ForceSem removes the live permits of a Semaphore and hands them
-- on, as many as its waiters' number of permits lets in (see semHandOff);
-- each hand-off takes a queue entry, so the loop ends. Replies the tokens
-- it removed.

--#include sem_hand_off
local t = now()
prune(KEYS[1], KEYS[2], t)
local gone = redis.call('ZRANGE', KEYS[1], 0, -1)
if #gone == 0 then
  return {}
end
if handOff(0) == 1 then
  dropKeys()
  return gone
end
while handOff() ~= 1 do
end
expireWith(KEYS[1], KEYS[2])
return gone
