package uncomplicated

// The Lua that every lock's scripts share.
//
// Times are milliseconds of Redis's own clock (TIME), so that the clocks
// of the Clients never matter. A lease argument is in milliseconds, "0"
// meaning no expiry.
//
// The holders of an RWMutex (its readers) and of a Semaphore are members
// of a sorted set whose score is when their lease ends, or +inf without a
// lease; the scripts first drop the members whose lease has ended, so that
// a holder that died frees its share by itself and no count can go wrong.
//
// Every lock has a queue of waiters: a list of entries "<kind> <token>
// <lease> <channel>", oldest first, where kind is "x" for a waiter of the
// lock itself (a Mutex's, an RWMutex's writer), "s" for an RWMutex's
// reader and, for a Semaphore, the number of permits the waiter asks for.
// Beside it, a sorted set of the waiters holds, for each token, when the
// waiter stops counting as alive: each of its attempts pushes that back by
// its expiry (a few ticks), so that a waiter that died soon stops counting.
// A waiter joins the queue once its Client listens on channel. A release
// hands the lock to the oldest entry that is alive: it makes that waiter a
// holder with its lease, under a new fence, and publishes "<token>
// <fence>" on its channel. PUBLISH replies how many connections listen, so
// an entry whose Client lost its connection is passed over too.

// holdersLua is what the scripts on holder sets share.
const holdersLua = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms(n)
  return string.format('%d', n)
end
local function expiry(t, lease)
  if lease == '0' then
    return '+inf'
  end
  return ms(t + tonumber(lease))
end
local function setLease(key, token, lease)
  if lease == '0' then
    redis.call('SET', key, token)
  else
    redis.call('SET', key, token, 'PX', lease)
  end
end
local function prune(set, fences, t)
  while true do
    local gone = redis.call('ZRANGEBYSCORE', set, '-inf', ms(t), 'LIMIT', 0, 100)
    if #gone == 0 then
      return
    end
    for _, m in ipairs(gone) do
      redis.call('ZREM', set, m)
      if fences then
        redis.call('HDEL', fences, m)
      end
    end
  end
end
`

// queueLua is the queue of waiters, for the acquiring and releasing
// scripts. An acquiring script's ARGV are, first, the waiter's token, its
// lease, its entry, what to do with the entry (op), and its expiry in ms,
// "0" for an attempt that does not wait (TryLock).
//
// op: join the queue once the subscription is confirmed ("q"), rejoin if
// a release passed the entry over ("r", the entry is no longer among the
// waiters), or only leave the queue on success ("x": in the queue but not
// listening), or nothing (""). A blocked attempt that waits counts the
// waiter as alive for its expiry when it is in the queue, and always
// (always) for an RWMutex's writer, whose waiting holds readers back.
//
// A release takes ARGV[1], then the tokens of the hold. ARGV[1] is "" for
// a holder's release; a waiter that gives up passes its entry, or "-" if it
// never joined the queue, so that it stops counting as waiting (a waiting
// writer holds readers back), and releases what a hand-off may have just
// given it.
const queueLua = holdersLua + `
local function wait(queue, waiters, t, always)
  local op = ARGV[4]
  if op == '' and not always then
    return
  end
  local till = ms((t or now()) + tonumber(ARGV[5]))
  if op == 'r' and (redis.call('ZADD', waiters, 'XX', 'CH', till, ARGV[1]) == 1 or redis.call('ZSCORE', waiters, ARGV[1])) then
    return
  end
  if op == 'q' or op == 'r' then
    redis.call('RPUSH', queue, ARGV[3])
  end
  redis.call('ZADD', waiters, till, ARGV[1])
end
local function joined(queue, waiters, always)
  if ARGV[4] ~= '' or always then
    redis.call('ZREM', waiters, ARGV[1])
  end
  if ARGV[4] == 'r' or ARGV[4] == 'x' then
    redis.call('LREM', queue, 0, ARGV[3])
  end
end
local function leave(queue, waiters, entry, token)
  if entry ~= '' then
    redis.call('ZREM', waiters, token)
    if entry ~= '-' then
      redis.call('LREM', queue, 0, entry)
    end
  end
end
local function parse(entry)
  local kind, token, lease, channel = string.match(entry, '^(%S+) (%S+) (%d+) (.+)$')
  if token then
    return {kind = kind, token = token, lease = lease, channel = channel, entry = entry}
  end
end
local function alive(waiters, token, t)
  local s = redis.call('ZSCORE', waiters, token)
  return s and tonumber(s) > t
end
local function nextWaiter(queue, waitersOf, t, only)
  while true do
    local entry
    if only then
      entry = redis.call('LINDEX', queue, 0)
      if not entry or string.sub(entry, 1, #only + 1) ~= only .. ' ' then
        return nil
      end
      redis.call('LPOP', queue)
    else
      entry = redis.call('LPOP', queue)
    end
    if not entry then
      return nil
    end
    t = t or now()
    local w = parse(entry)
    if w then
      if alive(waitersOf(w.kind), w.token, t) then
        return w
      end
      redis.call('ZREM', waitersOf(w.kind), w.token)
    end
  end
end
local function offer(w, waiters, fence)
  redis.call('ZREM', waiters, w.token)
  return redis.call('PUBLISH', w.channel, w.token .. ' ' .. string.format('%d', fence)) > 0
end
local function incr(key, queue, w)
  local fence = redis.pcall('INCR', key)
  if type(fence) ~= 'number' then
    redis.call('LPUSH', queue, w.entry)
    return nil
  end
  return fence
end
`

// heldScript replies 1 if one of the tokens ARGV[1..] is in the holder set
// KEYS[1] with a lease that has not ended, else 0. A score of +inf reads
// "inf", which miniredis's Lua cannot turn into a number.
var heldScript = newScript(1, holdersLua+`
local t = now()
for i = 1, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and (s == 'inf' or tonumber(s) > t) then
    return 1
  end
end
return 0
`)
