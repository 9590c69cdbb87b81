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
-- putBack puts w, which nextWaiter took, back at the queue's head, alive
-- until the same deadline.
local function putBack(queue, entries, w)
  redis.call('LPUSH', queue, w.token)
  redis.call('HSET', entries, w.token, w.value)
  keepQueue(queue, entries, w.deadline - math.floor(clock() / 1000))
end
-- nextWaiter takes the oldest waiter still alive out of the queue (first,
-- if not nil, is the token already popped), and returns it, or nil when
-- there is none, or when fits, if not nil, says it does not fit: it is
-- put back then.
local function nextWaiter(queue, entries, fits, first)
  local t = math.floor(clock() / 1000)
  while true do
    local token = first or redis.call('LPOP', queue)
    first = nil
    if not token then
      return nil
    end
    local value = redis.call('HGET', entries, token)
    if value then
      redis.call('HDEL', entries, token)
      local deadline, kind, claim, _, attempt, channel = string.match(value, '^(%d+) (%S+) (%d+) (%d+) (%d+) (.+)$')
      if kind and tonumber(deadline) > t then
        local w = {token = token, kind = kind, claim = claim, attempt = attempt, channel = channel, value = value, deadline = tonumber(deadline)}
        if fits and not fits(w) then
          putBack(queue, entries, w)
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
