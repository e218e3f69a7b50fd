"""The storage port: what the application service (server/service.py) needs of the referee's storage, in the
service's terms. The Redis adapter (server/store.py ``GameStore``, with its Lua scripts, hot path and Cluster
support) is the implementation; only it knows hash fields, key names, the idempotency records' layout, the log's
encoding, commit ids and fences. tests/server/test_storage_contract.py checks every promise below against a
standalone Redis and a Redis Cluster.

A game is stored as four opaque parts: its configuration (written once), its progress (written by every move),
its meta (seats, tokens' hashes, spectators) and, with a time control, its clock; plus its log: version 0 is the
deal, version v what the move that made v did (the mover, the move, its events). A position in the log is
(version, index), the index counting a version's events from 1; ``after_version(v)`` is the position after the
whole of version v.

Promises (each checked by the contract suite):

- ``create_game``: all or nothing; False when the id is taken (nothing written).
- ``load``: one consistent read of a game (None: no game, or it expired).
- ``commit_move``: version-checked (``conflict`` with the game's version, nothing written), idempotent (a move
  sent again with the same request key gets ``dup`` and the version the first one committed, whatever the
  version it was based on), all or nothing; ``missing`` when the game is gone. ``StoreUnavailable``: not applied
  and never will be; ``CommitOutcomeUnknown``: may have been applied (resend with the same request key to know).
- ``join``: one seat to one caller, races included; a seat joined makes a commit based on the game loaded
  before it a ``conflict`` (``joins`` changed), never a lost join.
- ``events_since`` / ``events_after``: the log's events after a position, oldest first, paged by ``count``;
  ``last_position``: the newest event's position.
- ``request_version``: the version a request key committed (None: never, or its record expired).
- Expiry: a game not moved in for the unplayed/idle time, or finished for the finished time, is gone entirely
  (``load`` None, ``time_left_ms`` None).

Waiting for events (``EventFeed.follow``) is the adapter's too: server/events.py's ``EventHub`` (Redis Pub/Sub
notifications, then ``events_since``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from server.gamelog import LogEntry

Position = tuple[int, int]  # (version, index) of an event in the log

#: The largest index within a version: (v, END_OF_VERSION) is the position after all of version v.
END_OF_VERSION = 2**64 - 1


def after_version(version: int) -> Position:
    """The position after every event of ``version`` (and before the first of ``version + 1``)."""
    return (version, END_OF_VERSION)


@dataclass(frozen=True, slots=True)
class StoredGame:
    """One game as loaded in a single round trip."""

    game_id: str
    progress_json: bytes  # the progress part of the state (server.cache.progress_json)
    version: int
    meta: bytes
    config: bytes  # the configuration part (server.cache.config_json)
    joins: int = 0  # seats joined since the creation
    clock: bytes = b""  # the time control's clock (server/clocks.py); b"": no time control


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What a commit found: ``ok`` (version = the new version), ``dup`` (version = the version the
    idempotency key committed), ``conflict`` (version = the game's actual version), ``missing``, or ``late``
    (the storage ran it after its fence: nothing written); with a time control ``out_of_time`` and ``not_due``
    (version = the deadline, ms in the storage's clock)."""

    outcome: Literal["ok", "dup", "conflict", "missing", "late", "out_of_time", "not_due"]
    version: int = 0  # out_of_time, not_due: the deadline (ms, Redis's clock)
    tail: bytes = b""  # ok, with a clock: the clock tail appended to the log entry (server/clocks.py)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of the log: its version, index within the version (from 1), and the engine event JSON."""

    version: int
    index: int
    payload: bytes


class GameStorage(Protocol):
    """The games' storage, as the application service uses it."""

    idle_ttl_s: int
    unplayed_ttl_s: int
    op_timeout_s: float
    wait_replicas: int
    #: The adapter's own connection, handed to the other registries kept in the same storage (open games, house
    #: bots' seats, the clocks' deadline index), which are adapters of their own.
    client: Any

    # ------------------------------------------------------------------------------------------ the clock

    def clock_unknown(self) -> bool:
        """Whether the storage's clock was not measured yet (``ping`` measures it)."""
        ...

    def redis_now_ms(self, *, lower: bool = False) -> int:
        """The storage's clock now as estimated here (ms since the epoch); ``lower``: never later than it."""
        ...

    async def ping(self, timeout_s: float | None = None) -> None:
        """StoreUnavailable unless the storage answers; measures its clock."""
        ...

    async def redis_time_ms(self, game_id: str) -> int:
        """The storage's clock read now, where ``game_id``'s commits read it (ms since the epoch): no estimate."""
        ...

    # ---------------------------------------------------------------------------------------- lifecycle

    #: Whether the storage has shards that fail apart (a Redis Cluster): health is then told per shard.
    sharded_events: bool

    async def shard_health(self, timeout_s: float | None = None) -> dict[str, bool] | None:
        """Whether each shard serves now, by shard name; None without shards (``ping`` tells)."""
        ...

    async def close(self) -> None:
        """Close the storage's connections."""
        ...

    # ---------------------------------------------------------------------------------------- games

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
        """Store a new game at version 0 (``deal_events``: the log of version 0), kept ``ttl_s`` (default: the
        unplayed time) unless a move comes; False if the id is taken. ``clock``: its clock, started for
        ``clock_seat`` when >= 0 (its first deadline indexed at ``bound``)."""
        ...

    async def load(self, game_id: str) -> StoredGame | None:
        """The game (None: no such game)."""
        ...

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
        """Commit version ``base_version + 1``: the new progress and its log entry (``seat``'s move and its
        events), if the game is still at ``base_version`` with ``joins`` seats joined; ``request_key`` (from
        ``request_key``; b"": none) makes it idempotent."""
        ...

    async def join(self, game_id: str, *, seat: int, token_hash: str, name: str) -> int:
        """Take a seat (-1: the lowest open one): the seat taken, -1 when none is (or that one is taken), -2 no
        game."""
        ...

    def request_key(self, token: str, request_id: str) -> bytes:
        """The idempotency key of ``request_id`` sent with ``token`` (opaque: it never tells either)."""
        ...

    async def request_version(self, game_id: str, key: bytes) -> int | None:
        """The version the move of request key ``key`` committed, None if none (or its record expired)."""
        ...

    async def wait_replicated(self, game_id: str, version: int) -> None:
        """Return once the storage's replicas hold ``version`` (nothing to wait for without ``wait_replicas``)."""
        ...

    # ---------------------------------------------------------------------------------------- the log

    async def log_entries(self, game_id: str, first: int, last: int = -1) -> list[LogEntry]:
        """The log entries of versions ``first`` to ``last`` (-1: the newest)."""
        ...

    async def log_entry(self, game_id: str, version: int) -> LogEntry | None:
        """The log entry of one version, None if none."""
        ...

    async def events_since(self, game_id: str, after: Position, count: int | None = None) -> list[StoredEvent]:
        """Events after position ``after``, oldest first (at most ``count``)."""
        ...

    async def events_after(self, game_id: str, version: int, count: int | None = None) -> list[StoredEvent]:
        """Events of the versions after ``version``, oldest first (at most ``count``)."""
        ...

    async def last_position(self, game_id: str) -> Position:
        """The newest event's position, (0, 0) when there is none."""
        ...

    # ---------------------------------------------------------------------------------------- expiry

    async def time_left_ms(self, game_ids: Sequence[str]) -> list[int | None]:
        """Of each game: milliseconds until it expires, -1 when it is kept for ever, None when it is gone."""
        ...


class EventFeed(Protocol):
    """Waiting for a game's events (server/events.py ``EventHub`` for the Redis adapter)."""

    def stream(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Count one client stream while it lasts (``close`` waits for the streams it ended)."""
        ...

    async def close(self, drain_s: float = 5.0) -> None:
        """End every follower (they resume elsewhere)."""
        ...

    def follow(self, game_id: str, after: Position) -> AsyncGenerator[StoredEvent, None]:
        """Every event of the game after ``after``, in order, each once, until the caller stops."""
        ...
