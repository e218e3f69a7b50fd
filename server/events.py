"""Live event feeds: one Redis reader per watched game per server process, fanned out to every watcher.

A watcher asks for every event after a stream position. ``EventHub.follow`` registers the watcher with the
game's feed first, then reads the backlog from Redis, then hands over to the live queue, dropping what it has
already delivered. The feed's cursor is never past the end of the stream at the moment the watcher registered,
so whatever the backlog read misses reaches the queue: no gap, and no duplicate (positions only increase).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from server.errors import ShuttingDown, TooMuch
from server.store import GameStore, StoredEvent

Position = tuple[int, int]  # (version, index) of a stream entry

BACKLOG_PAGE = 500
QUEUE_LIMIT = 10_000  # events waiting for one watcher ...
QUEUE_BYTES = 2 * 1024 * 1024  # ... and their payload bytes: a watcher further behind is cut off (it may resume)


class _Queue(asyncio.Queue[StoredEvent | BaseException]):
    """One watcher's events not yet sent, and their payload bytes."""

    nbytes = 0


@dataclass
class _Feed:
    cursor: Position
    watchers: set[_Queue] = field(default_factory=set)
    task: asyncio.Task[None] | None = None


class EventHub:
    """Follows the event streams of the games being watched through this server process."""

    def __init__(self, store: GameStore, *, block_ms: int = 1000) -> None:
        self._store = store
        self._block_ms = block_ms
        self._feeds: dict[str, _Feed] = {}
        self._closed = False
        self._streams = 0
        self._no_streams = asyncio.Event()
        self._no_streams.set()

    @contextlib.asynccontextmanager
    async def stream(self) -> AsyncIterator[None]:
        """Count one live client stream (a transport wraps each watch, its final status included, in this), so
        that close() can wait for the streams it ended to be told why."""
        self._streams += 1
        self._no_streams.clear()
        try:
            yield
        finally:
            self._streams -= 1
            if not self._streams:
                self._no_streams.set()

    async def follow(self, game_id: str, after: Position) -> AsyncGenerator[StoredEvent, None]:
        """Every event of the game after position ``after``, in order, each once, until the caller stops."""
        if self._closed:
            raise _shutting_down()
        queue = _Queue(QUEUE_LIMIT)
        feed = await self._register(game_id, queue)
        try:
            last = after
            while True:  # the backlog, page by page
                page = await self._store.events_since(game_id, last, count=BACKLOG_PAGE)
                for event in page:
                    last = (event.version, event.index)
                    yield event
                if len(page) < BACKLOG_PAGE:
                    break
            while True:  # live
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                queue.nbytes -= len(item.payload)
                if (item.version, item.index) > last:
                    last = (item.version, item.index)
                    yield item
        finally:
            self._unregister(game_id, feed, queue)

    async def _register(self, game_id: str, queue: _Queue) -> _Feed:
        feed = self._feeds.get(game_id)
        if feed is None:
            cursor = await self._store.last_position(game_id)
            if self._closed:  # close() ran while we waited: it could not tell this watcher
                raise _shutting_down()
            feed = self._feeds.get(game_id)  # another watcher may have created it meanwhile
            if feed is None:
                feed = self._feeds[game_id] = _Feed(cursor)
                feed.task = asyncio.ensure_future(self._run(game_id, feed))
        feed.watchers.add(queue)
        return feed

    def _unregister(self, game_id: str, feed: _Feed, queue: _Queue) -> None:
        feed.watchers.discard(queue)
        if not feed.watchers and self._feeds.get(game_id) is feed:
            del self._feeds[game_id]
            if feed.task is not None:
                feed.task.cancel()

    async def _run(self, game_id: str, feed: _Feed) -> None:
        try:
            while feed.watchers:
                events = await self._store.wait_events(game_id, feed.cursor, self._block_ms)
                for event in events:
                    feed.cursor = (event.version, event.index)
                    for queue in list(feed.watchers):
                        self._offer(feed, queue, event)
        except Exception as exc:  # Redis unreachable (UNAVAILABLE), or a bug (INTERNAL): every watcher learns it
            self._fail(game_id, feed, exc)

    @staticmethod
    def _offer(feed: _Feed, queue: _Queue, item: StoredEvent | BaseException) -> None:
        try:
            if isinstance(item, StoredEvent):
                if queue.nbytes + len(item.payload) > QUEUE_BYTES:
                    raise asyncio.QueueFull
                queue.put_nowait(item)
                queue.nbytes += len(item.payload)
            else:
                queue.put_nowait(item)
        except asyncio.QueueFull:
            # A watcher this far behind is cut off (it can resume from its last version): its queue is emptied
            # and ends with the error, and it gets nothing more, so what it did receive has no gap.
            feed.watchers.discard(queue)
            while not queue.empty():
                queue.get_nowait()
            queue.nbytes = 0
            queue.put_nowait(TooMuch("WATCHER_TOO_SLOW", "the stream fell behind; resume from the last version"))

    def _fail(self, game_id: str, feed: _Feed, exc: BaseException) -> None:
        if self._feeds.get(game_id) is feed:
            del self._feeds[game_id]
        for queue in list(feed.watchers):
            self._offer(feed, queue, exc)

    async def close(self, drain_s: float = 5.0) -> None:
        """End every watch (with UNAVAILABLE: reconnect and resume), stop every feed, and wait up to ``drain_s``
        seconds for the counted streams to finish."""
        self._closed = True
        feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            if feed.task is not None:
                feed.task.cancel()
            for queue in list(feed.watchers):
                self._offer(feed, queue, _shutting_down())
        for feed in feeds:
            if feed.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_streams.wait(), drain_s)


def _shutting_down() -> ShuttingDown:
    return ShuttingDown("SHUTTING_DOWN", "the server is shutting down; reconnect and resume")
