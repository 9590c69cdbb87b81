-- holds.lua tells whether a holder's value, "<token>" or "<token>
-- <fence>", is token's: a release compares the hold's own values whole
-- (see hold.inKey); a waiter that leaves, or a release of an orphan, has
-- the token alone.

local function holds(value, token)
  return value == token or string.byte(value, #token + 1) == 32 and string.find(value, token, 1, true) == 1
end
