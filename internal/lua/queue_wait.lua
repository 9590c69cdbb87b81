-- queue_wait

-- wait writes the attempt's entry (ARGV[3], alive for ARGV[5] ms) under
-- its token, as ARGV[4] says (see wire.AttemptArgs): join the queue at its
-- end ("q"); join again ("r") unless the entry is still alive, when it is
-- written in place; or only write it in place ("x"). It reports whether
-- the waiter is in the queue.
local function wait(queue, entries)
  local op = ARGV[4] or ''
  if op == '' or ARGV[5] == '0' then
    return false
  end
  local t = math.floor(clock() / 1000)
  local value = string.format('%d', t + tonumber(ARGV[5])) .. ' ' .. ARGV[3]
  if op ~= 'q' then
    local alive = deadlineOf(redis.call('HGET', entries, ARGV[1])) > t
    if alive then
      redis.call('HSET', entries, ARGV[1], value)
    end
    if alive or op == 'x' then
      keepQueue(queue, entries, ARGV[5])
      return alive
    end
  end
  redis.call('RPUSH', queue, ARGV[1])
  redis.call('HSET', entries, ARGV[1], value)
  keepQueue(queue, entries, ARGV[5])
  return true
end
local function joined(queue, entries)
  if ARGV[4] == 'r' or ARGV[4] == 'x' then
    redis.call('LREM', queue, 0, ARGV[1])
    redis.call('HDEL', entries, ARGV[1])
  end
end
