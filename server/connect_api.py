"""The HTTP transport's RPC layer: rummy.v1.RefereeService over the Connect protocol (JSON and binary) and
gRPC-Web, with connectrpc (the official Connect implementation for Python), a second thin adapter around
``server.service.Referee`` beside ``server.grpc_api``.

Each handler reads the bearer token from the ``authorization`` header, decodes with ``server.codec``, calls the
referee and encodes the result, exactly as the gRPC servicer does; every failure goes through
``server.errors.classify`` (the one error map) and becomes a ``ConnectError`` with the same code and a
``google.rpc.ErrorInfo`` detail carrying the same reason. A body that does not decode is INVALID_ARGUMENT
``MALFORMED_REQUEST``; a request over 256 KiB is RESOURCE_EXHAUSTED, as on the gRPC port. The server it runs in
(routing, CORS, uvicorn in the gRPC server's event loop) is ``server.http_server``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
import orjson
from connectrpc._protocol import HTTPError
from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer
from protobuf import Message as PyMessage
from protobuf import message_from_json_value
from protobuf.wkt import Any as AnyDetail

from rummy_pb.rummy.v1 import game_pb, referee_connect, referee_pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec, deadlines, errors, wire
from server.errors import BadRequest
from server.grpc_api import MAX_MESSAGE_BYTES
from server.service import Referee

if TYPE_CHECKING:
    from server.metrics import Metrics

T = TypeVar("T")
M = TypeVar("M", bound=Message)

MALFORMED_REQUEST = "MALFORMED_REQUEST"
_ERROR_INFO_TYPE = "type.googleapis.com/" + error_details_pb2.ErrorInfo.DESCRIPTOR.full_name

# The one translation of gRPC status codes (server.errors' vocabulary) into Connect codes.
CONNECT_CODES: dict[grpc.StatusCode, Code] = {
    grpc.StatusCode.INVALID_ARGUMENT: Code.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION: Code.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED: Code.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED: Code.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED: Code.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND: Code.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED: Code.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAVAILABLE: Code.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: Code.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL: Code.INTERNAL,
}

# An admission check run before a request's body is read: (client "host:port" or None, method name); it raises a
# RefereeError (e.g. errors.TooMuch) to refuse. The gRPC side's limits (server/limits.py) plug in here.
# It may return a function to call when the call ends (a WatchGame counted open until then).
Admit = Callable[[str | None, str, str | None], Awaitable[Callable[[], None] | None]]  # (address, method, token)


def connect_error(exc: BaseException) -> ConnectError:
    """``exc`` as a ConnectError: the status and reason of ``errors.classify``, the reason in an ErrorInfo."""
    if isinstance(exc, ConnectError):
        return exc
    status, reason, message = errors.classify(exc)
    info = error_details_pb2.ErrorInfo(reason=reason, domain=errors.DOMAIN)
    details = [ErrorDetail(AnyDetail(type_url=_ERROR_INFO_TYPE, value=info.SerializeToString()))]
    retry_after_s = getattr(exc, "retry_after_s", None)
    if retry_after_s is not None:  # the rate and capacity limits say when to try again, as on the gRPC port
        retry = errors.retry_info(retry_after_s)
        details.append(ErrorDetail(AnyDetail(type_url=retry.type_url, value=retry.value)))
    # at most MAX_MESSAGE characters, as on the gRPC port: the last guard against an error echoing its input
    return ConnectError(CONNECT_CODES.get(status, Code.INTERNAL), errors.cut(message), details)


def malformed_request(what: str) -> ConnectError:
    """INVALID_ARGUMENT MALFORMED_REQUEST: the request's bytes are no request of the method."""
    return connect_error(BadRequest("MALFORMED_REQUEST", what))


def _check_size(message: Message) -> None:
    size = message.ByteSize()
    if size > MAX_MESSAGE_BYTES:  # as gRPC refuses to send it: RESOURCE_EXHAUSTED, no ErrorInfo
        raise ConnectError(Code.RESOURCE_EXHAUSTED, f"response of {size} bytes is over the limit {MAX_MESSAGE_BYTES}")


class BinaryCodec:
    """Protobuf binary (``application/proto``, gRPC-Web's ``+proto``) over the google.protobuf messages."""

    def name(self) -> str:
        return "proto"

    def encode(self, message: Message) -> bytes:
        data = wire.encode(message)  # deterministic, as on the gRPC port: equal answers are equal bytes
        if len(data) > MAX_MESSAGE_BYTES:
            _check_size(message)
        return data

    def decode(self, data: bytes | bytearray, message_class: type[M]) -> M:
        try:  # as the gRPC port's handlers: a known field with a wire type not its own is no absent field
            result: M = wire.parse(message_class, bytes(data))
            return result
        except Exception:
            raise malformed_request(f"the request is not a valid {message_class.DESCRIPTOR.full_name}") from None


def _native_classes() -> dict[str, type[PyMessage]]:
    """The protobuf-py classes of rummy.v1's top-level messages (the requests and responses), by full name."""
    found: dict[str, type[PyMessage]] = {}
    for module in (game_pb, referee_pb):
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, PyMessage) and value is not PyMessage:
                found[f"rummy.v1.{name}"] = value
    return found


_NATIVE = _native_classes()


def _has_enum(descriptor: Any, seen: set[str] | None = None) -> bool:
    """Whether a message has an enum field, at any depth."""
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return False
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        if field.enum_type is not None:
            return True
        if field.message_type is not None and _has_enum(field.message_type, seen):
            return True
    return False


#: Requests read with google.protobuf.json_format rather than protobuf-py: those with an enum field, whose
#: numbers this version does not know protobuf-py would read as the enum's default (a seat kind 99 as a human
#: seat); json_format keeps the number, as the binary decoder does, so the referee refuses it the same way on
#: every transport. (Only CreateGame's request has one; it is not on the move path.)
_ENUM_REQUESTS = frozenset(d.full_name for name, d in rpb.DESCRIPTOR.message_types_by_name.items()
                           if name.endswith("Request") and _has_enum(d))


class JsonCodec:
    """Protobuf's canonical JSON (``application/json``): field names in lowerCamelCase, unknown fields ignored
    (forward compatible, as Connect's own codec), 64-bit integers as strings; two fields of one oneof, or one field
    by both its names, refused (``_one_field_each``).

    rummy.v1's messages are transcoded through protobuf-py's native JSON (rummy_pb/*_pb.py, generated from the
    same .proto files): binary -> protobuf-py -> JSON, about 0.1 ms for a move's response where
    google.protobuf.json_format takes 1 ms; the output is the same (tests/server/test_connect_codec.py). Other
    messages (health) go through json_format."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        native = _NATIVE.get(message.DESCRIPTOR.full_name)
        if native is None:
            _check_size(message)
            return orjson.dumps(json_format.MessageToDict(message))
        data = wire.encode(message)  # deterministic: the JSON lists a Struct's and a map's entries in key order
        if len(data) > MAX_MESSAGE_BYTES:
            _check_size(message)
        return native.from_binary(data).to_json().encode()

    def decode(self, data: bytes | bytearray, message_class: type[M]) -> M:
        name = message_class.DESCRIPTOR.full_name
        native = _NATIVE.get(name)
        try:
            # orjson first: it refuses nesting over 1024 levels, where protobuf-py's reader recurses into arrays
            # without a bound (60,000 "[", a 120 KB body, overflowed the C stack: a SIGSEGV of the whole referee)
            value = orjson.loads(data) if data else {}
            if type(value) is dict and data.count(b":") != _keys(value):
                _no_key_twice(data)  # (a colon more than keys: a key twice, or a colon in a string)
            _one_field_each(value, message_class.DESCRIPTOR)
            if native is not None and name not in _ENUM_REQUESTS:
                return message_class.FromString(message_from_json_value(native, value, ignore_unknown_fields=True)
                                                .to_binary())  # fmt: skip
            message = message_class()
            json_format.ParseDict(value, message, ignore_unknown_fields=True)
            return message
        except Exception as exc:
            detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            what = f"the request is not a valid {message_class.DESCRIPTOR.full_name} in JSON: {detail}"
            raise malformed_request(what) from None


def _keys(value: Any) -> int:
    """The number of keys of every object in a JSON value (at most 1024 deep: orjson's limit)."""
    if type(value) is dict:
        count = len(value)
        for item in value.values():
            if type(item) is dict or type(item) is list:
                count += _keys(item)
        return count
    count = 0
    for item in value:
        if type(item) is dict or type(item) is list:
            count += _keys(item)
    return count


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key[:40]!r} is given twice in one object")
            seen.add(key)
    return found


def _no_key_twice(data: bytes | bytearray) -> None:
    """Refuse JSON with a key twice in one object (orjson and protobuf-py's reader keep the last: a request could
    mean one thing to a client's reader and another to the referee). Called only when the body has more colons
    than its objects have keys (each key has one; the others are in strings), so not on the common request."""
    json.loads(data, object_pairs_hook=_distinct_keys)


@dataclass(frozen=True, slots=True)
class _JsonField:
    """What _one_field_each needs of a field, computed once: the name its presence is counted under (its oneof's,
    else its own), the message to look into (None: a scalar, an enum, a well-known type) and whether it is a map
    (then the message is its values')."""

    group: str
    inner: Any
    is_map: bool
    is_bytes: bool
    enum_names: frozenset[str] | None  # an enum's value names; None: not an enum


def _json_fields(descriptor: Any) -> dict[str, _JsonField]:
    """A message's fields by their JSON and their proto names (ProtoJSON accepts both)."""
    found = _JSON_FIELDS.get(descriptor.full_name)
    if found is None:
        found = {}
        for f in descriptor.fields:
            group = f.containing_oneof.full_name if f.containing_oneof is not None else f.full_name
            inner, is_map = f.message_type, False
            if inner is not None and inner.GetOptions().map_entry:
                inner, is_map = inner.fields_by_name["value"].message_type, True
            if inner is not None and inner.full_name.startswith("google.protobuf."):
                inner = None
            is_bytes = f.type == FieldDescriptor.TYPE_BYTES
            names = None if f.enum_type is None else frozenset(v.name for v in f.enum_type.values)
            found[f.json_name] = found[f.name] = _JsonField(group, inner, is_map, is_bytes, names)
        _JSON_FIELDS[descriptor.full_name] = found
    return found


_JSON_FIELDS: dict[str, dict[str, _JsonField]] = {}
# ProtoJSON's bytes: standard or URL-safe base64, padded or not
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?")


def _one_field_each(value: Any, descriptor: Any) -> None:
    """ProtoJSON's rules the readers do not enforce: a field given twice (by its JSON and its proto name) and two
    fields of one oneof (two moves in one Move) are errors, protobuf-py's reader keeping the last; bytes that are no
    base64 are an error, json_format skipping the characters it does not know (a seed of "!!!" read as none); so
    is an enum name no value of the enum has (with unknown fields ignored, json_format reads it as the default: a
    typo in a timeout policy was forfeit_match; an unknown number is refused by the referee); a null is no value."""
    if not isinstance(value, dict):
        return  # the reader refuses it
    fields = _json_fields(descriptor)
    taken: dict[str, str] = {}
    for key, item in value.items():
        field = fields.get(key)
        if field is None or item is None:
            continue
        if field.group in taken:
            raise ValueError(f"{key!r} and {taken[field.group]!r} are the same field or fields of one oneof")
        taken[field.group] = key
        if field.is_bytes:
            for text in item if isinstance(item, list) else (item,):
                if isinstance(text, str) and not _BASE64.fullmatch(text):
                    raise ValueError(f"{key!r} is not base64")  # json_format would drop the characters it skips
        if field.enum_names is not None:
            for name in item if isinstance(item, list) else (item,):
                if isinstance(name, str) and name not in field.enum_names and not name.lstrip("-").isdigit():
                    # (a number, or a number in a string as json_format takes it, is the referee's to check)
                    raise ValueError(f"{key!r}: {name[:40]!r} is no value of the enum")
        if field.inner is None:
            continue
        if field.is_map:
            if isinstance(item, dict):
                for entry in item.values():
                    _one_field_each(entry, field.inner)
        elif isinstance(item, list):
            for element in item:
                _one_field_each(element, field.inner)
        else:
            _one_field_each(item, field.inner)


CODECS = (BinaryCodec(), JsonCodec())


class Edge:
    """A metadata interceptor, run before a request's body is read: the admission check (when one is set), and
    the last word on errors: one that connectrpc raised itself for a malformed request (a GET without its
    ``message``, bad base64 or compression) gets the MALFORMED_REQUEST reason like every other refusal."""

    def __init__(self, admit: Admit | None = None) -> None:
        self.admit = admit

    async def on_start(self, ctx: RequestContext[Any, Any]) -> Callable[[], None] | None:
        if self.admit is not None:
            try:
                return await self.admit(ctx.client_address, ctx.method.name, _admitted_token(ctx))
            except Exception as exc:
                raise connect_error(exc) from None
        return None

    async def on_end(
        self, ended: Callable[[], None] | None, ctx: RequestContext[Any, Any], error: Exception | None, /
    ) -> None:
        if ended is not None:  # a WatchGame counted in its address's open streams: it ends
            ended()
        if error is not None:
            answered = _answered(error)
            if answered is not error:
                raise answered from None


#: What connectrpc answers (UNIMPLEMENTED, INTERNAL) to an enveloped body (gRPC-Web, a Connect stream) of a call
#: with one request that holds no message or more than one, or a message flagged compressed without an encoding:
#: the request's bytes are no request of the method, MALFORMED_REQUEST, as a body that does not decode is.
_MALFORMED_ENVELOPES = frozenset({"unary request has zero messages", "unary request has multiple messages",
                                  "protocol error: sent compressed message without compression support"})  # fmt: skip


def _answered(error: Exception) -> Exception:
    """``error`` as the referee answers it: one connectrpc raised itself for a malformed request (INVALID_ARGUMENT
    without details) with the MALFORMED_REQUEST reason, any other exception through ``connect_error``."""
    if isinstance(error, ConnectError):
        if (error.code is Code.INVALID_ARGUMENT and not error.details) or error.message in _MALFORMED_ENVELOPES:
            return malformed_request(error.message)
        return error
    if isinstance(error, HTTPError):  # 404, 405, 415: an HTTP status and no body, as the protocol has it
        return error
    return connect_error(error)


class _Answering(ConnectASGIApplication[Any]):
    """A refusal connectrpc makes before any interceptor runs (a ``connect-timeout-ms`` or ``grpc-timeout`` that is
    no timeout, a ``connect-protocol-version`` other than 1) goes through ``_answered`` too, as Edge.on_end sends
    every later one: every refusal of the HTTP port carries the referee's ErrorInfo."""

    async def _handle_error(self, exc: Exception, ctx: Any, protocol: Any, send: Any) -> bool:
        handled: bool = await super()._handle_error(_answered(exc), ctx, protocol, send)
        return handled

    async def _read_get_request(self, endpoint: Any, codec: Any, params: dict[str, list[str]]) -> Any:
        """A Connect GET's ``base64=1`` message must be base64 (connectrpc's decoder skips what is not, reading
        ``!!!`` as the empty message), and its ``connect`` parameter, when given, v1 (a POST's other
        ``connect-protocol-version`` is refused; connectrpc served a GET of ``connect=v2`` as v1)."""
        if params.get("connect", ("v1",))[0] != "v1":
            raise malformed_request("the GET request's connect parameter must be 'v1'")
        if params.get("base64", ("",))[0] == "1" and not _BASE64.fullmatch(params.get("message", ("",))[0]):
            raise malformed_request("the GET request's message is not URL-safe base64")
        return await super()._read_get_request(endpoint, codec, params)


class Observe:
    """The HTTP port's server.metrics.ObserveInterceptor: a metadata interceptor, the port's first (so that its end
    sees every call's final status, the admission check's refusals included), that counts and times each call in
    the same series as the gRPC port's (``rummy_rpc_handled_total{method, code}`` by gRPC status name,
    ``rummy_rpc_duration_seconds``) and keeps the number of open server streams (WatchGame)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._handled: dict[tuple[str, str], Any] = {}

    async def on_start(self, ctx: RequestContext[Any, Any]) -> float:
        if ctx.method.stream_type is StreamType.SERVER_STREAM:
            self.metrics.streams.labels(f"{ctx.method.service_name}/{ctx.method.name}").inc()
        return time.perf_counter()

    async def on_end(self, start: float, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        method = f"{ctx.method.service_name}/{ctx.method.name}"
        if ctx.method.stream_type is StreamType.SERVER_STREAM:
            self.metrics.streams.labels(method).dec()
        code = "OK" if error is None else _status_name(error)
        child = self._handled.get((method, code))
        if child is None:
            child = self._handled[(method, code)] = self.metrics.rpc_handled.labels(method, code)
        child.inc()
        self.metrics.rpc_seconds.labels(method).observe(time.perf_counter() - start)


def _status_name(error: Exception) -> str:
    """The gRPC status name of a call's error on the HTTP port (Connect's ``canceled`` is gRPC's CANCELLED)."""
    if isinstance(error, ConnectError):
        return "CANCELLED" if error.code is Code.CANCELED else error.code.name
    return errors.status_name(error)  # (classify would log it a second time)


def _admitted_token(ctx: RequestContext[Any, Any]) -> str | None:
    """The bearer token for the admission check (a malformed header: none; the handler refuses it if needed)."""
    scheme, _, token = (ctx.request_headers.get("authorization") or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _presented(ctx: RequestContext[Any, Any]) -> str | None:
    """``codec.presented_token`` of the request's ``authorization`` header (as on the gRPC port)."""
    return codec.presented_token(ctx.request_headers.get("authorization"))


def _bearer(ctx: RequestContext[Any, Any], *, required: bool) -> str | None:
    """``codec.bearer_token`` of the request's ``authorization`` header (as on the gRPC port)."""
    return codec.bearer_token(ctx.request_headers.get("authorization"), required=required)


def _version(request: Any, name: str) -> int | None:
    return codec.version_from_proto(getattr(request, name), name) if request.HasField(name) else None


def _take_deadline(ctx: RequestContext[Any, Any]) -> None:
    """Take the request's deadline (``connect-timeout-ms``, gRPC-Web's ``grpc-timeout``) for every storage wait of
    it, as server.grpc_api does the gRPC call's: a commit is fenced by it, so that a move answered with an error
    (connectrpc answers DEADLINE_EXCEEDED at the deadline) is never applied later."""
    left_ms = ctx.timeout_ms
    deadlines.set_remaining(None if left_ms is None else left_ms / 1000)


async def _guard(ctx: RequestContext[Any, Any], work: Awaitable[T]) -> T:
    _take_deadline(ctx)
    try:
        return await work
    except Exception as exc:
        raise connect_error(exc) from None


Ctx = RequestContext[Any, Any]


class RefereeConnect:
    """rummy.v1.RefereeService (connectrpc's generated protocol) over a Referee."""

    def __init__(self, referee: Referee) -> None:
        self.referee = referee

    async def create_game(self, request: rpb.CreateGameRequest, ctx: Ctx, /) -> rpb.CreateGameResponse:
        return await _guard(ctx, self._create_game(request, ctx))

    async def _create_game(self, request: rpb.CreateGameRequest, ctx: Ctx) -> rpb.CreateGameResponse:
        token = codec.create_token(_presented(ctx), request)
        created = await self.referee.create_game(codec.game_spec_from_proto(request), token)
        return codec.create_response_to_proto(created)

    async def join_game(self, request: rpb.JoinGameRequest, ctx: Ctx, /) -> rpb.JoinGameResponse:
        return await _guard(ctx, self._join_game(request))

    async def _join_game(self, request: rpb.JoinGameRequest) -> rpb.JoinGameResponse:
        seat = request.seat if request.HasField("seat") else None
        taken, token = await self.referee.join_game(request.game_id, seat, request.display_name)
        return rpb.JoinGameResponse(seat=taken, token=token)

    async def get_game(self, request: rpb.GetGameRequest, ctx: Ctx, /) -> rpb.GetGameResponse:
        return await _guard(ctx, self._get_game(request, ctx))

    async def _get_game(self, request: rpb.GetGameRequest, ctx: Ctx) -> rpb.GetGameResponse:
        got = await self.referee.get_game(request.game_id, _bearer(ctx, required=True))
        return codec.get_response_to_proto(got)

    async def submit_move(self, request: rpb.SubmitMoveRequest, ctx: Ctx, /) -> rpb.SubmitMoveResponse:
        _take_deadline(ctx)
        try:  # the hot path: _guard written out, one coroutine fewer per move
            token = _bearer(ctx, required=True)
            if not request.HasField("move"):
                raise BadRequest("MISSING_MOVE", "the request has no move")
            result = await self.referee.submit_move(
                request.game_id,
                token,
                codec.move_from_proto(request.move),
                _version(request, "expected_version"),
                request.request_id,
            )
            return codec.move_response_to_proto(result)
        except Exception as exc:
            raise connect_error(exc) from None

    async def resign(self, request: rpb.ResignRequest, ctx: Ctx, /) -> rpb.ResignResponse:
        return await _guard(ctx, self._resign(request, ctx))

    async def _resign(self, request: rpb.ResignRequest, ctx: Ctx) -> rpb.ResignResponse:
        result = await self.referee.resign(
            request.game_id, _bearer(ctx, required=True), _version(request, "expected_version"), request.request_id
        )
        return codec.resign_response_to_proto(result)

    async def validate_move(self, request: rpb.ValidateMoveRequest, ctx: Ctx, /) -> rpb.ValidateMoveResponse:
        return await _guard(ctx, self._validate_move(request, ctx))

    async def _validate_move(self, request: rpb.ValidateMoveRequest, ctx: Ctx) -> rpb.ValidateMoveResponse:
        token = _bearer(ctx, required=True)
        if not request.HasField("move"):
            raise BadRequest("MISSING_MOVE", "the request has no move")
        version = await self.referee.validate_move(
            request.game_id,
            token,
            codec.move_from_proto(request.move),
            _version(request, "expected_version"),
        )
        return rpb.ValidateMoveResponse(version=version)

    async def watch_game(self, request: rpb.WatchGameRequest, ctx: Ctx, /) -> AsyncIterator[rpb.WatchGameResponse]:
        async with self.referee.hub.stream():
            try:
                token = _bearer(ctx, required=True)
                after = _version(request, "after_version")
                index = request.after_index if request.HasField("after_index") else None
                async for update in self.referee.watch(request.game_id, token, after, index):
                    yield codec.watch_response_to_proto(update)
            except Exception as exc:
                raise connect_error(exc) from None

    async def get_replay(self, request: rpb.GetReplayRequest, ctx: Ctx, /) -> rpb.GetReplayResponse:
        return await _guard(ctx, self._get_replay(request, ctx))

    async def _get_replay(self, request: rpb.GetReplayRequest, ctx: Ctx) -> rpb.GetReplayResponse:
        replay = await self.referee.replay(
            request.game_id,
            _presented(ctx),  # "" for a malformed header: no token where none is needed, BAD_TOKEN elsewhere
            _version(request, "after_version"),
            request.max_events,
        )
        return codec.replay_response_to_proto(replay)

    async def analyze_hand(self, request: rpb.AnalyzeHandRequest, ctx: Ctx, /) -> rpb.AnalyzeHandResponse:
        return await _guard(ctx, self._analyze_hand(request))

    async def _analyze_hand(self, request: rpb.AnalyzeHandRequest) -> rpb.AnalyzeHandResponse:
        analysis = self.referee.analyze(
            codec.cards_from_proto(request.cards), request.profile, codec.options_from_proto(request.options)
        )
        return codec.analysis_to_proto(analysis)

    async def ping(self, request: rpb.PingRequest, ctx: Ctx, /) -> rpb.PingResponse:
        return rpb.PingResponse()


def referee_app(
    referee: Referee, *, admit: Admit | None = None, metrics: Metrics | None = None
) -> ConnectASGIApplication[Any]:
    """The ASGI application of rummy.v1.RefereeService (paths ``/rummy.v1.RefereeService/<Method>``); with
    ``metrics``, every call counted and timed in them (Observe)."""
    service: referee_connect.RefereeService = RefereeConnect(referee)
    observe = [Observe(metrics)] if metrics is not None else []
    return _RefereeApp(
        service, interceptors=[*observe, Edge(admit)], read_max_bytes=MAX_MESSAGE_BYTES, codecs=CODECS
    )


class _RefereeApp(_Answering, referee_connect.RefereeServiceASGIApplication):
    """The generated application of rummy.v1.RefereeService, answering refusals as ``_Answering`` does."""


class _HealthContext:
    """What HealthServicer.Check needs of a gRPC context: abort() (an unknown service is NOT_FOUND)."""

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise ConnectError(CONNECT_CODES.get(code, Code.NOT_FOUND), details or "unknown service")


class HealthConnect:
    """grpc.health.v1.Health/Check over Connect (POST, or GET: it has no side effects), answered by the same
    HealthServicer as the gRPC port's: SERVING only while Redis answers."""

    def __init__(self, health: HealthServicer) -> None:
        self.health = health

    async def check(
        self, request: health_pb2.HealthCheckRequest, ctx: Ctx, /
    ) -> health_pb2.HealthCheckResponse:
        response: health_pb2.HealthCheckResponse = await self.health.Check(request, _HealthContext())
        return response


class HealthApp(_Answering):
    """The ASGI application of grpc.health.v1.Health (Check only; Watch is for the gRPC port)."""

    def __init__(self, health: HealthServicer) -> None:
        method = MethodInfo(
            name="Check",
            service_name="grpc.health.v1.Health",
            input=health_pb2.HealthCheckRequest,
            output=health_pb2.HealthCheckResponse,
            idempotency_level=IdempotencyLevel.NO_SIDE_EFFECTS,
            stream_type=StreamType.UNARY,
        )
        super().__init__(
            service=HealthConnect(health),
            endpoints=lambda svc: {"/grpc.health.v1.Health/Check": Endpoint.unary(method=method, function=svc.check)},
            interceptors=[Edge()],  # (no admission check: the gRPC port's health is exempt too) the refusals' reason
            read_max_bytes=MAX_MESSAGE_BYTES,
            codecs=CODECS,
        )

    @property
    def path(self) -> str:
        return "/grpc.health.v1.Health"
