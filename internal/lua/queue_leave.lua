-- queue_leave

local function leave(queue, entries)
  if ARGV[1] == 'q' then
    for i = 2, #ARGV do
      redis.call('LREM', queue, 0, ARGV[i])
    end
    redis.call('HDEL', entries, unpack(ARGV, 2))
  end
end
