--[[
create_game.lua: store a new game, unless a game with that id already exists.

KEYS[1]  game:{<id>}         the game hash
KEYS[2]  game:{<id>}:events  the game's event stream

ARGV[1]      seconds to keep the game if no move comes (both keys expire; every move sets it again), "0": forever
ARGV[2]      n: the number of field/value pairs that follow
ARGV[3..2n+2] field, value, field, value, ... of the game hash (config, state, version, meta, start)
ARGV[2n+3..] events of version 0 (JSON payloads, stored as field "e" with ids "0-1", "0-2", ...)

Returns 1 when created, 0 when the id was taken (nothing written).
]]

local game, events = KEYS[1], KEYS[2]
if redis.call("EXISTS", game) == 1 or redis.call("EXISTS", events) == 1 then
  return 0
end
local ttl = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local pairs_ = {}
for i = 3, 2 * n + 2 do
  pairs_[#pairs_ + 1] = ARGV[i]
end
redis.call("HSET", game, unpack(pairs_))
for i = 2 * n + 3, #ARGV do
  redis.call("XADD", events, "0-" .. (i - 2 * n - 2), "e", ARGV[i])
end
if ttl > 0 then
  redis.call("EXPIRE", game, ttl)
  redis.call("EXPIRE", events, ttl)  -- no-op when there is no event yet: the first move's commit sets it
end
return 1
