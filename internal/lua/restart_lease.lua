-- restart_lease.lua is the reply of an attempt that finds the lock its
-- own already: a release has just handed it over for a claim, or a lost
-- reply made the caller ask again. restartLease restarts the whole lease
-- of the holder's key (lease ms, "0" for none) from now, after the caller
-- sent the attempt, and replies {1, fence}; it needs fence_of.lua.

local function restartLease(key, cur, lease)
  if lease == '0' then
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIRE', key, lease)
  end
  return {1, fenceOf(cur) or 0}
end
