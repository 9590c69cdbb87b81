-- mark_queued.lua is an attempt's, which needs queued.lua and
-- fence_of.lua: markQueued marks the value cur of the lock key (see
-- queued.lua), keeping its lease, once a waiter joins its queue.

local function markQueued(key, cur)
  if string.byte(cur, -1) ~= 42 and fenceOf(cur) then
    redis.call('SET', key, cur .. queuedMark, 'KEEPTTL')
  end
end
