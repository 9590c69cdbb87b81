-- Release releases the lock only if it holds one of our tokens,
-- ARGV[2..]: usually one, more after a Refresh whose reply was lost. A
-- hold passes as ARGV[1] its Client's wake-up channel or "" (see here, in
-- queue_hand.lua), and its tokens as the key holds them, with its fence
-- (see hold.inKey), and they are compared whole, the key's mark aside
-- (see queued.lua). Waiters that give up pass "q" or "-" (else "") and
-- their tokens alone, several at once (see cleanup.go), and leave the
-- queue first ("q"); if a release handed one of them the lock meanwhile,
-- it releases that. "-" also releases a token whose fence the caller does
-- not know (see owned). Replies 0 when no token was ours, 1 when the lock
-- is free, or the token of the waiter it was handed to (its hand-off
-- message when it is the releasing Client's; see offer).

--#include queued
local ours, first = false, nil
local cur = redis.call('GET', KEYS[1])
if ARGV[1] ~= 'q' and ARGV[1] ~= '-' then
  if cur then
    local value = unmark(cur)
    for i = 2, #ARGV do
      if value == ARGV[i] then
        ours = true
        break
      end
    end
  end
  if not ours then
    return 0
  end
  first = redis.call('LPOP', KEYS[2])
  if not first then
    redis.call('DEL', KEYS[1], KEYS[3])
    return 1
  end
end
--#include fence_of
--#include mutex_hand_off
if ours then
  handsHere()
  return handOff(first, fenceOf(cur))
end
--#include holds
--#include queue_leave
leave(KEYS[2], KEYS[3])
if cur then
  for i = 2, #ARGV do
    if holds(cur, ARGV[i]) then
      return handOff(nil, fenceOf(cur))
    end
  end
end
return 0
