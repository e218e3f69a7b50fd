"""``rummy-referee migrate``: games stored by the earlier layout, converted to today's. The only code that writes
an earlier game: the referee's read path refuses such a game (STORED_BY_EARLIER_VERSION) and writes nothing.

The earlier layout (before the game log, docs/design.md "Storage"): the game hash holds the whole engine state in
``state`` (or the engine-format config in ``config`` and the progress in ``state``), a ``start`` view and
``idem:...`` answer fields; the events are in a stream ``game:{<id>}:events`` (ids ``<version>-<index>``, the
payload in field ``e``) without the moves. Converting a game: the compact config and the progress in the hash, and
the log rebuilt by replaying the game (the engine is deterministic): the deal from the config, then for each
version the one move of the seats that yields exactly that version's stored events. The replayed state must be
the stored one; otherwise the game is left as it is and reported. One Lua script writes the new layout, all or
nothing, only if the game is still as read; the idempotency answers of the earlier layout are dropped (a resend of
a move made before the migration is not recognised). The expiry is kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import orjson

import engine
from server.cache import config_json, is_current_config, progress_json
from server.gamelog import encode_entry
from server.store import GameStore, game_key, idem_key, log_key

_CONFIG_KEYS = ("v", "rules", "seed", "presets")

#: KEYS: game hash, log, idempotency records, the earlier event stream. ARGV: the state and version read (the
#: game must still hold them), config, progress, its PTTL (-1: none), then the log entries.
_WRITE = """
local game = KEYS[1]
if redis.call("HGET", game, "state") ~= ARGV[1] or redis.call("HGET", game, "version") ~= ARGV[2] then
  return 0
end
if redis.call("EXISTS", KEYS[2], KEYS[3]) > 0 then return -1 end
redis.call("HSET", game, "config", ARGV[3], "state", ARGV[4])
local drop = {"start"}
for _, field in ipairs(redis.call("HKEYS", game)) do
  if string.sub(field, 1, 5) == "idem:" then drop[#drop + 1] = field end
end
redis.call("HDEL", game, unpack(drop))
for i = 6, #ARGV do redis.call("RPUSH", KEYS[2], ARGV[i]) end
redis.call("DEL", KEYS[4])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  redis.call("PEXPIRE", game, ttl)
  redis.call("PEXPIRE", KEYS[2], ttl)
end
return 1
"""


class CannotMigrate(Exception):
    """A game of no layout this command knows, or whose stored events the replay does not reproduce."""


def events_key(game_id: str) -> str:
    """The earlier layout's event stream."""
    return f"game:{{{game_id}}}:events"


def _events(events: tuple[engine.Event, ...]) -> list[Any]:
    return [orjson.loads(orjson.dumps(e.to_dict())) for e in events]


Stream = list[tuple[bytes, dict[bytes, bytes]]]  # XRANGE's reply: (entry id, fields)


def converted(fields: dict[bytes, bytes], stream: Stream) -> tuple[bytes, bytes, list[bytes]]:
    """The config, progress and log entries of an earlier-layout game (its hash ``fields`` and event ``stream``)."""
    if b"clock" in fields or b"version" not in fields or b"state" not in fields:
        raise CannotMigrate("not a game of the earlier layout")
    whole = json.loads(fields[b"state"])
    if b"config" in fields:
        config = json.loads(fields[b"config"])
        if config.get("v") != 1:
            raise CannotMigrate("a config of an unknown format")
        stored = engine.state_from_parts(engine.config_from_dict(config), whole)
    else:
        stored = engine.state_from_dict(whole)
    version = int(fields[b"version"])
    by_version: dict[int, list[Any]] = {}
    for entry_id, entry in stream:
        of_version = int(entry_id.decode().partition("-")[0])
        by_version.setdefault(of_version, []).append(json.loads(entry[b"e"]))
    if by_version and max(by_version) > version:
        raise CannotMigrate(f"stored events after the game's version {version}")
    state, dealt = engine.new_game_with_events(stored.rules, stored.seed, stored.presets)
    if 0 in by_version and by_version[0] != _events(dealt):
        raise CannotMigrate("the stored deal is not the config's")
    entries = [encode_entry(0, -1, b"null", [orjson.dumps(e.to_dict()) for e in dealt])]
    for v in range(1, version + 1):
        wanted = by_version.get(v)
        if not wanted:
            raise CannotMigrate(f"no stored events of version {v}")
        candidates = [(state.to_act, m) for m in engine.legal_moves(state)]
        candidates += [(seat, engine.Resign()) for seat in range(state.rules.players)]
        for seat, move in candidates:
            try:
                after, events = engine.apply(state, seat, move)
            except engine.RuleError:
                continue
            if _events(events) == wanted:
                break
        else:
            raise CannotMigrate(f"no move reproduces the stored events of version {v}")
        entries.append(encode_entry(v, seat, orjson.dumps(engine.move_to_dict(move)),
                                    [orjson.dumps(e.to_dict()) for e in events]))  # fmt: skip
        state = after
    if progress_json(state) != progress_json(stored):
        raise CannotMigrate("the replayed game is not the stored state")
    return config_json(stored), progress_json(stored), entries


async def migrate_game(store: GameStore, game_id: str) -> str:
    """Convert one game: "migrated", "current" (of today's layout already), "missing"; CannotMigrate else."""
    client: Any = store.client
    fields: dict[bytes, bytes] = await client.hgetall(game_key(game_id))
    if not fields:
        return "missing"
    if is_current_config(fields.get(b"config", b"")):
        return "current"
    stream = await client.xrange(events_key(game_id))
    config, progress, entries = converted(fields, stream)
    ttl = int(await client.pttl(game_key(game_id)))
    keys = [game_key(game_id), log_key(game_id), idem_key(game_id), events_key(game_id)]
    args = [fields[b"state"], fields[b"version"], config, progress, ttl, *entries]
    done = int(await client.eval(_WRITE, len(keys), *keys, *args))
    if done == 0:
        raise CannotMigrate("the game changed while it was converted: run migrate again")
    if done < 0:
        raise CannotMigrate("the game has keys of both layouts")
    return "migrated"


async def stored_game_ids(store: GameStore) -> AsyncIterator[str]:
    """The id of every game hash in the storage (every node of a Cluster)."""
    client: Any = store.client
    async for key in client.scan_iter(match="game:{*}", _type="hash", count=500):
        text = key.decode()
        if text.endswith("}"):
            yield text[len("game:{") : -1]


async def migrate(store: GameStore, game_ids: list[str], out: Any) -> int:
    """Convert ``game_ids`` (none: every game stored), one line each on ``out`` for a game converted or refused,
    and a total; 0 when none was refused, 1 otherwise."""
    counts = {"migrated": 0, "current": 0, "missing": 0, "failed": 0}
    ids = game_ids or [game_id async for game_id in stored_game_ids(store)]
    for game_id in ids:
        try:
            outcome = await migrate_game(store, game_id)
        except CannotMigrate as exc:
            counts["failed"] += 1
            print(f"{game_id}: not migrated: {exc}", file=out)
            continue
        counts[outcome] += 1
        if outcome != "current":
            print(f"{game_id}: {outcome}", file=out)
    print(", ".join(f"{n} {k}" for k, n in counts.items()), file=out)
    return 1 if counts["failed"] else 0
