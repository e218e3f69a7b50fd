--[[
commit_move.lua: commit one applied move of one game, atomically, or nothing at all.

The referee loads a game (state + version), applies the move with the engine in Python, then calls this script
to store the result. Every check comes first; the writes follow only when all passed (Lua never rolls back).

KEYS[1]  game:{<id>}         the game hash (fields: state, version, commit, idem:<seat>:<request_id>, ...)
KEYS[2]  game:{<id>}:events  the game's event stream; entry ids are "<version>-<index>"

ARGV[1]  base version: the version the move was applied to (the commit needs version == base)
ARGV[2]  the new progress of the state (versioned JSON of engine.progress_to_dict; the config part never changes)
ARGV[3]  commit id: random per attempt; a retried call whose first attempt did commit is recognised by it
ARGV[4]  idempotency field "idem:<seat>:<request_id>", or "" for none
ARGV[5]  idempotency record (sha256 hex of the move, 64 chars, then the stored response), or ""
ARGV[6]  seconds to keep the game from now on (the finished-game time when this move ended the match, else the
         idle time: a game nobody moves in expires), or "0": forever
ARGV[7..] the events of the move, one payload each (JSON), stored as field "e"

After a commit, PUBLISH <new version> on channel "game:{<id>}:ev" (KEYS[1] .. ":ev"): it wakes the live streams
of every referee watching the game (server/events.py), which then read the new events from the stream.

Returns one of
  {"ok", new_version}        committed (or: this very commit id had already committed)
  {"dup", record}            the idempotency key was already used: nothing written, the stored record returned
  {"conflict", version}      the game is at another version than base: nothing written
  {"missing", 0}             the game does not exist (never created, or expired): nothing written
]]

local game, events = KEYS[1], KEYS[2]
local base = tonumber(ARGV[1])
local idem_field = ARGV[4]

-- one read for the three checks: a game (created with its version) has a version, and the last commit id
local found = redis.call("HMGET", game, "version", "commit")
if not found[1] then
  return {"missing", 0}
end

local current = tonumber(found[1])
if current == base + 1 and found[2] == ARGV[3] then
  return {"ok", current}
end

if idem_field ~= "" then
  local record = redis.call("HGET", game, idem_field)
  if record then
    return {"dup", record}
  end
end

if current ~= base then
  return {"conflict", current}
end

local version = base + 1
redis.call("HSET", game, "state", ARGV[2], "version", version, "commit", ARGV[3])
if idem_field ~= "" then
  redis.call("HSET", game, idem_field, ARGV[5])
end
for i = 7, #ARGV do
  redis.call("XADD", events, version .. "-" .. (i - 6), "e", ARGV[i])
end
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  redis.call("EXPIRE", game, ttl)
  redis.call("EXPIRE", events, ttl)
else
  redis.call("PERSIST", game)
  redis.call("PERSIST", events)
end
redis.call("PUBLISH", KEYS[1] .. ":ev", version)
return {"ok", version}
