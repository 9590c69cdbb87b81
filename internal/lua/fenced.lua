-- fenced.lua makes a holder's value, "<token> <fence>" (see cutFence).

local function fenced(token, fence)
  return token .. ' ' .. string.format('%d', fence)
end
