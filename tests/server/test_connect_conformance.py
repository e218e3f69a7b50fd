"""The HTTP port against the letter of the Connect protocol (connectrpc.com/docs/protocol) and of gRPC-Web
(grpc/grpc PROTOCOL-WEB.md), through a real referee and a real Redis: what a client written from those texts
sends, and what it must get back. The comparisons with native gRPC are test_connect.py's; these are the cases a
spec-following client or a conformance suite trips on."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from server.redis_launcher import RedisProcess
from tests.server.refkit import ServerThread
from tests.server.webkit import SERVICE, connect_error_answer, envelope


@pytest.fixture(scope="module")
def web(redis_server: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(redis_server.url, http=True) as server:
        yield server


@pytest.fixture(scope="module")
def http(web: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=web.http_url, timeout=60.0) as client:
        yield client


# ------------------------------------------------------------------------------------- refused protocol headers


@pytest.mark.parametrize(("headers", "what"), [
    ({"connect-timeout-ms": "soon"}, "a timeout that is no number"),
    ({"connect-timeout-ms": "12345678901"}, "a timeout of more than 10 digits"),
    ({"connect-timeout-ms": "-5"}, "a negative timeout"),
    ({"connect-protocol-version": "2"}, "a protocol version the port does not speak"),
])  # fmt: skip
def test_a_refused_connect_header_is_invalid_argument_with_the_malformed_request_reason(
    http: httpx.Client, headers: dict[str, str], what: str
) -> None:
    """Every refusal carries the referee's ErrorInfo (README: bad input of any kind is INVALID_ARGUMENT with a
    reason), also those connectrpc makes of the request's headers before any handler runs."""
    reply = http.post(f"/{SERVICE}/Ping", content=b"{}", headers={"content-type": "application/json", **headers})
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/json", what
    answer = connect_error_answer(reply.content, reply.status_code)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), (what, reply.content)


def test_a_refused_grpc_timeout_is_invalid_argument_with_the_malformed_request_reason(http: httpx.Client) -> None:
    reply = http.post(f"/{SERVICE}/Ping", content=envelope(b""),
                      headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1",
                               "grpc-timeout": "5x"})  # fmt: skip
    assert reply.status_code == 200 and reply.headers["grpc-status"] == "3", reply.headers
    details = reply.headers.get("grpc-status-details-bin")
    assert details is not None, "no ErrorInfo"
    status = status_pb2.Status.FromString(base64.b64decode(details + "=" * (-len(details) % 4)))
    info = error_details_pb2.ErrorInfo()
    assert status.details and status.details[0].Unpack(info) and info.reason == "MALFORMED_REQUEST"
