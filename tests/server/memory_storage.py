"""An in-memory twin of the storage port (server.ports.GameStorage and EventFeed), for fast unit tests: one
asyncio loop's dicts, the promises of the Redis adapter (checked by the same contract suite,
tests/server/test_storage_contract.py, as an extra run beside the Redis ones). No time controls, no replicas."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from server.gamelog import LogEntry
from server.ports import CommitResult, Position, StoredEvent, StoredGame


@dataclass
class _Game:
    config: bytes
    progress: bytes
    meta: bytes
    clock: bytes
    version: int = 0
    joins: int = 0
    log: list[LogEntry] = field(default_factory=list)
    expires: float | None = None  # time.monotonic() when it is gone; None: kept for ever
    records: dict[bytes, int] = field(default_factory=dict)
    records_expire: float | None = None


class MemoryStorage:
    """The games of one process, in memory."""

    client: Any = None
    sharded_events = False
    wait_replicas = 0

    def __init__(self, *, finished_ttl_s: int = 7 * 24 * 3600, idle_ttl_s: int = 30 * 24 * 3600,
                 idem_ttl_s: int = 24 * 3600, unplayed_ttl_s: int = 3600,
                 op_timeout_s: float = 1.0) -> None:  # fmt: skip
        self.finished_ttl_s, self.idle_ttl_s, self.idem_ttl_s = finished_ttl_s, idle_ttl_s, idem_ttl_s
        self.unplayed_ttl_s, self.op_timeout_s = unplayed_ttl_s, op_timeout_s
        self._games: dict[str, _Game] = {}
        self._changed = asyncio.Condition()

    def _game(self, game_id: str) -> _Game | None:
        game = self._games.get(game_id)
        if game is not None and game.expires is not None and time.monotonic() >= game.expires:
            del self._games[game_id]
            return None
        return game

    @staticmethod
    def _until(ttl_s: int) -> float | None:
        return time.monotonic() + ttl_s if ttl_s > 0 else None

    def clock_unknown(self) -> bool:
        return False

    def redis_now_ms(self, *, lower: bool = False) -> int:
        return int(time.time() * 1000) - (5 if lower else 0)

    async def ping(self, timeout_s: float | None = None) -> None:
        return None

    async def shard_health(self, timeout_s: float | None = None) -> dict[str, bool] | None:
        return None

    async def close(self) -> None:
        return None

    async def create_game(self, game_id: str, *, config: bytes, progress: bytes, meta: str | bytes,
                          deal_events: Sequence[bytes], clock: str | bytes = b"", ttl_s: int | None = None,
                          clock_seat: int = -1, bound: int = 0) -> bool:  # fmt: skip
        if self._game(game_id) is not None:
            return False
        events = [json.loads(e) for e in deal_events]
        self._games[game_id] = _Game(
            config, progress, meta.encode() if isinstance(meta, str) else meta,
            clock.encode() if isinstance(clock, str) else clock, log=[LogEntry(0, -1, None, events)],
            expires=self._until(self.unplayed_ttl_s if ttl_s is None else ttl_s),
        )  # fmt: skip
        return True

    async def load(self, game_id: str) -> StoredGame | None:
        game = self._game(game_id)
        if game is None:
            return None
        return StoredGame(game_id, game.progress, game.version, game.meta, game.config, game.joins, game.clock)

    async def commit_move(self, game_id: str, *, base_version: int, progress: bytes, seat: int, move_json: bytes,
                          events: Sequence[bytes], request_key: bytes = b"", joins: int = 0,
                          match_over: bool = False, clock_step: str = "",
                          index: tuple[int, int, int] | None = None) -> CommitResult:  # fmt: skip
        game = self._game(game_id)
        if game is None:
            return CommitResult("missing")
        if request_key:
            recorded = await self.request_version(game_id, request_key)
            if recorded is not None:
                return CommitResult("dup", recorded)
        if game.version != base_version or game.joins != joins:
            return CommitResult("conflict", game.version)
        game.version += 1
        game.progress = progress
        game.log.append(LogEntry(game.version, seat, json.loads(move_json), [json.loads(e) for e in events]))
        ttl = self.finished_ttl_s if match_over else self.idle_ttl_s
        game.expires = self._until(ttl)
        if request_key:
            game.records[request_key] = game.version
            game.records_expire = self._until(self.idem_ttl_s or ttl)
        async with self._changed:
            self._changed.notify_all()
        return CommitResult("ok", game.version)

    async def join(self, game_id: str, *, seat: int, token_hash: str, name: str) -> int:
        game = self._game(game_id)
        if game is None:
            return -2
        meta = json.loads(game.meta)
        for number, s in enumerate(meta["seats"]):
            if (seat < 0 or seat == number) and s["auth"] == "":
                s["auth"], s["joined"] = token_hash, game.version
                if name and name != s["name"]:
                    s["was"], s["name"] = s["name"], name
                game.meta = json.dumps(meta, separators=(",", ":")).encode()
                game.joins += 1
                return number
        return -1

    def request_key(self, token: str, request_id: str) -> bytes:
        return hashlib.sha256(f"{token}\0{request_id}".encode()).digest()[:16]

    async def request_version(self, game_id: str, key: bytes) -> int | None:
        game = self._game(game_id)
        if game is None or (game.records_expire is not None and time.monotonic() >= game.records_expire):
            return None
        return game.records.get(key)

    async def wait_replicated(self, game_id: str, version: int) -> None:
        return None

    async def log_entries(self, game_id: str, first: int, last: int = -1) -> list[LogEntry]:
        game = self._game(game_id)
        if game is None:
            return []
        return game.log[first:] if last < 0 else game.log[first : last + 1]

    async def log_entry(self, game_id: str, version: int) -> LogEntry | None:
        entries = await self.log_entries(game_id, version, version)
        return entries[0] if entries else None

    async def events_since(self, game_id: str, after: Position, count: int | None = None) -> list[StoredEvent]:
        events = [
            StoredEvent(entry.version, index, json.dumps(event, separators=(",", ":")).encode())
            for entry in await self.log_entries(game_id, max(after[0], 0))
            for index, event in enumerate(entry.events, 1)
            if (entry.version, index) > after
        ]
        return events if count is None else events[:count]

    async def events_after(self, game_id: str, version: int, count: int | None = None) -> list[StoredEvent]:
        return await self.events_since(game_id, (version, 2**64 - 1), count)

    async def last_position(self, game_id: str) -> Position:
        game = self._game(game_id)
        if game is None:
            return (0, 0)
        return (game.log[-1].version, len(game.log[-1].events))

    async def time_left_ms(self, game_ids: Sequence[str]) -> list[int | None]:
        left: list[int | None] = []
        for game_id in game_ids:
            game = self._game(game_id)
            if game is None:
                left.append(None)
            else:
                left.append(-1 if game.expires is None else int((game.expires - time.monotonic()) * 1000))
        return left


class MemoryFeed:
    """``EventFeed`` over a MemoryStorage: every commit wakes the followers, which read what is new."""

    def __init__(self, store: MemoryStorage) -> None:
        self._store = store

    @asynccontextmanager
    async def stream(self) -> AsyncIterator[None]:
        yield

    async def close(self, drain_s: float = 5.0) -> None:
        return None

    async def follow(self, game_id: str, after: Position) -> AsyncGenerator[StoredEvent, None]:
        changed = self._store._changed
        while True:
            async with changed:
                events = await self._store.events_since(game_id, after)
                if not events:
                    await changed.wait()
                    continue
            for event in events:
                after = (event.version, event.index)
                yield event
