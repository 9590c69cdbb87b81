package uncomplicated

// The RWMutex's scripts. KEYS[1] holds the writer's token, with its lease
// as TTL; KEYS[2] is the set of readers; KEYS[3] the set of waiting
// writers and KEYS[5] of waiting readers, each with a short expiry that
// its attempts push back, so that a waiter that died soon stops counting;
// KEYS[4] is the fence counter; KEYS[6] the readers whose turn it is.
//
// Readers may enter only while there is no writer and no waiting writer:
// that makes the lock write-preferring. So that a stream of writers cannot
// starve readers either, a writer's release gives the readers waiting at
// that moment their turn: they enter before the next writer, which waits
// until they are in, or their entries have expired.

// rwLockScript makes one writer's attempt for token ARGV[1] with lease
// ARGV[2]. When it is blocked and ARGV[3] is not "0", the writer waits:
// it is added to the waiting writers for ARGV[3] ms, which keeps new
// readers out. With ARGV[4] = "x" (a take-over) it first evicts the
// blockers the caller saw, writer ARGV[5] ("" none) and readers ARGV[6..],
// but only if they are still exactly what blocks it. Replies {1, fence}
// when it holds the lock, also when it already did (a lost reply asked
// again: the lease restarts), and {0, 0, writer, readers} when blocked,
// with no writer nor readers when readers have their turn.
var rwLockScript = newScript(6, holdersLua+`
local t = now()
prune(KEYS[2], nil, t)
prune(KEYS[3], nil, t)
prune(KEYS[6], nil, t)
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  if ARGV[2] ~= '0' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {1, tonumber(redis.call('GET', KEYS[4]))}
end
local readers = redis.call('ZRANGE', KEYS[2], 0, -1)
local evict = false
if ARGV[4] == 'x' and (cur or '') == ARGV[5] then
  local seen = {}
  for i = 6, #ARGV do
    seen[ARGV[i]] = true
  end
  evict = true
  for _, r in ipairs(readers) do
    if not seen[r] then
      evict = false
    end
  end
end
if not evict and (cur or #readers > 0 or redis.call('ZCARD', KEYS[6]) > 0) then
  if ARGV[3] ~= '0' then
    redis.call('ZADD', KEYS[3], ms(t + tonumber(ARGV[3])), ARGV[1])
  end
  return {0, 0, cur or '', readers}
end
local fence = redis.pcall('INCR', KEYS[4])
if type(fence) ~= 'number' then
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[4])
end
for _, r in ipairs(readers) do
  redis.call('ZREM', KEYS[2], r)
end
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
redis.call('ZREM', KEYS[3], ARGV[1])
return {1, fence}
`)

// rwRLockScript makes one reader's attempt for token ARGV[1] with lease
// ARGV[2]. With a stale writer's token ARGV[3] (a take-over), it first
// evicts that writer if it still holds the lock, and wakes the waiters on
// channel ARGV[4]. A reader has its turn when a writer's release gave it
// one; otherwise it waits behind waiting writers. When it is blocked and
// ARGV[5] is not "0", it is added to the waiting readers for ARGV[5] ms.
// Replies {1, 0} when the reader is in, also when it already was (the
// lease restarts), {0, 0, writer, {}} behind a writer, and {0, 0, "", {}}
// behind waiting writers.
var rwRLockScript = newScript(6, holdersLua+`
local t = now()
for i = 2, 6 do
  if i ~= 4 then
    prune(KEYS[i], nil, t)
  end
end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], expiry(t, ARGV[2]), ARGV[1])
  return {1, 0}
end
local cur = redis.call('GET', KEYS[1])
if cur and ARGV[3] ~= '' and cur == ARGV[3] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[4], '`+wakeAll+`')
  cur = false
end
if cur or (not redis.call('ZSCORE', KEYS[6], ARGV[1]) and redis.call('ZCARD', KEYS[3]) > 0) then
  if ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[5], ms(t + tonumber(ARGV[5])), ARGV[1])
  end
  return {0, 0, cur or '', {}}
end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZADD', KEYS[2], expiry(t, ARGV[2]), ARGV[1])
return {1, 0}
`)

// rwUnlockScript frees the lock if the writer KEYS[1] is one of the tokens
// ARGV[2..], gives the readers waiting in KEYS[2] their turn (KEYS[3]), and
// wakes the waiters on channel ARGV[1] if any wait, readers or writers
// (KEYS[4]). Replies 1, or 0 when no token holds it.
var rwUnlockScript = newScript(4, holdersLua+`
local cur = redis.call('GET', KEYS[1])
for i = 2, #ARGV do
  if cur == ARGV[i] then
    redis.call('DEL', KEYS[1])
    local t = now()
    prune(KEYS[2], nil, t)
    prune(KEYS[4], nil, t)
    local readers = redis.call('EXISTS', KEYS[2]) == 1
    if readers then
      redis.call('ZUNIONSTORE', KEYS[3], 2, KEYS[3], KEYS[2], 'AGGREGATE', 'MAX')
    end
    if readers or redis.call('EXISTS', KEYS[4]) == 1 then
      redis.call('PUBLISH', ARGV[1], '`+wakeAll+`')
    end
    return 1
  end
end
return 0
`)

// rwRUnlockScript takes the reader of one of the tokens ARGV[2..] out of
// the readers KEYS[1]; when it was the last and writers wait (KEYS[2]), it
// wakes the waiters on channel ARGV[1]. Replies 1, or 0 when no token is a
// reader.
var rwRUnlockScript = newScript(2, holdersLua+`
local t = now()
prune(KEYS[1], nil, t)
prune(KEYS[2], nil, t)
local released = 0
for i = 2, #ARGV do
  released = released + redis.call('ZREM', KEYS[1], ARGV[i])
end
if released == 0 then
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PUBLISH', ARGV[1], '`+wakeAll+`')
end
return 1
`)

// leaveWaitScript takes a waiter that gave up, token ARGV[2], out of the
// waiting set KEYS[1] (an RWMutex's writers or readers, or a Semaphore's
// waiters) and KEYS[2] (the readers' turn, or the waiters again), and
// wakes the waiters on channel ARGV[1], which it may have held back.
// Replies 0.
var leaveWaitScript = newScript(2, `
if redis.call('ZREM', KEYS[1], ARGV[2]) + redis.call('ZREM', KEYS[2], ARGV[2]) > 0 then
  redis.call('PUBLISH', ARGV[1], '`+wakeAll+`')
end
return 0
`)

// rwRRefreshScript, if one of the tokens ARGV[3..] is a reader in KEYS[1],
// replaces it with ARGV[2] and restarts the lease ARGV[1]. Replies 1, or 0
// when no token is a reader.
var rwRRefreshScript = newScript(1, holdersLua+`
local t = now()
prune(KEYS[1], nil, t)
for i = 3, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[1], expiry(t, ARGV[1]), ARGV[2])
    return 1
  end
end
return 0
`)
