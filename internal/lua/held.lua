-- Held replies 1 if one of the tokens ARGV[1..] is in the holder set
-- KEYS[1] with a lease that has not ended, else 0.

--#include clock
--#include time
local t = now()
for i = 1, #ARGV do
  if live(KEYS[1], ARGV[i], t) then
    return 1
  end
end
return 0
