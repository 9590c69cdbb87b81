-- queue_hand

-- here is the wake-up channel of the Client whose hold a release gives
-- back (its ARGV[1]), or nil: a waiter of that Client is handed the lock
-- in the reply, which its Client passes on in-process, without a message
-- (see offer). Waiters that give up pass "q" or "-" instead (see leave).
local here
local function handsHere()
  if ARGV[1] ~= 'q' and ARGV[1] ~= '-' then
    here = ARGV[1]
  end
end
local function putBack(queue, w)
  redis.call('LPUSH', queue, w.token)
  redis.call('SET', queue .. ':' .. w.token, w.entry, 'PX', w.expiry)
  keepQueue(queue, w.expiry)
end
local function nextWaiter(queue, fits, first)
  while true do
    local token = first or redis.call('LPOP', queue)
    first = nil
    if not token then
      return nil
    end
    local entry = redis.call('GETDEL', queue .. ':' .. token)
    if entry then
      local kind, claim, expiry, attempt, channel = string.match(entry, '^(%S+) (%d+) (%d+) (%d+) (.+)$')
      if kind then
        local w = {token = token, kind = kind, claim = claim, expiry = expiry, attempt = attempt, channel = channel, entry = entry}
        if fits and not fits(w) then
          putBack(queue, w)
          return nil
        end
        return w
      end
    end
  end
end
-- offer tells w it has the lock under fence, and reports whether it was
-- told: by the reply, when w is a waiter of the releasing Client (here),
-- which leaves w.reply the message, "<token> <fence> <attempt>"; else by
-- a message on its channel, if anyone listens there, w.reply its token.
local function offer(w, fence)
  local msg = w.token .. ' ' .. string.format('%d', fence) .. ' ' .. w.attempt
  if w.channel == here then
    w.reply = msg
    return true
  end
  w.reply = w.token
  local publish = 'SPUBLISH'
  local ok, subs = pcall(redis.call, 'PUBSUB', 'SHARDNUMSUB', w.channel)
  if not ok then
    publish, subs = 'PUBLISH', redis.call('PUBSUB', 'NUMSUB', w.channel)
  end
  if subs[2] == 0 then
    return false
  end
  redis.call(publish, w.channel, msg)
  return true
end
