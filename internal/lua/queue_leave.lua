-- queue_leave

local function leave(queue)
  if ARGV[1] == 'q' then
    for i = 2, #ARGV do
      redis.call('LREM', queue, 0, ARGV[i])
      redis.call('DEL', queue .. ':' .. ARGV[i])
    end
  end
end
