"""The cap on unfinished games, shared in Redis by every referee process that uses it (``--max-open-games``).

The registry is one sorted set, ``referee:open-games``: member = a game id, score = when that game expires as far
as the registry knows (Unix ms by Redis's clock; +inf: kept for ever). Since a Redis Cluster puts the key in its own
slot, no game script can touch it; so it is written only where a round trip more is affordable:

- creation (``reserve``): one script counts the registry, registers the game below the cap, and returns the entries
  whose time has passed ("due"); those are checked against their games (one pipelined PTTL): a game that is gone
  is removed, one that is still there (it got moves, so it lives longer than at creation) gets its real expiry;
- the match's last move (``release_soon``): the finished game leaves the registry, in the background (the move's
  answer does not wait for it).

An ordinary move never touches the registry. The count is never below the real number of unfinished games; it can
be above it, briefly, by games expired but not yet checked (each creation checks up to ``sweep_batch`` of them,
and a creation refused at the cap checks more first), or by a finished game whose release was lost to a Redis
failure (checked again, and counted, until its finished-game time runs out).
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

from server.errors import TooMuch, describe
from server.settings import DEFAULTS
from server.storage_errors import StoreUnavailable
from server.store import RedisClient, _redis_errors, game_key

REGISTRY_KEY = "referee:open-games"
SWEEP_BATCH = DEFAULTS.limits.open_games_sweep_batch  # due entries checked by one creation
SWEEPS_WHEN_FULL = DEFAULTS.limits.open_games_sweeps_when_full  # (server.settings)
MAX_RETRY_S = 3600.0

log = logging.getLogger("rummy_referee")


@dataclass(frozen=True, slots=True)
class Reservation:
    """What ``reserve`` found: ``registered``, or the time until the earliest registered game expires."""

    registered: bool
    retry_after_s: float = 0.0


class OpenGames:
    """The registry of unfinished games in one Redis (or Redis Cluster), for a cap of ``cap`` games (0: none)."""

    def __init__(
        self,
        client: RedisClient,
        cap: int,
        *,
        op_timeout_s: float = 5.0,
        key: str = REGISTRY_KEY,
        sweep_batch: int = SWEEP_BATCH,
        sweeps_when_full: int = SWEEPS_WHEN_FULL,
    ) -> None:
        """``sweep_batch``: due entries checked by one creation; ``sweeps_when_full``: batches checked before a
        creation at the cap is refused (the settings' ``limits.open_games_*``)."""
        if cap < 0:
            raise ValueError(f"the cap on open games is 0 (none) or more, not {cap}")
        self.client = client
        self.cap = cap
        self.key = key
        self.op_timeout_s = op_timeout_s
        self.sweep_batch = sweep_batch
        self.sweeps_when_full = max(1, sweeps_when_full)
        source = resources.files("server").joinpath("lua", "reserve_open_game.lua").read_text(encoding="utf-8")
        self._reserve = client.register_script(source)
        self._pending: set[asyncio.Task[None]] = set()

    async def reserve(self, game_id: str, ttl_s: int, *, exempt: bool = False) -> None:
        """Register ``game_id`` (kept ``ttl_s`` seconds unless it gets moves; 0: for ever) before it is created, or
        raise TooMuch("TOO_MANY_OPEN_GAMES") with a retry delay when the registry is at the cap. ``exempt`` (the
        organizer): registered whatever the count."""
        for _ in range(self.sweeps_when_full):
            registered, now_ms, earliest, due = await self._try(game_id, ttl_s, 0 if exempt else self.cap)
            if due:
                await self._check_due(due, now_ms)
            if registered:
                return
            if not due:
                break
        wait_s = (earliest - now_ms) / 1000 if math.isfinite(earliest) else MAX_RETRY_S
        raise TooMuch(
            "TOO_MANY_OPEN_GAMES",
            f"the referee holds its maximum of {self.cap} unfinished games; try again later",
            retry_after_s=min(MAX_RETRY_S, max(1.0, wait_s)),
        )

    def release_soon(self, game_id: str) -> None:
        """``release`` in the background: the match's last move answers without waiting for it (a Redis that
        stalls now must not turn a committed move into a failed call); a failure is logged."""
        task = asyncio.get_running_loop().create_task(release_quietly(self, game_id))
        self._pending.add(task)  # a strong reference until it is done
        task.add_done_callback(self._pending.discard)

    async def release(self, game_id: str) -> None:
        """Take a game out of the registry (its match is over, or its creation failed)."""
        async with _redis_errors(self.op_timeout_s):
            await self.client.zrem(self.key, game_id)

    async def count(self) -> int:
        """The number of registered games (expired ones not yet checked included)."""
        async with _redis_errors(self.op_timeout_s):
            return int(await self.client.zcard(self.key))

    async def _try(self, game_id: str, ttl_s: int, cap: int) -> tuple[bool, int, float, list[str]]:
        async with _redis_errors(self.op_timeout_s):
            reply: Any = await self._reserve(keys=[self.key], args=[game_id, ttl_s * 1000, cap, self.sweep_batch])
        earliest = float(reply[2]) if reply[2] else math.inf
        due = [m.decode() if isinstance(m, bytes) else str(m) for m in reply[3:]]
        return bool(reply[0]), int(reply[1]), earliest, due

    async def _check_due(self, due: list[str], now_ms: int) -> None:
        """Remove the due games that are gone; give the others their real expiry (PTTL)."""
        async with _redis_errors(self.op_timeout_s):
            pipe = self.client.pipeline(transaction=False)
            for game_id in due:
                pipe.pttl(game_key(game_id))
            left: list[Any] = await pipe.execute()
            gone = [game_id for game_id, ms in zip(due, left, strict=True) if int(ms) == -2]
            alive = {
                game_id: (math.inf if int(ms) == -1 else now_ms + int(ms))
                for game_id, ms in zip(due, left, strict=True)
                if int(ms) != -2
            }
            if gone:
                await self.client.zrem(self.key, *gone)
            if alive:  # XX: a game released meanwhile (its match ended) is not registered again
                await self.client.zadd(self.key, alive, xx=True)


async def release_quietly(open_games: OpenGames, game_id: str) -> None:
    """``release``, where a failure must not fail the caller (the move is committed): logged; the entry is
    checked again at its time."""
    try:
        await open_games.release(game_id)
    except StoreUnavailable as exc:
        log.warning("open games: game %s not released (%s); it is checked again later", game_id, describe(exc))
    except Exception:  # never an error for a committed move
        log.exception("open games: game %s not released; it is checked again later", game_id)
