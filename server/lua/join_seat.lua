--[[
join_seat.lua: give an open seat of a game to a new player (one winner when several race for it).

A seat is open while the game hash has no "auth:<seat>" field.

KEYS[1]  game:{<id>}  the game hash

ARGV[1]  the seat wanted, or "-1" for the lowest open seat
ARGV[2]  number of seats of the game
ARGV[3]  sha256 hex of the new seat token (stored as "auth:<seat>")
ARGV[4]  display name of the player (stored as "name:<seat>"), or "" to keep the one given at creation

Returns the seat taken (>= 0), or
  -1  no open seat left (or the seat wanted is taken)
  -2  the game does not exist
]]

local game = KEYS[1]
if redis.call("EXISTS", game) == 0 then
  return -2
end
local wanted = tonumber(ARGV[1])
local first, last = wanted, wanted
if wanted < 0 then
  first, last = 0, tonumber(ARGV[2]) - 1
end
for seat = first, last do
  if redis.call("HSETNX", game, "auth:" .. seat, ARGV[3]) == 1 then
    if ARGV[4] ~= "" then
      redis.call("HSET", game, "name:" .. seat, ARGV[4])
    end
    return seat
  end
end
return -1
