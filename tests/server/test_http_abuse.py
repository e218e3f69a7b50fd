"""What an outside caller can do to the HTTP port with bytes alone, against a real `rummy-referee serve` process
(a crash must show as one, not take pytest with it): deeply nested JSON under the size limit is refused as
MALFORMED_REQUEST and the referee goes on serving, by POST and by Connect GET; a connection whose request does not
arrive whole within --http-read-timeout is closed (slowloris), one that is being served is not; an address may hold
only so many WatchGame streams open, on both ports together."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.redis_launcher import RedisProcess
from tests.server.refkit import reason_of, wait_for
from tests.server.webkit import http_referee

SERVICE = "/rummy.v1.RefereeService/"
WATCH_CAP = 300  # --watches-per-address of this module's referee (the default, 10,000, is too many to open here)


@pytest.fixture(scope="module")
def serve(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    yield from http_referee(redis_server, tmp_path_factory, "abuse", "--watches-per-address", str(WATCH_CAP))



def _reason(reply: httpx.Response) -> str:
    detail = reply.json()["details"][0]
    info = error_details_pb2.ErrorInfo.FromString(base64.b64decode(detail["value"] + "=="))
    return str(info.reason)


def _alive(serve: RefereeProcess, http: httpx.Client) -> None:
    assert serve.process is not None and serve.process.poll() is None, "the referee process died"
    assert http.post(SERVICE + "Ping", json={}).status_code == 200


def _nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("GetGame", _nested(60_000)),  # the whole body
        ("GetGame", b'{"gameId": ' + _nested(60_000) + b"}"),  # a string field
        ("SubmitMove", b'{"gameId": "g_x", "move": ' + _nested(60_000) + b"}"),  # a message field
        ("AnalyzeHand", b'{"cards": ' + b'{"a":' * 30_000 + b"1" + b"}" * 30_000 + b"}"),  # objects in a list
        ("CreateGame", b'{"seats": ' + _nested(60_000) + b"}"),  # the request read by json_format
        ("GetGame", _nested(1024)),  # as deep as JSON may nest (orjson's limit): refused by protobuf-py cleanly
        ("GetGame", b'{"gameId": ' + _nested(1023) + b"}"),
    ],
)
def test_deeply_nested_json_is_malformed_and_the_referee_lives(serve: RefereeProcess, method: str,
                                                               body: bytes) -> None:  # fmt: skip
    """A request of ~120 KB (under the 256 KiB limit) nesting arrays 60,000 deep: protobuf-py's JSON reader
    crashed the whole process (SIGSEGV, both ports, no log line) for one unauthenticated POST."""
    assert len(body) < 256 * 1024
    with httpx.Client(base_url=f"http://{serve.http_address}", timeout=60) as http:
        reply = http.post(SERVICE + method, content=body,
                          headers={"content-type": "application/json", "authorization": "Bearer x"})  # fmt: skip
        assert reply.status_code == 400, reply.text[:200]
        assert _reason(reply) == "MALFORMED_REQUEST"
        _alive(serve, http)


def test_deeply_nested_json_in_a_connect_get_is_malformed(serve: RefereeProcess) -> None:
    message = base64.urlsafe_b64encode(b'{"gameId": ' + _nested(20_000) + b"}").decode()
    with httpx.Client(base_url=f"http://{serve.http_address}", timeout=60) as http:
        reply = http.get(f"{SERVICE}GetGame?connect=v1&encoding=json&base64=1&message={message}",
                         headers={"authorization": "Bearer x"})  # fmt: skip
        assert reply.status_code == 400, reply.text[:200]
        assert _reason(reply) == "MALFORMED_REQUEST"
        _alive(serve, http)


@pytest.fixture(scope="module")
def impatient(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee that gives a request 1 s to arrive whole."""
    yield from http_referee(redis_server, tmp_path_factory, "impatient", "--http-read-timeout", "1")


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (reads what it sent meanwhile: a 4xx, say, then the end)."""
    sock.settimeout(0.2)
    try:
        while data := sock.recv(4096):
            del data
        return True
    except (TimeoutError, BlockingIOError):
        return False
    except ConnectionResetError:
        return True


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connected, nothing sent
        b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nHost: x\r\n",  # headers never finished
        b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"content-length: 100\r\n\r\n{",  # a body that never comes
    ],
)
def test_a_request_that_never_arrives_whole_is_cut(impatient: RefereeProcess, sent: bytes) -> None:
    """Slowloris: the HTTP port held every connection open as long as its client liked (75 s and more seen: no
    timeout before a request's first response), each a file descriptor of the one process that also serves the
    gRPC port and talks to Redis. A request now has --http-read-timeout to arrive (here 1 s), whatever trickles in."""
    host, _, port = (impatient.http_address or "").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        if sent:
            sock.sendall(sent)
        wait_for(lambda: _closed_by_server(sock), "the server closes the connection", 60)


def test_a_served_connection_is_not_cut_while_it_works(impatient: RefereeProcess) -> None:
    """The read timeout counts only while a request arrives: a long watch stream over HTTP, and calls on one
    kept-alive connection spaced by less than the timeout, go on."""
    with httpx.Client(base_url=f"http://{impatient.http_address}", timeout=60) as http:
        created = http.post(SERVICE + "CreateGame", json={"seats": [{"displayName": "A"}, {"displayName": "B"}]})
        game, token = created.json()["gameId"], created.json()["seatTokens"][0]["token"]
        headers = {"authorization": f"Bearer {token}", "content-type": "application/connect+json"}
        envelope = json.dumps({"gameId": game}).encode()
        with http.stream("POST", SERVICE + "WatchGame", headers=headers,
                         content=b"\0" + len(envelope).to_bytes(4, "big") + envelope) as stream:  # fmt: skip
            chunks = stream.iter_bytes()
            assert next(chunks)  # the snapshot
            # the stream outlives the read timeout: a move is seen on it, sent once the timeout has long passed
            other = created.json()["seatTokens"][1]["token"]
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                assert http.post(SERVICE + "Ping", json={}).status_code == 200
                time.sleep(0.3)
            moved = http.post(SERVICE + "SubmitMove", headers={"authorization": f"Bearer {other}"},
                              json={"gameId": game, "move": {"drawStock": {}}})  # fmt: skip
            assert moved.status_code == 200, moved.text
            assert b"drew" in next(chunks)


def test_watch_streams_per_address_are_capped_on_both_ports(serve: RefereeProcess) -> None:
    """Each WatchGame stream holds ~30 KB of the process for as long as its game lasts, and one address could open
    them at the request rate (2000 a second) with one spectator token: 3,000 over one channel took 85 MB, so a
    few minutes of it ran the referee out of memory. An address now has at most --watches-per-address (here
    WATCH_CAP) open at once, counted across the gRPC and the HTTP port; one more is RATE_LIMITED (with RetryInfo)."""
    cap = WATCH_CAP
    with grpc.insecure_channel(serve.address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        created = stub.CreateGame(rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")],
            allow_spectators=True,
        ), timeout=30)  # fmt: skip
        watch = rpb.WatchGameRequest(game_id=created.game_id)
        auth = (("authorization", f"Bearer {created.spectator_token}"),)
        streams = [stub.WatchGame(watch, metadata=auth, timeout=120) for _ in range(cap)]
        try:
            for stream in streams:
                assert next(stream).HasField("snapshot")
            with pytest.raises(grpc.RpcError) as refused:
                next(stub.WatchGame(watch, metadata=auth, timeout=30))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert reason_of(refused.value) == "RATE_LIMITED"
            with httpx.Client(base_url=f"http://{serve.http_address}", timeout=30) as http:
                envelope = json.dumps({"gameId": created.game_id}).encode()
                reply = http.post(SERVICE + "WatchGame", content=b"\0" + len(envelope).to_bytes(4, "big") + envelope,
                                  headers={"authorization": f"Bearer {created.spectator_token}",
                                           "content-type": "application/connect+json"})  # fmt: skip
                assert b"resource_exhausted" in reply.content and b"open at once from one address" in reply.content
            streams.pop().cancel()  # one ends: another may open
            wait_for(lambda: _watch_opens(stub, watch, auth), "a stream is admitted again", 30)
        finally:
            for stream in streams:
                stream.cancel()


def _watch_opens(stub: referee_pb2_grpc.RefereeServiceStub, watch: rpb.WatchGameRequest,
                 auth: tuple[tuple[str, str], ...]) -> bool:  # fmt: skip
    stream = stub.WatchGame(watch, metadata=auth, timeout=30)
    try:
        return next(stream).HasField("snapshot")
    except grpc.RpcError as exc:
        assert reason_of(exc) == "RATE_LIMITED"
        return False
    finally:
        stream.cancel()


def test_health_watch_streams_count_in_the_same_cap(serve: RefereeProcess) -> None:
    """The health service's Watch is a server stream too (~23 KB each), and it is exempt from the request rate (a
    flood must not fail health checks): 3,000 from one channel took 2.7 s and 68 MB, with no token and no limit.
    It counts in the address's open streams with WatchGame (a health checker needs one)."""
    cap = WATCH_CAP
    with grpc.insecure_channel(serve.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        streams = [health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=120) for _ in range(cap)]
        try:
            for stream in streams:
                assert next(stream).status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as refused:
                next(health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert reason_of(refused.value) == "RATE_LIMITED"
            assert health.Check(health_pb2.HealthCheckRequest(service=""), timeout=30).status == (
                health_pb2.HealthCheckResponse.SERVING
            )  # a unary check is no stream
        finally:
            for stream in streams:
                stream.cancel()


@pytest.mark.parametrize("head", [b"X-A: " + b"a" * (64 << 10) + b"\r\n", b"X-B: " + b"b" * (4 << 20)])
def test_a_huge_request_head_is_refused_431(serve: RefereeProcess, head: bytes) -> None:
    """uvicorn's httptools parser takes headers of any size: 200 MiB of them on one connection grew the referee by
    197 MB (nothing answered, nothing cut but by the read timeout). The request line and headers (with what body
    comes in the same reads) now stop at 1 MiB: 431 and the connection closed."""
    host, _, port = (serve.http_address or "").rpartition(":")
    answer = b""
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        try:
            sock.sendall(b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nHost: x\r\n")
            for _ in range(40):  # 2.5 MiB or more in all, headers never finished
                sock.sendall(head)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed first: its answer may still be there to read
        sock.settimeout(20)
        try:
            while data := sock.recv(4096):
                answer += data
        except (ConnectionResetError, TimeoutError):
            pass
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    with httpx.Client(base_url=f"http://{serve.http_address}", timeout=60) as http:
        _alive(serve, http)
