"""Storage faults through the HTTP port (server.connect_api: Connect and gRPC-Web), through a real referee and a
real redis-server: the caller's deadline (``connect-timeout-ms``, gRPC-Web's ``grpc-timeout``) bounds every storage
wait of its call, as the gRPC call's does on the gRPC port, so that a move answered with an error is never applied
later (the commit fence, docs/design.md); health over HTTP follows Redis as the gRPC port's does."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import httpx
import pytest
import redis
from google.protobuf import json_format

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import errors
from server.connect_api import CONNECT_CODES
from server.redis_launcher import RedisProcess
from server.store import game_key, log_key
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    ServerThread,
    drawn_knock_game,
    evalsha_calls,
    move_from_text,
    wait_for,
)
from tests.server.webkit import GRPC_CODES, SERVICE, envelope, envelopes

DRAW = move_from_text("draw stock")


@pytest.fixture
def web(private_redis: RedisProcess) -> Iterator[ServerThread]:
    """A referee with its HTTP port over a Redis of the test's own (the storage timeout: the tests' 5 s)."""
    with ServerThread(private_redis.url, http=True) as server:
        yield server


def _submit(http: httpx.Client, protocol: str, request: rpb.SubmitMoveRequest, token: str,
            timeout_ms: int | None) -> str:  # fmt: skip
    """SubmitMove by ``protocol`` with a deadline of ``timeout_ms``: the status, as gRPC names it."""
    headers = {"authorization": f"Bearer {token}"}
    if protocol == "grpc-web":
        headers["content-type"] = "application/grpc-web+proto"
        if timeout_ms is not None:
            headers["grpc-timeout"] = f"{timeout_ms}m"
        reply = http.post(f"/{SERVICE}/SubmitMove", content=envelope(request.SerializeToString()), headers=headers)
        assert reply.status_code == 200
        for flags, data in envelopes(reply.content):
            if flags & 0x80:  # the trailers
                fields = dict(line.split(": ", 1) for line in data.decode().strip().split("\r\n"))
                return GRPC_CODES[int(fields["grpc-status"])]
        raise AssertionError(f"no trailers in {reply.content!r}")
    headers["content-type"] = "application/json"
    if timeout_ms is not None:
        headers["connect-timeout-ms"] = str(timeout_ms)
    reply = http.post(f"/{SERVICE}/SubmitMove", content=json_format.MessageToJson(request), headers=headers)
    return "OK" if reply.status_code == 200 else str(reply.json()["code"]).upper()


@pytest.mark.parametrize("protocol", ["connect", "grpc-web"])
def test_a_move_over_http_answered_with_an_error_while_redis_is_paused_is_never_applied_later(
    private_redis: RedisProcess, web: ServerThread, protocol: str
) -> None:
    client = Client(web.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        game = drawn_knock_game(client)
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("discard KC"), request_id="r1")
        calls_before = evalsha_calls(direct)
        with httpx.Client(base_url=web.http_url, timeout=60.0) as http:
            private_redis.process.send_signal(signal.SIGSTOP)
            try:  # a deadline of 200 ms, far inside the storage timeout (5 s): the commit is queued in Redis
                status = _submit(http, protocol, request, game.tokens[1], timeout_ms=200)
            finally:  # resumed once the answer came, well within the storage timeout
                private_redis.process.send_signal(signal.SIGCONT)
            assert status in ("DEADLINE_EXCEEDED", "UNAVAILABLE"), status

            # Redis runs the script it had queued, late: the fence (the caller's deadline) makes it write nothing
            wait_for(lambda: evalsha_calls(direct) > calls_before, "saw Redis run the queued commit")
            assert direct.hget(game_key(game.game_id), "version") == b"1"
            assert direct.llen(log_key(game.game_id)) == 2

            assert _submit(http, protocol, request, game.tokens[1], timeout_ms=None) == "OK"  # the resend applies
            assert _submit(http, protocol, request, game.tokens[1], timeout_ms=None) == "OK"  # ... once
        assert direct.hget(game_key(game.game_id), "version") == b"2"
        assert direct.llen(log_key(game.game_id)) == 3
    finally:
        client.close()
        direct.close()


def test_a_call_over_http_with_too_short_a_deadline_is_deadline_exceeded_and_starts_nothing(
    private_redis: RedisProcess, web: ServerThread
) -> None:
    client = Client(web.address)
    try:
        game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="d1")
        with httpx.Client(base_url=web.http_url, timeout=60.0) as http:
            for protocol in ("connect", "grpc-web"):
                for timeout_ms in (1, 5, 9):  # under 10 ms: DEADLINE_TOO_SHORT, or connectrpc's own timer first
                    status = _submit(http, protocol, request, game.tokens[1], timeout_ms=timeout_ms)
                    assert status == "DEADLINE_EXCEEDED", (protocol, timeout_ms, status)
        assert client.view(game, game.tokens[1]).version == 0
    finally:
        client.close()


def test_every_status_of_the_error_map_has_its_connect_code() -> None:
    assert set(CONNECT_CODES) == set(errors._CODES)  # none falls back to INTERNAL over HTTP
    assert all(code.name == connect.name for code, connect in CONNECT_CODES.items())
