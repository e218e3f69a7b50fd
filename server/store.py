"""Game storage in Redis: the only storage of the referee.

Every key of one game shares the Cluster hash tag of its id, so one Lua script can touch them all:

- ``game:{<id>}`` (hash): ``config`` (engine JSON of what never changes in a match: rules, seed, preset deals),
  ``state`` (engine JSON of the rest: written by every move), ``version`` (moves committed so far), ``meta``
  (JSON: profile, spectators allowed, each seat's label, display name and token hash ("" while open), the
  spectator token hash), ``start`` (the referee's view at creation), ``commit`` (id of the last commit),
  ``idem:<token hash prefix>:<request_id>`` (idempotency records).
- ``game:{<id>}:events`` (stream): every event with every card (engine ``Event.to_dict`` JSON), entry id
  ``<version>-<index>``, so that "everything after version v" is the range after ``v-<max>``.

Writes go through the Lua scripts in ``server/lua/`` (each file documents its KEYS and ARGV). Redis being
unreachable surfaces as ``StoreUnavailable``; any other Redis error is a bug and propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import redis.asyncio as aioredis
import redis.exceptions as rexc
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from server.hotpath import HotPath

MAX_SEATS = 6
MAX_TTL_S = 3650 * 24 * 3600  # 10 years
MAX_SEQ = 2**64 - 1  # largest sequence part of a stream id: "<v>-MAX_SEQ" is the last id of version v

RedisClient = aioredis.Redis | RedisCluster

_UNAVAILABLE_REPLIES = ("LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS")


class StoreUnavailable(Exception):
    """Redis cannot be reached (or cannot serve right now): the request may be retried later."""


class StoreBusy(StoreUnavailable):
    """Redis is reachable, but every connection of this process to it is busy: retry a little later."""


def game_key(game_id: str) -> str:
    """The game hash key (``game_id`` must already be validated: no braces)."""
    return f"game:{{{game_id}}}"


def events_key(game_id: str) -> str:
    """The game's event stream key."""
    return f"game:{{{game_id}}}:events"


POOL_MAX_CONNECTIONS = 6  # redis-py's pool (the hot path's own connection and the event subscriber are apart)
POOL_TIMEOUT_S = 1.0  # how long a command waits for a connection of a full pool before it is refused


class PoolExhausted(rexc.ConnectionError):
    """Every connection of the client's pool stayed busy for the pool's whole wait time."""


class _BoundedPool(aioredis.BlockingConnectionPool):
    """redis-py's blocking pool (at most ``max_connections``, a command waits up to ``timeout`` seconds for one),
    saying "pool exhausted" by its own type rather than as any lost connection."""

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
        except rexc.ConnectionError as exc:
            if isinstance(exc.__cause__, TimeoutError):  # the wait for a free connection timed out
                raise PoolExhausted(f"all {self.max_connections} Redis connections busy for {self.timeout}s") from exc
            raise


def connect(
    url: str,
    *,
    cluster: bool = False,
    max_connections: int = POOL_MAX_CONNECTIONS,
    pool_timeout_s: float = POOL_TIMEOUT_S,
) -> RedisClient:
    """A Redis client for ``url``; ``cluster`` (or a ``redis-cluster://`` URL) gives a Redis Cluster client.

    A standalone client holds at most ``max_connections`` connections, however many games are watched or played
    (a full pool makes a command wait up to ``pool_timeout_s``, then ``StoreBusy``). No socket timeout in redis-py
    itself (it costs an extra asyncio task per command): GameStore bounds every operation with one cheap
    ``asyncio.timeout`` instead."""
    if url.startswith("redis-cluster://"):
        url, cluster = "redis://" + url.removeprefix("redis-cluster://"), True
    # Few, quick retries: a Redis that is down must become UNAVAILABLE in well under a second, not after 10 tries.
    retry = Retry(ExponentialBackoff(cap=0.05, base=0.01), 2)
    if cluster:
        return RedisCluster.from_url(url, socket_timeout=None, socket_connect_timeout=2.0, retry=retry)
    pool = _BoundedPool.from_url(url, max_connections=max_connections, timeout=pool_timeout_s, socket_timeout=None,
                                 socket_connect_timeout=2.0, retry=retry)  # fmt: skip
    return aioredis.Redis.from_pool(pool)


def _unavailable(exc: BaseException, seconds: float) -> StoreUnavailable | None:
    """The StoreUnavailable that a Redis error means, None for an error that is a bug."""
    if isinstance(exc, PoolExhausted):
        return StoreBusy(str(exc))
    if isinstance(exc, TimeoutError):  # the operation took too long (its connection is dropped)
        return StoreUnavailable(f"Redis did not answer within {seconds}s")
    if isinstance(exc, rexc.ConnectionError | rexc.TimeoutError | rexc.ClusterError | OSError):
        return StoreUnavailable(str(exc) or type(exc).__name__)
    if isinstance(exc, rexc.ResponseError) and str(exc).startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailable(str(exc))
    return None


@contextlib.asynccontextmanager
async def _redis_errors(seconds: float) -> AsyncIterator[None]:
    """Bound one Redis operation in time, and turn "Redis cannot serve" into StoreUnavailable."""
    try:
        async with asyncio.timeout(seconds):
            yield
    except (TimeoutError, rexc.RedisError, OSError) as exc:
        unavailable = _unavailable(exc, seconds)
        if unavailable is None:
            raise
        raise unavailable from exc


@dataclass(frozen=True, slots=True)
class StoredGame:
    """One game as loaded by ``GameStore.load`` in a single round trip."""

    game_id: str
    state_json: bytes  # the progress part of the state (server.cache.progress_json)
    version: int
    meta: bytes
    config: bytes  # the configuration part (server.cache.config_json); b"" if the hash has none
    idem_record: bytes | None


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What ``GameStore.commit`` found: ``ok`` (version = the new version), ``dup`` (record = the stored
    idempotency record), ``conflict`` (version = the game's actual version) or ``missing``."""

    outcome: Literal["ok", "dup", "conflict", "missing"]
    version: int = 0
    record: bytes = b""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One stream entry: its version, index within the version, and the engine event JSON."""

    version: int
    index: int
    payload: bytes


def _script(name: str) -> str:
    return resources.files("server").joinpath("lua", name).read_text(encoding="utf-8")


_LOAD_FIELDS = ("state", "version", "meta", "config")

# The config field of a game stored before it had one (never creates a game hash that has expired meanwhile).
_SET_CONFIG = """
if redis.call("EXISTS", KEYS[1]) == 1 then
  return redis.call("HSETNX", KEYS[1], "config", ARGV[1])
end
return 0
"""


class GameStore:
    """Async access to the games in one Redis (or Redis Cluster)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        finished_ttl_s: int = 7 * 24 * 3600,
        idle_ttl_s: int = 30 * 24 * 3600,
        op_timeout_s: float = 5.0,
    ) -> None:
        """``finished_ttl_s``: how long a finished game is kept; ``idle_ttl_s``: how long an unfinished game is kept
        after its last move (or its creation); 0 for ever. At most 10 years (Redis refuses much larger expiries)."""
        for ttl in (finished_ttl_s, idle_ttl_s):
            if not 0 <= ttl <= MAX_TTL_S:
                raise ValueError(f"a time to keep games is 0..{MAX_TTL_S} seconds, not {ttl}")
        self.client = client
        self.finished_ttl_s = finished_ttl_s
        self.idle_ttl_s = idle_ttl_s
        self.op_timeout_s = op_timeout_s
        self._create = client.register_script(_script("create_game.lua"))
        self._commit = client.register_script(_script("commit_move.lua"))
        self._hot = _hot_path(client)
        self._join = client.register_script(_script("join_seat.lua"))
        self._set_config = client.register_script(_SET_CONFIG)

    def _op(self, extra_s: float = 0.0) -> contextlib.AbstractAsyncContextManager[None]:
        return _redis_errors(self.op_timeout_s + extra_s)

    async def close(self) -> None:
        """Close the client's connections."""
        if self._hot is not None:
            self._hot.close()
        await self.client.aclose()

    async def ping(self) -> None:
        """Raise StoreUnavailable unless Redis answers."""
        async with self._op():
            await self.client.ping()

    async def create(self, game_id: str, fields: Mapping[str, str | bytes], events: Sequence[str]) -> bool:
        """Store a new game (hash fields plus version-0 events), to expire after the idle time unless a move comes;
        False if the id is already taken."""
        args: list[str | bytes] = [str(self.idle_ttl_s), str(len(fields))]
        for name, value in fields.items():
            args += [name, value]
        args += events
        async with self._op():
            created = await self._create(keys=[game_key(game_id), events_key(game_id)], args=args)
        return bool(created)

    async def load(self, game_id: str, idem_field: str | None = None) -> StoredGame | None:
        """State, version, meta, config and (optionally) one idempotency record, in one HMGET; None if no game."""
        fields = (*_LOAD_FIELDS, idem_field) if idem_field else _LOAD_FIELDS
        key = game_key(game_id)
        values: Any
        if self._hot is not None:
            values = await self._hot_call("HMGET", key, *fields)
        else:
            async with self._op():
                values = await self.client.hmget(key, fields)
        state, version, meta = values[0], values[1], values[2]
        if state is None or version is None or meta is None:
            return None
        idem = values[4] if idem_field else None
        config = values[3] or b""
        return StoredGame(game_id=game_id, state_json=state, version=int(version), meta=meta, config=config,
                          idem_record=idem)  # fmt: skip

    async def commit(
        self,
        game_id: str,
        *,
        base_version: int,
        state_json: str | bytes,
        commit_id: str,
        events: Sequence[str | bytes],
        idem_field: str = "",
        idem_record: bytes = b"",
        match_over: bool = False,
    ) -> CommitResult:
        """Run commit_move.lua: version check, state, events, idempotency record, expiry (the finished-game time
        when ``match_over``, else the idle time again), all or nothing."""
        ttl = self.finished_ttl_s if match_over else self.idle_ttl_s
        args: list[str | bytes | int] = [base_version, state_json, commit_id, idem_field, idem_record, ttl, *events]
        keys = [game_key(game_id), events_key(game_id)]
        if self._hot is not None:
            outcome, value = await self._hot_commit(keys, args)
        else:
            async with self._op():
                outcome, value = await self._commit(keys=keys, args=args)
        kind = outcome.decode()
        if kind == "dup":
            return CommitResult("dup", record=value)
        if kind in ("ok", "conflict", "missing"):
            return CommitResult(kind, version=int(value))
        raise RuntimeError(f"commit_move.lua returned {outcome!r}")

    async def _hot_commit(self, keys: list[str], args: list[str | bytes | int]) -> Any:
        assert self._hot is not None
        timeout_s = self.op_timeout_s
        try:
            try:
                return await self._hot.call(timeout_s, "EVALSHA", self._commit.sha, len(keys), *keys, *args)
            except rexc.NoScriptError:  # a Redis restarted without its script cache
                await self._hot.call(timeout_s, "SCRIPT", "LOAD", _script("commit_move.lua"))
                return await self._hot.call(timeout_s, "EVALSHA", self._commit.sha, len(keys), *keys, *args)
        except (TimeoutError, rexc.ConnectionError, OSError, rexc.ResponseError) as exc:
            unavailable = _unavailable(exc, timeout_s)
            if unavailable is None:
                raise
            raise unavailable from exc

    async def _hot_call(self, *args: str | bytes | int) -> Any:
        assert self._hot is not None
        try:
            return await self._hot.call(self.op_timeout_s, *args)
        except (TimeoutError, rexc.ConnectionError, OSError, rexc.ResponseError) as exc:
            unavailable = _unavailable(exc, self.op_timeout_s)
            if unavailable is None:
                raise
            raise unavailable from exc

    async def set_config(self, game_id: str, config: bytes) -> None:
        """Give an existing game its ``config`` field, unless it has one (a game stored before that field)."""
        async with self._op():
            await self._set_config(keys=[game_key(game_id)], args=[config])

    async def join(self, game_id: str, *, seat: int, token_hash: str, name: str) -> int:
        """Run join_seat.lua: the seat taken, -1 when none is open (or the seat wanted is taken), -2 no game."""
        async with self._op():
            taken = await self._join(keys=[game_key(game_id)], args=[seat, token_hash, name])
        return int(taken)

    async def events_since(self, game_id: str, after: tuple[int, int], count: int | None = None) -> list[StoredEvent]:
        """Events after stream position ``after`` = (version, index), oldest first (at most ``count``)."""
        start = f"({after[0]}-{after[1]}" if after >= (0, 0) else "-"
        async with self._op():
            entries: Any = await self.client.xrange(events_key(game_id), min=start, max="+", count=count)
        return [_stored_event(entry_id, fields) for entry_id, fields in entries]

    async def events_after(self, game_id: str, version: int, count: int | None = None) -> list[StoredEvent]:
        """Events with a version greater than ``version``, oldest first (at most ``count``)."""
        return await self.events_since(game_id, (version, MAX_SEQ), count)

    async def wait_events(self, game_id: str, after: tuple[int, int], block_ms: int) -> list[StoredEvent]:
        """Events after stream position ``after`` = (version, index), waiting up to ``block_ms`` for one."""
        async with self._op(block_ms / 1000):
            reply: Any = await self.client.xread({events_key(game_id): f"{after[0]}-{after[1]}"}, block=block_ms)
        if not reply:
            return []
        # RESP2 gives [[key, entries]], RESP3 {key: [entries]}
        entries = next(iter(reply.values()))[0] if isinstance(reply, dict) else reply[0][1]
        return [_stored_event(entry_id, fields) for entry_id, fields in entries]

    async def last_position(self, game_id: str) -> tuple[int, int]:
        """Stream position of the game's newest event, (0, 0) when there is none."""
        async with self._op():
            entries: Any = await self.client.xrevrange(events_key(game_id), count=1)
        if not entries:
            return (0, 0)
        event = _stored_event(entries[0][0], entries[0][1])
        return (event.version, event.index)

    async def start_view(self, game_id: str) -> bytes | None:
        """The referee's view of the game at creation (JSON), None if no game."""
        async with self._op():
            start: Any = await self.client.hget(game_key(game_id), "start")
        return None if start is None else bytes(start)

    async def exists(self, game_id: str) -> bool:
        """Whether the game hash exists."""
        async with self._op():
            return bool(await self.client.exists(game_key(game_id)))

    async def ttl(self, game_id: str) -> int:
        """Seconds until the game expires; -1 when it does not expire, -2 when it does not exist."""
        async with self._op():
            return int(await self.client.ttl(game_key(game_id)))


def _hot_path(client: RedisClient) -> HotPath | None:
    """The pipelined path of the two hot commands, for a standalone Redis it can connect to by itself."""
    if not isinstance(client, aioredis.Redis):
        return None
    pool = client.connection_pool
    if not HotPath.supports(pool.connection_class, pool.connection_kwargs):
        return None
    kwargs = pool.connection_kwargs
    return HotPath(kwargs, connect_timeout_s=kwargs.get("socket_connect_timeout") or 2.0)


def _stored_event(entry_id: bytes, fields: Mapping[bytes, Any]) -> StoredEvent:
    version, _, index = entry_id.decode().partition("-")
    return StoredEvent(version=int(version), index=int(index), payload=bytes(fields[b"e"]))
