-- Resume reads the hold a handle names (see wire.Handle), whose lock has
-- the keys KEYS[1..2]. Of a Mutex, or an RWMutex's writer (ARGV[2] ""),
-- it replies what KEYS[1] holds ("" for nothing) and its PTTL: the hold is
-- there if that is its holder's value, ARGV[1], or the same hold's after
-- a Refresh (see wire.SameHold). Of a permit, it replies ARGV[1], its
-- token, and the lease it has left (-1 for none) when it is in the holder
-- set KEYS[1] with a lease that has not ended and its fence ARGV[2] in the
-- hash KEYS[2]; else "" and -2.

--#include clock
--#include time
if ARGV[2] == '' then
  return {redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return {'', -2}
end
if score == 'inf' then
  return {ARGV[1], -1}
end
local left = tonumber(score) - now()
if left <= 0 then
  return {'', -2}
end
return {ARGV[1], left}
