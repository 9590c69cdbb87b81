-- RWRLock makes one reader's attempt (see wire.AttemptArgs for ARGV[1..5]).
-- With a stale writer's token ARGV[6] (a take-over), it first evicts that
-- writer if it still holds the lock. A reader waits behind a writer and
-- behind waiting writers. Replies {1, 0} when the reader is in, also when
-- it already was (a hand-off, or a lost reply asked again: the lease
-- restarts), and {0, writer, {}} when blocked, with no writer when only
-- waiting writers block it.

--#include clock
--#include holds
--#include time
--#include queue_keep
--#include queue_wait
local t = now()
prune(KEYS[2], nil, t)
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], expiry(t, ARGV[2]), ARGV[1])
  expireWith(KEYS[2])
  return {1, 0}
end
local cur = redis.call('GET', KEYS[1])
if cur and ARGV[6] ~= '' and holds(cur, ARGV[6]) then
  redis.call('DEL', KEYS[1])
  cur = false
end
prune(KEYS[3], nil, t)
if cur or redis.call('ZCARD', KEYS[3]) > 0 then
  wait(KEYS[4], KEYS[5])
  return {0, cur or '', {}}
end
joined(KEYS[4], KEYS[5])
redis.call('ZADD', KEYS[2], expiry(t, ARGV[2]), ARGV[1])
expireWith(KEYS[2])
return {1, 0}
