--[[
join_seat.lua: give an open seat of a game to a new player (one winner when several race for it).

The seats live in the game's "meta" JSON: seats[i] = {kind, name, auth}; a seat is open while its auth is "".

KEYS[1]  game:{<id>}  the game hash

ARGV[1]  the seat wanted, or "-1" for the lowest open seat
ARGV[2]  sha256 hex of the new seat token (stored as the seat's auth)
ARGV[3]  display name of the player, or "" to keep the one given at creation

Returns the seat taken (>= 0), or
  -1  no open seat left (or the seat wanted is taken or does not exist)
  -2  the game does not exist
]]

local game = KEYS[1]
local raw = redis.call("HGET", game, "meta")
if not raw then
  return -2
end
local meta = cjson.decode(raw)
local wanted = tonumber(ARGV[1])
for i, seat in ipairs(meta.seats) do
  local number = i - 1
  if (wanted < 0 or wanted == number) and seat.auth == "" then
    seat.auth = ARGV[2]
    if ARGV[3] ~= "" then
      seat.name = ARGV[3]
    end
    redis.call("HSET", game, "meta", cjson.encode(meta))
    return number
  end
end
return -1
