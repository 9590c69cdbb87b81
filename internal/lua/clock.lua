-- clock.lua reads Redis's clock, in microseconds, once per script.

local clockUs
local function clock()
  if not clockUs then
    local t = redis.call('TIME')
    clockUs = t[1] * 1000000 + t[2]
  end
  return clockUs
end
