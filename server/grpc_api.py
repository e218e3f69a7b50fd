"""The gRPC transport: a thin servicer around ``server.service.Referee``, and the server it runs in.

Each handler reads the bearer token, decodes with ``server.codec``, calls the referee, encodes the result. Any
exception becomes a rich status through ``server.errors`` (never UNKNOWN).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health, health_pb2
from grpc_health.v1._async import HealthServicer  # what grpc_health.v1.health.aio re-exports
from grpc_reflection.v1alpha import reflection, reflection_pb2
from grpc_reflection.v1alpha._async import ReflectionServicer  # what reflection.aio re-exports

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server import codec, deadlines, errors, wire
from server.errors import BadRequest
from server.limits import LimitInterceptor, Limits
from server.metrics import Metrics, ObserveInterceptor
from server.service import Referee
from server.settings import DEFAULTS
from server.storage_errors import StoreBusy, StoreUnavailable

_REFEREE_SERVICE = rpb.DESCRIPTOR.services_by_name["RefereeService"]
_REFLECTION_SERVICE = reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"]
SERVICE_NAME = _REFEREE_SERVICE.full_name
# What reflection serves besides the services' own files: the types of the error details (google.rpc.Status,
# google.rpc.ErrorInfo, ...), so that a tool resolving them by symbol through reflection shows the reason as JSON.
ERROR_DETAIL_FILES = (error_details_pb2.DESCRIPTOR.name, status_pb2.DESCRIPTOR.name)
MAX_MESSAGE_BYTES = DEFAULTS.network.max_message_bytes

log = logging.getLogger("rummy_referee")

T = TypeVar("T")


#: Seconds a client connection lives before the server asks it (GOAWAY) to reconnect: long-lived bot connections
#: then spread over referees added since (behind round_robin, a DNS name or a TCP load balancer). gRPC adds +-10%
#: jitter. Calls in flight then get MAX_CONNECTION_AGE_GRACE_S more; a watch stream cut then is resumed by the SDK.
MAX_CONNECTION_AGE_S = DEFAULTS.network.max_connection_age_s
MAX_CONNECTION_AGE_GRACE_S = DEFAULTS.network.max_connection_age_grace_s


def server_options(
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_connection_age_s: float | None = None,
    max_connection_age_grace_s: float = MAX_CONNECTION_AGE_GRACE_S,
) -> list[tuple[str, int]]:
    """Channel arguments of the referee's server: small messages, keepalive, no port sharing, and connections
    that end after ``max_connection_age_s`` (plus ``max_connection_age_grace_s`` for the calls in flight; None
    or 0: connections live as long as the client keeps them)."""
    age = [
        ("grpc.max_connection_age_ms", max(1, round(max_connection_age_s * 1000))),
        ("grpc.max_connection_age_grace_ms", max(0, round(max_connection_age_grace_s * 1000))),
    ] if max_connection_age_s else []  # fmt: skip
    return age + [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 30_000),  # ping idle clients every 30 s ...
        ("grpc.keepalive_timeout_ms", 10_000),  # ... and drop them after 10 s without an answer
        ("grpc.keepalive_permit_without_calls", 1),  # WatchGame clients may sit idle between events
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),  # accept client pings every 10 s
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.so_reuseport", 0),  # a second server on a taken port must fail, not share it
    ]


def _header(context: grpc.aio.ServicerContext[object, object]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return None


def _presented(context: grpc.aio.ServicerContext[object, object]) -> str | None:
    """``codec.presented_token`` of the call's ``authorization`` metadata."""
    return codec.presented_token(_header(context))


def _bearer(context: grpc.aio.ServicerContext[object, object], *, required: bool) -> str | None:
    """``codec.bearer_token`` of the call's ``authorization`` metadata."""
    return codec.bearer_token(_header(context), required=required)


def _version(request: Any, name: str) -> int | None:
    return codec.version_from_proto(getattr(request, name), name) if request.HasField(name) else None


async def _fail(context: grpc.aio.ServicerContext[object, object], exc: Exception) -> NoReturn:
    status = errors.rpc_status(exc)  # abort_with_status, spelled with the typed abort()
    await context.abort(status.code, status.details, status.trailing_metadata)


async def _guard(context: grpc.aio.ServicerContext[object, object], work: Awaitable[T]) -> T:
    deadlines.set_from(context)  # every storage wait of this request ends by the call's deadline
    try:
        return await work
    except Exception as exc:
        await _fail(context, exc)


Context = grpc.aio.ServicerContext[object, object]


class RefereeServicer(referee_pb2_grpc.RefereeServiceServicer):
    """rummy.v1.RefereeService over a Referee."""

    def __init__(self, referee: Referee, metrics: Metrics | None = None) -> None:
        self.referee = referee
        self.metrics = metrics

    async def CreateGame(self, request: rpb.CreateGameRequest, context: Context) -> rpb.CreateGameResponse:
        return await _guard(context, self._create_game(request, context))

    async def _create_game(self, request: rpb.CreateGameRequest, context: Context) -> rpb.CreateGameResponse:
        token = codec.create_token(_presented(context), request)
        created = await self.referee.create_game(codec.game_spec_from_proto(request), token)
        return codec.create_response_to_proto(created)

    async def JoinGame(self, request: rpb.JoinGameRequest, context: Context) -> rpb.JoinGameResponse:
        return await _guard(context, self._join_game(request))

    async def _join_game(self, request: rpb.JoinGameRequest) -> rpb.JoinGameResponse:
        seat = request.seat if request.HasField("seat") else None
        taken, token = await self.referee.join_game(request.game_id, seat, request.display_name)
        return rpb.JoinGameResponse(seat=taken, token=token)

    async def GetGame(self, request: rpb.GetGameRequest, context: Context) -> rpb.GetGameResponse:
        return await _guard(context, self._get_game(request, context))

    async def _get_game(self, request: rpb.GetGameRequest, context: Context) -> rpb.GetGameResponse:
        got = await self.referee.get_game(request.game_id, _bearer(context, required=True))
        return codec.get_response_to_proto(got)

    async def SubmitMove(self, request: rpb.SubmitMoveRequest, context: Context) -> rpb.SubmitMoveResponse:
        # The hot path: _guard's try/except written out, one coroutine fewer per move.
        deadlines.set_from(context)
        try:
            token = _bearer(context, required=True)
            if not request.HasField("move"):
                raise BadRequest("MISSING_MOVE", "the request has no move")
            result = await self.referee.submit_move(
                request.game_id,
                token,
                codec.move_from_proto(request.move),
                _version(request, "expected_version"),
                request.request_id,
            )
            response = codec.move_response_to_proto(result)
        except Exception as exc:
            if self.metrics is not None:
                self.metrics.move_refused(errors.reason_code(exc))
            await _fail(context, exc)
        if self.metrics is not None:
            self.metrics.move_accepted()
        return response

    async def Resign(self, request: rpb.ResignRequest, context: Context) -> rpb.ResignResponse:
        return await _guard(context, self._resign(request, context))

    async def _resign(self, request: rpb.ResignRequest, context: Context) -> rpb.ResignResponse:
        result = await self.referee.resign(
            request.game_id,
            _bearer(context, required=True),
            _version(request, "expected_version"),
            request.request_id,
        )
        return codec.resign_response_to_proto(result)

    async def ValidateMove(self, request: rpb.ValidateMoveRequest, context: Context) -> rpb.ValidateMoveResponse:
        return await _guard(context, self._validate_move(request, context))

    async def _validate_move(self, request: rpb.ValidateMoveRequest, context: Context) -> rpb.ValidateMoveResponse:
        token = _bearer(context, required=True)
        if not request.HasField("move"):
            raise BadRequest("MISSING_MOVE", "the request has no move")
        version = await self.referee.validate_move(
            request.game_id,
            token,
            codec.move_from_proto(request.move),
            _version(request, "expected_version"),
        )
        return rpb.ValidateMoveResponse(version=version)

    # WatchGame takes no deadline into server.deadlines: the game's feed task, which outlives this stream and
    # serves every watcher of the game, would inherit it. Its storage waits have the storage timeout.
    async def WatchGame(self, request: rpb.WatchGameRequest, context: Context) -> AsyncIterator[rpb.WatchGameResponse]:
        async with self.referee.hub.stream():
            try:
                token = _bearer(context, required=True)
                after = _version(request, "after_version")
                index = request.after_index if request.HasField("after_index") else None
                async for update in self.referee.watch(request.game_id, token, after, index):
                    yield codec.watch_response_to_proto(update)
            except Exception as exc:
                await _fail(context, exc)

    async def GetReplay(self, request: rpb.GetReplayRequest, context: Context) -> rpb.GetReplayResponse:
        return await _guard(context, self._get_replay(request, context))

    async def _get_replay(self, request: rpb.GetReplayRequest, context: Context) -> rpb.GetReplayResponse:
        replay = await self.referee.replay(
            request.game_id,
            _presented(context),  # "" for a malformed header: no token where none is needed, BAD_TOKEN elsewhere
            _version(request, "after_version"),
            request.max_events,
        )
        return codec.replay_response_to_proto(replay)

    async def AnalyzeHand(self, request: rpb.AnalyzeHandRequest, context: Context) -> rpb.AnalyzeHandResponse:
        return await _guard(context, self._analyze_hand(request))

    async def _analyze_hand(self, request: rpb.AnalyzeHandRequest) -> rpb.AnalyzeHandResponse:
        analysis = self.referee.analyze(
            codec.cards_from_proto(request.cards), request.profile, codec.options_from_proto(request.options)
        )
        return codec.analysis_to_proto(analysis)

    async def Ping(self, request: rpb.PingRequest, context: Context) -> rpb.PingResponse:
        return rpb.PingResponse()


def create_server(
    address: str,
    referee: Referee,
    *,
    health_servicer: HealthServicer | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    limits: Limits | None = None,
    metrics: Metrics | None = None,
    log_context: bool = False,
    tls: grpc.ServerCredentials | None = None,
    limiter: LimitInterceptor | None = None,
    max_connection_age_s: float | None = None,
    max_connection_age_grace_s: float = MAX_CONNECTION_AGE_GRACE_S,
) -> tuple[grpc.aio.Server, int]:
    """A grpc.aio server (not started) serving the referee, health checking and reflection on ``address``
    ("host:port"; port 0 picks a free one), under the per-peer ``limits`` (default: ``Limits()``, server.limits).
    ``metrics``: count and time every call into these metrics (server.metrics); ``log_context``: give the log
    lines of each call its method, game id and request id (server.logs; implied by ``metrics``); ``tls``: serve
    over TLS with these credentials (server.tls), else plaintext; ``limiter``: the limits' interceptor to use
    (in place of one made from ``limits``); ``max_connection_age_s``: clients reconnect after that long (GOAWAY;
    ``server_options``; None: never asked). Returns the server and the port bound."""
    limits = Limits() if limits is None else limits
    interceptors: list[grpc.aio.ServerInterceptor[Any, Any]] = []
    if metrics is not None or log_context:  # outermost: it also sees the calls the limiter refuses
        interceptors.append(ObserveInterceptor(metrics))
    if metrics is not None:
        metrics.instrument(referee)
    if limiter is not None:  # given: shared with another transport (the HTTP port), whose calls count too
        interceptors.append(limiter)
    elif limits.active:
        interceptors.append(LimitInterceptor(limits, referee.is_organizer))
    options = server_options(max_message_bytes, max_connection_age_s, max_connection_age_grace_s)
    wire.quiet_metadata_decoding()  # grpc logs a traceback (and the bytes) per metadata value that is not UTF-8
    server = grpc.aio.server(options=options, interceptors=interceptors)
    # wire.add_service in place of the generated add_*_to_server: undecodable request bodies become
    # INVALID_ARGUMENT MALFORMED_REQUEST (not UNKNOWN and a traceback), responses are deterministic bytes
    wire.add_service(server, _REFEREE_SERVICE, RefereeServicer(referee, metrics))
    health_servicer = health_servicer or HealthServicer()
    wire.add_service(server, health_pb2.DESCRIPTOR.services_by_name["Health"], health_servicer)
    names = (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
    wire.add_service(server, _REFLECTION_SERVICE, ReflectionServicer(names))
    port = server.add_secure_port(address, tls) if tls is not None else server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    return server, port


class RefereeHealth(HealthServicer):  # type: ignore[misc]
    """grpc's asyncio health servicer, with List: every service name and its status (a cluster's shards: what
    ``rummy-referee health`` prints)."""

    async def List(self, request: health_pb2.HealthListRequest, context: object) -> health_pb2.HealthListResponse:
        statuses = {name: health_pb2.HealthCheckResponse(status=status) for name, status in self._server_status.items()}
        return health_pb2.HealthListResponse(statuses=statuses)


async def set_serving(health_servicer: HealthServicer, serving: bool) -> None:
    """Report the referee (and the server as a whole, "") as SERVING or NOT_SERVING."""
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, status)


#: How often the storage is pinged, and how long a ping may take: a Redis that stops answering (unreachable, or
#: frozen: SIGSTOP, a stalled disk, a long script) is NOT_SERVING within interval + timeout (1.5 s), and SERVING
#: again within the interval (plus one round trip) of answering.
HEALTH_INTERVAL_S = DEFAULTS.network.health_interval_s
HEALTH_PING_TIMEOUT_S = DEFAULTS.network.health_ping_timeout_s


async def watch_storage(
    referee: Referee,
    health_servicer: HealthServicer,
    interval: float = HEALTH_INTERVAL_S,
    ping_timeout: float = HEALTH_PING_TIMEOUT_S,
) -> None:
    """Forever: NOT_SERVING while Redis does not answer a PING within ``ping_timeout`` (or refuses it), SERVING when
    it does (the referee, "" and STORAGE_SERVICE alike). On a Redis Cluster, each shard apart: ``watch_shards``."""
    if referee.store.sharded_events:  # a Redis Cluster
        await watch_shards(referee, health_servicer, interval, ping_timeout)
        return
    serving: bool | None = None
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        try:
            await referee.store.ping(ping_timeout)
            ok = True
        except StoreBusy:  # Redis answers; this process is only busy with it
            ok = True
        except StoreUnavailable:
            ok = False
        except Exception as exc:  # an answer the store does not know (e.g. NOPERM): not serving, never health's end
            if serving is not False:
                log.error("storage health check failed", exc_info=exc)
            ok = False
        if ok != serving:
            if ok:  # the normal start, or good news
                log.info("storage %s: SERVING", "reachable" if serving is None else "answers again")
            else:
                log.warning("storage unresponsive: NOT_SERVING")
            serving = ok
            await set_serving(health_servicer, ok)
            await health_servicer.set(STORAGE_SERVICE, _status(ok))
        await asyncio.sleep(max(0.0, interval - (loop.time() - started)))  # a ping that timed out took long enough


#: The health service name that is SERVING only while every shard of the storage can serve its games.
STORAGE_SERVICE = f"{SERVICE_NAME}/storage"
#: The prefix of one shard's health service name: ``rummy.v1.Referee/shard/0-5460`` (its slot ranges).
SHARD_SERVICE_PREFIX = f"{SERVICE_NAME}/shard/"


def _status(ok: bool) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    return health_pb2.HealthCheckResponse.SERVING if ok else health_pb2.HealthCheckResponse.NOT_SERVING


async def watch_shards(
    referee: Referee,
    health_servicer: HealthServicer,
    interval: float = HEALTH_INTERVAL_S,
    ping_timeout: float = HEALTH_PING_TIMEOUT_S,
) -> None:
    """Forever, on a Redis Cluster: every ``interval``, each shard probed (``GameStore.shard_health``). A shard
    whose master does not answer within ``ping_timeout`` is NOT_SERVING under ``rummy.v1.Referee/shard/<slots>``,
    and so is STORAGE_SERVICE (degraded: some games cannot move); the referee ("" and ``rummy.v1.Referee``) stays
    SERVING while any shard serves (every referee sees the same cluster: taking them all out of a load balancer
    would stop the healthy shards' games too), NOT_SERVING when none does. A shard is SERVING again once it has
    a master that answers (its replica promoted, the slot map refreshed)."""
    loop = asyncio.get_running_loop()
    known: dict[str, bool] = {}
    overall: tuple[bool, bool] | None = None
    failing = False
    while True:
        started = loop.time()
        try:
            shards = await referee.store.shard_health(ping_timeout) or {}
            failing = False
        except Exception as exc:  # an answer the store does not know: no shard known to serve, never health's end
            if not failing:
                log.error("storage health check failed", exc_info=exc)
            failing, shards = True, {}
        for name, ok in shards.items():
            if known.get(name) != ok:
                if ok:
                    log.info("storage shard %s: SERVING", name)
                else:
                    log.warning("storage shard %s cannot serve its games: NOT_SERVING", name)
                await health_servicer.set(SHARD_SERVICE_PREFIX + name, _status(ok))
        for name in set(known) - set(shards):  # no longer a shard (the slots were moved)
            await health_servicer.set(SHARD_SERVICE_PREFIX + name, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
        known = shards
        now = (any(shards.values()), bool(shards) and all(shards.values()))
        if now != overall:
            if overall is None or now[0] != overall[0]:
                await set_serving(health_servicer, now[0])
            down = sorted(name for name, ok in shards.items() if not ok)
            if now[1]:
                log.info("storage: every shard serves: SERVING")
            else:
                log.warning("storage degraded: shard(s) %s cannot serve their games", ", ".join(down) or "all")
            await health_servicer.set(STORAGE_SERVICE, _status(now[1]))
            overall = now
        await asyncio.sleep(max(0.0, interval - (loop.time() - started)))


async def shutdown(
    server: grpc.aio.Server,
    referee: Referee,
    health_servicer: HealthServicer,
    grace: float,
    *,
    also: Sequence[Callable[[], Awaitable[None]]] = (),
) -> None:
    """Graceful stop: NOT_SERVING first, end the watch streams (clients resume elsewhere), let the unary calls
    in flight finish within ``grace`` seconds (on the gRPC server and on the other transports, whose stops are
    ``also``: the HTTP port), then close the storage connections."""
    await health_servicer.enter_graceful_shutdown()
    await referee.hub.close(drain_s=min(grace, 5.0))
    await asyncio.gather(server.stop(grace), *(stop() for stop in also))
    await referee.store.close()
