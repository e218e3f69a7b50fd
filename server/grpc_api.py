"""The gRPC transport: a thin servicer around ``server.service.Referee``, and the server it runs in.

Each handler reads the bearer token, decodes with ``server.codec``, calls the referee, encodes the result. Any
exception becomes a rich status through ``server.errors`` (never UNKNOWN).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import NoReturn, TypeVar

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer  # what grpc_health.v1.health.aio re-exports
from grpc_reflection.v1alpha import reflection

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server import codec, errors
from server.errors import BadRequest, Unauthenticated
from server.service import Referee
from server.store import StoreUnavailable

SERVICE_NAME = rpb.DESCRIPTOR.services_by_name["RefereeService"].full_name
# What reflection serves besides the services' own files: the types of the error details (google.rpc.Status,
# google.rpc.ErrorInfo, ...), so that a tool resolving them by symbol through reflection shows the reason as JSON.
ERROR_DETAIL_FILES = (error_details_pb2.DESCRIPTOR.name, status_pb2.DESCRIPTOR.name)
MAX_MESSAGE_BYTES = 256 * 1024

log = logging.getLogger("rummy_referee")

T = TypeVar("T")


def server_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    """Channel arguments of the referee's server: small messages, keepalive, no port sharing."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 30_000),  # ping idle clients every 30 s ...
        ("grpc.keepalive_timeout_ms", 10_000),  # ... and drop them after 10 s without an answer
        ("grpc.keepalive_permit_without_calls", 1),  # WatchGame clients may sit idle between events
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),  # accept client pings every 10 s
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.so_reuseport", 0),  # a second server on a taken port must fail, not share it
    ]


def _bearer(context: grpc.aio.ServicerContext[object, object], *, required: bool) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("BAD_TOKEN", "authorization must be 'Bearer <token>'")
            return token.strip()
    if required:
        raise Unauthenticated("MISSING_TOKEN", "this call needs 'authorization: Bearer <token>' metadata")
    return None


async def _fail(context: grpc.aio.ServicerContext[object, object], exc: Exception) -> NoReturn:
    status = errors.rpc_status(exc)  # abort_with_status, spelled with the typed abort()
    await context.abort(status.code, status.details, status.trailing_metadata)


async def _guard(context: grpc.aio.ServicerContext[object, object], work: Awaitable[T]) -> T:
    try:
        return await work
    except Exception as exc:
        await _fail(context, exc)


Context = grpc.aio.ServicerContext[object, object]


class RefereeServicer(referee_pb2_grpc.RefereeServiceServicer):
    """rummy.v1.RefereeService over a Referee."""

    def __init__(self, referee: Referee) -> None:
        self.referee = referee

    async def CreateGame(self, request: rpb.CreateGameRequest, context: Context) -> rpb.CreateGameResponse:
        return await _guard(context, self._create_game(request, context))

    async def _create_game(self, request: rpb.CreateGameRequest, context: Context) -> rpb.CreateGameResponse:
        token = _bearer(context, required=False)
        created = await self.referee.create_game(codec.game_spec_from_proto(request), token)
        return rpb.CreateGameResponse(
            game_id=created["game_id"],
            seat_tokens=[rpb.SeatToken(seat=s, token=t) for s, t in sorted(created["tokens"].items())],
            spectator_token=created["spectator_token"],
            settings=codec.settings_to_proto(created["settings"]),
            version=created["version"],
        )

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
        return rpb.GetGameResponse(
            view=codec.view_to_proto(got["view"]), settings=codec.settings_to_proto(got["settings"])
        )

    async def SubmitMove(self, request: rpb.SubmitMoveRequest, context: Context) -> rpb.SubmitMoveResponse:
        # The hot path: _guard's try/except written out, one coroutine fewer per move.
        try:
            token = _bearer(context, required=True)
            if not request.HasField("move"):
                raise BadRequest("MISSING_MOVE", "the request has no move")
            result = await self.referee.submit_move(
                request.game_id,
                token,
                codec.move_from_proto(request.move),
                request.expected_version if request.HasField("expected_version") else None,
                request.request_id,
            )
            return codec.move_response_to_proto(result)
        except Exception as exc:
            await _fail(context, exc)

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
            request.expected_version if request.HasField("expected_version") else None,
        )
        return rpb.ValidateMoveResponse(version=version)

    async def WatchGame(self, request: rpb.WatchGameRequest, context: Context) -> AsyncIterator[rpb.WatchGameResponse]:
        async with self.referee.hub.stream():
            try:
                token = _bearer(context, required=True)
                after = request.after_version if request.HasField("after_version") else None
                index = request.after_index if request.HasField("after_index") else None
                async for update in self.referee.watch(request.game_id, token, after, index):
                    if "snapshot" in update:
                        yield rpb.WatchGameResponse(snapshot=codec.view_to_proto(update["snapshot"]))
                    else:
                        yield rpb.WatchGameResponse(event=codec.event_to_proto(update["event"]))
            except Exception as exc:
                await _fail(context, exc)

    async def GetReplay(self, request: rpb.GetReplayRequest, context: Context) -> rpb.GetReplayResponse:
        return await _guard(context, self._get_replay(request, context))

    async def _get_replay(self, request: rpb.GetReplayRequest, context: Context) -> rpb.GetReplayResponse:
        replay = await self.referee.replay(
            request.game_id,
            _bearer(context, required=False),
            request.after_version if request.HasField("after_version") else None,
            request.max_events,
        )
        response = rpb.GetReplayResponse(
            settings=codec.settings_to_proto(replay["settings"]),
            initial=codec.view_to_proto(replay["initial"]),
            events=[codec.event_to_proto(e) for e in replay["events"]],
            current=codec.view_to_proto(replay["current"]),
        )
        if replay["next_after_version"] is not None:
            response.next_after_version = replay["next_after_version"]
        return response

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
) -> tuple[grpc.aio.Server, int]:
    """A grpc.aio server (not started) serving the referee, health checking and reflection on ``address``
    ("host:port"; port 0 picks a free one). Returns the server and the port bound."""
    server = grpc.aio.server(options=server_options(max_message_bytes))
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(RefereeServicer(referee), server)
    health_servicer = health_servicer or HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    return server, port


async def set_serving(health_servicer: HealthServicer, serving: bool) -> None:
    """Report the referee (and the server as a whole, "") as SERVING or NOT_SERVING."""
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, status)


async def watch_storage(referee: Referee, health_servicer: HealthServicer, interval: float = 2.0) -> None:
    """Forever: NOT_SERVING while Redis does not answer, SERVING when it does."""
    serving: bool | None = None
    while True:
        try:
            await referee.store.ping()
            ok = True
        except StoreUnavailable:
            ok = False
        if ok != serving:
            if ok:  # the normal start, or good news
                log.info("storage %s: SERVING", "reachable" if serving is None else "reachable again")
            else:
                log.warning("storage unreachable: NOT_SERVING")
            serving = ok
            await set_serving(health_servicer, ok)
        await asyncio.sleep(interval)


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
