-- SemRelease gives back the permit of one of the tokens ARGV[2..]
-- and hands it on. A waiter that gives up passes "q" or "-" as ARGV[1]
-- (else ""), as Release takes it. Replies 0 when no token holds a
-- permit (its lease ended, or it was taken over), else what semHandOff
-- returns.

--#include sem_hand_off
--#include queue_leave
leave(KEYS[4])
local t = now()
local tokens = {unpack(ARGV, 2)}
local gone, released, taken = {unpack(tokens)}, 0, nil
-- One read of the holders, when they are at most 64, tells which of them
-- are ours and alive, which others hold and which have expired: the keys
-- go at once when no other holds, else one ZREM and one HDEL drop ours
-- and the expired. More are pruned and counted apart.
local view = redis.call('ZRANGE', KEYS[1], 0, 64, 'WITHSCORES')
if #view <= 128 then -- all of them
  local ours = {}
  for _, token in ipairs(tokens) do
    ours[token] = true
  end
  taken = 0
  for i = 1, #view, 2 do
    local alive = view[i + 1] == 'inf' or tonumber(view[i + 1]) > t
    if ours[view[i]] then
      released = released + (alive and 1 or 0)
    elseif alive then
      taken = taken + 1
    else
      gone[#gone + 1] = view[i]
    end
  end
  if taken == 0 then
    redis.call('DEL', KEYS[1], KEYS[2])
  elseif #gone > 0 then
    redis.call('ZREM', KEYS[1], unpack(gone))
    redis.call('HDEL', KEYS[2], unpack(gone))
  end
else
  prune(KEYS[1], KEYS[2], t)
  if #tokens > 0 then
    released = redis.call('ZREM', KEYS[1], unpack(tokens))
    redis.call('HDEL', KEYS[2], unpack(tokens))
  end
end
if released == 0 then
  return 0
end
local next, only = handOff(taken)
if not only then
  expireWith(KEYS[1], KEYS[2], KEYS[3])
end
return next
