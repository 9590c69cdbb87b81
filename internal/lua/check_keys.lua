-- check_keys.lua goes before every script when the package is built with
-- the tag uncomplicated_checkkeys (see CheckingKeys), which tests use: it
-- fails a script that touches a key not among its KEYS, which Redis asks
-- of every script and some servers and proxies enforce (Dragonfly, Redis
-- Cluster proxies). It shadows redis with a table whose call and pcall
-- check the keys of the command before they run it: those of DEL and
-- EXISTS are all their arguments, TIME, PUBSUB, PUBLISH and SPUBLISH take
-- none, and every other command the scripts run names one, first. A key
-- found undeclared is also pushed on the list UndeclaredKeys names, so
-- that a script that catches the error (pcall) cannot hide it.

local declared = {}
for _, k in ipairs(KEYS) do
  declared[k] = true
end
local keyless = {TIME = true, PUBSUB = true, PUBLISH = true, SPUBLISH = true}
local allKeys = {DEL = true, EXISTS = true}
local function checked(call)
  local real = redis.call
  return function(cmd, ...)
    local name = string.upper(cmd)
    local args = {...}
    local keys = {args[1]}
    if allKeys[name] then
      keys = args
    elseif keyless[name] then
      keys = {}
    end
    for _, k in ipairs(keys) do
      if not declared[k] then
        local msg = 'undeclared key ' .. tostring(k) .. ' in ' .. name
        real('RPUSH', 'uncomplicated:undeclared-keys', msg) -- UndeclaredKeys
        error(msg)
      end
    end
    return call(cmd, ...)
  end
end
local redis = setmetatable({call = checked(redis.call), pcall = checked(redis.pcall)}, {__index = redis})
