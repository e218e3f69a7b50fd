--[[
create_game.lua: store a new game, unless a game with that id already exists.

KEYS[1]  game:{<id>}        the game hash
KEYS[2]  game:{<id>}:log    the game log (list): its version-0 entry (the deal) is pushed here
KEYS[3]  game:{<id>}:idem   the idempotency records (must not exist yet either)

ARGV[1]      seconds to keep the game if no move comes (both keys expire; every move sets it again), "0": forever
ARGV[2]      n: the number of field/value pairs that follow
ARGV[3..2n+2] field, value, field, value, ... of the game hash (config, state, version, meta)
ARGV[2n+3]   the log entry of version 0

Returns 1 when created, 0 when the id was taken (nothing written).
]]

local game, log = KEYS[1], KEYS[2]
if redis.call("EXISTS", game, log, KEYS[3]) > 0 then
  return 0
end
local ttl = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local pairs_ = {}
for i = 3, 2 * n + 2 do
  pairs_[#pairs_ + 1] = ARGV[i]
end
redis.call("HSET", game, unpack(pairs_))
redis.call("RPUSH", log, ARGV[2 * n + 3])
if ttl > 0 then
  redis.call("EXPIRE", game, ttl)
  redis.call("EXPIRE", log, ttl)
end
return 1
