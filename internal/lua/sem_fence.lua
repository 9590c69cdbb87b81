-- sem_fence.lua makes a holder's fence: nextFence returns one above the
-- counter, or nil when the counter, or the hash that keeps it, is broken.
-- It needs sem_only.lua, which names the counter's field and writes it.

--#include clock
--#include new_fence
--#include fence_of
local function nextFence()
  local c = redis.pcall('HGET', KEYS[2], counter)
  if type(c) == 'table' then
    return nil
  end
  local above = c and fenceNumber(c)
  if c and not above then
    return nil
  end
  return newFence(above)
end
