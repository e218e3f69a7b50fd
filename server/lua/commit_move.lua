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
ARGV[10] the clock step (games with a time control; "" for none): "<op>,<next seat>,<chain>" where op is
         m  a move of the seat to act: refused when its deadline has passed ("out_of_time")
         r  a resign (any seat, at any time: never refused for time)
         a  the timeout's automatic move, f  the timeout's forfeit, c  the second step of an automatic move
            (its discard): each refused unless the deadline has passed ("not_due")
         next seat: the seat to act after the move (-1: nobody, the match is over); chain "1": the next decision
         (the same seat's, an automatic move's second step) is due at once.
         The clock (field "clock", server/clocks.py) is updated with Redis TIME: the seat whose clock ran spends
         now - started (clock: from its time, then the increment is added; bank: only beyond the allowance;
         nothing for "c"), its count of automatic moves in a row is reset by its own move and counted by "a"; the next
         seat's decision starts now. The log entry gets the clock after the commit appended (after its deflate
         stream): "|<stopped seat>,<spent ms>,<now>,<deadline - now>,<seat>,<remaining>,<autos>,..." (the next
         decision starts now; with no seat to act, -1 and 0 for the deadline)
ARGV[11] the new version (base + 1)
ARGV[12] "s": publish the new version with SPUBLISH (a Redis Cluster: the notification stays on the game's
         shard), else (or absent) PUBLISH

The versions (ARGV[1], ARGV[11], the field "version") and ARGV[6] are integers in decimal (no sign, no leading
zero), so the checks compare them as strings and the writes pass them on as given: a number handed to redis.call
costs Redis a printf, a tonumber a strtod (the same values, for less Redis CPU per commit).

Returns one of
  {"ok", new_version}        committed (or: this very commit id had already committed)
  {"dup", version}           the idempotency key was already used, by the commit of that version: nothing written
  {"conflict", version}      the game is at another version than base (or a seat was joined): nothing written
  {"missing", 0}             the game does not exist (never created, or expired): nothing written
  {"late", 0}                Redis ran the script after the fence: nothing written
  {"out_of_time", deadline}  op m: the seat's deadline (ms, Redis's clock) has passed: nothing written
  {"not_due", deadline}      op a, f or c: the deadline has not passed (or no clock runs): nothing written
An "ok" of a game with a clock has a third element: the clock tail appended to the log entry.
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
local found = redis.call("HMGET", game, "version", "commit", "joins", "clock")
if not found[1] then
  return {"missing", 0}
end

if found[2] == ARGV[3] and found[1] == ARGV[11] then
  return {"ok", base + 1}
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

if found[1] ~= ARGV[1] or (found[3] or "0") ~= ARGV[8] then
  return {"conflict", tonumber(found[1])}
end

local entry = ARGV[9]
local clock = false
local tail = false
local step = ARGV[10] or ""
if step ~= "" and found[4] then
  -- the clock: K,A,B,P,N,started,deadline,seat, then remaining,autos per seat (server/clocks.py)
  local c = {}
  for x in string.gmatch(found[4], "[^,]+") do
    c[#c + 1] = tonumber(x)
  end
  local op, nxt, chain = string.match(step, "^(%a),(-?%d+),(%d)$")
  nxt = tonumber(nxt)
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local kind, a, b = c[1], c[2], c[3]
  local running, started, deadline = c[8], c[6], c[7]
  if op == "m" then
    if running >= 0 and now > deadline then
      return {"out_of_time", deadline}
    end
  elseif op ~= "r" then
    if running < 0 or now < deadline then
      return {"not_due", deadline}
    end
  end
  local spent = 0
  if running >= 0 and op ~= "c" then
    spent = now - started
    local ri = 9 + 2 * running
    if kind == 2 then
      c[ri] = c[ri] - spent
      if op == "m" or op == "a" then
        c[ri] = math.max(c[ri], 0) + b
      end
    elseif kind == 3 and spent > a then
      c[ri] = c[ri] - (spent - a)
    end
    if c[ri] < 0 then
      c[ri] = 0
    end
    if op == "m" then
      c[ri + 1] = 0
    elseif op == "a" then
      c[ri + 1] = c[ri + 1] + 1
    end
  end
  if nxt >= 0 then
    local budget = a
    if kind == 2 then
      budget = c[9 + 2 * nxt]
    elseif kind == 3 then
      budget = a + c[9 + 2 * nxt]
    end
    c[6], c[7], c[8] = now, now + budget, nxt
    if chain == "1" then
      c[7] = now - 1  -- due at once; a deadline before its start says: the second step of an automatic move
    end
  else
    c[6], c[7], c[8] = 0, 0, -1
  end
  clock = table.concat(c, ",")
  local ahead = 0
  if c[8] >= 0 then
    ahead = c[7] - now
  end
  tail = "|" .. running .. "," .. spent .. "," .. now .. "," .. ahead .. "," .. table.concat(c, ",", 8)
  entry = entry .. tail
end

local version = base + 1
if clock then
  redis.call("HSET", game, "state", ARGV[2], "version", ARGV[11], "commit", ARGV[3], "clock", clock)
else
  redis.call("HSET", game, "state", ARGV[2], "version", ARGV[11], "commit", ARGV[3])
end
redis.call("RPUSH", log, entry)
if ARGV[6] ~= "0" then
  redis.call("EXPIRE", game, ARGV[6])
  redis.call("EXPIRE", log, ARGV[6])
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
    idem_ttl = tonumber(ARGV[6])
  end
  if idem_ttl > 0 then
    redis.call("SET", idem, (records or "") .. key .. packed, "EX", idem_ttl)
  else
    redis.call("SET", idem, (records or "") .. key .. packed)
  end
end
if ARGV[12] == "s" then
  redis.call("SPUBLISH", KEYS[1] .. ":ev", ARGV[11])
else
  redis.call("PUBLISH", KEYS[1] .. ":ev", ARGV[11])
end
if tail then
  return {"ok", version, tail}
end
return {"ok", version}
