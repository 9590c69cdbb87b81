package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/driver"

// The Mutex's scripts. Every change to a lock is one Lua script, so it is
// atomic, and reads user data only from KEYS and ARGV. KEYS[1] is the lock,
// holding its holder's token and fence (see newFenceLua) with the lease as
// TTL; KEYS[2] the fence counter that earlier versions kept, which a
// release that frees the lock deletes; KEYS[3] its queue (see attemptArgs).

// mutexHandOff is the Lua of a release: it hands the lock to the oldest
// waiter that is alive and listens, under a fence above above (the
// releaser's), and returns that waiter's token, or deletes the lock and
// returns 1 when there is none. An offer nobody heard spends no fence.
const mutexHandOff = clockLua + newFenceLua + fencedLua + leaseLua + queueKeepLua + queueHandLua + `
local function handOff(first, above)
  local fence
  while true do
    local w = nextWaiter(KEYS[3], nil, first)
    first = nil
    if not w then
      break
    end
    fence = fence or newFence(above)
    if offer(w, fence) then
      setLease(KEYS[1], fenced(w.token, fence), w.claim)
      return w.token
    end
  end
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
`

// acquireScript makes one attempt (see attemptArgs for ARGV[1..5]): SET
// NX the token under a new fence, Redis's clock, which is all a grant of a
// free lock needs (see newFenceLua); a waiter in the queue (op "r" or
// "x") has found the lock taken, so it looks first and spares the clock
// while it still is; a first attempt ("" or "q") sets at once. Replies the
// fence when it set the lock, the cheapest reply for Redis to make; {1,
// fence} when the lock is ours otherwise, when a release has just handed
// it to us (then the whole lease restarts in place of the claim, so that
// it starts after the caller sent the attempt), and {0, holder, {}} when
// it is taken. Up to the reply of a set lock it defines no function, and
// writes the holder's value as fenced does, for the Redis CPU of the most
// common attempt; TestAcquireScript_writesTheValueAsFencedDoes checks
// that both agree.
var acquireScript = driver.NewScript(3, `
local op, cur, fence = ARGV[4], nil, nil
if op == 'r' or op == 'x' then
  cur = redis.call('GET', KEYS[1])
end
if not cur then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  local value = ARGV[1] .. ' ' .. t[1] .. ('000000'):sub(#t[2] + 1) .. t[2]
  if ARGV[2] == '0' then
    cur = redis.call('SET', KEYS[1], value, 'NX', 'GET')
  else
    cur = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2], 'GET')
  end
  if not cur and op ~= 'r' and op ~= 'x' then
    return fence
  end
end
`+holdsLua+fenceOfLua+queueKeepLua+queueWaitLua+`
if cur and holds(cur, ARGV[1]) then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, fenceOf(cur) or 0}
end
if cur then
  wait(KEYS[3])
  return {0, cur, {}}
end
joined(KEYS[3])
return {1, fence}
`)

// takeOverScript replaces a stuck holder: only if the lock still holds
// ARGV[6] (the token the waiter watched), or is free, it stores the
// waiter's token with its lease under a fence above the stuck holder's,
// and takes its entry out of the queue; otherwise it restarts the entry,
// as a blocked attempt does. Replies like acquireScript, also {1, fence}
// when the lock holds the waiter's token already (a lost reply asked
// again).
var takeOverScript = driver.NewScript(3, clockLua+newFenceLua+fencedLua+holdsLua+fenceOfLua+leaseLua+queueKeepLua+queueWaitLua+`
local cur = redis.call('GET', KEYS[1])
if cur and holds(cur, ARGV[1]) then
  if ARGV[2] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {1, fenceOf(cur) or 0}
end
if cur and not holds(cur, ARGV[6]) then
  wait(KEYS[3])
  return {0, cur, {}}
end
local fence = newFence(fenceOf(cur))
setLease(KEYS[1], fenced(ARGV[1], fence), ARGV[2])
joined(KEYS[3])
return {1, fence}
`)

// releaseScript releases the lock only if it holds one of our tokens,
// ARGV[2..]: usually one, more after a Refresh whose reply was lost. A
// hold passes ARGV[1] "" and its tokens as the key holds them, with its
// fence (see hold.inKey), and they are compared whole. A waiter that gives
// up passes "q" or "-" (else ""), and leaves the queue first; if a release
// handed it the lock meanwhile, it releases that. "-" also releases a
// token whose fence the caller does not know (see owned): then ARGV[2..]
// are tokens alone. Replies 0 when no token was ours, 1 when the lock is
// free, or the token of the waiter it was handed to.
var releaseScript = driver.NewScript(3, `
local ours, first = false, nil
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if cur then
    for i = 2, #ARGV do
      if cur == ARGV[i] then
        ours = true
        break
      end
    end
  end
  if not ours then
    return 0
  end
  first = redis.call('LPOP', KEYS[3])
  if not first then
    redis.call('DEL', KEYS[1], KEYS[2])
    return 1
  end
end
`+fenceOfLua+mutexHandOff+`
if ours then
  return handOff(first, fenceOf(cur))
end
`+holdsLua+queueLeaveLua+`
leave(KEYS[3])
if cur then
  for i = 2, #ARGV do
    if holds(cur, ARGV[i]) then
      return handOff(nil, fenceOf(cur))
    end
  end
end
return 0
`)

// refreshScript, if the lock holds one of our tokens ARGV[3..], replaces it
// with ARGV[2], keeping its fence, and restarts the lease ARGV[1]. Replies
// 1, or 0 when no token was ours.
var refreshScript = driver.NewScript(1, holdsLua+leaseLua+`
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
for i = 3, #ARGV do
  if holds(cur, ARGV[i]) then
    setLease(KEYS[1], ARGV[2] .. string.sub(cur, #ARGV[i] + 1), ARGV[1])
    return 1
  end
end
return 0
`)
