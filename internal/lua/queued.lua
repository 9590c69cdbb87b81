-- queued.lua marks a Mutex's holder value "<token> <fence>" with a "*" at
-- its end while a waiter may be queued behind it: a waiter that joins the
-- queue of a lock whose value has no mark sets it (markQueued), and a
-- hand-off or a take-over, which leave the queue behind them, write it.
-- A hold that took the lock free releases with quick_release.lua, which
-- declares the lock alone, and finds there whether it must hand the lock
-- on; the mark, like the fence, outlives Refresh. unmark returns a value
-- without its mark, and whether it had one. Only the Mutex's scripts mark
-- (an RWMutex's writer is not); fenceOf and wire.CutFence read a marked
-- value as they read it unmarked.

local queuedMark = '*'
local function unmark(value)
  if string.byte(value, -1) == 42 then
    return string.sub(value, 1, -2), true
  end
  return value, false
end
