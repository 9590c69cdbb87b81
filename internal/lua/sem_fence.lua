-- sem_fence.lua makes a holder's fence: nextFence returns one above the
-- counter, or nil when the counter is not an integer; keepFence sets the
-- counter to the fence a holder got.

--#include clock
--#include new_fence
--#include fence_of
local function nextFence()
  local c = redis.pcall('GET', KEYS[3])
  local above = c and fenceNumber(c)
  if type(c) == 'table' or c and not above then
    return nil
  end
  return newFence(above)
end
local function keepFence(f)
  redis.call('SET', KEYS[3], string.format('%d', f), 'KEEPTTL')
end
