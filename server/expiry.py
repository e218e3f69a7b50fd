"""Watched games that expire: the event hub's look-out for games whose keys Redis has dropped.

A game without a clock still ends by its keys' expiry (``--unplayed-ttl`` until its first move, ``--idle-ttl``
after each move, ``--finished-ttl`` once the match is over). Keyspace notifications would tell us at once, but
they need CONFIG, which a managed Redis may refuse; instead each watched game carries the time at which it is
next looked at, taken from its PTTL. Every due game is looked at in one batch: one pipelined ``PTTL`` per game
(on a Redis Cluster, redis-py sends one pipeline to each node holding some of them). PTTL is as cheap as EXISTS
and also says when to look again: a move since the last look has pushed the expiry back, and the game is simply
looked at later. A game answered -2 (no key) is gone: its watchers get a last event and their streams end.

A game is looked at first as soon as it gets its first watcher here (batched with the others), then at its
expiry (plus ``slack_s``) but at least every ``max_look_s``, and, when a move is seen, at the end of this
process's idle time if that comes sooner; after a failed look, again in ``retry_s``. So a watched game that
expires ends its watch streams within ``slack_s`` plus one round trip (the settings' ``watch.expiry_*``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Sequence

from server.ports import GameStorage
from server.settings import DEFAULTS
from server.storage_errors import StoreUnavailable

log = logging.getLogger("rummy_referee")

SLACK_S = DEFAULTS.watch.expiry_slack_s  # looked at this long after its PTTL said it would expire
MAX_LOOK_S = DEFAULTS.watch.expiry_max_look_s  # (server.settings)
RETRY_S = DEFAULTS.watch.expiry_retry_s  # after a failed look
BATCH = DEFAULTS.watch.expiry_batch  # games per pipeline


class GameGone(Exception):
    """The watched game's keys are gone (expired): ``position`` is the last event its feed handed out."""

    def __init__(self, game_id: str, position: tuple[int, int]) -> None:
        super().__init__(f"game {game_id} expired")
        self.game_id = game_id
        self.position = position


class ExpiryWatch:
    """When to look at each watched game again, and the batched look."""

    def __init__(
        self,
        store: GameStorage,
        *,
        slack_s: float = SLACK_S,
        max_look_s: float = MAX_LOOK_S,
        retry_s: float = RETRY_S,
        batch: int = BATCH,
    ) -> None:
        """The settings' ``watch.expiry_*`` (server.settings): ``slack_s`` after a PTTL's end, at least every
        ``max_look_s``, ``retry_s`` after a failed look, ``batch`` games per pipeline."""
        self._store = store
        self._slack_s = slack_s
        self._max_look_s = max_look_s
        self._retry_s = retry_s
        self._batch = batch
        self._due: list[tuple[float, int, str]] = []  # (loop time, tie-breaker, game id)
        self._at: dict[str, float] = {}  # game id -> its entry's time in _due (older entries are stale)
        self._order = itertools.count()
        self._wake = asyncio.Event()

    def track(self, game_id: str) -> None:
        """Look at the game soon (its first watcher here arrived)."""
        self._schedule(game_id, asyncio.get_running_loop().time())
        self._wake.set()

    def moved(self, game_id: str) -> None:
        """A move was seen: it gave the game the idle time again (this process's ``--idle-ttl``; a shorter one than
        the game had when last looked at, when another referee with a longer one made the previous move)."""
        ttl_s = self._store.idle_ttl_s
        at = asyncio.get_running_loop().time() + ttl_s + self._slack_s
        if ttl_s > 0 and at < self._at.get(game_id, math.inf):
            self._schedule(game_id, at)
            self._wake.set()

    def _schedule(self, game_id: str, at: float) -> None:
        self._at[game_id] = at
        heapq.heappush(self._due, (at, next(self._order), game_id))

    async def run(self, watched: Callable[[str], bool], gone: Callable[[str], None]) -> None:
        """Forever: look at every due game still ``watched``; call ``gone`` for each whose keys no longer exist."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            batch: list[str] = []
            while self._due and self._due[0][0] <= now and len(batch) < self._batch:
                at, _, game_id = heapq.heappop(self._due)
                if self._at.get(game_id) != at:
                    continue  # rescheduled since
                del self._at[game_id]
                if watched(game_id):
                    batch.append(game_id)
            if batch:
                await self._look(batch, watched, gone)
                continue
            self._wake.clear()
            timeout = self._due[0][0] - now if self._due else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _look(self, batch: Sequence[str], watched: Callable[[str], bool], gone: Callable[[str], None]) -> None:
        loop = asyncio.get_running_loop()
        try:
            ttls = await self._store.time_left_ms(batch)
        except Exception as exc:  # an outage, or an answer the store does not know (NOPERM): never this task's end
            if isinstance(exc, StoreUnavailable):
                log.info("expiry check of %d watched games failed (%s); again in %.0fs", len(batch), exc, self._retry_s)
            else:
                log.error("expiry check of %d watched games failed; again in %.0fs", len(batch), self._retry_s,
                          exc_info=exc)  # fmt: skip
            for game_id in batch:
                self._schedule(game_id, loop.time() + self._retry_s)
            return
        now = loop.time()
        for game_id, ttl_ms in zip(batch, ttls, strict=True):
            if not watched(game_id):
                continue
            if ttl_ms is None:
                gone(game_id)
            elif ttl_ms < 0:  # no expiry (now)
                self._schedule(game_id, now + self._max_look_s)
            else:
                self._schedule(game_id, now + min(ttl_ms / 1000 + self._slack_s, self._max_look_s))
