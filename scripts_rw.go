package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/driver"

// The RWMutex's scripts. KEYS[1] holds the writer's token and fence (see
// newFenceLua), with its lease as TTL; KEYS[2] is the set of readers;
// KEYS[3] the waiting writers, each with the expiry that its attempts push
// back; KEYS[4] the fence counter that earlier versions kept, deleted when
// the lock is freed; KEYS[5] the queue (see attemptArgs).
//
// Readers may enter only while there is no writer and no waiting writer:
// that makes the lock write-preferring. So that a stream of writers cannot
// starve readers either, the queue is served in order: a release hands
// the lock to the writer at its head, or lets in together the readers at
// its head, up to the next writer.

// rwHandOff is the Lua of a release that left the lock free: it hands it
// to the oldest waiter that is alive and listens, a writer, or the readers
// queued before the next writer, all under one new fence above above (the
// releasing writer's, or nil), which their hand-off messages carry; an
// offer nobody heard spends no fence.
// Returns the token of the writer, the tokens of the readers, or 1 when
// nobody waits.
const rwHandOff = clockLua + newFenceLua + fencedLua + timeLua + leaseLua + queueKeepLua + queueHandLua + `
local function reading(w)
  return w.kind == 's'
end
local function handOff(above)
  local readers = {}
  local fence
  while true do
    local fits
    if #readers > 0 then
      fits = reading
    end
    local w = nextWaiter(KEYS[5], fits)
    if not w then
      break
    end
    if not reading(w) then
      redis.call('ZREM', KEYS[3], w.token)
      expireWith(KEYS[3])
    end
    fence = fence or newFence(above)
    if offer(w, fence) then
      if not reading(w) then
        setLease(KEYS[1], fenced(w.token, fence), w.claim)
        return w.token
      end
      redis.call('ZADD', KEYS[2], expiry(now(), w.claim), w.token)
      readers[#readers + 1] = w.token
    end
  end
  if #readers > 0 then
    expireWith(KEYS[2])
    return readers
  end
  return 1
end
`

// rwLockScript makes one writer's attempt (see attemptArgs for ARGV[1..5]).
// With ARGV[6] = "x" (a take-over) it first evicts the blockers the caller
// saw, writer ARGV[7] ("" none) and readers ARGV[8..], but only if they
// are still exactly what blocks it. Replies {1, fence} when it holds the
// lock, also when it already did (a hand-off, or a lost reply asked again:
// the lease restarts), and {0, writer, readers} when blocked. A blocked
// writer that waits counts among the waiting writers for its expiry,
// queued or not.
var rwLockScript = driver.NewScript(5, clockLua+newFenceLua+fencedLua+holdsLua+fenceOfLua+timeLua+leaseLua+queueKeepLua+queueWaitLua+`
local cur = redis.call('GET', KEYS[1])
if cur and holds(cur, ARGV[1]) then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, fenceOf(cur) or 0}
end
local t = now()
local readers = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(t), '+inf')
local evict = false
if ARGV[6] == 'x' and (not cur and ARGV[7] == '' or cur and ARGV[7] ~= '' and holds(cur, ARGV[7])) then
  local seen = {}
  for i = 8, #ARGV do
    seen[ARGV[i]] = true
  end
  evict = true
  for _, r in ipairs(readers) do
    if not seen[r] then
      evict = false
    end
  end
end
if not evict and (cur or #readers > 0) then
  if ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[3], ms(t + tonumber(ARGV[5])), ARGV[1])
    expireWith(KEYS[3])
    wait(KEYS[5])
  end
  return {0, cur or '', readers}
end
local fence = newFence(fenceOf(cur))
redis.call('DEL', KEYS[2])
setLease(KEYS[1], fenced(ARGV[1], fence), ARGV[2])
if ARGV[5] ~= '0' then
  redis.call('ZREM', KEYS[3], ARGV[1])
  expireWith(KEYS[3])
end
joined(KEYS[5])
return {1, fence}
`)

// rwRLockScript makes one reader's attempt (see attemptArgs for ARGV[1..5]).
// With a stale writer's token ARGV[6] (a take-over), it first evicts that
// writer if it still holds the lock. A reader waits behind a writer and
// behind waiting writers. Replies {1, 0} when the reader is in, also when
// it already was (a hand-off, or a lost reply asked again: the lease
// restarts), and {0, writer, {}} when blocked, with no writer when only
// waiting writers block it.
var rwRLockScript = driver.NewScript(5, clockLua+holdsLua+timeLua+queueKeepLua+queueWaitLua+`
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
  wait(KEYS[5])
  return {0, cur or '', {}}
end
joined(KEYS[5])
redis.call('ZADD', KEYS[2], expiry(t, ARGV[2]), ARGV[1])
expireWith(KEYS[2])
return {1, 0}
`)

// rwUnlockScript frees the lock if the writer is one of the tokens
// ARGV[2..] and hands it on. A writer that gives up passes "q" or "-" as
// ARGV[1] (else ""), as releaseScript takes it, and stops counting as a
// waiting writer. Replies 0 when no token holds it, else what rwHandOff
// returns.
var rwUnlockScript = driver.NewScript(5, rwHandOff+holdsLua+fenceOfLua+queueLeaveLua+`
if ARGV[1] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[2])
  expireWith(KEYS[3])
end
leave(KEYS[5])
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
for i = 2, #ARGV do
  if holds(cur, ARGV[i]) then
    local next = handOff(fenceOf(cur))
    if type(next) ~= 'string' then
      redis.call('DEL', KEYS[1], KEYS[4])
    end
    return next
  end
end
return 0
`)

// rwRUnlockScript takes the reader of one of the tokens ARGV[2..] out of
// the readers and, when it was the last, hands the lock on. A reader that
// gives up passes "q" or "-" as ARGV[1] (else ""). Replies 0 when no token
// is a reader, else 1 or what rwHandOff returns.
var rwRUnlockScript = driver.NewScript(5, rwHandOff+queueLeaveLua+`
leave(KEYS[5])
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
  local next = handOff(nil)
  if next == 1 then
    redis.call('DEL', KEYS[4])
  end
  return next
end
return 1
`)

// rwRRefreshScript, if one of the tokens ARGV[3..] is a reader in KEYS[2]
// (KEYS[1] is the writer, unused), replaces it with ARGV[2] and restarts
// the lease ARGV[1]. Replies 1, or 0 when no token is a reader.
var rwRRefreshScript = driver.NewScript(2, clockLua+timeLua+`
local t = now()
prune(KEYS[2], nil, t)
for i = 3, #ARGV do
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], expiry(t, ARGV[1]), ARGV[2])
    expireWith(KEYS[2])
    return 1
  end
end
return 0
`)
