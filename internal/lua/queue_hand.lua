-- queue_hand

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
local function offer(w, fence)
  local publish = 'SPUBLISH'
  local ok, subs = pcall(redis.call, 'PUBSUB', 'SHARDNUMSUB', w.channel)
  if not ok then
    publish, subs = 'PUBLISH', redis.call('PUBSUB', 'NUMSUB', w.channel)
  end
  if subs[2] == 0 then
    return false
  end
  redis.call(publish, w.channel, w.token .. ' ' .. string.format('%d', fence) .. ' ' .. w.attempt)
  return true
end
