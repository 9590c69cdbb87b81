-- time.lua is what the scripts on holder sets share; it needs clock.lua.
-- now is Redis's clock in milliseconds; live tells whether member's lease
-- in set has not ended: a score of +inf reads "inf", which miniredis's Lua
-- cannot turn into a number.
-- expireWith makes set, and the keys kept beside it, expire when its
-- latest score does (never for +inf), and deletes those keys when set is
-- empty; a script that adds to a set, or takes a holder from it, calls
-- it, but for the waiting writers' set (see outlive in rw_lock.lua), a
-- Semaphore's grant to a lone holder (see sem_only.lua) and a release
-- that frees a Semaphore, which deletes its keys itself.

local function now()
  return math.floor(clock() / 1000)
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
local function live(set, member, t)
  local s = redis.call('ZSCORE', set, member)
  return s and (s == 'inf' or tonumber(s) > t)
end
local function prune(set, fences, t)
  if not fences then
    redis.call('ZREMRANGEBYSCORE', set, '-inf', ms(t))
    return
  end
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
local function expireWith(set, ...)
  local top = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  local beside = {...}
  if #top == 0 then
    if #beside > 0 then
      redis.call('DEL', unpack(beside))
    end
    return
  end
  table.insert(beside, 1, set)
  for _, key in ipairs(beside) do
    if top[2] == 'inf' then
      redis.call('PERSIST', key)
    else
      redis.call('PEXPIREAT', key, ms(tonumber(top[2])))
    end
  end
end
