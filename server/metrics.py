"""What an operator watches: the referee's Prometheus metrics, in one registry, and their exposition.

Series (all of this process, except ``rummy_open_games``):

- ``rummy_rpc_handled_total{method, code}``: calls answered on either port (the HTTP port's counted by
  server.connect_api.Observe), by method ("rummy.v1.RefereeService/SubmitMove")
  and gRPC status code name ("OK", "FAILED_PRECONDITION", ...); ``rummy_rpc_duration_seconds{method}``: their
  latency (histogram); ``rummy_rpc_streams_active{method}``: server streams open now (WatchGame: live watches).
- ``rummy_moves_total{outcome, reason}``: SubmitMove answers, ``outcome`` "accepted" (reason "") or "refused"
  (reason: the ErrorInfo reason, e.g. NOT_YOUR_TURN); an idempotent resend answered from its record is
  "accepted" and also counted in ``rummy_move_replays_total``.
- ``rummy_commit_conflicts_total``: commits that found the game at another version (another move was first);
  ``rummy_move_retries_total``: moves loaded again after such a conflict (or a stale cached state).
- ``rummy_storage_duration_seconds{op}`` (histogram) and ``rummy_storage_errors_total{op}``: each GameStore operation
  ("load", "commit", "create", ...; the watch feed's blocking read excluded) and those that failed.
- ``rummy_games_created_total`` / ``rummy_games_finished_total``: games created / matches ended by this process;
  ``rummy_open_games``: unfinished games registered in Redis for all the referees sharing it (the
  ``--max-open-games`` registry, refreshed every few seconds by ``watch_open_games``; absent without a cap).
- ``rummy_bot_seats_playing``: house-bot seats this process's bot host plays now;
  ``rummy_bot_failures_total{kind}``: seats whose play failed, ``kind`` "timeout" (the bot's move took longer
  than the host's move timeout) or "error" (the bot raised, the referee refused its move or stayed away);
  ``rummy_bot_seats_finished_total``: seats played to the end of their match (absent with ``--no-bots``).

Cost per call: the transport wrapper (``ObserveInterceptor``, built once per method like server.limits'),
two clock reads, one histogram observation and one counter increment from children cached by method and code;
the service's own tallies are plain integer additions (``server.service.Tallies``) read only when scraped.

``exposition(accept)`` renders the registry for any HTTP server (``/metrics``: the body and its content type);
``start_metrics_server`` serves it on a port of its own, in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, start_http_server
from prometheus_client.registry import Collector

from server import wire
from server.logs import call_context

if TYPE_CHECKING:
    from server.bot_host import BotHost
    from server.ports import GameStorage
    from server.service import Referee

    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
    _Interceptor: TypeAlias = grpc.aio.ServerInterceptor[Any, Any]
else:
    Handler = grpc.RpcMethodHandler
    _Interceptor = grpc.aio.ServerInterceptor

log = logging.getLogger("rummy_referee")

# seconds: an empty call is ~0.3 ms, a move ~1 ms on a quiet machine; a blocked Redis is cut at 5 s
RPC_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LATENESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)
STORAGE_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
# GameStore operations timed; wait_events (the watch feed's XREAD BLOCK) waits by design and is left out
# (those a store lacks are skipped: the list names the operations of every GameStore so far)
STORE_OPS = ("load", "commit", "create", "join", "set_config", "events_since", "last_position", "start_view",
             "exists", "ttl", "ping", "idem_version", "log_entries")  # fmt: skip


class Metrics:
    """The referee's metrics, in a registry of their own (several servers in one process do not mix)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.rpc_handled = Counter("rummy_rpc_handled", "RPCs answered, by method and gRPC status code",
                                   ("method", "code"), registry=r)  # fmt: skip
        self.rpc_seconds = Histogram("rummy_rpc_duration_seconds", "RPC latency in the referee, by method",
                                     ("method",), buckets=RPC_BUCKETS, registry=r)  # fmt: skip
        self.streams = Gauge("rummy_rpc_streams_active", "server streams open now (WatchGame: live watches)",
                             ("method",), registry=r)  # fmt: skip
        self.moves = Counter("rummy_moves", "SubmitMove answers, by outcome (accepted, refused) and reason code",
                             ("outcome", "reason"), registry=r)  # fmt: skip
        self.storage_seconds = Histogram("rummy_storage_duration_seconds", "Redis operations' latency, by operation",
                                         ("op",), buckets=STORAGE_BUCKETS, registry=r)  # fmt: skip
        self.storage_errors = Counter("rummy_storage_errors", "Redis operations failed, by operation", ("op",),
                                      registry=r)  # fmt: skip
        self.open_games = Gauge("rummy_open_games", "unfinished games registered in Redis (all referees sharing it)",
                                registry=r)  # fmt: skip
        self.timeouts = Counter("rummy_timeouts", "timeouts fired by this process, by policy",
                                ("policy",), registry=r)  # fmt: skip
        self.timeout_lateness = Histogram("rummy_timeout_lateness_seconds", "how late timeouts fired: the commit's "
                                          "time minus the deadline, both in Redis's clock", ("policy",),
                                          buckets=LATENESS_BUCKETS, registry=r)  # fmt: skip
        self._accepted = self.moves.labels("accepted", "")
        self._refused: dict[str, Any] = {}

    def move_accepted(self) -> None:
        """One SubmitMove answered OK."""
        self._accepted.inc()

    def move_refused(self, reason: str) -> None:
        """One SubmitMove refused with ``reason``."""
        child = self._refused.get(reason)
        if child is None:
            child = self._refused[reason] = self.moves.labels("refused", reason)
        child.inc()

    def timeout_fired(self, policy: str, lateness_s: float) -> None:
        """One timeout fired under ``policy`` (its forfeit or automatic move), ``lateness_s`` after its deadline."""
        self.timeouts.labels(policy).inc()
        self.timeout_lateness.labels(policy).observe(lateness_s)

    def instrument(self, referee: Referee) -> None:
        """Watch ``referee``: its tallies (scraped), its timeouts, and the latency and failures of its store's
        operations."""
        self.registry.register(_TallyCollector(referee))
        referee.on_timeout = self.timeout_fired
        instrument_store(referee.store, self)

    def watch_bot_host(self, host: BotHost) -> None:
        """Report the house-bot seats ``host`` (this process's bot host) plays, and their failures (scraped)."""
        self.registry.register(_BotCollector(host))

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """The ``/metrics`` body in the format ``accept`` (an Accept header) asks for, and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


class _TallyCollector(Collector):
    """The service's plain integer tallies, read when scraped."""

    def __init__(self, referee: Referee) -> None:
        self._referee = referee

    def collect(self) -> Iterator[Metric]:
        t = self._referee.tallies
        for name, doc, value in (
            ("rummy_commit_conflicts", "commits that found the game at another version", t.conflicts),
            ("rummy_move_retries", "moves loaded and applied again after a conflict or a stale cache", t.retries),
            ("rummy_move_replays", "moves answered from their idempotency record (a resend)", t.replays),
            ("rummy_games_created", "games created by this process", t.games_created),
            ("rummy_games_finished", "matches ended by a move served by this process", t.games_finished),
        ):
            yield CounterMetricFamily(name, doc, value=value)


class _BotCollector(Collector):
    """The bot host's seats and failures, read when scraped."""

    def __init__(self, host: BotHost) -> None:
        self._host = host

    def collect(self) -> Iterator[Metric]:
        host = self._host
        yield GaugeMetricFamily("rummy_bot_seats_playing", "house-bot seats played by this process now",
                                value=len(host.playing))  # fmt: skip
        yield CounterMetricFamily("rummy_bot_seats_finished", "house-bot seats played to the end of their match",
                                  value=host.finished)  # fmt: skip
        failures = CounterMetricFamily("rummy_bot_failures", "house-bot seats whose play failed (tried again later), "
                                       "by kind: timeout (the bot took longer than its move timeout) or error",
                                       labels=("kind",))  # fmt: skip
        failures.add_metric(("timeout",), host.timeouts)
        failures.add_metric(("error",), host.failures - host.timeouts)
        yield failures


def instrument_store(store: GameStorage, metrics: Metrics) -> None:
    """Time every operation of ``store`` named in STORE_OPS that it has, and count those that raise.

    The store's own code is left as it is: its bound methods are wrapped on this instance (whoever holds the
    store, the referee and its event hub, calls the wrapped ones)."""
    for op in STORE_OPS:
        method = getattr(store, op, None)
        if method is not None and inspect.iscoroutinefunction(method):
            setattr(store, op, _timed(method, metrics.storage_seconds.labels(op), metrics.storage_errors.labels(op)))


def _timed(method: Callable[..., Awaitable[Any]], seconds: Any, errors: Any) -> Callable[..., Awaitable[Any]]:
    clock = time.perf_counter
    observe = seconds.observe

    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return await method(*args, **kwargs)
        except Exception:
            errors.inc()
            raise
        finally:
            observe(clock() - start)

    return timed


async def watch_open_games(referee: Referee, metrics: Metrics, interval: float = 5.0) -> None:
    """Forever: ``rummy_open_games`` = the registry's count, every ``interval`` seconds (nothing without a cap)."""
    if referee.open_games is None:
        return
    while True:
        with contextlib.suppress(Exception):  # Redis unreachable: the last value stays (health says the rest)
            metrics.open_games.set(await referee.open_games.count())
        await asyncio.sleep(interval)


def start_metrics_server(metrics: Metrics, host: str, port: int) -> tuple[Any, int]:
    """Serve ``/metrics`` on ``host:port`` (0: a free port) in a daemon thread: (the HTTP server, the port bound).
    Stop it with ``server.shutdown()``."""
    server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    return server, int(server.server_port)


# ---------------------------------------------------------------------------------------------- transport


def _code_name(context: grpc.aio.ServicerContext[Any, Any], failed: BaseException | None) -> str:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    if code is not None and code != 0:
        with contextlib.suppress(ValueError):
            return grpc.StatusCode[str(code)].name if isinstance(code, str) else _BY_VALUE[int(code)]
    if isinstance(failed, asyncio.CancelledError | GeneratorExit):
        # GeneratorExit: grpc.aio closed a stream's generator at its yield, its client gone mid-send
        return "CANCELLED"
    if failed is not None and not isinstance(failed, grpc.aio.AbortError):
        return "UNKNOWN"  # an exception escaped a handler: a bug, and counted as such
    return "OK"


_BY_VALUE = {code.value[0]: code.name for code in grpc.StatusCode}


class ObserveInterceptor(_Interceptor):
    """Wraps every handler once per method: counts and times its calls (when ``metrics`` is given), keeps the
    number of open server streams, and sets the log context (method, game_id, request_id) of each call."""

    def __init__(self, metrics: Metrics | None) -> None:
        self.metrics = metrics
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]], details: grpc.HandlerCallDetails
    ) -> Handler:
        handler = await continuation(details)
        if handler is None:
            return handler
        method = details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, method.lstrip("/"))
        if len(self._wrapped) < 1024:
            self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler: Handler, method: str) -> Handler:
        if handler.request_streaming:
            inner = handler.stream_stream if handler.response_streaming else handler.stream_unary
        else:
            inner = handler.unary_stream if handler.response_streaming else handler.unary_unary
        if inner is None or not (inspect.isasyncgenfunction(inner) or inspect.iscoroutinefunction(inner)):
            return handler
        target: Any = inner
        metrics = self.metrics
        clock = time.perf_counter
        name = method.rpartition("/")[2]
        handled: dict[str, Any] = {}
        observe = metrics.rpc_seconds.labels(method).observe if metrics is not None else None
        streams = metrics.streams.labels(method) if metrics is not None else None

        def count(context: Any, failed: BaseException | None, start: float) -> None:
            if metrics is None or observe is None:
                return
            code = _code_name(context, failed)
            child = handled.get(code)
            if child is None:
                child = handled[code] = metrics.rpc_handled.labels(method, code)
            child.inc()
            observe(clock() - start)

        behavior: Callable[..., Any]
        if inspect.isasyncgenfunction(inner):

            async def streamed(request: Any, context: Any) -> Any:
                start = clock()
                call_context.set((name, getattr(request, "game_id", ""), getattr(request, "request_id", "")))
                failed: BaseException | None = None
                if streams is not None:
                    streams.inc()
                try:
                    async with contextlib.aclosing(target(request, context)) as responses:
                        async for response in responses:
                            yield response
                except BaseException as exc:
                    failed = exc
                    raise
                finally:  # counted before the gauge falls: who sees it fall sees the call counted too
                    count(context, failed, start)
                    if streams is not None:
                        streams.dec()

            behavior = streamed
        else:

            async def called(request: Any, context: Any) -> Any:
                start = clock()
                call_context.set((name, getattr(request, "game_id", ""), getattr(request, "request_id", "")))
                try:
                    response = await target(request, context)
                except BaseException as exc:
                    count(context, exc, start)
                    raise
                count(context, None, start)
                return response

            behavior = called
        return wire.with_behavior(handler, behavior)
