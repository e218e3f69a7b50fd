--[[
join_seat.lua: give an open seat of a game to a new player (one winner when several race for it).

The seats live in the game's "meta" JSON: seats[i] = {kind, name, auth}; a seat is open while its auth is "".
A join records the game's version then ("joined": the join came after the commit of that version) and, when it
renames the seat, the name before ("was"), so that the seats as any version showed them can be rebuilt (an
idempotent resend's answer); and it counts the joins (field "joins"), so that a commit prepared before the join
is retried (its answer would show the seat open).

KEYS[1]  game:{<id>}  the game hash

ARGV[1]  the seat wanted, or "-1" for the lowest open seat
ARGV[2]  hash of the new seat token (stored as the seat's auth)
ARGV[3]  display name of the player, or "" to keep the one given at creation
ARGV[4]  fence: the time (ms since the epoch, Redis's clock) after which the referee no longer waits for this
         answer; past it, nothing is written (as in commit_move.lua). "0": no fence

Returns the seat taken (>= 0), or
  -1  no open seat left (or the seat wanted is taken or does not exist)
  -2  the game does not exist
  -3  Redis ran the script after the fence: nothing written
]]

local fence = tonumber(ARGV[4] or "0")
if fence > 0 then
  local now = redis.call("TIME")
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > fence then
    return -3
  end
end

local game = KEYS[1]
local found = redis.call("HMGET", game, "meta", "version")
if not found[1] then
  return -2
end
local meta = cjson.decode(found[1])
local wanted = tonumber(ARGV[1])
for i, seat in ipairs(meta.seats) do
  local number = i - 1
  if (wanted < 0 or wanted == number) and seat.auth == "" then
    seat.auth = ARGV[2]
    seat.joined = tonumber(found[2])
    if ARGV[3] ~= "" and ARGV[3] ~= seat.name then
      seat.was = seat.name
      seat.name = ARGV[3]
    end
    redis.call("HSET", game, "meta", cjson.encode(meta))
    redis.call("HINCRBY", game, "joins", 1)
    return number
  end
end
return -1
