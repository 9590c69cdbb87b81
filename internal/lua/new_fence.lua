-- new_fence.lua makes fences (see above); it needs clock.lua. newFence
-- returns a new fence, above above if not nil. A script whose first grant
-- is its only one may take Redis's clock for its fence.

local lastFence = 0
local function newFence(above)
  local f = clock()
  if above and above >= f then
    f = above + 1
  end
  if lastFence >= f then
    f = lastFence + 1
  end
  lastFence = f
  return f
end
