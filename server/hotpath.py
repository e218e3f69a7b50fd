"""The two Redis commands of every move (the HMGET of a load, the EVALSHA of a commit), pipelined over one
connection of our own: an asyncio protocol that writes each command as it comes and hands the replies, which Redis
sends in the same order, to the callers waiting for them (hiredis parses them).

Why not redis-py's connection: its general command path costs several times the command itself here (a pool,
stream reader and writer layers, a timeout context and a health probe per command), and one command at a time per
connection means one read and one write system call per command on each side; over one pipelined connection the
replies of the commands in flight arrive, and are read, together. The commands given in one turn of the event loop
(the moves of several games handled together) are written together too, in one system call at the end of that turn
(Redis then reads them together).

Failures: a lost connection fails every command in flight with ``ConnectionError``, and each is sent once more on
a new connection (safe for both commands: a load reads, and a commit carries its commit id). When the oldest
command has no reply within its time, Redis is taken as hung: the connection is cut and every command in flight
fails with ``TimeoutError`` (one timer per connection, not one per command). A caller that gives up (cancelled)
leaves its place in the queue, so its late reply is read and dropped, never taken for another command's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any, cast

import hiredis
import redis.exceptions as rexc
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.crc import key_slot

from server.settings import DEFAULTS


def resp(args: tuple[str | bytes | int, ...]) -> bytes:
    """One command in the Redis protocol (RESP): redis-py's general packer is several times slower, and this one
    is hiredis's (C: a commit's EVALSHA, 17 arguments, in less than half the time of ``_resp``, byte for byte the
    same for str, bytes, int and float arguments)."""
    try:
        packed: bytes = hiredis.pack_command(args)  # type: ignore[arg-type]  # (its stub: a tuple of one argument)
        return packed
    except TypeError:  # an argument of another type (hiredis refuses it): as str() spells it
        return _resp(args)


def _resp(args: tuple[str | bytes | int, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(parts)


class CommitPacker:
    """``resp(("EVALSHA", sha, 3, *keys, *args))`` of commits (commit_move.lua: three keys, its eleven arguments of
    their usual types), byte for byte, from one template, with the command's head (the script and the keys) kept
    per game (at most ``size`` games): a quarter fewer instructions than hiredis's packer, which formats each
    length with sprintf. Other arguments (a cluster's twelfth, a str state): ``resp``."""

    def __init__(self, sha: str, size: int = 4096) -> None:
        self.sha = sha
        self._size = size
        self._heads: dict[str, tuple[str, str, bytes]] = {}  # by the game key: the other two keys and the head

    def pack(self, keys: Sequence[str], args: Sequence[Any]) -> bytes:
        """The command's RESP."""
        if len(keys) != 3 or len(args) != 11:
            return resp(("EVALSHA", self.sha, len(keys), *keys, *args))
        base, progress, commit_id, fence, idem, ttl, idem_ttl, joins, entry, step, version = args
        # ints exactly (a bool or a float is spelled otherwise), bytes and str where they go
        usual = type(base) is type(fence) is type(ttl) is type(idem_ttl) is type(joins) is type(version) is int
        usual = usual and type(progress) is type(idem) is type(entry) is bytes
        if not (usual and type(commit_id) is type(step) is str):
            return resp(("EVALSHA", self.sha, len(keys), *keys, *args))
        known = self._heads.get(keys[0])
        if known is None or known[0] != keys[1] or known[1] != keys[2]:
            if len(self._heads) >= self._size:
                self._heads.clear()
            head = resp(("EVALSHA", self.sha, 3, *keys)).removeprefix(b"*6\r\n")
            known = self._heads[keys[0]] = (keys[1], keys[2], head)
        b1, b4, b6, b7 = b"%d" % base, b"%d" % fence, b"%d" % ttl, b"%d" % idem_ttl
        b8, b11, cid, st = b"%d" % joins, b"%d" % version, commit_id.encode(), step.encode()
        packed: bytes = _COMMIT_TEMPLATE % (
            known[2], len(b1), b1, len(progress), progress, len(cid), cid, len(b4), b4, len(idem), idem, len(b6), b6,
            len(b7), b7, len(b8), b8, len(entry), entry, len(st), st, len(b11), b11,
        )  # fmt: skip
        return packed


_COMMIT_TEMPLATE = b"*17\r\n%b" + b"$%d\r\n%b\r\n" * 11


class _Lost(Exception):
    """The connection went away with the command in flight (sent again once)."""


class NotSent(rexc.ConnectionError):
    """No connection to Redis could be made: the command was never written (so it cannot have been applied)."""


class Refused(rexc.ResponseError):
    """An error reply (LOADING, BUSY, OOM, MISCONF, ...) to the command's first and only send: Redis refused that
    command without running it, so it cannot have been applied. An error reply to a resend after a lost
    connection stays a plain ResponseError: the first send may have run."""


def _reply_error(error: rexc.ResponseError, *, first_send: bool = False) -> rexc.ResponseError:
    # the one error reply the store handles by its type: a Redis restarted without its script cache
    if str(error).startswith("NOSCRIPT"):
        return rexc.NoScriptError(*error.args)
    return Refused(*error.args) if first_send else error


_ASKING = resp(("ASKING",))


def _ignore(reply: asyncio.Future[Any]) -> None:
    if not reply.cancelled():
        reply.exception()  # retrieved: the command after it reports the failure


def _give_up(reply: asyncio.Future[Any]) -> None:
    if not reply.done():
        reply.set_exception(TimeoutError("no reply from Redis within the call's deadline"))


class _Connection(asyncio.Protocol):
    """One connection: the callers waiting for a reply, in the order their commands were written."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = hiredis.Reader(protocolError=rexc.InvalidResponse, replyError=rexc.ResponseError)
        self._waiting: deque[tuple[asyncio.Future[Any], float]] = deque()  # with their deadlines
        self._watchdog: asyncio.TimerHandle | None = None
        self._unsent: list[bytes] = []  # commands given in this turn of the event loop, written at its end

    def send(self, command: bytes, timeout_s: float, wait_s: float | None = None) -> asyncio.Future[Any]:
        """Write ``command``; the future of its reply. ``timeout_s``: without a reply by then Redis is hung (the
        connection is cut); ``wait_s`` (shorter): the caller's own patience (its deadline), after which only its
        future fails with ``TimeoutError`` (its late reply is dropped, the connection stays)."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        if self.closed or self.transport is None:
            reply.set_exception(_Lost("the connection to Redis is closed"))
            return reply
        deadline = loop.time() + timeout_s
        self._waiting.append((reply, deadline))
        if not self._unsent:
            loop.call_soon(self._flush)
        self._unsent.append(command)
        if self._watchdog is None:
            self._watchdog = loop.call_at(deadline, self._check_deadline)
        if wait_s is not None and wait_s < timeout_s:  # only for callers with a short deadline: one timer each
            loop.call_later(wait_s, _give_up, reply)
        return reply

    def _flush(self) -> None:
        unsent, self._unsent = self._unsent, []
        if unsent and not self.closed and self.transport is not None:
            self.transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self._parser.feed(data)
        waiting = self._waiting
        try:
            while (reply := self._parser.gets()) is not False:
                caller, _ = waiting.popleft()
                if not caller.done():  # a cancelled caller's reply is dropped
                    caller.set_result(reply)
        except (rexc.InvalidResponse, IndexError) as exc:  # garbage, or a reply nobody asked for
            self.abort(_Lost(f"unexpected data from Redis: {exc!r}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.abort(_Lost(f"the connection to Redis was lost: {exc or 'closed by Redis'}"))

    def _check_deadline(self) -> None:
        self._watchdog = None
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        oldest = self._waiting[0][1]
        if loop.time() >= oldest:  # no reply to the oldest command in time: Redis is hung
            self.abort(TimeoutError("Redis did not answer in time"))
        else:
            self._watchdog = loop.call_at(oldest, self._check_deadline)

    def abort(self, reason: Exception) -> None:
        """Cut the connection; every command in flight fails with ``reason``."""
        self.closed = True
        self._unsent = []
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        waiting, self._waiting = self._waiting, deque()
        for caller, _ in waiting:
            if not caller.done():
                caller.set_exception(reason)
        if self.transport is not None:
            self.transport.abort()


class HotPath:
    """Commands pipelined over one connection to a standalone Redis (TCP or Unix socket), opened on first use and
    again after it was lost."""

    def __init__(self, connect_kwargs: dict[str, Any], *, connect_timeout_s: float = 2.0) -> None:
        self._kwargs = connect_kwargs
        self._connect_timeout_s = connect_timeout_s
        self._conn: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    @staticmethod
    def supports(pool_class: type, kwargs: dict[str, Any]) -> bool:
        """Whether a redis-py pool with this connection class and options is one this path can reproduce: plain
        TCP or a Unix socket, AUTH and SELECT (no TLS, RESP3, client name or credential provider)."""
        if pool_class not in (Connection, UnixDomainSocketConnection):
            return False
        return not any(kwargs.get(k) for k in ("protocol", "client_name", "credential_provider", "lib_name"))

    async def call(
        self,
        timeout_s: float,
        *args: str | bytes | int,
        wait_s: float | None = None,
        route: str | None = None,
        asking: bool = False,
        packed: bytes | None = None,
    ) -> Any:
        """Send one command and return its reply; a ResponseError reply is raised (``Refused`` when it answers the
        command's first send: then it did not run). ``ConnectionError`` when Redis
        cannot be reached (``NotSent`` when the command was not written at all), ``TimeoutError`` when it does
        not answer within ``timeout_s`` (Redis is hung: the connection is cut) or within ``wait_s`` when that is
        shorter (the caller's deadline; the connection stays). ``route`` (the key whose node runs the command) is
        for a cluster only; ``asking``: ASKING first, on the same connection (a cluster's ASK redirection).
        ``packed``: the command already in RESP (``pack_commit``), then ``args`` are not packed again."""
        command = resp(args) if packed is None else packed
        until = None if wait_s is None or wait_s >= timeout_s else asyncio.get_running_loop().time() + wait_s
        for attempt in (1, 2):
            if until is not None:
                wait_s = until - asyncio.get_running_loop().time()
                if wait_s <= 0:
                    raise TimeoutError("no reply from Redis within the call's deadline")
            conn = self._conn
            if conn is None or conn.closed:
                try:
                    conn = await self._connect(timeout_s, wait_s)
                except (rexc.ConnectionError, OSError) as exc:
                    if attempt == 1:  # written nowhere yet
                        raise NotSent(str(exc)) from exc
                    raise
            if asking:  # written just before the command, on the same connection: it applies to that command
                conn.send(_ASKING, timeout_s).add_done_callback(_ignore)
            try:
                reply = await conn.send(command, timeout_s, wait_s)
            except _Lost as exc:
                if attempt == 2:
                    raise rexc.ConnectionError(str(exc)) from exc
                continue
            if isinstance(reply, rexc.ResponseError):
                raise _reply_error(reply, first_send=attempt == 1)
            return reply
        raise AssertionError("unreachable")

    async def call_pair(
        self,
        timeout_s: float,
        first: tuple[str | bytes | int, ...],
        second: tuple[str | bytes | int, ...],
        wait_s: float | None = None,
    ) -> Any:
        """Write two commands back to back on one connection (Redis runs them in that order) and return the
        second's reply; the first's error reply is raised (the second may then have run too: use it for a
        first command that cannot fail but for a lost Redis). Failures as in ``call``; a lost connection sends
        both once more."""
        commands = (resp(first), resp(second))
        for attempt in (1, 2):
            conn = self._conn
            if conn is None or conn.closed:
                try:
                    conn = await self._connect(timeout_s, wait_s)
                except (rexc.ConnectionError, OSError) as exc:
                    if attempt == 1:
                        raise NotSent(str(exc)) from exc
                    raise
            replies = [conn.send(command, timeout_s, wait_s) for command in commands]
            try:
                done = await asyncio.gather(*replies)
            except _Lost as exc:
                if attempt == 2:
                    raise rexc.ConnectionError(str(exc)) from exc
                continue
            if isinstance(done[0], rexc.ResponseError):
                raise _reply_error(done[0])  # (the second may have run)
            if isinstance(done[1], rexc.ResponseError):
                raise _reply_error(done[1], first_send=attempt == 1)
            return done[1]
        raise AssertionError("unreachable")

    async def _connect(self, timeout_s: float, wait_s: float | None = None) -> _Connection:
        if self._connecting is None:  # one connection attempt at a time, shared by the callers that need it
            self._connecting = asyncio.ensure_future(self._open(min(timeout_s, self._connect_timeout_s)))
        connecting = self._connecting
        try:
            if wait_s is not None and wait_s < timeout_s:  # a short deadline gives up alone, not the attempt
                conn = await asyncio.wait_for(asyncio.shield(connecting), wait_s)
            else:
                conn = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        self._conn = conn
        return conn

    async def _open(self, timeout_s: float) -> _Connection:
        loop = asyncio.get_running_loop()
        kw = self._kwargs
        conn = _Connection()
        try:
            async with asyncio.timeout(timeout_s):
                if "path" in kw:
                    await loop.create_unix_connection(lambda: conn, kw["path"])
                else:
                    await loop.create_connection(lambda: conn, kw.get("host", "localhost"), kw.get("port", 6379))
                handshake = []
                if kw.get("password"):
                    user = (kw["username"],) if kw.get("username") else ()
                    handshake.append(conn.send(resp(("AUTH", *user, kw["password"])), timeout_s))
                if kw.get("db"):
                    handshake.append(conn.send(resp(("SELECT", kw["db"])), timeout_s))
                for reply in await asyncio.gather(*handshake):
                    if isinstance(reply, rexc.ResponseError):
                        raise rexc.ConnectionError(f"Redis refused the connection: {reply}")
        except BaseException as exc:
            conn.abort(_Lost("the connection to Redis could not be set up"))
            if isinstance(exc, TimeoutError | _Lost):
                raise rexc.ConnectionError(f"no connection to Redis: {exc or 'timed out'}") from exc
            raise
        return conn

    def connected(self) -> bool:
        """Whether its connection is open now."""
        return self._conn is not None and not self._conn.closed

    def close(self) -> None:
        """Close the connection (commands in flight fail)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort(_Lost("the store is closing"))


# the defaults of ClusterHotPath's parameters (server.settings StorageSettings.hot_*)
MAX_REDIRECTS = DEFAULTS.storage.hot_max_redirects  # MOVED / ASK replies followed for one command (a slot moves
# once; more is a map in flux)
_TRYAGAIN_S = DEFAULTS.storage.hot_tryagain_s  # first pause before a command refused with TRYAGAIN (a slot's keys
# half migrated) is sent again
_REFRESH_GAP_S = DEFAULTS.storage.hot_refresh_gap_s  # slot map refreshes after a failure at most this often
_SLOT_CACHE = DEFAULTS.storage.hot_slot_cache  # keys whose slot is remembered (the games in play)


class ClusterHotPath:
    """The same commands on a Redis Cluster: one pipelined connection (a ``HotPath``) per master, opened on first
    use, and each command sent to the master of its key's slot as the cluster client's slot map says (the map the
    rest of the store uses, so both agree).

    Redirections: ``MOVED`` (the slot lives elsewhere now: a resharding or a failover) updates the client's map for
    that slot, the command goes to the new owner, and a refresh of the whole map is started; ``ASK`` (the slot is
    being migrated and this key is already on the target) sends ``ASKING`` and the command to the target without
    touching the map; ``TRYAGAIN`` (a multi-key command whose keys are split by a migration) waits a little and
    sends it again. A command goes to one node at a time: it runs on one node at most, so a commit's outcome is
    still the single node's outcome (its commit id and fence settle a lost answer as on a standalone Redis).

    Failures are a standalone ``HotPath``'s (``NotSent``, ``ConnectionError``, ``TimeoutError``, error replies
    such as ``CLUSTERDOWN``), and each starts a refresh of the slot map (at most one every ``refresh_gap_s``): after
    a failover the promoted replica is found by the next command, not the next minute.

    ``max_redirects``, ``tryagain_s``, ``refresh_gap_s`` and ``slot_cache`` (keys whose slot is remembered) are
    the settings' ``storage.hot_*`` (server.settings)."""

    def __init__(
        self,
        client: RedisCluster,
        *,
        connect_timeout_s: float = 2.0,
        max_redirects: int = MAX_REDIRECTS,
        tryagain_s: float = _TRYAGAIN_S,
        refresh_gap_s: float = _REFRESH_GAP_S,
        slot_cache: int = _SLOT_CACHE,
    ) -> None:
        self._client = client
        self._connect_timeout_s = connect_timeout_s
        self.max_redirects = max_redirects
        self._tryagain_s = tryagain_s
        self._refresh_gap_s = refresh_gap_s
        self.slot_cache = slot_cache
        self._paths: dict[str, HotPath] = {}  # by node name, host:port
        self._slots: dict[str | bytes, int] = {}
        self._refreshing: asyncio.Future[None] | None = None
        self._refreshed_at = -1e9
        self._noscript: dict[int, ClusterNode] = {}  # by slot: the node that said NOSCRIPT (SCRIPT LOAD goes there)
        self.moved = 0  # MOVED replies followed (tests and benches read them)
        self.asked = 0  # ASK replies followed

    @staticmethod
    def supports(client: RedisCluster) -> bool:
        """Whether every node of this cluster client is one a ``HotPath`` can reach (plain TCP, AUTH)."""
        nodes = list(client.nodes_manager.startup_nodes.values()) + client.get_nodes()
        return bool(nodes) and all(HotPath.supports(n.connection_class, n.connection_kwargs) for n in nodes)

    def connections(self) -> int:
        """The pipelined connections open now (one per master used)."""
        return sum(1 for path in self._paths.values() if path.connected())

    def _slot(self, key: str | bytes) -> int:
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) >= self.slot_cache:
                self._slots.clear()
            slot = self._slots[key] = key_slot(key if isinstance(key, bytes) else key.encode())
        return slot

    def _path(self, node: ClusterNode) -> HotPath:
        path = self._paths.get(node.name)
        if path is None:
            path = self._paths[node.name] = HotPath(node.connection_kwargs, connect_timeout_s=self._connect_timeout_s)
        return path

    async def call(
        self,
        timeout_s: float,
        *args: str | bytes | int,
        wait_s: float | None = None,
        route: str | bytes | None = None,
        asking: bool = False,
    ) -> Any:
        """``HotPath.call`` on the master of ``route``'s slot (by default the command's first key: HMGET's key,
        EVALSHA's first key). A SCRIPT LOAD (routed by the key of the EVALSHA it is for) goes to the node that
        answered that EVALSHA with NOSCRIPT: after an ASK, the migration's target."""
        key = route if route is not None else _first_key(args)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slot(key)
        loop = asyncio.get_running_loop()
        until = None if wait_s is None or wait_s >= timeout_s else loop.time() + wait_s
        nodes = self._client.nodes_manager
        if not nodes.slots_cache:
            try:
                await asyncio.wait_for(self._client.initialize(), min(timeout_s, wait_s or timeout_s))
            except (rexc.RedisError, OSError, TimeoutError) as exc:
                raise NotSent(f"no map of the cluster's slots: {exc}") from exc
        target: ClusterNode | None = None  # where an ASK sent the command (not in the map)
        pause = self._tryagain_s
        for _ in range(self.max_redirects + 1):
            if until is not None:
                wait_s = until - loop.time()
                if wait_s <= 0:
                    raise TimeoutError("no reply from Redis within the call's deadline")
            try:
                node = target or (self._noscript.pop(slot, None) if args[0] == "SCRIPT" else None)
                node = node or nodes.get_node_from_slot(slot)
            except rexc.SlotNotCoveredError as exc:
                self._refresh()
                raise NotSent(str(exc)) from exc
            try:
                return await self._path(node).call(timeout_s, *args, wait_s=wait_s, asking=target is not None)
            except rexc.ResponseError as exc:
                text = str(exc)
                if text.startswith("MOVED "):
                    moved = rexc.MovedError(text.removeprefix("MOVED "))
                    await nodes.move_slot(moved)  # the client's map, for its own commands too
                    self._refresh()  # one slot moved: others may have too
                    self.moved += 1
                    target = None
                    continue
                if text.startswith("ASK "):
                    ask = rexc.AskError(text.removeprefix("ASK "))
                    target = nodes.get_node(host=ask.host, port=ask.port) or ClusterNode(
                        ask.host, ask.port, "primary", **nodes.connection_kwargs
                    )
                    self.asked += 1
                    continue
                if text.startswith("TRYAGAIN"):
                    await asyncio.sleep(pause)
                    pause *= 2
                    target = None
                    continue
                if text.startswith("NOSCRIPT"):
                    self._noscript[slot] = node
                elif text.startswith(("CLUSTERDOWN", "READONLY", "MASTERDOWN", "LOADING")):
                    self._refresh()
                raise
            except (rexc.ConnectionError, TimeoutError, OSError):
                self._refresh()
                raise
        raise rexc.ClusterError(f"the command was redirected more than {self.max_redirects} times")

    async def call_pair(
        self,
        timeout_s: float,
        first: tuple[str | bytes | int, ...],
        second: tuple[str | bytes | int, ...],
        wait_s: float | None = None,
    ) -> Any:
        """``HotPath.call_pair`` on a cluster: the two commands' keys may live on two shards (a deadline index entry
        and its game), so the first is sent to its master and answered before the second goes to its own: Redis
        still runs them in that order, at the cost of a round trip. The first's failure sends no second (it
        raises as from ``call``, ``NotSent`` included: then the commit was not written)."""
        loop = asyncio.get_running_loop()
        until = None if wait_s is None else loop.time() + wait_s
        try:
            await self.call(timeout_s, *first, wait_s=wait_s)
        except (rexc.ConnectionError, TimeoutError, OSError) as exc:
            if isinstance(exc, NotSent):
                raise
            raise NotSent(f"the command before the commit failed: {exc}") from exc
        left = None if until is None else until - loop.time()
        if left is not None and left <= 0:
            raise NotSent("no time left for the commit after the command before it")
        return await self.call(timeout_s, *second, wait_s=left)

    def _refresh(self) -> None:
        """Read the cluster's slot map again, in the background (one refresh at a time, not too often)."""
        loop = asyncio.get_running_loop()
        if self._refreshing is not None or loop.time() - self._refreshed_at < self._refresh_gap_s:
            return
        self._refreshed_at = loop.time()
        self._refreshing = asyncio.ensure_future(self._reinitialize())

    async def _reinitialize(self) -> None:
        try:
            await self._client.nodes_manager.initialize()
        except (rexc.RedisError, OSError):
            pass  # the next failure tries again
        finally:
            self._refreshing = None
            self._refreshed_at = asyncio.get_running_loop().time()
            live = {node.name for node in self._client.nodes_manager.nodes_cache.values()}
            for name in [name for name in self._paths if name not in live]:  # nodes gone from the cluster
                self._paths.pop(name).close()

    def close(self) -> None:
        """Close every connection (commands in flight fail)."""
        if self._refreshing is not None:
            self._refreshing.cancel()
            self._refreshing = None
        paths, self._paths = self._paths, {}
        for path in paths.values():
            path.close()


def _first_key(args: tuple[str | bytes | int, ...]) -> str | bytes:
    """The key a command's slot is taken from: EVAL/EVALSHA's first key, else the first argument."""
    name = args[0]
    if name not in _EVALS:  # the store's commands are upper case strings: the common case without a copy
        name = (name.decode() if isinstance(name, bytes) else str(name)).upper()
    key = args[3] if name in _EVALS and int(args[2]) > 0 else args[1]
    return key if isinstance(key, str | bytes) else str(key)


_EVALS = frozenset({"EVALSHA", "EVAL"})
