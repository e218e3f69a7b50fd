"""Test kit of the HTTP port: plain HTTP clients (httpx) that speak the three protocols by hand, so that a test
sees the bytes on the wire: Connect unary (JSON or binary), gRPC-Web unary (binary), and Connect's server stream
(JSON envelopes). Each returns an ``Answer``: the status as gRPC names it (``"OK"``, ``"NOT_FOUND"``, ...), the
ErrorInfo reason, the decoded message, and the raw body."""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess

M = TypeVar("M", bound=Message)
SERVICE = "rummy.v1.RefereeService"
PROTOCOLS = ("connect-json", "connect-proto", "grpc-web")
# gRPC's numeric codes, by name (what grpc.StatusCode.X.name gives)
GRPC_CODES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
              6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
              10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
              15: "DATA_LOSS", 16: "UNAUTHENTICATED"}  # fmt: skip


#: The environment of the referees these kits start: no Redis or organizer token of the caller's.
ENV = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")}


def http_referee(redis: RedisProcess, paths: pytest.TempPathFactory, name: str, *args: str) -> Iterator[RefereeProcess]:
    """A `serve` process with its HTTP port, over ``redis``, with ``args`` more; stopped after (a fixture's body)."""
    log = Path(paths.mktemp(name)) / "stderr.log"
    process = RefereeProcess(["--http-port", "0", "--redis-url", redis.url, "--no-bots", "--grace", "1", *args],
                             env=ENV, log=log, copy_stdout=False).start(60)  # fmt: skip
    try:
        yield process
    finally:
        process.stop(20)

@dataclass
class Answer:
    """One call's outcome over HTTP."""

    status: str
    reason: str | None
    message: Any = None
    body: bytes = b""
    error_message: str = ""
    http_status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def _info_reason(detail_value: bytes) -> str:
    info = error_details_pb2.ErrorInfo.FromString(detail_value)
    assert info.domain == "rummy-referee"
    return str(info.reason)


def connect_error_answer(body: bytes, http_status: int) -> Answer:
    """A Connect error body ({"code", "message", "details"}) as an Answer."""
    data = json.loads(body)
    reason = None
    for detail in data.get("details", ()):
        if detail["type"] == "google.rpc.ErrorInfo":
            value = detail["value"]
            reason = _info_reason(base64.b64decode(value + "=" * (-len(value) % 4)))
    return Answer(data["code"].upper(), reason, None, body, data.get("message", ""), http_status)


def headers_for(token: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = dict(extra or {})
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


def call(http: httpx.Client, protocol: str, method: str, request: Message, response_type: type[M],
         token: str | None = None, *, raw_token_header: str | None = None) -> Answer:  # fmt: skip
    """A unary call of RefereeService.``method`` by ``protocol`` (one of PROTOCOLS)."""
    headers = headers_for(token)
    if raw_token_header is not None:
        headers["authorization"] = raw_token_header
    if protocol == "grpc-web":
        return grpc_web_call(http, f"/{SERVICE}/{method}", request, response_type, headers)
    if protocol == "connect-json":
        headers["content-type"] = "application/json"
        content = json_format.MessageToJson(request).encode()
    else:
        headers["content-type"] = "application/proto"
        content = request.SerializeToString()
    reply = http.post(f"/{SERVICE}/{method}", content=content, headers=headers)
    return connect_unary_answer(reply, response_type, json_body=protocol == "connect-json")


def connect_unary_answer(reply: httpx.Response, response_type: type[M], *, json_body: bool) -> Answer:
    if reply.status_code != 200:
        answer = connect_error_answer(reply.content, reply.status_code)
        answer.headers = dict(reply.headers)
        return answer
    message = response_type()
    if json_body:
        json_format.Parse(reply.content, message)
    else:
        message.ParseFromString(reply.content)
    return Answer("OK", None, message, reply.content, headers=dict(reply.headers))


def envelope(data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def envelopes(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The (flags, payload) frames of an enveloped body."""
    at = 0
    while at < len(data):
        flags, size = struct.unpack(">BI", data[at : at + 5])
        yield flags, data[at + 5 : at + 5 + size]
        at += 5 + size


def frames_as_they_come(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The (flags, payload) frames of an enveloped body read in ``chunks``, each as soon as it has arrived whole."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= 5 and len(buffer) >= 5 + int.from_bytes(buffer[1:5], "big"):
            size = int.from_bytes(buffer[1:5], "big")
            flags, payload, buffer = buffer[0], buffer[5 : 5 + size], buffer[5 + size :]
            yield flags, payload


def connect_watch_frames(http_url: str, game_id: str, token: str, *, timeout: float) -> Iterator[tuple[int, bytes]]:
    """WatchGame over Connect JSON on the HTTP port: each (flags, payload) frame as soon as it has arrived whole
    (flags & 0x02: the end-of-stream message)."""
    headers = {"authorization": f"Bearer {token}", "content-type": "application/connect+json"}
    body = envelope(json.dumps({"gameId": game_id}).encode())
    with httpx.Client(base_url=http_url, timeout=timeout) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:  # fmt: skip
        yield from frames_as_they_come(reply.iter_bytes())


def trailer_fields(payload: bytes) -> dict[str, str]:
    """The fields of a gRPC-Web trailers frame's payload (``name: value`` lines), by lower-case name."""
    fields = {}
    for line in payload.decode().split("\r\n"):
        if line:
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
    return fields


def grpc_status_answer(fields: dict[str, str]) -> Answer:
    """The status that a stream's trailers (or a trailers-only answer's headers) say, as an Answer."""
    return _grpc_status(fields, b"", None, 200)


def _grpc_status(fields: dict[str, str], body: bytes, message: Any, http_status: int) -> Answer:
    code = GRPC_CODES[int(fields.get("grpc-status", "2"))]
    reason = None
    if "grpc-status-details-bin" in fields:
        value = fields["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                reason = _info_reason(info.SerializeToString())
    return Answer(code, reason, message if code == "OK" else None, body, unquote(fields.get("grpc-message", "")),
                  http_status)  # fmt: skip


def grpc_web_call(http: httpx.Client, path: str, request: Message, response_type: type[M],
                  headers: dict[str, str]) -> Answer:  # fmt: skip
    """A unary gRPC-Web call (binary): the status from the trailer frame, or from the headers (trailers-only)."""
    headers = {**headers, "content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    reply = http.post(path, content=envelope(request.SerializeToString()), headers=headers)
    if reply.status_code != 200:
        return Answer(f"HTTP {reply.status_code}", None, None, reply.content, "", reply.status_code)
    if "grpc-status" in reply.headers:  # trailers-only
        return _grpc_status(dict(reply.headers), reply.content, None, 200)
    message = None
    trailers: dict[str, str] = {}
    for flags, payload in envelopes(reply.content):
        if flags & 0x80:
            trailers.update(trailer_fields(payload))
        else:
            message = response_type.FromString(payload)
    return _grpc_status(trailers, reply.content, message, 200)


@dataclass
class StreamPart:
    """One message of a Connect server stream (JSON): its raw envelope payload and the decoded message."""

    raw: bytes
    message: rpb.WatchGameResponse


def watch(http: httpx.Client, request: rpb.WatchGameRequest, token: str | None, *,
          limit: int | None = None) -> tuple[list[StreamPart], Answer | None]:  # fmt: skip
    """WatchGame over Connect JSON: the messages (at most ``limit``: then the stream is cut, the connection
    closed mid-stream) and the end-of-stream status (None when cut)."""
    headers = {**headers_for(token), "content-type": "application/connect+json", "connect-protocol-version": "1"}
    body = envelope(json_format.MessageToJson(request).encode())
    parts: list[StreamPart] = []
    with http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:
        assert reply.status_code == 200, reply.read()
        for flags, payload in frames_as_they_come(reply.iter_raw()):
            if flags & 0x02:
                end = json.loads(payload)
                if "error" in end:
                    error = end["error"]
                    return parts, connect_error_answer(json.dumps(error).encode(), 200)
                return parts, Answer("OK", None, None, payload)
            message = rpb.WatchGameResponse()
            json_format.Parse(payload, message)
            parts.append(StreamPart(payload, message))
            if limit is not None and len(parts) >= limit:
                return parts, None  # leaving the block closes the response mid-stream: a cut
    raise AssertionError("the stream ended without its end-of-stream message")
