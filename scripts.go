package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/driver"

// The Mutex's scripts. Every change to a lock is one Lua script, so it is
// atomic, and reads user data only from KEYS and ARGV. KEYS[1] is the lock,
// holding its holder's token with the lease as TTL; KEYS[2] its fence
// counter; KEYS[3] its queue (see queueLua).

// mutexHandOff is the Lua of a release: it hands the lock to the oldest
// waiter that is alive and listens, and returns that waiter's token, or
// deletes the lock and returns 1 when there is none. A fence counter that
// is not an integer puts the entry back and frees the lock, so that the
// waiters' own attempts report it.
const mutexHandOff = leaseLua + queueLua + `
local function handOff(first)
  while true do
    local w = nextWaiter(KEYS[3], nil, first)
    first = nil
    if not w then
      break
    end
    local fence = incr(KEYS[2], KEYS[3], w)
    if not fence then
      break
    end
    if offer(w, fence) then
      setLease(KEYS[1], w.token, w.claim)
      return w.token
    end
  end
  redis.call('DEL', KEYS[1])
  return 1
end
`

// acquireScript makes one attempt (see queueLua for ARGV[1..5]): SET NX,
// and INCR the fence when it is set. Replies the fence when it set the
// lock, the cheapest reply for Redis to make; {1, fence} when the lock is
// ours otherwise, when a release has just handed it to us (then the whole
// lease restarts in place of the claim, so that it starts after the caller
// sent the attempt), and
// {0, fence counter, holder's token, {}} when it is taken: a hand-off
// message whose fence is not above that counter came from a release before
// this attempt, and is stale. A fence counter that is not an integer undoes
// the SET and fails.
var acquireScript = driver.NewScript(3, `
local cur
if ARGV[2] == '0' then
  cur = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET')
else
  cur = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
end
if not cur and ARGV[4] ~= 'r' and ARGV[4] ~= 'x' then
  local fence = redis.pcall('INCR', KEYS[2])
  if type(fence) == 'number' then
    return fence
  end
end
`+queueLua+`
if cur == ARGV[1] then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, tonumber(redis.call('GET', KEYS[2]))}
end
if cur then
  wait(KEYS[3])
  return {0, seen(KEYS[2]), cur, {}}
end
local fence = redis.pcall('INCR', KEYS[2])
if type(fence) ~= 'number' then
  redis.call('DEL', KEYS[1])
  return redis.error_reply('uncomplicated: fence counter is not an integer: ' .. KEYS[2])
end
joined(KEYS[3])
return {1, fence}
`)

// takeOverScript replaces a stuck holder: only if the lock still holds
// ARGV[6] (the token the waiter watched), or is free, it stores the
// waiter's token with its lease under a new fence, and takes its entry
// out of the queue. Replies like acquireScript, also {1, fence} when the
// lock holds the waiter's token already (a lost reply asked again). The
// INCR comes first, so a broken counter fails before anything is written.
var takeOverScript = driver.NewScript(3, leaseLua+queueLua+`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, tonumber(redis.call('GET', KEYS[2]))}
end
if cur and cur ~= ARGV[6] then
  return {0, seen(KEYS[2]), cur, {}}
end
local fence = redis.call('INCR', KEYS[2])
setLease(KEYS[1], ARGV[1], ARGV[2])
joined(KEYS[3])
return {1, fence}
`)

// releaseScript releases the lock only if it holds one of our tokens,
// ARGV[2..]: usually one, more after a Refresh whose reply was lost. A
// waiter that gives up passes "q" or "-" as ARGV[1] (else ""), and leaves
// the queue first; if a release handed it the lock meanwhile, it releases
// that. Replies 0 when no token was ours, 1 when the lock is free, or the
// token of the waiter it was handed to.
var releaseScript = driver.NewScript(3, `
local ours, first = false, nil
if ARGV[1] == '' then
  local cur = redis.call('GET', KEYS[1])
  for i = 2, #ARGV do
    if cur == ARGV[i] then
      ours = true
      break
    end
  end
  if not ours then
    return 0
  end
  first = redis.call('LPOP', KEYS[3])
  if not first then
    redis.call('DEL', KEYS[1])
    return 1
  end
end
`+mutexHandOff+`
if ours then
  return handOff(first)
end
leave(KEYS[3])
local cur = redis.call('GET', KEYS[1])
for i = 2, #ARGV do
  if cur == ARGV[i] then
    return handOff()
  end
end
return 0
`)

// refreshScript, if the lock holds one of our tokens ARGV[3..], replaces it
// with ARGV[2] and restarts the lease ARGV[1]. Replies 1, or 0 when no
// token was ours.
var refreshScript = driver.NewScript(1, `
local cur = redis.call('GET', KEYS[1])
for i = 3, #ARGV do
  if cur == ARGV[i] then
    if ARGV[1] == '0' then
      redis.call('SET', KEYS[1], ARGV[2])
    else
      redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
    end
    return 1
  end
end
return 0
`)
