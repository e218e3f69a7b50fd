"""Game storage in Redis: the only storage of the referee, the Redis adapter of the storage port
(``server.ports.GameStorage``: ``create_game``, ``load``, ``commit_move``, ``join``, ``request_key`` ... are the
port's; ``create``, ``commit`` and the rest are this adapter's own, in Redis's terms).

Every key of one game shares the Cluster hash tag of its id, so one Lua script can touch them all:

- ``game:{<id>}`` (hash): ``config`` (compact JSON of what never changes in a match: the rules as they differ
  from a fixed base, the seed, preset deals; server.cache.config_json), ``state`` (engine JSON of the rest:
  written by every move), ``version`` (moves committed so far), ``meta`` (JSON: profile, spectators allowed,
  each seat's label, display name and token hash ("" while open; with the version it was joined at), the
  spectator token hash), ``commit`` (id of the last commit), ``joins`` (seats joined so far).
- ``game:{<id>}:log`` (list): element v is what happened at version v (the deal is version 0): the mover, the
  move and every event with every card, compact (server/gamelog.py).
- ``game:{<id>}:idem`` (string): the idempotency records, 20 bytes each (a 16-byte hash of the seat's token and
  the request_id, then the version that move committed), with an expiry of their own (a day by default). The
  answer itself is not stored: it is rebuilt from the log.

Writes go through the Lua scripts in ``server/lua/`` (each file documents its KEYS and ARGV). Redis being
unreachable surfaces as ``StoreUnavailable``; any other Redis error is a bug and propagates.

The commit is fenced: it carries the time (in Redis's clock) after which the referee no longer waits for its
answer, and the script writes nothing when Redis runs it later (a Redis that was paused). So a commit whose
answer did not come is settled by reading the game once the fence has passed: applied or not, it cannot change
any more; ``CommitOutcomeUnknown`` when even that read gets no answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions as rexc
from redis.asyncio.cluster import ClusterPipeline, PipelineCommand, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.crc import key_slot

from server import deadlines
from server.clocks import INDEX_SCRIPT, shard_keys, shard_of
from server.gamelog import LogEntry, decode_entry, encode_entry, event_payload
from server.hotpath import ClusterHotPath, CommitPacker, HotPath, NotSent, Refused
from server.ports import END_OF_VERSION, Position
from server.ports import CommitResult as CommitResult  # (re-exported: the adapter's own tests use them from here)
from server.ports import StoredEvent as StoredEvent
from server.ports import StoredGame as StoredGame
from server.settings import DEFAULTS
from server.storage_errors import CommitOutcomeUnknown as CommitOutcomeUnknown
from server.storage_errors import StoreBusy as StoreBusy
from server.storage_errors import StoreUnavailable as StoreUnavailable

MAX_TTL_S = 3650 * 24 * 3600  # 10 years
MAX_SEQ = END_OF_VERSION  # largest index within a version: (v, MAX_SEQ) is the position after all of version v
MAX_LOG_INDEX = 2**62  # beyond any game's version (and within what LRANGE takes)
IDEM_RECORD = 20  # bytes of one idempotency record: a 16-byte key, then the version (4 bytes, big endian)
IDEM_KEY = 16
SETTLE_READ_S = DEFAULTS.storage.settle_read_s  # the most a lost commit's check read waits
#: How long one storage operation may take before Redis counts as unresponsive (``serve --storage-timeout``).
STORAGE_TIMEOUT_S = DEFAULTS.storage.timeout_s
#: How long a move waits for its replicas' acknowledgement (``serve --wait-replicas-timeout``).
WAIT_TIMEOUT_S = DEFAULTS.storage.wait_timeout_s

RedisClient = aioredis.Redis | RedisCluster

# Error replies of a Redis that cannot serve now (a retry later may succeed), none of which ran the command: also
# out of memory (maxmemory with noeviction: writes refused), busy with a long script, unable to write its append-only
# file. redis-py takes the code off some of them (their classes, below); the hot path's hiredis keeps the whole text.
_UNAVAILABLE_REPLIES = ("LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "OOM ", "BUSY ",
                        "MISCONF ")  # fmt: skip
_UNAVAILABLE_ERRORS = (rexc.OutOfMemoryError, rexc.ReadOnlyError, rexc.TryAgainError)


def game_key(game_id: str) -> str:
    """The game hash key (``game_id`` must already be validated: no braces)."""
    return f"game:{{{game_id}}}"


def log_key(game_id: str) -> str:
    """The game log key (a list: one entry per version)."""
    return f"game:{{{game_id}}}:log"


def idem_key(game_id: str) -> str:
    """The key of the game's idempotency records."""
    return f"game:{{{game_id}}}:idem"


def game_keys(game_id: str) -> list[str]:
    """Every key of one game."""
    return [game_key(game_id), log_key(game_id), idem_key(game_id)]


# Commit ids only need to be unique among the commits of one game: a random prefix per process and a counter.
_COMMIT_PREFIX = secrets.token_hex(8)
commit_ids = (f"{_COMMIT_PREFIX}-{n}" for n in itertools.count())


POOL_MAX_CONNECTIONS = DEFAULTS.storage.pool_max_connections  # (server.settings)
POOL_TIMEOUT_S = DEFAULTS.storage.pool_timeout_s  # (server.settings)


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


#: True while redis-py runs one of its own commands or pipelines (``FailoverCluster``): an ``aclose`` from there is
#: its reaction to a failure, not the store closing.
_IN_COMMAND: contextvars.ContextVar[bool] = contextvars.ContextVar("rummy_cluster_in_command", default=False)


class FailoverCluster(RedisCluster):
    """redis-py's cluster client, but a failover on one shard does not stall the others. redis-py rebuilds its slot
    map (CLUSTER SLOTS, then COMMAND) after any lost connection, and every command of every shard waits for that
    first; a caller's timeout that cancels it closes every connection of every node. Here only the first map is
    awaited: a later rebuild runs in the background, one at a time, at most every ``REFRESH_S`` (a rebuild makes
    every connection reconnect), shielded from the callers' timeouts, the command table kept; meanwhile commands
    use the map they have (those of a dead master fail fast, the others go on), and the new map serves them once
    it is made. Where redis-py would close every connection of every node (a CLUSTERDOWN or uncovered-slot reply,
    a pipeline that lost a node, many MOVED), failing the healthy shards' commands in flight with them, only the
    map is rebuilt. And at most ``node_max_connections`` commands run on one node at once (redis-py's pools grow
    to the commands in flight): the others wait up to ``pool_timeout_s`` for one to end, then StoreBusy."""

    REFRESH_S = 0.5

    def __init__(
        self,
        *args: Any,
        node_max_connections: int = POOL_MAX_CONNECTIONS,
        pool_timeout_s: float = POOL_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._mapped = False
        self._refresher: asyncio.Future[None] | None = None
        self._refreshed_at = 0.0
        # redis-py's node pools grow to the commands in flight (its max_connections refuses, never waits): at most
        # node_max_connections commands at once per node, the others waiting up to pool_timeout_s (then StoreBusy)
        self.node_max_connections = node_max_connections
        self.pool_timeout_s = pool_timeout_s
        self._gates: dict[str, asyncio.Semaphore] = {}

    async def aclose(self) -> None:
        if _IN_COMMAND.get():
            # redis-py's answer to CLUSTERDOWN, an uncovered slot or a pipeline's lost node is to close every
            # connection of every node, failing the other shards' commands in flight: a new slot map instead
            self._initialize = True
            self.refresh_soon()
            return
        await super().aclose()

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)  # (refused by redis-py)
        return _Pipeline(self, transaction)  # type: ignore[abstract]  # (as redis-py's own: ClusterPipeline)

    async def _execute_command(self, target_node: Any, *args: Any, **kwargs: Any) -> Any:
        # one command on one node (redis-py's retries and redirections around it): one connection of its pool
        in_command = _IN_COMMAND.set(True)
        try:
            return await self._gated(target_node, *args, **kwargs)
        finally:
            _IN_COMMAND.reset(in_command)

    async def _gated(self, target_node: Any, *args: Any, **kwargs: Any) -> Any:
        gate = self._gates.get(target_node.name)
        if gate is None:
            gate = self._gates[target_node.name] = asyncio.Semaphore(self.node_max_connections)
        if gate.locked():
            try:
                async with asyncio.timeout(self.pool_timeout_s):
                    await gate.acquire()
            except TimeoutError as exc:
                raise PoolExhausted(
                    f"all {self.node_max_connections} connections to {target_node.name} busy for {self.pool_timeout_s}s"
                ) from exc
        else:
            await gate.acquire()
        try:
            return await super()._execute_command(target_node, *args, **kwargs)
        finally:
            gate.release()

    async def initialize(
        self, additional_startup_nodes_info: Any = None, last_failed_node_name: str | None = None
    ) -> RedisCluster:
        if not self._initialize:
            return self
        if not self._mapped:
            await super().initialize(additional_startup_nodes_info, last_failed_node_name)
            self._mapped = True
            return self
        self.refresh_soon(last_failed_node_name)
        return self

    def refresh_soon(self, last_failed_node_name: str | None = None) -> asyncio.Future[None]:
        """The background rebuild of the slot map (started now unless one is under way)."""
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.ensure_future(self._refresh(last_failed_node_name))
        return self._refresher

    async def _refresh(self, last_failed_node_name: str | None) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._refreshed_at + self.REFRESH_S - loop.time()))
        self._refreshed_at = loop.time()
        try:
            async with asyncio.timeout(5.0):
                await self.nodes_manager.initialize(last_failed_node_name=last_failed_node_name)
            self._initialize = False
        except (rexc.RedisError, OSError, TimeoutError):  # no node answered: the next failure asks again
            pass


class _Pipeline(ClusterPipeline):
    """A FailoverCluster's pipeline: its retry after a lost node refreshes the slot map, closing nothing."""

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        in_command = _IN_COMMAND.set(True)
        try:
            return await super().execute(*args, **kwargs)
        finally:
            _IN_COMMAND.reset(in_command)


async def refresh_slot_map(client: RedisClient, timeout_s: float = 2.0) -> None:
    """Rebuild a cluster client's slot map now (after a failover: the new masters) and wait for it (at most
    ``timeout_s``); nothing for a standalone client."""
    if isinstance(client, FailoverCluster):
        client._initialize = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(client.refresh_soon()), timeout_s)
    elif isinstance(client, RedisCluster):
        client._initialize = True
        with contextlib.suppress(TimeoutError, rexc.RedisError, OSError):
            async with asyncio.timeout(timeout_s):
                await client.initialize()


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
        return FailoverCluster.from_url(url, socket_timeout=None, socket_connect_timeout=2.0, retry=retry,
                                        node_max_connections=max_connections,
                                        pool_timeout_s=pool_timeout_s)  # fmt: skip
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
    if isinstance(exc, _UNAVAILABLE_ERRORS) or (
        isinstance(exc, rexc.ResponseError) and _reply_text(exc).startswith(_UNAVAILABLE_REPLIES)
    ):
        return StoreUnavailable(str(exc))
    return None


def _reply_text(exc: rexc.ResponseError) -> str:
    """The error reply's text, without what redis-py puts before it for a pipeline's command ("Command # 1 (PTTL
    ...) of pipeline caused error: ('BUSY ...',)")."""
    text = str(exc)
    _, pipelined, reply = text.partition(" of pipeline caused error: ")
    return reply.lstrip("('\"") if pipelined else text


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


def _script(name: str) -> str:
    return resources.files("server").joinpath("lua", name).read_text(encoding="utf-8")


_LOAD_FIELDS = ("state", "version", "meta", "config", "joins", "clock")


class GameStore:
    """Async access to the games in one Redis (or Redis Cluster)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        finished_ttl_s: int = DEFAULTS.retention.finished_ttl_s,
        idle_ttl_s: int = DEFAULTS.retention.idle_ttl_s,
        idem_ttl_s: int = DEFAULTS.retention.idem_ttl_s,
        op_timeout_s: float = STORAGE_TIMEOUT_S,
        unplayed_ttl_s: int = DEFAULTS.retention.unplayed_ttl_s,
        wait_replicas: int = DEFAULTS.storage.wait_replicas,
        wait_timeout_s: float = WAIT_TIMEOUT_S,
        settle_read_s: float = SETTLE_READ_S,
        background_pool_timeout_s: float = POOL_TIMEOUT_S,
        hot_max_redirects: int = DEFAULTS.storage.hot_max_redirects,
        hot_tryagain_s: float = DEFAULTS.storage.hot_tryagain_s,
        hot_refresh_gap_s: float = DEFAULTS.storage.hot_refresh_gap_s,
        hot_slot_cache: int = DEFAULTS.storage.hot_slot_cache,
    ) -> None:
        """``finished_ttl_s``: how long a finished game is kept; ``idle_ttl_s``: how long an unfinished game is kept
        after its last move; ``unplayed_ttl_s``: how long a new game is kept if no move comes (the first move gives
        it the idle time); ``idem_ttl_s``: how long a game's idempotency records are kept after its last move with
        a request_id (0: as long as the game); 0 for ever. At most 10 years (Redis refuses much larger expiries).
        ``op_timeout_s``: the storage timeout, the longest any operation waits for Redis (less when the caller's
        deadline comes first: ``server.deadlines``). ``wait_replicas``: a move (or a creation) is answered as done
        only once that many replicas of the game's node acknowledge it (Redis ``WAIT``, at most
        ``wait_timeout_s``): ``GameStore.wait_replicated``. ``settle_read_s``: the most a lost commit's check read
        waits; ``background_pool_timeout_s``: a background task's own pool's wait for a connection (``own_client``);
        ``hot_*``: the cluster hot path's (server.hotpath ``ClusterHotPath``)."""
        if not 0 < op_timeout_s <= 3600:
            raise ValueError(f"the storage timeout is more than 0 and at most 3600 seconds, not {op_timeout_s}")
        for ttl in (finished_ttl_s, idle_ttl_s, unplayed_ttl_s, idem_ttl_s):
            if not 0 <= ttl <= MAX_TTL_S:
                raise ValueError(f"a time to keep games is 0..{MAX_TTL_S} seconds, not {ttl}")
        self.client = client
        self.finished_ttl_s = finished_ttl_s
        self.idle_ttl_s = idle_ttl_s
        self.unplayed_ttl_s = unplayed_ttl_s
        self.idem_ttl_s = idem_ttl_s
        self.op_timeout_s = op_timeout_s
        self.settle_read_s = settle_read_s
        self.background_pool_timeout_s = background_pool_timeout_s
        self._create = client.register_script(_script("create_game.lua"))
        self._commit = client.register_script(_script("commit_move.lua"))
        self._commits = CommitPacker(self._commit.sha, hot_slot_cache)  # (as many games as the cluster's slot cache)
        self._hot = _hot_path(client, max_redirects=hot_max_redirects, tryagain_s=hot_tryagain_s,
                              refresh_gap_s=hot_refresh_gap_s, slot_cache=hot_slot_cache)  # fmt: skip
        # on a cluster the other single-key reads (the event log's, mostly) take the pipelined connections too:
        # one connection per master, however many watch streams open at once (redis-py's cluster pools are unbounded)
        self._hot_reads = isinstance(self._hot, ClusterHotPath)
        self._join = client.register_script(_script("join_seat.lua"))
        if wait_replicas < 0 or not 0 < wait_timeout_s <= 3600:
            raise ValueError("wait_replicas is 0 or more and the wait's timeout more than 0 and at most 3600 s")
        self.wait_replicas = wait_replicas
        self.wait_timeout_s = wait_timeout_s
        # a Redis Cluster: commits publish on the game's shard only (SPUBLISH), read by one subscriber per shard
        self.sharded_events = isinstance(client, RedisCluster)
        # Redis's clock minus ours (seconds), and how far off that may be: measured by ping() and the first commit
        self._clock_offset: float | None = None
        self._clock_error = 0.0

    def _op(self, extra_s: float = 0.0) -> contextlib.AbstractAsyncContextManager[None]:
        # the storage timeout, or less if the caller's deadline comes first (DeadlineTooShort: nothing is started)
        return _redis_errors(deadlines.budget(self.op_timeout_s + extra_s))

    async def close(self) -> None:
        """Close the client's connections."""
        if self._hot is not None:
            self._hot.close()
        await self.client.aclose()

    async def ping(self, timeout_s: float | None = None) -> None:
        """Raise StoreUnavailable unless Redis answers (within ``timeout_s``, by default the storage timeout) a
        PING, which a Redis still loading its data refuses (-LOADING; TIME it answers); then it reads Redis's clock,
        so the commit fence's offset is measured again."""
        async with _redis_errors(timeout_s or self.op_timeout_s):
            await self.client.ping()
            await self._measure_clock()

    async def shard_health(self, timeout_s: float | None = None) -> dict[str, bool] | None:
        """Of a Redis Cluster: whether each shard can serve its games now, by shard name (its slot ranges as the
        client's slot map has them, "0-5460": the same across a failover, whichever node is its master). A shard
        serves when its master answers a read of a key in its slots within ``timeout_s`` (by default the storage
        timeout), and, with ``wait_replicas``, has that many replicas linked: a dead master fails until its replica
        is promoted and the slot map refreshed (and with ``wait_replicas``, until the new master has its replicas).
        None for a standalone Redis (``ping`` tells)."""
        client = self.client
        if not isinstance(client, RedisCluster):
            return None
        seconds = timeout_s or self.op_timeout_s
        try:
            async with _redis_errors(seconds):
                if client._initialize:
                    await client.initialize()
        except StoreUnavailable:
            return {}  # no node answers at all
        shards = _shards(client)

        async def probe(key: str) -> bool:
            try:
                async with _redis_errors(seconds):
                    await client.exists(key)
                    if self.wait_replicas:  # a move is answered once replicas have it: so many must be linked
                        node = client.get_node_from_key(key)
                        role: Any = await client.execute_command("ROLE", target_nodes=node)
                        return len(role[2]) >= self.wait_replicas
                return True
            except (StoreUnavailable, rexc.RedisError):  # an outage, or a refusal the store does not know (NOPERM)
                return False

        names = list(shards)
        found = await asyncio.gather(*(probe(shards[name]) for name in names))
        return dict(zip(names, found, strict=True))
    def clock_unknown(self) -> bool:
        """Whether Redis's clock was not measured yet (``ping`` measures it)."""
        return self._clock_offset is None

    def redis_now_ms(self, *, lower: bool = False) -> int:
        """Redis's clock now as this process estimates it (ms since the epoch); ``lower``: an estimate no later
        than Redis's clock (the measurement's error and 5 ms taken off)."""
        offset = self._clock_offset or 0.0
        if lower:
            return int((time.time() + offset - self._clock_error) * 1000) - 5
        return int((time.time() + offset) * 1000)

    async def redis_time_ms(self, game_id: str) -> int:
        """Redis's clock read now (ms since the epoch), on the node that holds ``game_id`` (of a cluster: the
        clock its commits read): one round trip, no estimate."""
        async with self._op():
            (reply,) = await _on_node_of(self.client, game_key(game_id), [("TIME",)])
        if isinstance(reply, Exception):
            raise reply
        seconds, micros = reply
        return int(seconds) * 1000 + int(micros) // 1000

    async def _measure_clock(self) -> None:
        before = time.time()
        seconds, micros = await self.client.time()
        after = time.time()
        self._clock_offset = seconds + micros / 1e6 - (before + after) / 2
        self._clock_error = (after - before) / 2

    async def create(self, game_id: str, fields: Mapping[str, str | bytes], deal_entry: bytes, *,
                     ttl_s: int | None = None, clock_seat: int = -1, bound: int = 0) -> bool:  # fmt: skip
        """Store a new game (hash fields plus the log's version-0 entry), to expire after ``ttl_s`` (default: the
        unplayed time) unless a move comes; False if the id is already taken. ``clock_seat`` >= 0: the clock (field
        "clock") starts for that seat, its deadline first written to the deadline index at ``bound``."""
        args: list[str | bytes] = [str(self.unplayed_ttl_s if ttl_s is None else ttl_s), str(len(fields))]
        for name, value in fields.items():
            args += [name, value]
        args += [deal_entry, str(clock_seat)]
        if clock_seat >= 0:
            async with self._op():
                await self.client.execute_command(
                    "EVAL", INDEX_SCRIPT, 2, *shard_keys(shard_of(game_id)), bound, game_id, 0
                )
        async with self._op():
            created = await self._create(keys=game_keys(game_id), args=args)
        if created and self.wait_replicas:
            await self.wait_replicated(game_id, 0)
        return bool(created)

    async def create_game(
        self,
        game_id: str,
        *,
        config: bytes,
        progress: bytes,
        meta: str | bytes,
        deal_events: Sequence[bytes],
        clock: str | bytes = b"",
        ttl_s: int | None = None,
        clock_seat: int = -1,
        bound: int = 0,
    ) -> bool:
        """The port's creation (server.ports.GameStorage): the game hash's fields and the log's version-0 entry."""
        fields: dict[str, str | bytes] = {"config": config, "state": progress, "version": "0", "meta": meta}
        if clock:
            fields["clock"] = clock
        deal = encode_entry(0, -1, b"null", list(deal_events))
        return await self.create(game_id, fields, deal, ttl_s=ttl_s, clock_seat=clock_seat, bound=bound)

    async def load(self, game_id: str) -> StoredGame | None:
        """State, version, meta, config and joins, in one HMGET; None if no game."""
        key = game_key(game_id)
        values: Any
        if self._hot is not None:
            values = await self._hot_call("HMGET", key, *_LOAD_FIELDS)
        else:
            async with self._op():
                values = await self.client.hmget(key, _LOAD_FIELDS)
        state, version, meta = values[0], values[1], values[2]
        if state is None or version is None or meta is None:
            return None
        return StoredGame(game_id=game_id, progress_json=state, version=int(version), meta=meta,
                          config=values[3] or b"", joins=int(values[4] or 0), clock=values[5] or b"")  # fmt: skip

    async def commit(
        self,
        game_id: str,
        *,
        base_version: int,
        progress_json: str | bytes,
        commit_id: str,
        entry: bytes,
        idem: bytes = b"",
        joins: int = 0,
        match_over: bool = False,
        timeout_s: float | None = None,
        clock_step: str = "",
        index: tuple[int, int, int] | None = None,
    ) -> CommitResult:
        """Run commit_move.lua: version check, state, log entry, idempotency record (``idem``: its 16-byte key, or
        b"" for none), expiry (the finished-game time when ``match_over``, else the idle time again), all or
        nothing, and fenced: Redis writes nothing once ``timeout_s`` (default: the storage timeout, or the time left
        before the caller's deadline if that is shorter: ``server.deadlines``) has passed. ``clock_step``: the
        clock's step (commit_move.lua ARGV[10]); ``index``: (shard, lower bound of the new deadline, the version
        committed), written to the deadline index before the commit (server/clocks.py).

        Raises StoreUnavailable when the move was not applied (and will not be), CommitOutcomeUnknown when that
        cannot be known (Redis answers neither the commit nor a check read after the fence)."""
        if timeout_s is None:
            timeout_s = deadlines.budget(self.op_timeout_s)
            if timeout_s < self.op_timeout_s:  # the caller's deadline comes first: keep a quarter for the check read
                timeout_s *= 0.75
        if self._clock_offset is None:
            async with _redis_errors(timeout_s):  # not sent yet: a failure here is plainly "not applied"
                await self._measure_clock()
        assert self._clock_offset is not None
        fence = time.time() + timeout_s  # our clock: we wait for the answer until then
        fence_ms = int((fence + self._clock_offset) * 1000)
        ttl = self.finished_ttl_s if match_over else self.idle_ttl_s
        args: list[str | bytes | int] = [
            base_version, progress_json, commit_id, fence_ms, idem, ttl, self.idem_ttl_s, joins, entry, clock_step,
            base_version + 1,
        ]  # fmt: skip
        if self.sharded_events:
            args.append("s")
        keys = game_keys(game_id)
        first: tuple[str | bytes | int, ...] = ()
        if index is not None:
            shard, bound, mark = index
            first = ("EVAL", INDEX_SCRIPT, 2, *shard_keys(shard), bound, game_id, mark)
        try:
            if self._hot is not None:
                reply = await self._hot_commit(keys, args, timeout_s, first)
            else:
                if first:
                    async with _redis_errors(timeout_s):  # before the commit: a failure is plainly "not applied"
                        await self.client.execute_command(*first)
                async with _redis_errors(timeout_s):
                    reply = await self._commit(keys=keys, args=args)
        except StoreUnavailable as exc:
            if isinstance(exc.__cause__, NotSent | Refused):
                raise  # never written, or refused by Redis unrun (-LOADING, -BUSY, -OOM, ...): not applied
            settled = await self._settle(game_id, base_version, commit_id, fence, exc)
            if self.wait_replicas:  # applied after all: answered as done only once the replicas have it too
                await self.wait_replicated(game_id, settled.version)
            return settled
        kind = reply[0].decode()
        if kind in ("ok", "dup") and self.wait_replicas:
            await self.wait_replicated(game_id, int(reply[1]))
        if kind in ("ok", "dup", "conflict", "missing", "late", "out_of_time", "not_due"):
            return CommitResult(kind, version=int(reply[1]), tail=reply[2] if len(reply) > 2 else b"")
        raise RuntimeError(f"commit_move.lua returned {reply!r}")

    async def commit_move(
        self,
        game_id: str,
        *,
        base_version: int,
        progress: bytes,
        seat: int,
        move_json: bytes,
        events: Sequence[bytes],
        request_key: bytes = b"",
        joins: int = 0,
        match_over: bool = False,
        clock_step: str = "",
        index: tuple[int, int, int] | None = None,
    ) -> CommitResult:
        """The port's commit (server.ports.GameStorage): ``commit`` with the log entry of version
        ``base_version + 1`` and a fresh commit id."""
        return await self.commit(
            game_id,
            base_version=base_version,
            progress_json=progress,
            commit_id=next(commit_ids),
            entry=encode_entry(base_version + 1, seat, move_json, list(events)),
            idem=request_key,
            joins=joins,
            match_over=match_over,
            clock_step=clock_step,
            index=index,
        )

    async def wait_replicated(self, game_id: str, version: int) -> None:
        """Return once ``wait_replicas`` replicas of the game's node hold the game at ``version`` or later (Redis
        ``WAIT``, at most ``wait_timeout_s``); raise CommitOutcomeUnknown when they do not acknowledge it in time
        or the node no longer has that version (a failover between the commit and this wait).

        WAIT covers the writes made on its own connection, and the commit may have gone over another (the hot
        path, another process): so on one connection to the game's node, a script first rewrites the game's
        ``commit`` field with its own value (a write, replicated after the commit, which that node had already
        run) when the game is at ``version`` or later, then WAIT. Once the replicas acknowledge that write they
        hold the commit too."""
        wait_ms = max(1, int(self.wait_timeout_s * 1000))
        commands: list[tuple[Any, ...]] = [
            ("EVAL", _TOUCH_SCRIPT, 1, game_key(game_id), version),
            ("WAIT", self.wait_replicas, wait_ms),
        ]
        try:
            async with _redis_errors(self.op_timeout_s + self.wait_timeout_s):
                touched, acked = await _on_node_of(self.client, game_key(game_id), commands)
        except StoreUnavailable as exc:
            raise CommitOutcomeUnknown(f"the replicas' acknowledgement did not come: {exc}") from exc
        if isinstance(touched, BaseException) or isinstance(acked, BaseException):
            error = touched if isinstance(touched, BaseException) else acked
            if _unavailable(error, self.wait_timeout_s) is None:
                raise error
            raise CommitOutcomeUnknown(f"the replicas' acknowledgement did not come: {error}") from error
        if not touched:
            raise CommitOutcomeUnknown(f"the game's node no longer has version {version} (a failover?)")
        if int(acked) < self.wait_replicas:
            raise CommitOutcomeUnknown(
                f"{acked} of {self.wait_replicas} replicas acknowledged the write within {self.wait_timeout_s:g}s"
            )

    async def _settle(
        self, game_id: str, base_version: int, commit_id: str, fence: float, cause: StoreUnavailable
    ) -> CommitResult:
        """The outcome of a commit whose answer did not come: read once its fence has passed in Redis's clock."""
        await asyncio.sleep(max(0.0, fence + self._clock_error + 0.01 - time.time()))
        try:
            left = deadlines.remaining()
            settle_s = self.settle_read_s
            read_s = min(settle_s, self.op_timeout_s, max(left, deadlines.MIN_BUDGET_S) if left else settle_s)
            async with _redis_errors(read_s):
                version, last_commit = await self.client.hmget(game_key(game_id), ["version", "commit"])
        except StoreUnavailable as exc:
            raise CommitOutcomeUnknown(f"the commit's outcome is unknown: {cause}") from exc
        if version is not None and int(version) == base_version + 1 and last_commit == commit_id.encode():
            return CommitResult("ok", version=base_version + 1)
        if version is None or int(version) <= base_version + 1:
            raise cause  # the game is where the commit found it (or another commit made that version): not applied
        raise CommitOutcomeUnknown(f"the commit's outcome is unknown (the game moved on): {cause}")

    async def _hot_commit(
        self, keys: list[str], args: list[str | bytes | int], wait_s: float, first: tuple[str | bytes | int, ...] = ()
    ) -> Any:
        """EVALSHA of commit_move.lua on the hot path: Redis counts as hung after the storage timeout (the
        connection is cut), this caller waits ``wait_s`` (its fence) at most. ``first``: a command written just
        before it on the same connection (Redis runs it first; the commit is not sent when it fails)."""
        assert self._hot is not None
        timeout_s = self.op_timeout_s
        try:
            try:
                if first:
                    return await self._hot.call_pair(timeout_s, first, ("EVALSHA", self._commit.sha, len(keys),
                                                                        *keys, *args), wait_s=wait_s)  # fmt: skip
                if type(self._hot) is HotPath:  # (a cluster's routes the command by its arguments)
                    return await self._hot.call(timeout_s, wait_s=wait_s, packed=self._commits.pack(keys, args))
                return await self._hot.call(timeout_s, "EVALSHA", self._commit.sha, len(keys), *keys, *args,
                                            wait_s=wait_s)  # fmt: skip
            except rexc.NoScriptError:  # a Redis restarted without its script cache
                await self._hot.call(timeout_s, "SCRIPT", "LOAD", _script("commit_move.lua"), wait_s=wait_s,
                                     route=keys[0])  # fmt: skip
                return await self._hot.call(timeout_s, "EVALSHA", self._commit.sha, len(keys), *keys, *args,
                                            wait_s=wait_s)  # fmt: skip
        except (TimeoutError, rexc.ConnectionError, OSError, rexc.ResponseError) as exc:
            unavailable = _unavailable(exc, wait_s)
            if unavailable is None:
                raise
            raise unavailable from exc

    async def _hot_call(self, *args: str | bytes | int) -> Any:
        assert self._hot is not None
        wait_s = deadlines.budget(self.op_timeout_s)  # the caller's deadline, if sooner
        try:
            return await self._hot.call(self.op_timeout_s, *args, wait_s=wait_s)
        except (TimeoutError, rexc.ConnectionError, OSError, rexc.ResponseError) as exc:
            unavailable = _unavailable(exc, wait_s)
            if unavailable is None:
                raise
            raise unavailable from exc

    async def join(self, game_id: str, *, seat: int, token_hash: str, name: str) -> int:
        """Run join_seat.lua: the seat taken, -1 when none is open (or the seat wanted is taken), -2 no game.
        Fenced as a commit is: StoreUnavailable means not taken (and never will be by this call),
        CommitOutcomeUnknown that it cannot be known."""
        timeout_s = self.op_timeout_s
        if self._clock_offset is None:
            async with _redis_errors(timeout_s):
                await self._measure_clock()
        assert self._clock_offset is not None
        fence = time.time() + timeout_s
        fence_ms = int((fence + self._clock_offset) * 1000)
        try:
            async with _redis_errors(timeout_s):
                taken = int(await self._join(keys=[game_key(game_id)], args=[seat, token_hash, name, fence_ms]))
        except StoreUnavailable as exc:
            return await self._settle_join(game_id, token_hash, fence, exc)
        if taken == -3:
            raise StoreUnavailable("the join reached Redis too late; nothing was written")
        return taken

    async def _settle_join(self, game_id: str, token_hash: str, fence: float, cause: StoreUnavailable) -> int:
        """The outcome of a join whose answer did not come: read once its fence has passed in Redis's clock."""
        await asyncio.sleep(max(0.0, fence + self._clock_error + 0.01 - time.time()))
        try:
            async with _redis_errors(min(self.settle_read_s, self.op_timeout_s)):
                meta: Any = await self.client.hget(game_key(game_id), "meta")
        except StoreUnavailable as exc:
            raise CommitOutcomeUnknown(f"the join's outcome is unknown: {cause}") from exc
        if meta is not None:
            for number, seat in enumerate(json.loads(meta)["seats"]):
                if seat.get("auth") == token_hash:
                    return number
        raise cause

    async def idem_version(self, game_id: str, key: bytes) -> int | None:
        """The version committed by the move of idempotency key ``key``, None if it has no (live) record."""
        records: Any
        if self._hot_reads:
            records = await self._hot_call("GET", idem_key(game_id))
        else:
            async with self._op():
                records = await self.client.get(idem_key(game_id))
        return find_idem(records or b"", key)

    @staticmethod
    def request_key(token: str, request_id: str) -> bytes:
        """The idempotency key of ``request_id`` sent with ``token``: 16 bytes of a hash of both (a record never
        says which token or request_id it is for)."""
        return hashlib.sha256(b"%s\0%s" % (token.encode(), request_id.encode())).digest()[:IDEM_KEY]

    async def request_version(self, game_id: str, key: bytes) -> int | None:
        """The port's name of ``idem_version``."""
        return await self.idem_version(game_id, key)

    async def log_entries(self, game_id: str, first: int, last: int = -1) -> list[LogEntry]:
        """The log entries of versions ``first`` to ``last`` (-1: the newest), decoded."""
        if first > MAX_LOG_INDEX:
            return []
        raw: Any
        if self._hot_reads:
            raw = await self._hot_call("LRANGE", log_key(game_id), first, min(last, MAX_LOG_INDEX))
        else:
            async with self._op():
                raw = await self.client.lrange(log_key(game_id), first, min(last, MAX_LOG_INDEX))
        return [_decoded(r) for r in raw]

    async def log_entry(self, game_id: str, version: int) -> LogEntry | None:
        """The log entry of one version (on the hot path when there is one: no wait for the pool), None if none."""
        raw: Any
        if self._hot is not None:
            found = await self._hot_call("LRANGE", log_key(game_id), version, version)
            raw = found[0] if found else None
        else:
            async with self._op():
                raw = await self.client.lindex(log_key(game_id), version)
        return None if raw is None else _decoded(raw)

    async def eval(self, script: str, keys: list[str], args: list[str | int]) -> Any:
        """EVAL of a small script (its text each time: never NOSCRIPT), on the hot path when there is one (no wait
        for the pool), bounded by the storage timeout."""
        if self._hot is not None:
            return await self._hot_call("EVAL", script, len(keys), *keys, *args)
        async with self._op():
            return await self.client.eval(script, len(keys), *keys, *args)

    def own_client(self, max_connections: int = 4) -> RedisClient:
        """A client of the same Redis with a pool of its own (a background task's, so that it never holds the
        connections requests wait for); a Cluster client is shared (it holds a pool per node)."""
        if not isinstance(self.client, aioredis.Redis):
            return self.client
        pool = self.client.connection_pool
        own = _BoundedPool(connection_class=pool.connection_class, max_connections=max_connections,
                           timeout=self.background_pool_timeout_s, **pool.connection_kwargs)  # fmt: skip
        return aioredis.Redis.from_pool(own)

    async def events_since(self, game_id: str, after: Position, count: int | None = None) -> list[StoredEvent]:
        """Events after log position ``after`` = (version, index), oldest first (at most ``count``)."""
        first = max(after[0], 0)
        # every version has at least one event: count + 1 versions hold ``count`` events after ``after``
        entries = await self.log_entries(game_id, first, -1 if count is None else first + count)
        events: list[StoredEvent] = []
        for entry in entries:
            for index, event in enumerate(entry.events, 1):
                if (entry.version, index) > after:
                    events.append(StoredEvent(entry.version, index, event_payload(event)))
        return events if count is None else events[:count]

    async def events_after(self, game_id: str, version: int, count: int | None = None) -> list[StoredEvent]:
        """Events with a version greater than ``version``, oldest first (at most ``count``)."""
        return await self.events_since(game_id, (version, MAX_SEQ), count)

    async def last_position(self, game_id: str) -> Position:
        """Log position of the game's newest event, (0, 0) when there is none."""
        raw: Any
        if self._hot_reads:
            raw = await self._hot_call("LINDEX", log_key(game_id), -1)
        else:
            async with self._op():
                raw = await self.client.lindex(log_key(game_id), -1)
        if raw is None:
            return (0, 0)
        entry = _decoded(raw)
        return (entry.version, len(entry.events))

    async def exists(self, game_id: str) -> bool:
        """Whether the game hash exists."""
        async with self._op():
            return bool(await self.client.exists(game_key(game_id)))

    async def pttls(self, game_ids: Sequence[str]) -> list[int]:
        """The PTTL of each game's hash, in one pipeline (a Cluster client sends one to each node holding some of
        them): milliseconds left, -1 when it does not expire, -2 when it does not exist."""
        pipe: Any = self.client.pipeline(transaction=False)
        for game_id in game_ids:
            pipe.pttl(game_key(game_id))
        async with self._op():
            replies = await pipe.execute()
        return [int(r) for r in replies]

    async def time_left_ms(self, game_ids: Sequence[str]) -> list[int | None]:
        """Of each game: milliseconds until it expires, -1 when it does not expire, None when it is gone (its
        hash's PTTL, ``pttls``)."""
        return [None if ttl == -2 else ttl for ttl in await self.pttls(game_ids)]

    async def ttl(self, game_id: str) -> int:
        """Seconds until the game expires; -1 when it does not expire, -2 when it does not exist."""
        async with self._op():
            return int(await self.client.ttl(game_key(game_id)))


#: Rewrite the game's ``commit`` field with its own value (a replicated write) if the game is at ARGV[1] or later.
_TOUCH_SCRIPT = """
local v = tonumber(redis.call("HGET", KEYS[1], "version") or "-1")
if v < tonumber(ARGV[1]) then return 0 end
redis.call("HSET", KEYS[1], "commit", redis.call("HGET", KEYS[1], "commit") or "")
return 1
"""


async def _on_node_of(client: RedisClient, key: str, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``commands`` in order on one connection to the node (of a cluster: the master of ``key``'s slot); the
    replies, an error reply as its exception. A stale slot map (MOVED) is refreshed, and the call fails
    StoreUnavailable (nothing was run there: the node refused the key)."""
    if isinstance(client, RedisCluster):
        if client._initialize:  # first use, or a failure asked for a new slot map
            await client.initialize()
        node = client.get_node_from_key(key)
        if node is None:
            raise StoreUnavailable(f"no node serves the slot of {key} now")
        pipeline = [PipelineCommand(i, *command) for i, command in enumerate(commands)]
        try:
            await node.execute_pipeline(pipeline)
        except (rexc.ConnectionError, rexc.TimeoutError, OSError):
            client._initialize = True  # the node is gone (a failover?): a new slot map for the next command
            raise
        results = [command.result for command in pipeline]
        if any(isinstance(r, rexc.MovedError | rexc.AskError | rexc.ClusterDownError) for r in results):
            client._initialize = True  # refreshed by the next command
            raise StoreUnavailable(f"the slot of {key} is served elsewhere now: {results[0]}")
        if any(isinstance(r, rexc.ConnectionError | rexc.TimeoutError) for r in results):
            client._initialize = True
        return results
    async with client.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        return list(await pipe.execute(raise_on_error=False))


_shard_cache: dict[int, tuple[Any, dict[str, str]]] = {}


def _shards(client: RedisCluster) -> dict[str, str]:
    """Each shard of the client's slot map (named by its slot ranges: "0-5460", "0-99,5000-5460"), with a key of
    its first slot to probe it by."""
    slots = client.nodes_manager.slots_cache
    # the map changes as a whole (a new map) or slot by slot (MOVED): a sample of its owners tells
    owners = (slots.get(slot) for slot in range(0, 16384, 64))
    sample = (id(slots), len(slots), tuple(nodes[0].name if nodes else "" for nodes in owners))
    cached = _shard_cache.get(id(client))
    if cached is not None and cached[0] == sample:
        return cached[1]
    ranges: dict[str, list[list[int]]] = {}
    for slot in sorted(slots):
        nodes = slots[slot]
        if not nodes:
            continue
        owned = ranges.setdefault(nodes[0].name, [])
        if owned and owned[-1][1] == slot - 1:
            owned[-1][1] = slot
        else:
            owned.append([slot, slot])
    shards = {}
    for owned in ranges.values():
        name = ",".join(f"{lo}-{hi}" for lo, hi in owned)
        n = 0
        while not owned[0][0] <= key_slot(f"health:{{{n}}}".encode()) <= owned[0][1]:
            n += 1
        shards[name] = f"health:{{{n}}}"
    _shard_cache[id(client)] = (sample, shards)
    return shards


def find_idem(records: bytes, key: bytes) -> int | None:
    """The version recorded for ``key`` in a game's idempotency records, None if none."""
    at = records.find(key)
    while at >= 0:
        if at % IDEM_RECORD == 0:
            return int.from_bytes(records[at + IDEM_KEY : at + IDEM_RECORD], "big")
        at = records.find(key, at + 1)
    return None


def _decoded(raw: bytes) -> LogEntry:
    try:
        return decode_entry(raw)
    except ValueError as exc:  # a stored entry that does not decode is a bug (or foreign data), not the caller's
        raise RuntimeError(str(exc)) from exc


def _hot_path(
    client: RedisClient, *, max_redirects: int, tryagain_s: float, refresh_gap_s: float, slot_cache: int
) -> HotPath | ClusterHotPath | None:
    """The pipelined path of the two hot commands, for a standalone Redis or a Redis Cluster (one connection per
    master, with the cluster's settings given) it can connect to by itself."""
    if isinstance(client, RedisCluster):
        if not ClusterHotPath.supports(client):
            return None
        timeout_s = client.nodes_manager.connection_kwargs.get("socket_connect_timeout") or 2.0
        return ClusterHotPath(client, connect_timeout_s=timeout_s, max_redirects=max_redirects,
                              tryagain_s=tryagain_s, refresh_gap_s=refresh_gap_s, slot_cache=slot_cache)  # fmt: skip
    if not isinstance(client, aioredis.Redis):
        return None
    pool = client.connection_pool
    if not HotPath.supports(pool.connection_class, pool.connection_kwargs):
        return None
    kwargs = pool.connection_kwargs
    return HotPath(kwargs, connect_timeout_s=kwargs.get("socket_connect_timeout") or 2.0)
