-- queue_leave

local function leave(queue)
  if ARGV[1] == 'q' then
    redis.call('LREM', queue, 0, ARGV[2])
    redis.call('DEL', queue .. ':' .. ARGV[2])
  end
end
