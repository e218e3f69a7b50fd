--[[
create_game.lua: store a new game, unless a game with that id already exists.

KEYS[1]  game:{<id>}        the game hash
KEYS[2]  game:{<id>}:log    the game log (list): its version-0 entry (the deal) is pushed here
KEYS[3]  game:{<id>}:idem   the idempotency records (must not exist yet either)

ARGV[1]      seconds to keep the game if no move comes (both keys expire; every move sets it again), "0": forever
ARGV[2]      n: the number of field/value pairs that follow
ARGV[3..2n+2] field, value, field, value, ... of the game hash (config, state, version, meta)
ARGV[2n+3]   the log entry of version 0
ARGV[2n+4]   optional, games with a time control: the seat whose decision starts now (its clock is started with
             Redis TIME in the hash's "clock" field, server/clocks.py, and the clock tail is appended to the
             entry as commit_move.lua does), or "-1" (no clock starts)

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
local entry = ARGV[2 * n + 3]
local first = tonumber(ARGV[2 * n + 4] or "-1")
if first >= 0 then
  local c = {}
  local found = false
  for i = 1, #pairs_, 2 do
    if pairs_[i] == "clock" then
      found = i + 1
    end
  end
  for x in string.gmatch(pairs_[found], "[^,]+") do
    c[#c + 1] = tonumber(x)
  end
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local budget = c[2]
  if c[1] == 2 then
    budget = c[9 + 2 * first]
  elseif c[1] == 3 then
    budget = c[2] + c[9 + 2 * first]
  end
  c[6], c[7], c[8] = now, now + budget, first
  pairs_[found] = table.concat(c, ",")
  entry = entry .. "|-1,0," .. now .. "," .. budget .. "," .. table.concat(c, ",", 8)
end
redis.call("HSET", game, unpack(pairs_))
redis.call("RPUSH", log, entry)
if ttl > 0 then
  redis.call("EXPIRE", game, ttl)
  redis.call("EXPIRE", log, ttl)
end
return 1
