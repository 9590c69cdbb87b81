-- SemRelease gives back the permit of one of the tokens ARGV[2..]
-- and hands it on. A waiter that gives up passes "q" or "-" as ARGV[1]
-- (else the hold's channel or ""), as Release takes it. Replies 0 when no token holds a
-- permit (its lease ended, or it was taken over), else what semHandOff
-- returns.

--#include sem_hand_off
--#include queue_leave
leave(KEYS[3], KEYS[4])
handsHere()
local t = now()
local tokens = {unpack(ARGV, 2)}
local gone, released, taken = {unpack(tokens)}, 0, nil
-- One read of the holders, when they are at most 64, tells which of them
-- are ours and alive, which others hold and which have expired. When
-- others hold, one ZREM and one HDEL drop ours and the expired; when none
-- does, the keys go whole: deleted, or made anew for the waiter handed
-- the permit (see semHandOff), which reads the counter in them first.
-- More holders are pruned and counted apart.
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
  if taken > 0 and #gone > 0 then
    redis.call('ZREM', KEYS[1], unpack(gone))
    redis.call('HDEL', KEYS[2], unpack(gone))
  end
else
  prune(KEYS[1], KEYS[2], t)
  if #tokens > 0 then
    released = redis.call('ZREM', KEYS[1], unpack(tokens))
    redis.call('HDEL', KEYS[2], unpack(tokens))
  end
  taken = redis.call('ZCARD', KEYS[1])
end
local next, only = 0, false
if released > 0 then
  next, only = handOff(taken)
end
if only then
  return next
end
if taken == 0 then
  dropKeys()
elseif released > 0 then
  expireWith(KEYS[1], KEYS[2])
end
return next
