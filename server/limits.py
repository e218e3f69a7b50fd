"""Per-peer limits of one referee process: a request rate for every RPC, and a rate of games created.

A peer is the client's IP address as gRPC reports it (``context.peer()``; an IPv6 address counts by its /64, since
one host is usually given a whole /64). Each limit is a token bucket per key, kept in a capped LRU: memory stays
bounded whatever the number of peers (a forgotten peer starts again with a full bucket).

- Every call (every RPC, reflection included; not the health checks, which a flood must not fail) takes one
  token of its peer's request bucket (``requests_per_s``, burst ``request_burst``).
- CreateGame also takes one token of its peer's creation bucket (``games_per_minute``, burst as many), and, when
  the call carries a bearer token, one of that token's creation bucket; the organizer token is exempt.
- A peer has at most ``watches_per_peer`` streams open at once: WatchGame, the health service's Watch (exempt from
  the rate, not from this) and reflection, on both ports together (each holds 20-30 KB of the process for as long
  as it lasts: without a cap one address opened them as fast as it liked until memory ran out).

Over a limit: RESOURCE_EXHAUSTED, reason ``RATE_LIMITED``, with a google.rpc.RetryInfo saying when a token will
be there again; a refused call changes nothing. The limits are per referee process (several referees behind one
address each count for themselves); the cap on unfinished games (``server.open_games``) is shared in Redis.

The limiter is an aio server interceptor that wraps each method's handler once (cached by method), so the
servicer knows nothing of it; its cost per call is a peer lookup and a few float operations.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

import grpc

from server import errors, wire
from server.errors import TooMuch
from server.settings import DEFAULTS

log = logging.getLogger("rummy_referee")

CREATE_GAME_METHOD = "/rummy.v1.RefereeService/CreateGame"
WATCH_GAME_METHOD = "/rummy.v1.RefereeService/WatchGame"
_HEALTH_PREFIX = "/grpc.health.v1.Health/"


@dataclass(frozen=True, slots=True)
class Limits:
    """The per-process limits; 0 turns a limit off."""

    requests_per_s: float = DEFAULTS.limits.requests_per_s  # every RPC, per peer
    request_burst: int = DEFAULTS.limits.request_burst  # requests a peer may send at once after a quiet time
    games_per_minute: float = DEFAULTS.limits.games_per_minute  # (server.settings)
    max_peers: int = DEFAULTS.limits.max_peers  # (server.settings)
    watches_per_peer: int = DEFAULTS.limits.watches_per_peer  # WatchGame streams open at once, per peer

    def __post_init__(self) -> None:
        if self.requests_per_s < 0 or self.games_per_minute < 0 or self.watches_per_peer < 0:
            raise ValueError("a rate limit is 0 (off) or more")
        if self.requests_per_s and self.request_burst < 1:
            raise ValueError("a request burst is at least 1")
        if self.max_peers < 1:
            raise ValueError("max_peers is at least 1")

    @property
    def active(self) -> bool:
        """Whether any limit is on."""
        return bool(self.requests_per_s or self.games_per_minute or self.watches_per_peer)


UNLIMITED = Limits(requests_per_s=0, games_per_minute=0, watches_per_peer=0)


class OpenStreams:
    """How many streams each key has open, at most ``cap`` (0: no cap); only keys with a stream open are kept."""

    __slots__ = ("_open", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open(self, key: str) -> bool:
        """Count one more stream of ``key``: False (nothing counted) when it has ``cap`` open already."""
        count = self._open.get(key, 0)
        if self.cap and count >= self.cap:
            return False
        self._open[key] = count + 1
        return True

    def close(self, key: str) -> None:
        """One stream of ``key`` ended."""
        count = self._open.get(key, 0) - 1
        if count > 0:
            self._open[key] = count
        else:
            self._open.pop(key, None)


class Buckets:
    """Token buckets by key (``rate`` tokens a second, at most ``burst``), for at most ``capacity`` keys: the least
    recently used key is forgotten first."""

    __slots__ = ("_clock", "_entries", "burst", "capacity", "rate")

    def __init__(self, rate: float, burst: float, capacity: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.capacity = capacity
        self._entries: OrderedDict[str, list[float]] = OrderedDict()  # key -> [tokens, when counted]
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, key: str, now: float) -> list[float]:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self.capacity:
                self._entries.popitem(last=False)
            entry = self._entries[key] = [self.burst, now]
            return entry
        self._entries.move_to_end(key)
        tokens = entry[0] + (now - entry[1]) * self.rate
        entry[0] = tokens if tokens < self.burst else self.burst
        entry[1] = now
        return entry

    def wait(self, key: str) -> float:
        """Seconds until ``key`` has a token (0.0: it has one now); takes nothing."""
        entry = self._entry(key, self._clock())
        return 0.0 if entry[0] >= 1.0 else (1.0 - entry[0]) / self.rate

    def take(self, key: str) -> float:
        """Take a token of ``key``: 0.0 when taken, else the seconds until one is there (nothing taken)."""
        # _entry written out: this runs on every call of every RPC
        now = self._clock()
        entries = self._entries
        entry = entries.get(key)
        if entry is None:
            entry = self._entry(key, now)
        else:
            entries.move_to_end(key)
            tokens = entry[0] + (now - entry[1]) * self.rate
            entry[0] = tokens if tokens < self.burst else self.burst
            entry[1] = now
        if entry[0] >= 1.0:
            entry[0] -= 1.0
            return 0.0
        return (1.0 - entry[0]) / self.rate


_IPV6_KEYS: dict[str, str] = {}


def peer_key(peer: str) -> str:
    """The key a peer is counted by: "ipv4:1.2.3.4:5678" -> "1.2.3.4", "ipv6:[2001:db8::1]:5678" -> its /64
    ("2001:db8::/64"); anything else (a Unix socket) as it is."""
    if peer.startswith("ipv4:"):
        return peer[5 : peer.rfind(":")]
    kind, _, rest = peer.partition(":")
    if kind != "ipv6":
        return peer
    host = rest.rpartition(":")[0].strip("[]")
    key = _IPV6_KEYS.get(host)
    if key is None:
        try:
            address = ipaddress.IPv6Address(host.partition("%")[0])
            mapped = address.ipv4_mapped
            key = str(mapped) if mapped is not None else str(ipaddress.IPv6Network((address, 64), strict=False))
        except ValueError:
            key = host
        if len(_IPV6_KEYS) >= 4096:
            _IPV6_KEYS.clear()
        _IPV6_KEYS[host] = key
    return key


def _bearer(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The bearer token of the call, None when it has none (or a malformed one: the handler refuses that)."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


if TYPE_CHECKING:
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
    _Interceptor: TypeAlias = grpc.aio.ServerInterceptor[Any, Any]
else:
    Handler = grpc.RpcMethodHandler
    _Interceptor = grpc.aio.ServerInterceptor


def _no_check(context: grpc.aio.ServicerContext[Any, Any]) -> TooMuch | None:
    return None


class LimitInterceptor(_Interceptor):
    """Refuses calls over the per-peer limits (RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo) before the handler
    runs; ``is_exempt(token)`` says whether a bearer token is free of the creation limit (the organizer's)."""

    def __init__(self, limits: Limits, is_exempt: Callable[[str | None], bool]) -> None:
        self.limits = limits
        self._is_exempt = is_exempt
        self._requests = (
            Buckets(limits.requests_per_s, limits.request_burst, limits.max_peers) if limits.requests_per_s else None
        )
        per_s = limits.games_per_minute / 60.0
        burst = max(1.0, limits.games_per_minute)
        self._creations = Buckets(per_s, burst, limits.max_peers) if limits.games_per_minute else None
        self.watches = OpenStreams(limits.watches_per_peer)
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}
        self.refused = 0
        self._logged_at = -1e9

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]], details: grpc.HandlerCallDetails
    ) -> Handler:
        handler = await continuation(details)
        if handler is None:  # an unknown method: gRPC answers UNIMPLEMENTED
            return handler
        method = details.method
        # a stream (WatchGame, the health service's Watch, reflection) counts in its peer's open streams
        stream = bool(self.limits.watches_per_peer) and (handler.request_streaming or handler.response_streaming)
        health = method.startswith(_HEALTH_PREFIX)
        if health and not stream:  # never refused: a flood from one address must not fail its health checks
            return handler  # (they read no storage: a flood of them costs what a flood of refusals costs)
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        if health:  # a health Watch: no rate, only the count of open streams
            wrapped = self._wrap(handler, _no_check, watch=True)
        else:
            check = self._check_create if method == CREATE_GAME_METHOD else self._check
            wrapped = self._wrap(handler, check, watch=stream)
        if len(self._wrapped) < 1024:  # the methods registered: a few dozen at most
            self._wrapped[method] = (handler, wrapped)
        return wrapped

    # ------------------------------------------------------------------------------------------ checks

    def _check(self, context: grpc.aio.ServicerContext[Any, Any]) -> TooMuch | None:
        return self._take_request(peer_key(context.peer()))

    def _check_create(self, context: grpc.aio.ServicerContext[Any, Any]) -> TooMuch | None:
        key = peer_key(context.peer())
        return self._take_request(key) or self._take_creation(key, _bearer(context))

    def _take_request(self, key: str) -> TooMuch | None:
        if self._requests is None:
            return None
        wait = self._requests.take(key)
        if wait:
            return TooMuch("RATE_LIMITED", "too many requests from this address: slow down", retry_after_s=wait)
        return None

    def _take_creation(self, key: str, token: str | None) -> TooMuch | None:
        if self._creations is None:
            return None
        if token is not None and self._is_exempt(token):
            return None
        keys = [key]
        if token is not None:  # a token's bucket is keyed by its hash: the limiter holds no token
            keys.append("token:" + hashlib.sha256(token.encode()).hexdigest()[:32])
        wait = max(self._creations.wait(key) for key in keys)
        if wait:
            per_minute = self.limits.games_per_minute
            return TooMuch(
                "RATE_LIMITED", f"at most {per_minute:g} new games a minute from one address or token (the "
                "organizer token is exempt)",
                retry_after_s=wait,
            )  # fmt: skip
        for key in keys:
            self._creations.take(key)
        return None

    def _too_many_watches(self) -> TooMuch:
        return TooMuch("RATE_LIMITED", f"at most {self.limits.watches_per_peer} streams (WatchGame, health Watch) "
                       "open at once from one address: end one first", retry_after_s=1.0)  # fmt: skip

    async def admit(self, address: str | None, method: str, token: str | None) -> Callable[[], None] | None:
        """The same limits for a call of the HTTP port (Connect, gRPC-Web; ``address`` the client's "host:port",
        ``method`` the RPC's name): raises TooMuch when over, with the buckets and stream counts shared with the
        gRPC port. A WatchGame admitted is counted open until the returned function is called (at its end)."""
        host = (address or "unknown").rpartition(":")[0].strip("[]") if address and ":" in address else address
        key = peer_key(f"ipv6:[{host}]:0") if host and ":" in host else (host or "unknown")
        refusal = self._take_request(key)
        if refusal is None and method == "CreateGame":
            refusal = self._take_creation(key, token)
        if refusal is None and method == "WatchGame" and self.limits.watches_per_peer:
            if not self.watches.open(key):
                refusal = self._too_many_watches()
            else:
                return lambda: self.watches.close(key)
        if refusal is not None:
            self.refused += 1
            raise refusal
        return None

    async def _refuse(self, context: grpc.aio.ServicerContext[Any, Any], refusal: TooMuch) -> NoReturn:
        self.refused += 1
        now = time.monotonic()
        if now - self._logged_at >= 10.0:  # one line per 10 s at most: a flood must not flood the log
            self._logged_at = now
            log.warning("rate limit: %d calls refused so far (the latest from %s)", self.refused, context.peer())
        status = errors.rpc_status(refusal)
        await context.abort(status.code, status.details, status.trailing_metadata)

    # ------------------------------------------------------------------------------------------ wrapping

    def _wrap(self, handler: Handler, check: Callable[[Any], TooMuch | None], *, watch: bool = False) -> Handler:
        """``handler`` with ``check`` run first on every call, whichever of the four kinds of RPC it is; ``watch``:
        a stream counted in its peer's open streams while it runs (refused over the cap)."""
        refuse = self._refuse
        watches, too_many = self.watches, self._too_many_watches
        if handler.request_streaming:
            inner = handler.stream_stream if handler.response_streaming else handler.stream_unary
        else:
            inner = handler.unary_stream if handler.response_streaming else handler.unary_unary
        assert inner is not None
        target: Any = inner  # one of four handler types, each called (request or iterator, context)

        behavior: Callable[..., Any]
        if not (inspect.isasyncgenfunction(inner) or inspect.iscoroutinefunction(inner)):
            return handler  # a synchronous handler (none is registered): left as it is
        if inspect.isasyncgenfunction(inner):

            async def streamed(request: Any, context: Any) -> Any:
                refusal = check(context)
                if refusal is not None:
                    await refuse(context, refusal)
                key = peer_key(context.peer()) if watch else ""
                if watch and not watches.open(key):
                    await refuse(context, too_many())
                try:
                    async with contextlib.aclosing(target(request, context)) as responses:  # closed with this one
                        async for response in responses:
                            yield response
                finally:
                    if watch:
                        watches.close(key)

            behavior = streamed
        else:

            async def called(request: Any, context: Any) -> Any:
                refusal = check(context)
                if refusal is not None:
                    await refuse(context, refusal)
                if not watch:
                    return await target(request, context)
                key = peer_key(context.peer())  # a stream written with context.write (the health Watch)
                if not watches.open(key):
                    await refuse(context, too_many())
                try:
                    return await target(request, context)
                finally:
                    watches.close(key)

            behavior = called
        return wire.with_behavior(handler, behavior)
