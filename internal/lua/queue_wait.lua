-- queue_wait

local function wait(queue)
  local op = ARGV[4] or ''
  if op == '' or ARGV[5] == '0' then
    return
  end
  local key = queue .. ':' .. ARGV[1]
  if op ~= 'q' and (redis.call('SET', key, ARGV[3], 'PX', ARGV[5], 'XX') or op == 'x') then
    keepQueue(queue, ARGV[5])
    return
  end
  redis.call('RPUSH', queue, ARGV[1])
  redis.call('SET', key, ARGV[3], 'PX', ARGV[5])
  keepQueue(queue, ARGV[5])
end
local function joined(queue)
  if ARGV[4] == 'r' or ARGV[4] == 'x' then
    redis.call('LREM', queue, 0, ARGV[1])
    redis.call('DEL', queue .. ':' .. ARGV[1])
  end
end
