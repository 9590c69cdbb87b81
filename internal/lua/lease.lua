-- lease.lua stores a holder's value with its lease.

local function setLease(key, value, lease)
  if lease == '0' then
    redis.call('SET', key, value)
  else
    redis.call('SET', key, value, 'PX', lease)
  end
end
