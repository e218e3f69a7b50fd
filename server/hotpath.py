"""The two Redis commands of every move (the HMGET of a load, the EVALSHA of a commit), pipelined over one
connection of our own: an asyncio protocol that writes each command as it comes and hands the replies, which Redis
sends in the same order, to the callers waiting for them (hiredis parses them).

Why not redis-py's connection: its general command path costs several times the command itself here (a pool,
stream reader and writer layers, a timeout context and a health probe per command), and one command at a time per
connection means one read and one write system call per command on each side; over one pipelined connection the
replies of the commands in flight arrive, and are read, together (Redis reads the commands together too).

Failures: a lost connection fails every command in flight with ``ConnectionError``, and each is sent once more on
a new connection (safe for both commands: a load reads, and a commit carries its commit id). When the oldest
command has no reply within its time, Redis is taken as hung: the connection is cut and every command in flight
fails with ``TimeoutError`` (one timer per connection, not one per command). A caller that gives up (cancelled)
leaves its place in the queue, so its late reply is read and dropped, never taken for another command's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, cast

import hiredis
import redis.exceptions as rexc
from redis.asyncio.connection import Connection, UnixDomainSocketConnection


def resp(args: tuple[str | bytes | int, ...]) -> bytes:
    """One command in the Redis protocol (RESP): redis-py's general packer is several times slower."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(parts)


class _Lost(Exception):
    """The connection went away with the command in flight (sent again once)."""


class NotSent(rexc.ConnectionError):
    """No connection to Redis could be made: the command was never written (so it cannot have been applied)."""


def _reply_error(error: rexc.ResponseError) -> rexc.ResponseError:
    # the one error reply the store handles by its type: a Redis restarted without its script cache
    return rexc.NoScriptError(*error.args) if str(error).startswith("NOSCRIPT") else error


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
        self.transport.write(command)
        if self._watchdog is None:
            self._watchdog = loop.call_at(deadline, self._check_deadline)
        if wait_s is not None and wait_s < timeout_s:  # only for callers with a short deadline: one timer each
            loop.call_later(wait_s, _give_up, reply)
        return reply

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

    async def call(self, timeout_s: float, *args: str | bytes | int, wait_s: float | None = None) -> Any:
        """Send one command and return its reply; a ResponseError reply is raised. ``ConnectionError`` when Redis
        cannot be reached (``NotSent`` when the command was not written at all), ``TimeoutError`` when it does
        not answer within ``timeout_s`` (Redis is hung: the connection is cut) or within ``wait_s`` when that is
        shorter (the caller's deadline; the connection stays)."""
        command = resp(args)
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
            try:
                reply = await conn.send(command, timeout_s, wait_s)
            except _Lost as exc:
                if attempt == 2:
                    raise rexc.ConnectionError(str(exc)) from exc
                continue
            if isinstance(reply, rexc.ResponseError):
                raise _reply_error(reply)
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
            for reply in done:
                if isinstance(reply, rexc.ResponseError):
                    raise _reply_error(reply)
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

    def close(self) -> None:
        """Close the connection (commands in flight fail)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort(_Lost("the store is closing"))
