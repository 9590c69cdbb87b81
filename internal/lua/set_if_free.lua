-- set_if_free.lua is code in place, not a function, so that a script
-- grants a free lock before it defines any function (most attempts end
-- there): it sets KEYS[1], unless taken, to ARGV[1]'s holder's value, as
-- fenced writes it, under a new fence, Redis's clock, which is all a
-- grant of a free lock needs (see new_fence.lua), with the lease ARGV[2].
-- It leaves the fence in fence, and what held the lock in cur, nil if it
-- set it; the script declares both.

local t = redis.call('TIME')
fence = t[1] * 1000000 + t[2]
local value = ARGV[1] .. ' ' .. t[1] .. ('000000'):sub(#t[2] + 1) .. t[2]
if ARGV[2] == '0' then
  cur = redis.call('SET', KEYS[1], value, 'NX', 'GET')
else
  cur = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2], 'GET')
end
