"""Bad input on the HTTP port (Connect, gRPC-Web, JSON) that an adversarial conformance suite sends, against a real
`rummy-referee serve` process over real sockets (a crash must show as one): a JSON body with a key twice, header
bytes that are no UTF-8, enveloped bodies of a unary call that hold no message, two, or more bytes than one, a
client that pipelines requests and never reads the answers, X-Forwarded-For sent to dodge the per-address limits,
and the other malformed requests (a content type, a content length, compression, grpc-web-text, a path or a method
that are wrong) answered by the protocol's refusal, never a 500 or a traceback in the log."""

from __future__ import annotations

import base64
import json
import re
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.webkit import GRPC_CODES, envelope, envelopes, http_referee, trailer_fields

SERVICE = b"/rummy.v1.RefereeService/"
READ_TIMEOUT_S = 2



@pytest.fixture(scope="module")
def serve(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee that gives a request READ_TIMEOUT_S to arrive whole (and its answers as long to drain)."""
    yield from http_referee(redis_server, tmp_path_factory, "badhttp", "--http-read-timeout", str(READ_TIMEOUT_S))


@pytest.fixture(autouse=True)
def no_traceback(serve: RefereeProcess) -> Iterator[None]:
    """No test of this module may leave an internal error or an ASGI exception in the referee's log."""
    log = Path(serve.log) if serve.log is not None else None
    start = log.stat().st_size if log is not None and log.exists() else 0
    yield
    if log is not None and log.exists():
        with log.open("rb") as f:
            f.seek(start)
            added = f.read().decode("utf-8", "replace")
        for bad in ("internal error", "Exception in ASGI application", "Traceback"):
            assert bad not in added, added[-2000:]


def _address(serve: RefereeProcess) -> tuple[str, int]:
    host, _, port = (serve.http_address or "").rpartition(":")
    return host, int(port)



class Reply:
    """An HTTP answer read off a raw socket: status, headers (lower-case names), the body (de-chunked)."""

    def __init__(self, raw: bytes) -> None:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert lines[0].startswith(b"HTTP/1.1 "), raw[:300]
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower().decode(): v.strip().decode("latin-1")
                        for k, _, v in (line.partition(b":") for line in lines[1:])}  # fmt: skip
        if self.headers.get("transfer-encoding") == "chunked":
            body = b""
            while rest:
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line, 16)
                if size == 0:
                    break
                body, rest = body + rest[:size], rest[size + 2 :]
            self.body = body
        else:
            self.body = rest[: int(self.headers.get("content-length", len(rest)))]

    def connect_error(self) -> tuple[str, str | None]:
        """A Connect error body's code and ErrorInfo reason."""
        data = json.loads(self.body)
        return data["code"], _reason(data.get("details", ()))

    def grpc_web_status(self) -> tuple[str, str | None]:
        """A gRPC-Web answer's status (by gRPC's name) and ErrorInfo reason, from its trailers frame."""
        assert self.status == 200, (self.status, self.body[:300])
        fields = dict(self.headers)
        for flags, payload in envelopes(self.body):
            if flags & 0x80:
                fields.update(trailer_fields(payload))
        return GRPC_CODES[int(fields["grpc-status"])], _status_reason(fields.get("grpc-status-details-bin"))

    def end_of_stream(self) -> tuple[str, str | None]:
        """A Connect stream's end-of-stream error code and reason ("ok", None without an error)."""
        assert self.status == 200, (self.status, self.body[:300])
        for flags, payload in envelopes(self.body):
            if flags & 0x02:
                error = json.loads(payload).get("error")
                return ("ok", None) if error is None else (error["code"], _reason(error.get("details", ())))
        raise AssertionError(f"no end of stream in {self.body[:300]!r}")


def _reason(details: Iterable[dict[str, str]]) -> str | None:
    for detail in details:
        if detail["type"] == "google.rpc.ErrorInfo":
            value = detail["value"]
            return str(error_details_pb2.ErrorInfo.FromString(base64.b64decode(value + "=" * (-len(value) % 4))).reason)
    return None


def _status_reason(value: str | None) -> str | None:
    if value is None:
        return None
    status = status_pb2.Status.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return None


def _exchange(serve: RefereeProcess, request: bytes, timeout: float = 20) -> Reply:
    """One request on a connection of its own (``connection: close``): the answer, read to the end."""
    with socket.create_connection(_address(serve), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    return Reply(answer)


def _post(serve: RefereeProcess, path: bytes, body: bytes, *, content_type: bytes = b"application/json",
          headers: bytes = b"", length: bool = True) -> Reply:  # fmt: skip
    head = b"POST " + path + b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: " + content_type + b"\r\n"
    if length:
        head += b"content-length: %d\r\n" % len(body)
    return _exchange(serve, head + headers + b"\r\n" + body)


def _get(serve: RefereeProcess, target: bytes, headers: bytes = b"") -> Reply:
    return _exchange(serve, b"GET " + target + b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\n" + headers + b"\r\n")


@pytest.fixture(scope="module")
def game(serve: RefereeProcess) -> tuple[str, str]:
    """A game of the module's (id, a seat's token)."""
    with httpx.Client(base_url=f"http://{serve.http_address}", timeout=30) as http:
        created = http.post("/rummy.v1.RefereeService/CreateGame",
                            json={"seats": [{"displayName": "A"}, {"displayName": "B"}]}).json()  # fmt: skip
    return created["gameId"], created["seatTokens"][0]["token"]


def _malformed(reply: Reply) -> None:
    assert reply.status == 400, (reply.status, reply.body[:300])
    assert reply.connect_error() == ("invalid_argument", "MALFORMED_REQUEST"), reply.body[:300]


# ------------------------------------------------------------------------------ a JSON key given twice


@pytest.mark.parametrize(
    ("method", "body"),
    [
        (b"GetGame", b'{"gameId": "GAME", "gameId": "g_other"}'),
        (b"GetGame", b'{"gameId":"GAME","gameId":"GAME"}'),  # even the same value twice
        (b"SubmitMove", b'{"gameId": "GAME", "move": {"drawStock": {}, "drawStock": {}}}'),  # in a message field
        (b"SubmitMove", b'{"gameId": "GAME", "move": {"discard": {"card": {"rank": 1, "rank": 2}}}}'),
        (b"GetGame", b'{"gameId": "GAME", "future": {"a": 1, "b": [{"x": 1, "x": 2}]}}'),  # in an unknown field
        (b"GetGame", b'{"gameId": "a:b:c", "gameId": "GAME"}'),  # with colons in a string too
        (b"Ping", b'{"a": 1, "a": 2}'),
    ],
)
def test_a_json_key_given_twice_is_malformed(serve: RefereeProcess, game: tuple[str, str], method: bytes,
                                              body: bytes) -> None:  # fmt: skip
    """ProtoJSON (and every other JSON reader the referee's clients use) may read a key given twice as either
    value: the referee took the last silently, so that what one reader of a request saw was not what the referee
    played. A key twice in any object of the body is MALFORMED_REQUEST."""
    body = body.replace(b"GAME", game[0].encode())
    _malformed(_post(serve, SERVICE + method, body, headers=b"authorization: Bearer " + game[1].encode() + b"\r\n"))


def test_a_json_key_given_twice_in_a_connect_get_or_a_health_check_is_malformed(serve: RefereeProcess) -> None:
    message = base64.urlsafe_b64encode(b'{"service": "", "service": ""}').decode().rstrip("=").encode()
    _malformed(_get(serve, b"/grpc.health.v1.Health/Check?connect=v1&encoding=json&base64=1&message=" + message))
    _malformed(_post(serve, b"/grpc.health.v1.Health/Check", b'{"service": "", "service": ""}'))


@pytest.mark.parametrize("body", [b'{"gameId": "a:b", "x": {"y": "c:d::"}}', b'{"gameId" : "x", "b": {"gameId": 1}}',
                                  b'{"gameId": "\\"gameId\\": "}'])  # fmt: skip
def test_json_with_colons_in_strings_or_one_key_in_two_objects_is_read(serve: RefereeProcess, body: bytes) -> None:
    """The check for a key twice counts keys per object: colons inside strings, and one name in two objects, are
    no duplicate (the request is read: its game id is no game's, or no game id)."""
    reply = _post(serve, SERVICE + b"GetGame", body, headers=b"authorization: Bearer t\r\n")
    assert reply.connect_error()[1] in ("GAME_NOT_FOUND", "INVALID_GAME_ID"), reply.body[:300]


# ------------------------------------------------------------------------------ header bytes that are no UTF-8


def test_a_token_that_is_no_utf8_is_unauthenticated(serve: RefereeProcess, game: tuple[str, str]) -> None:
    """connectrpc decodes every header as UTF-8: one 0xff byte in ``authorization`` was a UnicodeDecodeError, a
    500 INTERNAL and an error in the log, for any caller. HTTP header bytes are latin-1 text: such a token is
    nobody's, UNAUTHENTICATED BAD_TOKEN, on Connect and on gRPC-Web."""
    body = json.dumps({"gameId": game[0]}).encode()
    reply = _post(serve, SERVICE + b"GetGame", body, headers=b"authorization: Bearer \xff\xfe" + b"\r\n")
    assert reply.status == 401, (reply.status, reply.body[:300])
    assert reply.connect_error() == ("unauthenticated", "BAD_TOKEN")
    request = rpb.GetGameRequest(game_id=game[0]).SerializeToString()
    reply = _post(serve, SERVICE + b"GetGame", envelope(request), content_type=b"application/grpc-web+proto",
                  headers=b"authorization: Bearer t\xe9\xff\r\n")  # fmt: skip
    assert reply.grpc_web_status() == ("UNAUTHENTICATED", "BAD_TOKEN")


@pytest.mark.parametrize(
    ("header", "answer"),
    [
        (b"x-request-id: \xff\xfe", 200),  # a header the referee does not read
        (b"user-agent: caf\xe9", 200),
        (b"accept-encoding: \xff, gzip", 200),
        (b"connect-protocol-version: \xff", 400),
        (b"connect-timeout-ms: 1\xff", 400),
        (b"content-type: application/\xff", 415),
        (b"content-type: application/json\xff", 415),
        (b"content-encoding: \xff", 501),  # an unknown compression: Connect's unimplemented
    ],
)
def test_connect_headers_that_are_no_utf8_get_the_answer_of_a_bad_value(serve: RefereeProcess, header: bytes,
                                                                         answer: int) -> None:  # fmt: skip
    head = header if header.startswith(b"content-type") else b""
    reply = _post(serve, SERVICE + b"Ping", b"{}", headers=b"" if head else header + b"\r\n",
                  content_type=head[len(b"content-type: "):] if head else b"application/json")  # fmt: skip
    assert reply.status == answer, (reply.status, reply.body[:300])
    if answer == 400:
        assert reply.connect_error() == ("invalid_argument", "MALFORMED_REQUEST")
    if answer == 501:
        assert reply.connect_error()[0] == "unimplemented"


def test_a_header_in_utf8_is_read_as_utf8(serve: RefereeProcess) -> None:
    """(A value that is UTF-8 is read as UTF-8, as the gRPC port reads metadata: only bytes that are no UTF-8 are
    read as latin-1.)"""
    reply = _post(serve, SERVICE + b"Ping", b"{}", headers="connect-protocol-version: é\r\n".encode())
    _malformed(reply)
    assert "got 'é'" in json.loads(reply.body)["message"], reply.body[:300]


@pytest.mark.parametrize("header", [b"grpc-timeout: 1\xffm", b"grpc-timeout: \xff"])
def test_a_grpc_timeout_that_is_no_utf8_is_malformed(serve: RefereeProcess, header: bytes) -> None:
    reply = _post(serve, SERVICE + b"Ping", envelope(b""), content_type=b"application/grpc-web+proto",
                  headers=header + b"\r\n")  # fmt: skip
    assert reply.grpc_web_status() == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")


def test_a_grpc_web_text_content_type_that_is_no_utf8_is_415(serve: RefereeProcess) -> None:
    reply = _post(serve, SERVICE + b"Ping", base64.b64encode(envelope(b"")),
                  content_type=b"application/grpc-web-text\xff")  # fmt: skip
    assert reply.status == 415, (reply.status, reply.body[:300])


def test_a_watch_with_a_token_that_is_no_utf8_ends_unauthenticated(serve: RefereeProcess,
                                                                   game: tuple[str, str]) -> None:  # fmt: skip
    body = envelope(json.dumps({"gameId": game[0]}).encode())
    reply = _post(serve, SERVICE + b"WatchGame", body, content_type=b"application/connect+json",
                  headers=b"authorization: Bearer \xff\r\n")  # fmt: skip
    assert reply.end_of_stream() == ("unauthenticated", "BAD_TOKEN")


# ------------------------------------------------------------------------------ enveloped bodies of one request

PING = rpb.PingRequest().SerializeToString()
_BODIES = {
    "no message": lambda message: b"",
    "two messages": lambda message: envelope(message) + envelope(message),
    "an empty message after it": lambda message: envelope(message) + envelope(b""),
    "a partial envelope after it": lambda message: envelope(message) + b"\0\0",
    "a promised message cut short": lambda message: envelope(message) + b"\0\0\0\0\x09ab",
    "a message flagged compressed, no encoding": lambda message: envelope(message, flags=1),
    "a message flagged end-of-stream": lambda message: envelope(message, flags=2),
}


@pytest.mark.parametrize("body", list(_BODIES))
@pytest.mark.parametrize("text", [False, True], ids=["grpc-web", "grpc-web-text"])
def test_a_grpc_web_unary_body_holds_exactly_one_message(serve: RefereeProcess, game: tuple[str, str], body: str,
                                                         text: bool) -> None:  # fmt: skip
    """connectrpc answered a unary gRPC-Web body of no message or two UNIMPLEMENTED ("unary request has zero
    messages", a method the referee has), and a message flagged compressed without an encoding INTERNAL: every
    such body is no request of the method, INVALID_ARGUMENT MALFORMED_REQUEST, as one that does not decode."""
    request = rpb.GetGameRequest(game_id=game[0]).SerializeToString()
    for method, message in ((b"GetGame", request), (b"Ping", PING)):
        content = _BODIES[body](message)
        kind = b"application/grpc-web-text+proto" if text else b"application/grpc-web+proto"
        reply = _post(serve, SERVICE + method, base64.b64encode(content) if text else content, content_type=kind,
                      headers=b"authorization: Bearer " + game[1].encode() + b"\r\n")  # fmt: skip
        if text:
            reply.body = b"".join(base64.b64decode(piece) for piece in re.findall(rb"[^=]+=*", reply.body))
        assert reply.grpc_web_status() == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), (method, reply.body[:300])


@pytest.mark.parametrize("body", list(_BODIES))
def test_a_watch_request_holds_exactly_one_message(serve: RefereeProcess, game: tuple[str, str], body: str) -> None:
    """WatchGame's request over Connect's stream (``application/connect+json``) is one enveloped message: none, two,
    or bytes after it end the stream with INVALID_ARGUMENT MALFORMED_REQUEST (connectrpc: unimplemented)."""
    content = _BODIES[body](json.dumps({"gameId": game[0]}).encode())
    reply = _post(serve, SERVICE + b"WatchGame", content, content_type=b"application/connect+json",
                  headers=b"authorization: Bearer " + game[1].encode() + b"\r\n")  # fmt: skip
    assert reply.end_of_stream() == ("invalid_argument", "MALFORMED_REQUEST"), reply.body[:300]


def test_a_watch_of_one_message_is_served(serve: RefereeProcess, game: tuple[str, str]) -> None:
    """(The same request with its one message opens the stream: the snapshot comes.)"""
    with socket.create_connection(_address(serve), timeout=20) as sock:
        message = envelope(json.dumps({"gameId": game[0]}).encode())
        sock.sendall(b"POST /rummy.v1.RefereeService/WatchGame HTTP/1.1\r\nhost: x\r\ncontent-type: "
                     b"application/connect+json\r\nauthorization: Bearer " + game[1].encode() + b"\r\n"
                     b"content-length: %d\r\n\r\n" % len(message) + message)  # fmt: skip
        answer = b""
        while b"snapshot" not in answer:
            data = sock.recv(65536)
            assert data, answer
            answer += data


# ------------------------------------------------------------------------------ X-Forwarded-For


@pytest.fixture(scope="module")
def strict(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee that lets an address make 5 calls at once, then one a second."""
    yield from http_referee(redis_server, tmp_path_factory, "strict", "--requests-per-second", "1",
                            "--request-burst", "5")


@pytest.mark.parametrize("header", ["x-forwarded-for", "x-real-ip", "forwarded"])
def test_forwarded_headers_do_not_dodge_the_per_address_limits(strict: RefereeProcess, header: str) -> None:
    """uvicorn trusted X-Forwarded-For from 127.0.0.1 by default (its proxy_headers), and the per-address limits
    are keyed by the address uvicorn reports: a client on the referee's host (or behind a local proxy that passes
    the header on) sent a new X-Forwarded-For with each call and was never limited. The limits now count the
    connection's own address, whatever the headers say."""
    codes = []
    try:
        with httpx.Client(base_url=f"http://{strict.http_address}", timeout=30) as http:
            for i in range(20):
                value = f"for=10.1.2.{i}" if header == "forwarded" else f"10.1.2.{i}"
                reply = http.post("/rummy.v1.RefereeService/Ping", json={}, headers={header: value})
                codes.append(reply.status_code)
    finally:
        time.sleep(6)  # the address's bucket fills again (for the next case)
    assert codes.count(429) >= 10, codes


# ------------------------------------------------------------------------------ pipelined requests, answers unread

_PIPELINED_PING = (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                   b"content-length: 2\r\n\r\n{}")  # fmt: skip


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_client_that_pipelines_and_never_reads_is_cut(serve: RefereeProcess) -> None:
    """HTTP/1.1 lets a client send its next requests before reading an answer; uvicorn answers them in turn, and
    one that never read kept every answer it could not write in the referee (the connection was never cut: a
    request being answered is exempt from the read deadline), its pipelined requests queued without bound. Once
    its unread answers fill the connection's buffers and do not drain within --http-read-timeout, it is cut."""
    assert serve.pid is not None
    before = _rss_kib(serve.pid)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # read nothing, and buffer little
        sock.connect(_address(serve))
        sock.settimeout(0.5)
        batch = _PIPELINED_PING * 200
        cut = False
        deadline = time.monotonic() + READ_TIMEOUT_S + 30
        while time.monotonic() < deadline:
            try:
                sock.send(batch)
            except TimeoutError:
                continue  # the referee reads no more for now: keep pushing
            except (ConnectionResetError, BrokenPipeError):
                cut = True
                break
        grown_kib = _rss_kib(serve.pid) - before
    assert cut, f"the connection was not cut ({grown_kib} KiB more in the referee)"
    assert grown_kib < 64 * 1024, f"the referee grew by {grown_kib} KiB"
    with httpx.Client(base_url=f"http://{serve.http_address}", timeout=30) as http:
        assert http.post("/rummy.v1.RefereeService/Ping", json={}).status_code == 200


def test_pipelined_requests_whose_answers_are_read_are_all_answered(serve: RefereeProcess) -> None:
    """(A client that pipelines and reads gets every answer, in order.)"""
    count = 300
    with socket.create_connection(_address(serve), timeout=30) as sock:
        last = _PIPELINED_PING.replace(b"host: x", b"host: x\r\nconnection: close")
        sock.sendall(_PIPELINED_PING * (count - 1) + last)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    assert answer.count(b"HTTP/1.1 200 OK") + answer.count(b"HTTP/1.1 429 ") == count


@pytest.mark.parametrize("body", list(_BODIES))
def test_a_grpc_web_health_check_holds_exactly_one_message(serve: RefereeProcess, body: str) -> None:
    """The health service's application had no interceptor to give connectrpc's refusals their reason: a gRPC-Web
    health check of no message was UNIMPLEMENTED, one flagged compressed INTERNAL, bad flags INVALID_ARGUMENT
    without ErrorInfo. It answers as the referee's service does."""
    content = _BODIES[body](b"")
    reply = _post(serve, b"/grpc.health.v1.Health/Check", content, content_type=b"application/grpc-web+proto")
    assert reply.grpc_web_status() == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), reply.body[:300]


# ------------------------------------------------------------------------------ the rest of a conformance suite's


@pytest.mark.parametrize("version", [b"v2", b"1", b""])
def test_a_connect_get_of_another_protocol_version_is_malformed(serve: RefereeProcess, version: bytes) -> None:
    """A Connect GET says its protocol version in ``connect=v1`` as a POST does in ``connect-protocol-version: 1``;
    the POST's other versions were refused, the GET's were served as v1."""
    _malformed(_get(serve, b"/rummy.v1.RefereeService/Ping?connect=" + version + b"&encoding=json&message=%7B%7D"))


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\n", 415),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\n", 415),  # no content type
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc\r\n", 415),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc-web+xml\r\n", 415),
        (b"POST /rummy.v1.RefereeService/Nope HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n", 404),
        (b"POST /rummy.v2.Other/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n", 404),
        (b"POST /rummy.v1.RefereeService/ HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n", 404),
        (b"GET /rummy.v1.RefereeService/SubmitMove HTTP/1.1\r\nhost: x\r\n", 405),  # GET of a POST-only method
        (b"GET /rummy.v1.RefereeService/WatchGame?connect=v1&encoding=json&message=%7B%7D HTTP/1.1\r\n"
         b"host: x\r\n", 405),
        (b"PUT /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n", 405),
        (b"DELETE /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\n", 405),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
         b"content-length: -1\r\n", 400),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
         b"content-length: 99999999999999999999999\r\n", 400),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
         b"content-length: 2\r\ncontent-length: 3\r\n", 400),
        (b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
         b"transfer-encoding: chunked\r\ncontent-length: 2\r\n", 400),
        (b"POST /rummy.v1.RefereeService/Ping?x=\xff HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n", 400),
    ],
)
def test_requests_of_no_method_get_the_protocol_refusal_on_a_connection_that_goes_on(
    serve: RefereeProcess, request_bytes: bytes, status: int
) -> None:
    """A wrong content type (415), path (404), HTTP method (405) or framing (400): answered, no 500, and for the
    first three the connection serves its next request."""
    body = b"{}"
    head = request_bytes + (b"" if b"content-length" in request_bytes else b"content-length: 2\r\n")
    with socket.create_connection(_address(serve), timeout=20) as sock:
        sock.sendall(head + b"\r\n" + body + _PIPELINED_PING.replace(b"host: x", b"host: x\r\nconnection: close"))
        answer = b""
        while data := sock.recv(65536):
            answer += data
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:300]
    if status != 400:  # (a request the parser refuses ends its connection)
        assert answer.count(b"HTTP/1.1 200 OK") == 1, answer[:600]


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_resource_exhausted_and_the_connection_goes_on(serve: RefereeProcess,
                                                                                chunked: bool) -> None:  # fmt: skip
    body = b'{"gameId": "' + b"x" * 300_000 + b'"}'
    if chunked:
        framed = b"transfer-encoding: chunked\r\n\r\n" + b"".join(
            b"%x\r\n" % len(body[i : i + 65536]) + body[i : i + 65536] + b"\r\n" for i in range(0, len(body), 65536)
        ) + b"0\r\n\r\n"
    else:
        framed = b"content-length: %d\r\n\r\n" % len(body) + body
    with socket.create_connection(_address(serve), timeout=20) as sock:
        sock.sendall(b"POST /rummy.v1.RefereeService/GetGame HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     + framed + _PIPELINED_PING.replace(b"host: x", b"host: x\r\nconnection: close"))  # fmt: skip
        answer = b""
        while data := sock.recv(65536):
            answer += data
    assert answer.startswith(b"HTTP/1.1 429 "), answer[:300]
    assert b"resource_exhausted" in answer and answer.count(b"HTTP/1.1 200 OK") == 1, answer[:600]


@pytest.mark.parametrize("text", [b"!!!!", b"AA\xffA", b"A=AA", b"A", b"AAAAAAAAAA=A"])
def test_grpc_web_text_that_is_no_base64_is_malformed(serve: RefereeProcess, text: bytes) -> None:
    reply = _post(serve, SERVICE + b"Ping", text, content_type=b"application/grpc-web-text")
    reply.body = b"".join(base64.b64decode(piece) for piece in re.findall(rb"[^=]+=*", reply.body))
    assert reply.grpc_web_status() == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), reply.body[:300]


def test_a_declared_body_that_never_comes_is_cut(serve: RefereeProcess) -> None:
    """A content length far over the limit whose bytes never come: the connection is closed within the read
    timeout (nothing is allocated for the length declared)."""
    with socket.create_connection(_address(serve), timeout=READ_TIMEOUT_S + 20) as sock:
        sock.sendall(b"POST /rummy.v1.RefereeService/Ping HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     b"content-length: 999999999\r\n\r\n{}")  # fmt: skip
        start = time.monotonic()
        while sock.recv(65536):
            pass
        assert time.monotonic() - start < READ_TIMEOUT_S + 10


@pytest.fixture(scope="module")
def proxied(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """The strict referee behind a trusted reverse proxy on 127.0.0.1 (`--trusted-proxy`)."""
    yield from http_referee(redis_server, tmp_path_factory, "proxied", "--requests-per-second", "1",
                            "--request-burst", "5", "--trusted-proxy", "127.0.0.1")


def test_behind_a_trusted_proxy_the_limits_count_the_client_it_names(proxied: RefereeProcess) -> None:
    """An operator's reverse proxy (nginx on the referee's host) sends every client's calls from its own address:
    with `--trusted-proxy` naming it, the per-address limits count the client its X-Forwarded-For names (each
    of 20 clients its own 5 calls at once), and one client still gets its limit; without the option (the test
    above) the header is ignored."""
    with httpx.Client(base_url=f"http://{proxied.http_address}", timeout=30) as http:
        spread = [http.post("/rummy.v1.RefereeService/Ping", json={}, headers={"x-forwarded-for": f"10.9.0.{i}"})
                  .status_code for i in range(20)]  # fmt: skip
        one = [http.post("/rummy.v1.RefereeService/Ping", json={}, headers={"x-forwarded-for": "10.9.1.1"})
               .status_code for _ in range(20)]  # fmt: skip
    assert spread == [200] * 20, spread
    assert one.count(429) >= 10, one
