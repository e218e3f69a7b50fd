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

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread
from tests.server.webkit import GRPC_CODES, SERVICE, connect_error_answer, envelope, envelopes


@pytest.fixture(scope="module")
def web(redis_server: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(redis_server.url, http=True) as server:
        yield server


@pytest.fixture(scope="module")
def http(web: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=web.http_url, timeout=60.0) as client:
        yield client


@pytest.fixture(scope="module")
def game(web: ServerThread) -> Iterator[Game]:
    client = Client(web.address)
    try:
        yield client.create("gin", token=ORGANIZER, allow_spectators=True)
    finally:
        client.close()


def _trailers(payload: bytes) -> dict[str, str]:
    fields = {}
    for line in payload.decode().split("\r\n"):
        if line:
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
    return fields


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
    assert _grpc_reason(dict(reply.headers)) == "MALFORMED_REQUEST"


def _grpc_reason(fields: dict[str, str]) -> str | None:
    """The ErrorInfo reason of gRPC-Web status fields (headers or trailers), None without one."""
    details = fields.get("grpc-status-details-bin")
    if details is None:
        return None
    status = status_pb2.Status.FromString(base64.b64decode(details + "=" * (-len(details) % 4)))
    info = error_details_pb2.ErrorInfo()
    return str(info.reason) if status.details and status.details[0].Unpack(info) else None


# ---------------------------------------------------------------------------------------------- gRPC-Web text


def _text_frames(body: bytes) -> list[tuple[int, bytes]]:
    """The frames of a grpc-web-text body: base64, possibly in padded pieces (one per write)."""
    data = b""
    text = body.replace(b"\r", b"").replace(b"\n", b"")
    at = 0
    while at < len(text):  # each piece ends at its padding, or at the end
        end = at
        while end < len(text) and text[end : end + 1] != b"=":
            end += 1
        while end < len(text) and text[end : end + 1] == b"=":
            end += 1
        data += base64.b64decode(text[at:end], validate=True)
        at = end
    return list(envelopes(data))


@pytest.mark.parametrize("content_type", ["application/grpc-web-text", "application/grpc-web-text+proto"])
def test_grpc_web_text_unary_answers_base64_frames_and_the_trailers(
    http: httpx.Client, game: Game, content_type: str
) -> None:
    """grpc-web-text (the grpc-web JavaScript client's default mode): the request body is base64 of the frames,
    the response too, with the text content type; the status in the trailers frame."""
    body = base64.b64encode(envelope(rpb.GetGameRequest(game_id=game.game_id).SerializeToString()))
    reply = http.post(f"/{SERVICE}/GetGame", content=body,
                      headers={"content-type": content_type, "x-grpc-web": "1", "accept": content_type,
                               "authorization": f"Bearer {game.tokens[1]}"})  # fmt: skip
    assert reply.status_code == 200, reply.content
    assert reply.headers["content-type"].startswith("application/grpc-web-text"), reply.headers
    frames = _text_frames(reply.content)
    assert [flags & 0x80 for flags, _ in frames] == [0, 0x80], frames
    view = rpb.GetGameResponse.FromString(frames[0][1]).view
    assert view.game_id == game.game_id and view.viewer_seat == 1
    assert _trailers(frames[1][1])["grpc-status"] == "0"


def test_grpc_web_text_refusal_has_the_status_and_reason(http: httpx.Client, game: Game) -> None:
    body = base64.b64encode(envelope(rpb.GetGameRequest(game_id=game.game_id).SerializeToString()))
    reply = http.post(f"/{SERVICE}/GetGame", content=body,
                      headers={"content-type": "application/grpc-web-text", "x-grpc-web": "1"})  # fmt: skip
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/grpc-web-text")
    fields = dict(reply.headers) if "grpc-status" in reply.headers else _trailers(_text_frames(reply.content)[-1][1])
    assert GRPC_CODES[int(fields["grpc-status"])] == "UNAUTHENTICATED", fields
    assert _grpc_reason(fields) == "MISSING_TOKEN"


def test_grpc_web_text_request_in_padded_pieces_is_read_whole(http: httpx.Client) -> None:
    """A client may send the base64 of each frame on its own, padding and all, one after the other."""
    request = envelope(rpb.AnalyzeHandRequest(cards=["AS", "2S", "3S", "KD"]).SerializeToString())
    body = base64.b64encode(request[:4]) + base64.b64encode(request[4:])
    reply = http.post(f"/{SERVICE}/AnalyzeHand", content=body,
                      headers={"content-type": "application/grpc-web-text", "x-grpc-web": "1"})  # fmt: skip
    frames = _text_frames(reply.content)
    assert rpb.AnalyzeHandResponse.FromString(frames[0][1]).min_deadwood == 10, frames
    assert _trailers(frames[-1][1])["grpc-status"] == "0"


def test_grpc_web_text_that_is_no_base64_is_malformed_request(http: httpx.Client) -> None:
    reply = http.post(f"/{SERVICE}/Ping", content=b"*not base64*",
                      headers={"content-type": "application/grpc-web-text", "x-grpc-web": "1"})  # fmt: skip
    assert reply.status_code == 200
    fields = dict(reply.headers) if "grpc-status" in reply.headers else _trailers(_text_frames(reply.content)[-1][1])
    assert GRPC_CODES[int(fields["grpc-status"])] == "INVALID_ARGUMENT", fields
    assert _grpc_reason(fields) == "MALFORMED_REQUEST"


def test_watch_over_grpc_web_text_streams_each_message_as_it_comes(web: ServerThread, game: Game) -> None:
    """The snapshot arrives, decodable, before the stream ends (each write is base64 of its own)."""
    body = base64.b64encode(envelope(rpb.WatchGameRequest(game_id=game.game_id).SerializeToString()))
    headers = {"content-type": "application/grpc-web-text", "x-grpc-web": "1",
               "authorization": f"Bearer {game.tokens[0]}"}  # fmt: skip
    with httpx.Client(base_url=web.http_url, timeout=60.0) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:  # fmt: skip
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("application/grpc-web-text"), reply.headers
        received = b""
        for chunk in reply.iter_raw():
            received += chunk
            if len(received) % 4 == 0 and received:
                frames = _text_frames(received)
                if frames and not frames[0][0] & 0x80:
                    break
        snapshot = rpb.WatchGameResponse.FromString(frames[0][1])
        assert snapshot.HasField("snapshot") and snapshot.snapshot.game_id == game.game_id


# ----------------------------------------------------------------------------------------------- helpers' guard


def test_text_frames_reads_padded_pieces() -> None:
    pieces = base64.b64encode(envelope(b"ab")) + base64.b64encode(envelope(b"cde", 0x80))
    assert _text_frames(pieces) == [(0, b"ab"), (0x80, b"cde")]
