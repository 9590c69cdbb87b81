-- Inspect reads a lock of any kind. KEYS are the Mutex's three keys,
-- then the RWMutex's five, then the Semaphore's four, as their own scripts
-- take them; ARGV[1] bounds the holders and waiters read. Replies {time in
-- ms, mutex, rwmutex, semaphore}, where each kind is a list whose first
-- item counts the kind's keys that exist:
--
--	mutex:     {exists, {holder, pttl}, queue}
--	rwmutex:   {exists, {writer, pttl}, readers, waiting writers, queue}
--	semaphore: {exists, holders, their fences, queue}
--
-- A holder or writer is its value, "<token> <fence>" (see fenced), or ""
-- when there is none. Holders are {token, expiry score} pairs of the live
-- ones; a queue is {token, entry} pairs of the queued waiters still alive.
-- A key of the wrong type reads as missing.

--#include clock
--#include time
local t = now()
local limit = tonumber(ARGV[1])
local function get(key)
  local ok, v = pcall(redis.call, 'GET', key)
  return (ok and v) or ''
end
local function token(key)
  return {get(key), redis.call('PTTL', key)}
end
local function holders(set)
  local ok, v = pcall(redis.call, 'ZRANGEBYSCORE', set, '(' .. ms(t), '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
  return (ok and v) or {}
end
local function queue(q, entries)
  local ok, tokens = pcall(redis.call, 'LRANGE', q, 0, limit - 1)
  local out = {}
  for _, tok in ipairs((ok and tokens) or {}) do
    local got, value = pcall(redis.call, 'HGET', entries, tok)
    local deadline, entry = string.match((got and value) or '', '^(%d+) (.+)$')
    if entry and tonumber(deadline) > t then
      out[#out + 1] = tok
      out[#out + 1] = entry
    end
  end
  return out
end
local function exists(first, last)
  local n = 0
  for i = first, last do
    n = n + redis.call('EXISTS', KEYS[i])
  end
  return n
end
local permits = holders(KEYS[9])
local fences = {}
for i = 1, #permits, 2 do
  local ok, f = pcall(redis.call, 'HGET', KEYS[10], permits[i])
  fences[#fences + 1] = (ok and f) or ''
end
local waiting = 0
if redis.call('EXISTS', KEYS[6]) == 1 then
  waiting = redis.call('ZCOUNT', KEYS[6], '(' .. ms(t), '+inf')
end
return {
  t,
  {exists(1, 3), token(KEYS[1]), queue(KEYS[2], KEYS[3])},
  {exists(4, 8), token(KEYS[4]), holders(KEYS[5]), waiting, queue(KEYS[7], KEYS[8])},
  {exists(9, 12), permits, fences, queue(KEYS[11], KEYS[12])},
}
