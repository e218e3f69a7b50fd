"""Our own gRPC method handlers, built from a service's descriptor: what the generated ``add_*_to_server`` does,
with two differences that hold for every RPC of every service the referee serves (its own, health, reflection).

- **Request bodies that do not decode never raise.** grpc's generated handlers call ``FromString`` in its
  deserializer: for bytes that are no message of the type (invalid UTF-8 in a string field, a truncated varint,
  a wrong wire type) grpc answers UNKNOWN and logs a full traceback, one per request. Here the deserializer
  returns a ``Malformed`` marker instead, the handler answers INVALID_ARGUMENT ``MALFORMED_REQUEST`` before the
  servicer sees anything, and the log gets at most one short line per ``MalformedLog.every_s`` seconds, with
  the count of the ones left out.
- **Responses are serialized deterministically** (``SerializeToString(deterministic=True)``: map entries, e.g.
  of a ``google.protobuf.Struct``, in key order), so equal responses, such as a move's answer sent again to a
  resent request, are equal on the wire byte for byte.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from server import errors

log = logging.getLogger("rummy_referee")

Context = grpc.aio.ServicerContext[Any, Any]


class Malformed:
    """What the request deserializer returns for bytes that are not a message of the method's request type."""

    __slots__ = ("method",)

    def __init__(self, method: str) -> None:
        self.method = method


class MalformedLog:
    """At most one log line per ``every_s`` seconds about undecodable requests, counting the ones left out: anyone
    can send such bytes, and must not be able to flood the log with them."""

    def __init__(self, every_s: float = 10.0) -> None:
        self.every_s = every_s
        self.seen = 0  # undecodable requests since the start
        self._suppressed = 0
        self._next = 0.0

    def note(self, method: str, exc: BaseException) -> None:
        """Count one undecodable request; log it unless a line was logged less than ``every_s`` seconds ago."""
        self.seen += 1
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return
        self._next = now + self.every_s
        more, self._suppressed = self._suppressed, 0
        reason = errors.cut(str(exc).rpartition(": ")[2] or type(exc).__name__, 80)
        log.warning(
            "malformed request refused: %s (%s)%s",
            method, reason, f"; {more} more since the last such line, not logged" if more else "",
        )  # fmt: skip


MALFORMED_LOG = MalformedLog()

#: The logger of grpc's Cython layer, and its record for a metadata value that is not UTF-8 (cygrpc ``_decode``).
GRPC_CYTHON_LOGGER = "grpc._cython.cygrpc"
_BAD_ENCODING = "Invalid encoding on %s"


class MetadataEncodingFilter(logging.Filter):
    """Drops grpc's record of a call metadata value that is not UTF-8 on a key without "-bin" (the C core sends
    none such, any other HTTP/2 client can). grpc.aio decodes each value itself, logs the full traceback *and the
    raw bytes* (a token, perhaps) at ERROR each time a handler or interceptor reads the metadata, then reads the
    value as Latin-1 (so a bad token is BAD_TOKEN; another key is just text). In their place: at most one short
    line per ``every_s`` seconds, with the count of the ones left out, never the value."""

    def __init__(self, every_s: float = 10.0) -> None:
        super().__init__()
        self.every_s = every_s
        self.seen = 0  # such values read since the start (a call reads its metadata several times)
        self._suppressed = 0
        self._next = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _BAD_ENCODING:
            return True
        self.seen += 1
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return False
        self._next = now + self.every_s
        more, self._suppressed = self._suppressed, 0
        log.warning(
            "call metadata with a value that is not UTF-8 (read as Latin-1)%s",
            f"; {more} more since the last such line, not logged" if more else "",
        )  # fmt: skip
        return False


METADATA_ENCODING_FILTER = MetadataEncodingFilter()


def quiet_metadata_decoding() -> None:
    """Put METADATA_ENCODING_FILTER on grpc's Cython logger (once; the referee's servers call it)."""
    logger = logging.getLogger(GRPC_CYTHON_LOGGER)
    if METADATA_ENCODING_FILTER not in logger.filters:
        logger.addFilter(METADATA_ENCODING_FILTER)

_REFUSAL = errors.BadRequest("MALFORMED_REQUEST", "the request body is not a valid message of this method")


def _misread(message: Message) -> bool:
    """True when a field of ``message`` (at any depth) came with a wire type not its own. Protobuf keeps such a
    field as an unknown field and reads the field as absent (a move's expected_version sent as bytes would be no
    expected_version); a field number the message does not have stays accepted (a newer client's field)."""
    unknown = UnknownFieldSet(message)
    if len(unknown):
        known = message.DESCRIPTOR.fields_by_number
        if any(unknown[i].field_number in known for i in range(len(unknown))):
            return True
    for field, value in message.ListFields():
        sub = field.message_type
        if sub is None:
            continue
        if not field.is_repeated:
            if _misread(value):
                return True
        elif sub.GetOptions().map_entry:
            if sub.fields_by_name["value"].message_type is not None and any(_misread(v) for v in value.values()):
                return True
        elif any(_misread(v) for v in value):
            return True
    return False


_WRONG_WIRE_TYPE = ValueError("a field with a wire type not its own")


def _plain(message: Message, data: bytes) -> bool:
    """True when ``data`` is exactly the canonical encoding of ``message`` without unknown fields (what every
    client sends): then no field came with a wire type not its own. Unknown fields are dropped first (a message
    that had some never equals ``data`` again), so a False costs ``_misread`` on a fresh parse. One C call each
    way, where ``_misread``'s walk (ListFields at every level) costs tens of microseconds a request."""
    try:
        message.DiscardUnknownFields()
        return message.SerializeToString() == data
    except Exception:  # (never seen) the slow check decides
        return False


def parse(message_class: Any, data: bytes) -> Any:
    """The message of ``message_class`` that ``data`` encodes; ValueError when a known field came with a wire type
    not its own (protobuf would read it as absent), DecodeError (or whatever the parser raises on hostile bytes)
    when ``data`` is no message. Every transport's binary decoding (this module's handlers, the HTTP port's)."""
    message = message_class.FromString(data)
    if _plain(message, data):
        return message
    message = message_class.FromString(data)  # with its unknown fields again
    if _misread(message):
        raise _WRONG_WIRE_TYPE
    return message


def _decoder(message_class: Any, method: str) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return parse(message_class, data)
        except Exception as exc:  # DecodeError, the wrong wire type; anything else a parser may raise on hostile bytes
            MALFORMED_LOG.note(method, exc)
            return Malformed(method)

    return decode


def encode(message: Message) -> bytes:
    """A response's bytes: deterministic, so that equal messages are equal bytes."""
    return message.SerializeToString(deterministic=True)


async def refuse(context: Context) -> NoReturn:
    """Answer INVALID_ARGUMENT MALFORMED_REQUEST."""
    status = errors.rpc_status(_REFUSAL)
    await context.abort(status.code, status.details, status.trailing_metadata)


def _unary_unary(behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def handle(request: Any, context: Context) -> Any:
        if request.__class__ is Malformed:
            await refuse(context)
        return await behavior(request, context)

    return handle


def _unary_stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
    if not inspect.isasyncgenfunction(behavior):  # it streams with ``await context.write(...)`` (health's Watch)
        return _unary_unary(behavior)

    async def handle(request: Any, context: Context) -> AsyncIterator[Any]:
        if request.__class__ is Malformed:
            await refuse(context)
        async with contextlib.aclosing(behavior(request, context)) as responses:  # closed with this one, at once
            async for response in responses:
                yield response

    return handle


async def _checked(requests: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
    async for request in requests:
        if request.__class__ is Malformed:
            await refuse(context)
        yield request


def _stream_unary(behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def handle(requests: AsyncIterator[Any], context: Context) -> Any:
        return await behavior(_checked(requests, context), context)

    return handle


def _stream_stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
    if not inspect.isasyncgenfunction(behavior):  # it streams with ``await context.write(...)``
        return _stream_unary(behavior)

    async def handle(requests: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        async with contextlib.aclosing(behavior(_checked(requests, context), context)) as responses:
            async for response in responses:
                yield response

    return handle


_KINDS = {
    (False, False): (_unary_unary, grpc.unary_unary_rpc_method_handler),
    (False, True): (_unary_stream, grpc.unary_stream_rpc_method_handler),
    (True, False): (_stream_unary, grpc.stream_unary_rpc_method_handler),
    (True, True): (_stream_stream, grpc.stream_stream_rpc_method_handler),
}


def method_handler(service: ServiceDescriptor, method: MethodDescriptor, behavior: Callable[..., Any]) -> Any:
    """The grpc method handler of one method: ``behavior`` (a servicer's method) behind a deserializer that never
    raises and a deterministic serializer."""
    wrap, make = _KINDS[(method.client_streaming, method.server_streaming)]
    name = f"/{service.full_name}/{method.name}"
    return make(
        wrap(behavior),
        request_deserializer=_decoder(message_factory.GetMessageClass(method.input_type), name),
        response_serializer=encode,
    )


def _implemented(servicer: object, name: str) -> bool:
    # The generated base servicer's methods raise NotImplementedError (grpc logs a traceback for each call):
    # those are left unregistered, so that grpc answers UNIMPLEMENTED by itself (e.g. Health.List of an older
    # grpcio-health-checking whose servicer lacks it).
    method = getattr(servicer, name, None)
    return callable(method) and not getattr(method, "__module__", "").endswith("_pb2_grpc")


def add_service(server: grpc.aio.Server, service: ServiceDescriptor, servicer: object) -> None:
    """Register ``servicer``'s implementation of every method of ``service`` that it implements (as the generated
    ``add_<Service>Servicer_to_server`` does, with the handlers of ``method_handler``)."""
    handlers = {
        m.name: method_handler(service, m, getattr(servicer, m.name))
        for m in service.methods
        if _implemented(servicer, m.name)
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)  # type: ignore[attr-defined]


def with_behavior(
    handler: grpc.RpcMethodHandler[Any, Any], behavior: Callable[..., Any]
) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler of the same kind as ``handler`` (unary or streaming each way) and with its (de)serializers, whose
    behaviour is ``behavior``: how an interceptor wraps a method (server.limits, server.metrics)."""
    kwargs: dict[str, Any] = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(behavior, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(behavior, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(behavior, **kwargs)
    return grpc.unary_unary_rpc_method_handler(behavior, **kwargs)
