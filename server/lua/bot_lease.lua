-- The lease of one house-bot seat, for its holder only: renew it or give it up (server/bot_seats.py).
-- One key only, so that it runs on any Redis Cluster node: the registry (referee:bots) is another slot.
--
-- KEYS[1]  the seat's lease key (referee:bot-lease:<game id>:<seat>)
-- ARGV[1]  the holder's id (the value a successful SET NX PX wrote)
-- ARGV[2]  "renew" or "release"
-- ARGV[3]  renew: the new lease time in ms
--
-- Returns 1 when the key was the holder's (renewed, or deleted), 0 when it was not (expired, or another's).
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == "renew" then
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
else
  redis.call("DEL", KEYS[1])
end
return 1
