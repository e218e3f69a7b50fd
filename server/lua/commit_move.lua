--[[
commit_move.lua: commit one applied move of one game, atomically, or nothing at all.

The referee loads a game (state + version), applies the move with the engine in Python, then calls this script
to store the result. Every check comes first; the writes follow only when all passed (Lua never rolls back).

KEYS[1]  game:{<id>}        the game hash (fields: state, version, meta, config, commit, joins)
KEYS[2]  game:{<id>}:log    the game log (list): element v = the compact entry of version v (server/gamelog.py)
KEYS[3]  game:{<id>}:idem   idempotency records (string): 20-byte records, each a 16-byte key (a hash of the
                            seat's token and the request_id) then the version it committed (4 bytes, big endian)

ARGV[1]  base version: the version the move was applied to (the commit needs version == base)
ARGV[2]  the new progress of the state (versioned JSON of engine.progress_to_dict; the config part never changes)
ARGV[3]  commit id: random per attempt; a retried call whose first attempt did commit is recognised by it
ARGV[4]  fence: the time (ms since the epoch, Redis's clock) after which the referee no longer waits for this
         answer (it has told the caller the move failed, or that the outcome is unknown): past it, nothing is
         written. "0": no fence
ARGV[5]  idempotency key (16 bytes), or "" for none
ARGV[6]  seconds to keep the game from now on (the finished-game time when this move ended the match, else the
         idle time: a game nobody moves in expires), or "0": forever
ARGV[7]  seconds to keep the idempotency records from now on, or "0": as long as the game
ARGV[8]  the number of seats joined (field "joins") when the game was loaded: a join since then changed the seats
         shown in the move's answer, so the move is retried from a new load
ARGV[9]  the log entry of the new version
ARGV[10] "s": publish the new version with SPUBLISH (a Redis Cluster: the notification stays on the game's
         shard), else (or absent) PUBLISH

Returns one of
  {"ok", new_version}        committed (or: this very commit id had already committed)
  {"dup", version}           the idempotency key was already used, by the commit of that version: nothing written
  {"conflict", version}      the game is at another version than base (or a seat was joined): nothing written
  {"missing", 0}             the game does not exist (never created, or expired): nothing written
  {"late", 0}                Redis ran the script after the fence: nothing written
]]

local fence = tonumber(ARGV[4])
if fence > 0 then
  local now = redis.call("TIME")
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > fence then
    return {"late", 0}
  end
end

local game, log, idem = KEYS[1], KEYS[2], KEYS[3]
local base = tonumber(ARGV[1])
local key = ARGV[5]

-- one read for the checks: a game (created with its version) has a version; the last commit id; the joins
local found = redis.call("HMGET", game, "version", "commit", "joins")
if not found[1] then
  return {"missing", 0}
end

local current = tonumber(found[1])
if current == base + 1 and found[2] == ARGV[3] then
  return {"ok", current}
end

local records = false
if key ~= "" then
  records = redis.call("GET", idem)
  if records then
    local from = 1
    while true do
      local at = string.find(records, key, from, true)
      if not at then
        break
      end
      if (at - 1) % 20 == 0 then
        local b1, b2, b3, b4 = string.byte(records, at + 16, at + 19)
        return {"dup", ((b1 * 256 + b2) * 256 + b3) * 256 + b4}
      end
      from = at + 1
    end
  end
end

if current ~= base or (found[3] or "0") ~= ARGV[8] then
  return {"conflict", current}
end

local version = base + 1
redis.call("HSET", game, "state", ARGV[2], "version", version, "commit", ARGV[3])
redis.call("RPUSH", log, ARGV[9])
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  redis.call("EXPIRE", game, ttl)
  redis.call("EXPIRE", log, ttl)
else
  redis.call("PERSIST", game)
  redis.call("PERSIST", log)
end
if key ~= "" then
  local v = version
  local packed = string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256,
                             math.floor(v / 256) % 256, v % 256)
  -- SET, not APPEND: APPEND would keep up to twice the bytes allocated for the records to come
  local idem_ttl = tonumber(ARGV[7])
  if idem_ttl <= 0 then
    idem_ttl = ttl
  end
  if idem_ttl > 0 then
    redis.call("SET", idem, (records or "") .. key .. packed, "EX", idem_ttl)
  else
    redis.call("SET", idem, (records or "") .. key .. packed)
  end
end
if ARGV[10] == "s" then
  redis.call("SPUBLISH", KEYS[1] .. ":ev", version)
else
  redis.call("PUBLISH", KEYS[1] .. ":ev", version)
end
return {"ok", version}
