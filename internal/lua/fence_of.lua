-- fence_of.lua reads fences: fenceNumber a fence, fenceOf the fence in a
-- holder's value, marked or not (see queued.lua); nil when there is none,
-- or it is not an integer below 2^53, which Lua's numbers hold exactly.

local function fenceNumber(s)
  local f = string.match(s, '^%d+$') and tonumber(s)
  if f and f < 9007199254740992 then
    return f
  end
end
local function fenceOf(value)
  return fenceNumber(string.match(value or '', ' (%d+)%*?$') or '')
end
