--[[
reserve_open_game.lua: count the unfinished games and, below the cap, register one more (server/open_games.py).

The registry is one sorted set of its own (in a Redis Cluster it has its own slot, so no game key can be here):
member = a game id, score = the time (Unix milliseconds, Redis's clock) by which that game expires as far as the
registry knows; "+inf" for a game kept for ever. Entries whose time has passed are "due": the referee checks
their game (gone: removed; still there, e.g. it got moves: given its real expiry) outside this script.

KEYS[1]  the registry (a sorted set)

ARGV[1]  the new game's id
ARGV[2]  milliseconds the new game is kept for if nothing happens, "0": for ever
ARGV[3]  the cap: the most games the registry may hold, "0": no cap
ARGV[4]  how many due entries to return at most

Returns {registered (1 or 0), now (ms), earliest score ("" when the registry is empty), due game ids...}:
registered 0 means the registry holds the cap or more (nothing written).
]]

local registry = KEYS[1]
local ttl_ms, cap, batch = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local reply = {0, now, ""}
local due = redis.call("ZRANGEBYSCORE", registry, "-inf", now, "LIMIT", 0, batch)
local first = redis.call("ZRANGE", registry, 0, 0, "WITHSCORES")
if first[2] then
  reply[3] = first[2]
end
if cap == 0 or redis.call("ZCARD", registry) < cap then
  local score = "+inf"
  if ttl_ms > 0 then
    score = now + ttl_ms
  end
  redis.call("ZADD", registry, score, ARGV[1])
  reply[1] = 1
end
for i = 1, #due do
  reply[#reply + 1] = due[i]
end
return reply
