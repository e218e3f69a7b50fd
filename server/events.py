"""Live event feeds: a few readers per server process, whatever the number of games watched through it.

Wake-up, then read. Every commit publishes the game's new version on the channel ``game:{<id>}:ev``
(server/lua/commit_move.lua). One subscriber connection per process is subscribed to the channel of every game
watched here (SUBSCRIBE when a game gets its first watcher, UNSUBSCRIBE when its last one leaves); a notification
(or the acknowledgement of a SUBSCRIBE) marks the game's feed for reading, and a few worker tasks read the new
events with ``GameStore.events_since`` from the feed's cursor, over at most ``read_slots`` connections of the
client's pool at a time, then hand each event to every watcher of the game. So the Redis connections of a process
are the pool's (bounded) plus one, for 10 or 10,000 watched games.

On a Redis Cluster, sharded: the commit publishes with SPUBLISH (the message stays on the game's shard) and the
hub keeps one subscriber connection per master (a ``_Link``), SSUBSCRIBEd to the channels of the watched games
that master serves. A link whose connection is lost (a failover) rebuilds the slot map and moves its feeds to the
new master's link, each read again from its cursor once subscribed there; only the feeds of a node still
unreachable end, and the other shards' streams are not touched.

No gap, no duplicate. A watcher registers with the game's feed first, then reads the backlog after its own
position, then takes what the feed hands it, dropping what it has already delivered (positions only increase).
A feed's cursor is never past the end of the stream at the moment the watcher registered, and the feed reads
everything after its cursor (after its SUBSCRIBE is acknowledged, on every notification), so whatever the backlog
read misses reaches the watcher. A notification can be missed only while the subscriber connection is down: once
it is made again, every channel is subscribed again and every feed read again from its cursor. A cheap safety
check every ``check_s`` seconds pings the subscriber connection (cut when the previous ping got no answer) and
reads every feed anyway; without a subscriber (Redis unreachable, or a connection kind it cannot open) the feeds
are read every ``poll_s`` seconds instead.

Bounded. A watcher holds at most ``queue_limit`` events and ``watcher_bytes`` of payload not yet sent, and all
watchers together ``total_bytes`` (the hub's ``watch``: server.settings ``WatchSettings``): a watcher over a
limit is cut with RESOURCE_EXHAUSTED ``WATCHER_TOO_SLOW`` (it resumes from the last event it got, with no gap).
Failures: a read that fails is tried again (``read_attempts``), then the game's watchers end with the error as it
is (STORAGE_UNAVAILABLE, STORAGE_BUSY, ...); a subscriber connection that is lost and cannot be made again at
once means Redis is unreachable: every watcher ends with STORAGE_UNAVAILABLE (and resumes later), and the
subscriber keeps trying to reconnect by itself.

Expiry. A watched game whose keys expire (``--idle-ttl``, ``--unplayed-ttl``) is noticed by ``server.expiry``
(its PTTL says when to look; one pipelined look for all games due): its watchers end with ``GameGone``, which
``Referee.watch`` turns into a last event (``game_expired`` or ``game_abandoned``) and a clean end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

import hiredis
import redis.asyncio as aioredis
import redis.exceptions as rexc
from redis.asyncio.cluster import RedisCluster

from server.errors import ShuttingDown, TooMuch, describe
from server.expiry import ExpiryWatch, GameGone
from server.hotpath import HotPath, resp
from server.ports import StoredEvent
from server.settings import DEFAULTS, WatchSettings
from server.storage_errors import StoreUnavailable
from server.store import GameStore, refresh_slot_map

log = logging.getLogger("rummy_referee")

Position = tuple[int, int]  # (version, index) of a stream entry

_ITEM_OVERHEAD = 64  # bytes counted per queued event beyond its payload
_SUBSCRIBE_CHUNK = 256  # channels per SUBSCRIBE command when (re)subscribing everything


def channel(game_id: str) -> bytes:
    """The Pub/Sub channel that commit_move.lua publishes a game's new versions on."""
    return f"game:{{{game_id}}}:ev".encode()


class _Watcher:
    """One watcher's events not yet sent, and how it ends (an error raised once they are sent)."""

    __slots__ = ("error", "items", "size", "wake")

    def __init__(self) -> None:
        self.items: deque[StoredEvent] = deque()
        self.size = 0
        self.error: BaseException | None = None
        self.wake = asyncio.Event()


class _Feed:
    """The watchers of one game in this process, and the position up to which they have been handed events."""

    __slots__ = ("again", "channel", "cursor", "failures", "game_id", "link", "queued", "read_at", "reading",
                 "watchers")  # fmt: skip

    def __init__(self, game_id: str, cursor: Position) -> None:
        self.game_id = game_id
        self.channel = channel(game_id)
        self.cursor = cursor
        self.watchers: set[_Watcher] = set()
        self.queued = False  # waiting for a worker
        self.reading = False  # a worker reads it now
        self.again = False  # woken while being read: read once more
        self.failures = 0  # reads failed in a row
        self.read_at = 0.0  # event loop time of the last read's start
        self.link: _Link | None = None  # the subscriber connection its channel is (to be) subscribed on


class _Link:
    """One subscriber connection and the feeds subscribed on it: the only one of a standalone Redis (name "",
    SUBSCRIBE), or one per master of a Redis Cluster (its node name, SSUBSCRIBE: sharded Pub/Sub, one channel per
    command, the channels of the games that node serves)."""

    __slots__ = ("feeds", "name", "sharded", "sub", "task")

    def __init__(self, name: str, sharded: bool) -> None:
        self.name = name
        self.sharded = sharded
        self.feeds: set[_Feed] = set()
        self.sub: _Subscriber | None = None  # connected, or None
        self.task: asyncio.Task[None] | None = None

    def subscribe(self, feed: _Feed) -> None:
        if self.sub is not None:  # its acknowledgement wakes the feed (else: subscribed on reconnect)
            self.sub.send("SSUBSCRIBE" if self.sharded else "SUBSCRIBE", feed.channel)

    def unsubscribe(self, feed: _Feed) -> None:
        if self.sub is not None:
            if self.sharded:  # its acknowledgement was asked for: no sign of a moved slot (EventHub._on_message)
                self.sub.unsubscribing[feed.channel] = self.sub.unsubscribing.get(feed.channel, 0) + 1
            self.sub.send("SUNSUBSCRIBE" if self.sharded else "UNSUBSCRIBE", feed.channel)


class _Subscriber(asyncio.Protocol):
    """The Pub/Sub connection: writes SUBSCRIBE / UNSUBSCRIBE / PING as they come, hands every message to the hub."""

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self._parser = hiredis.Reader(protocolError=rexc.InvalidResponse, replyError=rexc.ResponseError)
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pong_due = False  # a PING was sent and not answered yet
        self.unsubscribing: dict[bytes, int] = {}  # SUNSUBSCRIBEs sent on this connection and not acknowledged yet

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self._parser.feed(data)
        try:
            while (message := self._parser.gets()) is not False:
                self._hub._on_message(self, message)
        except rexc.InvalidResponse as exc:
            log.warning("event subscriber: unexpected data from Redis (%r); reconnecting", exc)
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)

    def send(self, *args: str | bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(resp(args))

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        if not self.lost.done():
            self.lost.set_result(None)


class EventHub:
    """Follows the event streams of the games being watched through this server process."""

    def __init__(
        self, store: GameStore, *, check_s: float = 5.0, poll_s: float = 0.5, watch: WatchSettings = DEFAULTS.watch
    ) -> None:
        """``watch``: the queues' bounds, the reads' page, slots and attempts, and expiry watching (server.settings
        ``WatchSettings``)."""
        self._store = store
        self.watch = watch  # read where used: a test may replace it on a running hub
        self._check_s = check_s
        self._poll_s = poll_s
        self._feeds: dict[str, _Feed] = {}
        self._by_channel: dict[bytes, _Feed] = {}
        self._creating: dict[str, asyncio.Future[_Feed]] = {}
        self._dirty: asyncio.Queue[_Feed] | None = None
        self._slots: asyncio.Semaphore | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._links: dict[str, _Link] = {}  # subscriber connections by node name ("": a standalone Redis)
        self._sharded = store.sharded_events
        self._no_pubsub = False  # a connection kind the subscriber cannot open (TLS): every feed is polled
        self._buffered = 0  # bytes queued for all watchers
        self._closed = False
        self._streams = 0
        self._no_streams = asyncio.Event()
        self._no_streams.set()
        self.subscriber_connects = 0  # connections made by the subscriber (tests and figures)
        self._expiry = ExpiryWatch(store, slack_s=watch.expiry_slack_s, max_look_s=watch.expiry_max_look_s,
                                   retry_s=watch.expiry_retry_s, batch=watch.expiry_batch)  # fmt: skip
        # watched games whose keys expire end their watchers (server.expiry)

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

    @property
    def watched_games(self) -> int:
        """Games with at least one watcher in this process."""
        return len(self._feeds)

    def cursor(self, game_id: str) -> Position | None:
        """Position up to which the game's watchers here have been handed events; None if nobody watches it."""
        feed = self._feeds.get(game_id)
        return None if feed is None else feed.cursor

    async def follow(self, game_id: str, after: Position) -> AsyncGenerator[StoredEvent, None]:
        """Every event of the game after position ``after``, in order, each once, until the caller stops."""
        if self._closed:
            raise _shutting_down()
        self._start()
        watcher = _Watcher()
        feed, cursor = await self._register(game_id, watcher)
        try:
            last = after
            # The backlog, page by page: the events up to the feed's cursor when this watcher registered (the feed
            # hands it every later one). None to read when the watcher starts at that cursor or later: the common
            # case of a watch from the current version.
            while last < cursor:
                page = await self._read(game_id, last, self.watch.backlog_page)
                for event in page:
                    last = (event.version, event.index)
                    yield event
                if len(page) < self.watch.backlog_page:
                    break
            while True:  # live
                while watcher.items:
                    item = watcher.items.popleft()
                    size = len(item.payload) + _ITEM_OVERHEAD
                    watcher.size -= size
                    self._buffered -= size
                    if (item.version, item.index) > last:
                        last = (item.version, item.index)
                        yield item
                if watcher.error is not None:
                    raise watcher.error
                watcher.wake.clear()
                await watcher.wake.wait()
        finally:
            self._unregister(feed, watcher)

    # ------------------------------------------------------------------------------------ watchers and feeds

    async def _read(self, game_id: str, after: Position, count: int) -> list[StoredEvent]:
        assert self._slots is not None
        async with self._slots:
            return await self._store.events_since(game_id, after, count=count)

    async def _register(self, game_id: str, watcher: _Watcher) -> tuple[_Feed, Position]:
        """The game's feed, with the watcher registered, and the feed's cursor at that moment."""
        feed = self._feeds.get(game_id)
        if feed is None:
            creating = self._creating.get(game_id)  # the watchers arriving together share one creation
            if creating is None:
                creating = self._creating[game_id] = asyncio.ensure_future(self._new_feed(game_id))
                creating.add_done_callback(lambda _: self._creating.pop(game_id, None))
            feed = await asyncio.shield(creating)
            if self._closed:  # close() ran while we waited: it could not tell this watcher
                raise _shutting_down()
            if self._feeds.get(game_id) is not feed:  # it lost its watchers meanwhile (or failed): a fresh one
                return await self._register(game_id, watcher)
        feed.watchers.add(watcher)
        return feed, feed.cursor

    async def _new_feed(self, game_id: str) -> _Feed:
        assert self._slots is not None
        async with self._slots:
            cursor = await self._store.last_position(game_id)
        feed = self._feeds[game_id] = _Feed(game_id, cursor)
        self._by_channel[feed.channel] = feed
        self._attach(feed)
        self._expiry.track(game_id)
        return feed

    def _is_watched(self, game_id: str) -> bool:
        return game_id in self._feeds

    def _gone(self, game_id: str) -> None:
        """The game's keys expired: its watchers end with GameGone once they have sent what they hold."""
        feed = self._feeds.get(game_id)
        if feed is not None:
            self._fail(feed, GameGone(game_id, feed.cursor))

    def _unregister(self, feed: _Feed, watcher: _Watcher) -> None:
        feed.watchers.discard(watcher)
        self._drop_items(watcher)
        if not feed.watchers:
            self._forget(feed)

    def _forget(self, feed: _Feed) -> None:
        if self._feeds.get(feed.game_id) is feed:
            del self._feeds[feed.game_id]
            del self._by_channel[feed.channel]
            self._detach(feed)

    def _drop_items(self, watcher: _Watcher) -> None:
        self._buffered -= watcher.size
        watcher.size = 0
        watcher.items.clear()

    def _offer(self, feed: _Feed, watcher: _Watcher, event: StoredEvent) -> None:
        if watcher.error is not None:
            return
        size = len(event.payload) + _ITEM_OVERHEAD
        watch = self.watch
        if (
            len(watcher.items) >= watch.queue_limit
            or watcher.size + size > watch.watcher_bytes
            or (watcher.items and self._buffered + size > watch.total_bytes)
        ):
            # A watcher this far behind is cut off (it can resume from its last version): what it has not been
            # sent is dropped and it ends with the error, so what it did receive has no gap.
            feed.watchers.discard(watcher)
            self._drop_items(watcher)
            self._end(watcher, TooMuch("WATCHER_TOO_SLOW", "the stream fell behind; resume from the last version"))
            return
        watcher.items.append(event)
        watcher.size += size
        self._buffered += size
        watcher.wake.set()

    @staticmethod
    def _end(watcher: _Watcher, error: BaseException) -> None:
        """End the watcher with ``error`` once it has sent what it holds."""
        if watcher.error is None:
            watcher.error = error
            watcher.wake.set()

    def _fail(self, feed: _Feed, exc: BaseException) -> None:
        self._forget(feed)
        for watcher in list(feed.watchers):
            self._end(watcher, exc)
        feed.watchers.clear()

    # ------------------------------------------------------------------------------------------- reading

    def _wake(self, feed: _Feed) -> None:
        """Have a worker read the feed (once more, if one is reading it now)."""
        if feed.reading:
            feed.again = True
        elif not feed.queued and self._dirty is not None:
            feed.queued = True
            self._dirty.put_nowait(feed)

    async def _worker(self) -> None:
        assert self._dirty is not None
        loop = asyncio.get_running_loop()
        while True:
            feed = await self._dirty.get()
            feed.queued = False
            if self._feeds.get(feed.game_id) is not feed:
                continue  # its watchers are gone
            feed.reading = True
            try:
                while True:
                    feed.again = False
                    await self._catch_up(feed)
                    if not feed.again:
                        break
                feed.failures = 0
            except Exception as exc:
                feed.failures += 1
                if isinstance(exc, StoreUnavailable) and feed.failures < self.watch.read_attempts:
                    loop.call_later(0.1 * 2**feed.failures, self._wake, feed)
                else:  # Redis keeps failing (UNAVAILABLE, its reason as it is), or a bug (INTERNAL)
                    self._fail(feed, exc)
            finally:
                feed.reading = False

    async def _catch_up(self, feed: _Feed) -> None:
        """Hand every event after the feed's cursor to its watchers."""
        feed.read_at = asyncio.get_running_loop().time()
        while True:
            page = await self._read(feed.game_id, feed.cursor, self.watch.backlog_page)
            if page and page[-1].version > feed.cursor[0]:  # a move: it set the game's expiry again
                self._expiry.moved(feed.game_id)
            for event in page:
                position = (event.version, event.index)
                if position > feed.cursor:
                    feed.cursor = position
                    for watcher in list(feed.watchers):
                        self._offer(feed, watcher, event)
            if len(page) < self.watch.backlog_page:
                return

    # ---------------------------------------------------------------------------------------- subscriber

    def _start(self) -> None:
        if self._tasks:
            return
        self._dirty = asyncio.Queue()
        self._slots = asyncio.Semaphore(self.watch.read_slots)
        self._tasks = [asyncio.ensure_future(self._worker()) for _ in range(self.watch.read_slots)]
        self._tasks.append(asyncio.ensure_future(self._safety_check()))
        self._tasks.append(asyncio.ensure_future(self._expiry.run(self._is_watched, self._gone)))

    def _on_message(self, sub: _Subscriber, message: Any) -> None:
        if isinstance(message, list) and message:
            kind = message[0]
            if kind in (b"message", b"smessage"):
                feed = self._by_channel.get(message[1])
                if feed is not None:
                    try:
                        version = int(message[2])
                    except ValueError:
                        version = feed.cursor[0] + 1
                    if version > feed.cursor[0]:  # else already read: a version's events are written together
                        self._wake(feed)
            elif kind in (b"subscribe", b"ssubscribe"):  # from now on every commit is notified: read what came before
                feed = self._by_channel.get(message[1])
                if feed is not None:
                    self._wake(feed)
            elif kind == b"sunsubscribe":  # asked for, or the node no longer serves the channel's slot
                asked = sub.unsubscribing.get(message[1], 0)
                if asked:  # the last watcher left (the game may have a new feed since, subscribed again after it)
                    if asked > 1:
                        sub.unsubscribing[message[1]] = asked - 1
                    else:
                        del sub.unsubscribing[message[1]]
                    return
                feed = self._by_channel.get(message[1])
                if feed is not None and feed.link is not None and feed.link.sub is sub:  # not asked: route again
                    log.info("event subscriber: %s gave up a game's channel (its slot moved); reconnecting",
                             feed.link.name)  # fmt: skip
                    sub.abort()
            elif kind == b"pong":
                sub.pong_due = False
        elif message == b"PONG":
            sub.pong_due = False
        elif isinstance(message, rexc.ResponseError):
            log.warning("event subscriber: Redis refused a command (%s); reconnecting", message)
            sub.abort()

    # ------------------------------------------------------------------- subscriber connections (links)

    def _attach(self, feed: _Feed) -> None:
        """Subscribe the feed's channel on the connection to the node that serves its game (made if need be)."""
        name = self._route(feed)
        if name is None:  # no Pub/Sub (TLS), or no node known for it now: read by the safety check every poll_s
            feed.link = None
            return
        link = self._links.get(name)
        if link is None:
            link = self._links[name] = _Link(name, self._sharded)
            link.task = asyncio.ensure_future(self._run_link(link))
        link.feeds.add(feed)
        feed.link = link
        link.subscribe(feed)

    def _detach(self, feed: _Feed) -> None:
        link, feed.link = feed.link, None
        if link is not None:
            link.feeds.discard(feed)
            link.unsubscribe(feed)

    def _route(self, feed: _Feed) -> str | None:
        """The name of the node to subscribe the feed's channel on: "" for a standalone Redis, the master of the
        channel's slot (as the client's slot map says now) in a Redis Cluster; None when there is none."""
        if self._no_pubsub:
            return None
        client = self._store.client
        if not isinstance(client, RedisCluster):
            return ""
        try:
            return str(client.nodes_manager.get_node_from_slot(client.keyslot(feed.channel)).name)
        except (rexc.RedisError, KeyError):  # not mapped yet (or the slot is not covered)
            return None

    async def _refresh_map(self) -> None:
        """A new slot map for the cluster client: after a failover, the masters now."""
        await refresh_slot_map(self._store.client)

    def _reroute(self, link: _Link) -> None:
        """Move the link's feeds whose slot another node serves now to that node's connection."""
        for feed in list(link.feeds):
            name = self._route(feed)
            if name != link.name:
                link.feeds.discard(feed)
                feed.link = None
                if name is not None:
                    self._attach(feed)

    def _target(self, link: _Link) -> tuple[dict[str, Any], float] | None:
        client = self._store.client
        if isinstance(client, RedisCluster):
            node = client.get_node(node_name=link.name)
            if node is None:
                return None
            return _node_target(node.connection_class, {**node.connection_kwargs, "host": node.host,
                                                        "port": node.port})  # fmt: skip
        return _subscriber_target(client)

    async def _run_link(self, link: _Link) -> None:
        """While the link has feeds: keep its subscriber connection up, subscribed to each feed's channel. In a
        cluster, a connection lost (or refused) first refreshes the slot map and moves the feeds whose slot has a
        new master (a failover) to that master's link; only the feeds still served by an unreachable node end
        (STORAGE_UNAVAILABLE: their watchers resume)."""
        loop = asyncio.get_running_loop()
        delay = 0.05
        first_failure = True
        try:
            while link.feeds and not self._closed:
                target = self._target(link)
                if target is None:
                    if isinstance(self._store.client, RedisCluster):
                        await self._refresh_map()
                        self._reroute(link)
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, 1.0)
                        continue
                    log.warning("live streams: no Pub/Sub connection to this Redis; reading watched games every "
                                "%.1fs", self._poll_s)  # fmt: skip
                    self._no_pubsub = True
                    for feed in list(link.feeds):
                        feed.link = None
                    link.feeds.clear()
                    return
                try:
                    sub = await self._connect(target)
                except (OSError, TimeoutError, rexc.RedisError) as exc:
                    if isinstance(self._store.client, RedisCluster):
                        await self._refresh_map()
                        self._reroute(link)
                    if first_failure and link.feeds:  # lost, and not made again at once: the node is unreachable
                        first_failure = False
                        cause = describe(exc)
                        log.warning("event subscriber: no connection to Redis %s (%s); retrying", link.name, cause)
                        error = StoreUnavailable(f"event subscriber: {cause}")
                        for feed in list(link.feeds):
                            self._fail(feed, error)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                first_failure = True
                self.subscriber_connects += 1
                link.sub = sub
                connected_at = loop.time()
                if link.sharded:  # one channel per SSUBSCRIBE (several must share a slot)
                    for feed in list(link.feeds):
                        sub.send("SSUBSCRIBE", feed.channel)
                else:
                    channels = [feed.channel for feed in link.feeds]
                    for i in range(0, len(channels), _SUBSCRIBE_CHUNK):  # each acknowledgement reads its feed again
                        sub.send("SUBSCRIBE", *channels[i : i + _SUBSCRIBE_CHUNK])
                try:
                    await sub.lost
                finally:
                    link.sub = None
                    sub.abort()
                if isinstance(self._store.client, RedisCluster):  # a failover? the feeds' slots may have moved
                    await self._refresh_map()
                    self._reroute(link)
                for feed in list(link.feeds):  # read by the safety check until subscribed again
                    self._wake(feed)
                if loop.time() - connected_at < 1.0:  # lost at once (refused?): do not hammer Redis
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                else:
                    delay = 0.05
        finally:
            if self._links.get(link.name) is link:
                del self._links[link.name]
            if link.sub is not None:
                link.sub.abort()
            for feed in list(link.feeds):  # (closing) or left over: attached again when the map knows better
                feed.link = None

    async def _connect(self, target: tuple[dict[str, Any], float]) -> _Subscriber:
        kw, timeout_s = target
        loop = asyncio.get_running_loop()
        sub = _Subscriber(self)
        try:
            async with asyncio.timeout(timeout_s):
                if "path" in kw:
                    await loop.create_unix_connection(lambda: sub, kw["path"])
                else:
                    await loop.create_connection(lambda: sub, kw.get("host", "localhost"), kw.get("port", 6379))
        except BaseException:
            sub.abort()
            raise
        if kw.get("password"):  # a refusal is an error reply: the connection is cut and made again later
            sub.send("AUTH", *((kw["username"],) if kw.get("username") else ()), kw["password"])
        return sub

    async def _safety_check(self) -> None:
        """Forever: every ``check_s``, ping each subscriber connection (cut it when the previous ping got no answer)
        and read every feed not read meanwhile, spread over the interval (a burst of reads would delay the live
        ones); every ``poll_s``, read every feed that has no subscriber connection now (Redis or its node
        unreachable, a connection kind it cannot open), and attach again a feed that has no link."""
        loop = asyncio.get_running_loop()
        tick = min(0.1, self._check_s, self._poll_s)
        last_ping = last_poll = loop.time()
        pending: list[_Feed] = []
        per_tick = 1
        while True:
            await asyncio.sleep(tick)
            now = loop.time()
            if now - last_poll >= self._poll_s:
                last_poll = now
                for feed in list(self._feeds.values()):
                    if feed.link is None and not self._no_pubsub:
                        self._attach(feed)
                    if feed.link is None or feed.link.sub is None:
                        self._wake(feed)
            if now - last_ping >= self._check_s:
                last_ping = now
                for link in list(self._links.values()):
                    sub = link.sub
                    if sub is None:
                        continue
                    if sub.pong_due:
                        log.warning("event subscriber: Redis %s did not answer a ping; reconnecting", link.name)
                        sub.abort()
                        continue
                    sub.pong_due = True
                    sub.send("PING")
            if not pending:
                pending = list(self._feeds.values())
                per_tick = max(1, math.ceil(len(pending) * tick / self._check_s))
            for feed in pending[-per_tick:]:
                if not feed.watchers:  # created for watchers that went away before they registered
                    self._forget(feed)
                elif now - feed.read_at >= self._check_s:
                    self._wake(feed)
            del pending[-per_tick:]

    async def close(self, drain_s: float = 5.0) -> None:
        """End every watch (with UNAVAILABLE: reconnect and resume), stop the readers, and wait up to ``drain_s``
        seconds for the counted streams to finish."""
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        links, self._links = list(self._links.values()), {}
        for link in links:
            if link.sub is not None:
                link.sub.abort()
            if link.task is not None:
                link.task.cancel()
                tasks.append(link.task)
        feeds, self._feeds, self._by_channel = list(self._feeds.values()), {}, {}
        for feed in feeds:
            for watcher in list(feed.watchers):
                self._end(watcher, _shutting_down())
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_streams.wait(), drain_s)


def _subscriber_target(client: aioredis.Redis | RedisCluster) -> tuple[dict[str, Any], float] | None:
    """How to connect the subscriber: the connection options of the standalone Redis, or of one cluster node (in a
    Redis Cluster a PUBLISH reaches every node, so any node will do); None for connections it cannot make (TLS)."""
    connection_class: type
    if isinstance(client, RedisCluster):
        nodes = client.get_nodes() or list(client.nodes_manager.startup_nodes.values())
        if not nodes:
            return None
        node = nodes[0]
        connection_class, kw = node.connection_class, {**node.connection_kwargs, "host": node.host, "port": node.port}
    else:
        pool = client.connection_pool
        connection_class, kw = pool.connection_class, pool.connection_kwargs
    return _node_target(connection_class, kw)


def _node_target(connection_class: type, kw: dict[str, Any]) -> tuple[dict[str, Any], float] | None:
    if not HotPath.supports(connection_class, kw):
        return None
    return kw, kw.get("socket_connect_timeout") or 2.0


def _shutting_down() -> ShuttingDown:
    return ShuttingDown("SHUTTING_DOWN", "the server is shutting down; reconnect and resume")
