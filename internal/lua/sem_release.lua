-- SemRelease gives back the permit of one of the tokens ARGV[2..]
-- and hands it on. A waiter that gives up passes "q" or "-" as ARGV[1]
-- (else ""), as Release takes it. Replies 0 when no token holds a
-- permit (its lease ended, or it was taken over), else what semHandOff
-- returns.

--#include sem_hand_off
--#include queue_leave
leave(KEYS[4])
local t = now()
prune(KEYS[1], KEYS[2], t)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if released == 0 then
  return 0
end
local next = handOff()
expireWith(KEYS[1], KEYS[2], KEYS[3])
return next
