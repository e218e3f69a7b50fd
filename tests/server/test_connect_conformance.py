"""The HTTP port against the letter of the Connect protocol (connectrpc.com/docs/protocol) and of gRPC-Web
(grpc/grpc PROTOCOL-WEB.md), through a real referee and a real Redis: what a client written from those texts
sends, and what it must get back. The comparisons with native gRPC are test_connect.py's; these are the cases a
spec-following client or a conformance suite trips on."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest
import redis
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread
from tests.server.test_bad_input_parity import _RESPONSES, _requests, _snapshot, seat_1_to_act
from tests.server.webkit import (
    GRPC_CODES,
    PROTOCOLS,
    SERVICE,
    call,
    connect_error_answer,
    envelope,
    envelopes,
    trailer_fields,
)


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


@pytest.fixture
def fresh(web: ServerThread) -> Iterator[Game]:
    """A game of the test's own whose seat 1 is to act (draw phase): tokens[1] is the mover's."""
    client = Client(web.address)
    try:
        game = client.create("gin", token=ORGANIZER)
        if client.view(game, game.tokens[1]).to_act != 1:
            game.tokens = {0: game.tokens[1], 1: game.tokens[0]}
        yield game
    finally:
        client.close()


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


def _text_status_fields(reply: httpx.Response) -> dict[str, str]:
    """The status fields of a grpc-web-text answer: its headers when trailers-only, else its trailers frame's."""
    return dict(reply.headers) if "grpc-status" in reply.headers else trailer_fields(_text_frames(reply.content)[-1][1])


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
    assert trailer_fields(frames[1][1])["grpc-status"] == "0"


def test_grpc_web_text_refusal_has_the_status_and_reason(http: httpx.Client, game: Game) -> None:
    body = base64.b64encode(envelope(rpb.GetGameRequest(game_id=game.game_id).SerializeToString()))
    reply = http.post(f"/{SERVICE}/GetGame", content=body,
                      headers={"content-type": "application/grpc-web-text", "x-grpc-web": "1"})  # fmt: skip
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/grpc-web-text")
    fields = _text_status_fields(reply)
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
    assert trailer_fields(frames[-1][1])["grpc-status"] == "0"


def test_grpc_web_text_that_is_no_base64_is_malformed_request(http: httpx.Client) -> None:
    reply = http.post(f"/{SERVICE}/Ping", content=b"*not base64*",
                      headers={"content-type": "application/grpc-web-text", "x-grpc-web": "1"})  # fmt: skip
    assert reply.status_code == 200
    fields = _text_status_fields(reply)
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


# ------------------------------------------------------------------------------------------ protobuf's JSON


@pytest.mark.parametrize(("method", "body"), [
    ("SubmitMove", {"move": {"drawStock": {}, "drawDiscard": {}}}),
    ("ValidateMove", {"move": {"drawDiscard": {}, "drawStock": {}}}),
    ("SubmitMove", {"move": {"drawStock": {}, "draw_discard": {}}}),
    ("GetGame", {"game_id": "g_AAAAAAAAAAAAAAAAAAAAAA"}),
    ("CreateGame", {"profile": "gin", "seats": [{"displayName": "A"}, {"displayName": "B"}],
                    "timeControl": {"perMove": {"limitMs": 5000}, "clock": {"initialMs": 5000}}}),
])  # fmt: skip
def test_a_oneof_set_twice_in_json_is_malformed_request(http: httpx.Client, fresh: Game, method: str,
                                                       body: dict[str, object]) -> None:  # fmt: skip
    """ProtoJSON: a parser must refuse two fields of one oneof, and one field named twice (by its JSON and its
    proto name): the binary encoding's "last one wins" has no JSON counterpart; the referee must not pick one of
    two moves and play it."""
    reply = http.post(f"/{SERVICE}/{method}", json={"gameId": fresh.game_id, **body},
                      headers={"authorization": f"Bearer {fresh.tokens[1]}"})  # fmt: skip
    answer = connect_error_answer(reply.content, reply.status_code)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), reply.content


_SEED = bytes(range(200, 232))


@pytest.mark.parametrize(("seed", "accepted"), [
    (base64.b64encode(_SEED).decode(), True),
    (base64.urlsafe_b64encode(_SEED).decode().rstrip("="), True),
    ("!!!", False),
    (base64.b64encode(_SEED).decode()[:20] + "!" + base64.b64encode(_SEED).decode()[20:], False),
    (base64.b64encode(_SEED).decode()[:-2] + "*=", False),
])  # fmt: skip
def test_bytes_in_json_are_base64_or_malformed_request(http: httpx.Client, seed: str, accepted: bool) -> None:
    """ProtoJSON's bytes are standard or URL-safe base64, padded or not; anything else is refused, not read with
    the odd characters skipped (an organizer's seed of "!!!" was a game with a random seed)."""
    reply = http.post(f"/{SERVICE}/CreateGame", json={"profile": "gin", "seed": seed, "seats": [
        {"displayName": "A"}, {"displayName": "B"}]}, headers={"authorization": f"Bearer {ORGANIZER}"})  # fmt: skip
    if accepted:
        assert reply.status_code == 200, reply.content
        return
    answer = connect_error_answer(reply.content, reply.status_code)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), reply.content


_TIMED = {"profile": "gin", "seats": [{"displayName": "A"}, {"displayName": "B"}],
          "timeControl": {"perMove": {"limitMs": "5000"}}}


@pytest.mark.parametrize(("body", "accepted"), [
    ({**_TIMED, "timeoutPolicy": {"kind": "KIND_AUTO_MOVE"}}, True),
    ({**_TIMED, "timeoutPolicy": {"kind": 2}}, True),
    ({**_TIMED, "timeoutPolicy": {"kind": "2"}}, True),
    ({**_TIMED, "timeoutPolicy": {"kind": "KIND_AUTO_MOVES"}}, False),
    ({**_TIMED, "seats": [{"displayName": "A", "kind": "SEAT_KIND_BOT"}, {"displayName": "B", "kind": 1}]}, True),
    ({**_TIMED, "seats": [{"displayName": "A", "kind": "SEAT_KIND_ROBOT"}, {"displayName": "B"}]}, False),
])  # fmt: skip
def test_an_enum_by_a_name_it_does_not_have_is_malformed_request(
    http: httpx.Client, body: dict[str, object], accepted: bool
) -> None:
    """Enum values by name or by number; a name the enum does not have is refused, as an unknown number is, not
    read as the default (a typo in auto_move's name was a forfeit_match game)."""
    reply = http.post(f"/{SERVICE}/CreateGame", json=body)
    if accepted:
        assert reply.status_code == 200, reply.content
        return
    answer = connect_error_answer(reply.content, reply.status_code)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), reply.content


def test_a_oneof_field_set_to_null_is_not_set(http: httpx.Client, fresh: Game) -> None:
    """ProtoJSON: null is the field's default; {"drawStock": {}, "drawDiscard": null} is the one move."""
    reply = http.post(f"/{SERVICE}/ValidateMove", json={"gameId": fresh.game_id,
                                                        "move": {"drawStock": {}, "drawDiscard": None}},
                      headers={"authorization": f"Bearer {fresh.tokens[1]}"})  # fmt: skip
    assert reply.status_code == 200, reply.content


# ------------------------------------------------------------------------------- a refusal changes nothing


def _http_refusals(game: Game, hand: list[str]) -> Iterator[tuple[str, str, dict[str, str], bytes]]:
    """(what, method + query, headers, body): moves refused by the transport, each of which would be legal as a
    proper request (seat 1 is to act, in the draw phase)."""
    move = json.dumps({"gameId": game.game_id, "move": {"drawStock": {}}, "requestId": "r1"}).encode()
    auth = {"authorization": f"Bearer {game.tokens[1]}"}
    as_json = {**auth, "content-type": "application/json"}
    yield "an unknown content type", "SubmitMove", {**auth, "content-type": "text/plain"}, move
    yield "a stream's content type", "SubmitMove", {**auth, "content-type": "application/connect+json"}, move
    yield "an unknown compression", "SubmitMove", {**as_json, "content-encoding": "br"}, move
    yield "gzip that is not", "SubmitMove", {**as_json, "content-encoding": "gzip"}, move
    yield "a bad timeout", "SubmitMove", {**as_json, "connect-timeout-ms": "soon"}, move
    yield "no time left", "SubmitMove", {**as_json, "connect-timeout-ms": "0"}, move
    yield "protocol version 2", "SubmitMove", {**as_json, "connect-protocol-version": "2"}, move
    yield "a field of the wrong type", "SubmitMove", as_json, move.replace(b'"r1"', b"5")
    yield "a version of the wrong type", "SubmitMove", as_json, move[:-1] + b', "expectedVersion": "zero"}'
    yield "a truncated body", "SubmitMove", as_json, move[:-3]
    yield "grpc-web-text that is no base64", "SubmitMove", {**auth, "content-type": "application/grpc-web-text"}, b"*"
    yield "a bad grpc-timeout", "SubmitMove", {**auth, "content-type": "application/grpc-web+proto",
                                               "grpc-timeout": "1x"}, envelope(b"")  # fmt: skip
    yield "two moves in one (a oneof set twice)", "SubmitMove", as_json, json.dumps(
        {"gameId": game.game_id, "move": {"drawStock": {}, "drawDiscard": {}}}).encode()
    yield "a discard not held", "SubmitMove", as_json, json.dumps(
        {"gameId": game.game_id, "move": {"discard": {"card": next(c for c in _ALL if c not in hand)}}}).encode()


_ALL = [r + s for s in "SHDC" for r in "A23456789TJQK"]


def _refused(reply: httpx.Response) -> bool:
    """Whether the reply is an error: an HTTP error status, or gRPC-Web's grpc-status other than 0."""
    kind = reply.headers.get("content-type", "")
    if reply.status_code != 200 or not kind.startswith("application/grpc-web"):
        return reply.status_code != 200
    if "grpc-status" in reply.headers:
        return reply.headers["grpc-status"] != "0"
    frames = _text_frames(reply.content) if kind.startswith("application/grpc-web-text") else list(
        envelopes(reply.content))
    return trailer_fields(frames[-1][1]).get("grpc-status", "0") != "0"


def test_no_refusal_on_the_http_port_changes_the_game(web: ServerThread, http: httpx.Client) -> None:
    """Every Redis key of the game, byte for byte, after each refused move, by every protocol (the refusals of
    test_bad_input_parity, and those of the transport itself); then the same move, sent properly, is applied."""
    client = Client(web.address)
    try:
        game, hand = seat_1_to_act(client)
        store = redis.Redis.from_url(web.redis_url)
        before = _snapshot(store, game.game_id)
        assert before
        for protocol in PROTOCOLS:
            for name, method, request, token, status, _reason in _requests(game, hand):
                answer = call(http, protocol, method, request, _RESPONSES[method], token)
                assert answer.status == status, (protocol, name, answer)
                assert _snapshot(store, game.game_id) == before, (protocol, name)
        for name, path, headers, body in _http_refusals(game, hand):
            reply = http.post(f"/{SERVICE}/{path}", content=body, headers=headers)
            assert _refused(reply), (name, reply.headers, reply.content)
            assert _snapshot(store, game.game_id) == before, name
        for method in ("GET", "PUT", "DELETE"):
            reply = http.request(method, f"/{SERVICE}/SubmitMove?encoding=json&message=%7B%7D",
                                 headers={"authorization": f"Bearer {game.tokens[1]}"})  # fmt: skip
            assert reply.status_code == 405 and reply.headers["allow"] == "POST", method
        assert _snapshot(store, game.game_id) == before
        moved = http.post(f"/{SERVICE}/SubmitMove", content=next(_http_refusals(game, []))[3],
                          headers={"authorization": f"Bearer {game.tokens[1]}", "content-type": "application/json"})
        assert moved.status_code == 200 and moved.json()["version"] == "1", moved.content
        assert _snapshot(store, game.game_id) != before
    finally:
        client.close()


# ----------------------------------------------------------------------------------- Connect server streams


@pytest.mark.parametrize("headers", [{"connect-timeout-ms": "soon"}, {"connect-protocol-version": "2"}])
@pytest.mark.parametrize("codec", ["json", "proto"])
def test_a_refused_stream_is_http_200_with_the_error_in_its_end_stream_message(
    http: httpx.Client, game: Game, headers: dict[str, str], codec: str
) -> None:
    """Connect: "Streaming responses always have an HTTP status of 200 OK", errors in the EndStreamResponse; a
    stream refused for its headers, before any handler runs, too (a Connect streaming client reads a 400 as
    internal)."""
    request = rpb.WatchGameRequest(game_id=game.game_id)
    body = json.dumps({"gameId": game.game_id}).encode() if codec == "json" else request.SerializeToString()
    reply = http.post(f"/{SERVICE}/WatchGame", content=envelope(body),
                      headers={"content-type": f"application/connect+{codec}",
                               "authorization": f"Bearer {game.tokens[0]}", **headers})  # fmt: skip
    assert reply.status_code == 200, (reply.status_code, reply.content)
    assert reply.headers["content-type"] == f"application/connect+{codec}"
    frames = list(envelopes(reply.content))
    assert len(frames) == 1 and frames[0][0] == 0x02, frames
    end = json.loads(frames[0][1])
    answer = connect_error_answer(json.dumps(end["error"]).encode(), 200)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), end


# ------------------------------------------------------------------------------------------------ Connect GET


def test_a_get_with_base64_that_is_no_base64_is_malformed_request(http: httpx.Client, game: Game) -> None:
    """base64=1: the message is URL-safe base64, padded or not; characters outside it are refused, not skipped
    (``!`` in the middle of a GetGame request was the same request)."""
    headers = {"authorization": f"Bearer {game.tokens[0]}"}
    text = base64.urlsafe_b64encode(rpb.GetGameRequest(game_id=game.game_id).SerializeToString()).decode()
    for message in (text, text.rstrip("=")):
        reply = http.get(f"/{SERVICE}/GetGame", params={"encoding": "proto", "base64": "1", "message": message},
                         headers=headers)  # fmt: skip
        assert reply.status_code == 200, reply.content
        assert rpb.GetGameResponse.FromString(reply.content).view.game_id == game.game_id
    for message in (text[:8] + "!" + text[8:], "!!!", text[:-3] + "."):
        reply = http.get(f"/{SERVICE}/GetGame", params={"encoding": "proto", "base64": "1", "message": message},
                         headers=headers)  # fmt: skip
        assert reply.status_code == 400, (message, reply.status_code)
        answer = connect_error_answer(reply.content, reply.status_code)
        assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), (message, reply.content)


# ------------------------------------------------------------------------------------- the unary error model

#: connectrpc.com/docs/protocol#error-codes: each code's HTTP status
SPEC_HTTP_STATUS = {"canceled": 499, "unknown": 500, "invalid_argument": 400, "deadline_exceeded": 504,
                    "not_found": 404, "already_exists": 409, "permission_denied": 403, "resource_exhausted": 429,
                    "failed_precondition": 400, "aborted": 409, "out_of_range": 400, "unimplemented": 501,
                    "internal": 500, "unavailable": 503, "data_loss": 500, "unauthenticated": 401}  # fmt: skip


def test_each_refusal_has_the_http_status_of_its_code_and_the_error_body_of_the_spec(
    http: httpx.Client, fresh: Game
) -> None:
    """The HTTP status is the spec's for the code; the body is application/json {"code", "message", "details"},
    each detail {"type": the full name without type.googleapis.com/, "value": unpadded base64}."""
    mover, other = {"authorization": f"Bearer {fresh.tokens[1]}"}, {"authorization": f"Bearer {fresh.tokens[0]}"}
    draw = {"gameId": fresh.game_id, "move": {"drawStock": {}}}
    cases: list[tuple[str, dict[str, str], bytes, str]] = [
        ("GetGame", mover, b'{"gameId": "!"}', "invalid_argument"),
        ("SubmitMove", other, json.dumps(draw).encode(), "failed_precondition"),
        ("SubmitMove", mover, json.dumps({**draw, "expectedVersion": "9"}).encode(), "aborted"),
        ("GetGame", {}, json.dumps({"gameId": fresh.game_id}).encode(), "unauthenticated"),
        ("GetReplay", mover, json.dumps({"gameId": fresh.game_id}).encode(), "permission_denied"),
        ("GetGame", mover, b'{"gameId": "g_AAAAAAAAAAAAAAAAAAAAAA"}', "not_found"),
        ("AnalyzeHand", {}, b'{"profile": "' + b"x" * (300 * 1024) + b'"}', "resource_exhausted"),
        ("Ping", {"content-encoding": "br"}, b"{}", "unimplemented"),
        ("GetGame", {**mover, "connect-timeout-ms": "5"}, json.dumps({"gameId": fresh.game_id}).encode(),
         "deadline_exceeded"),
    ]  # fmt: skip
    for method, headers, body, code in cases:
        reply = http.post(f"/{SERVICE}/{method}", content=body,
                          headers={"content-type": "application/json", **headers})  # fmt: skip
        assert reply.status_code == SPEC_HTTP_STATUS[code], (method, code, reply.status_code, reply.content[:200])
        assert reply.headers["content-type"] == "application/json"
        error = reply.json()
        assert error["code"] == code and isinstance(error.get("message", ""), str), error
        for detail in error.get("details", ()):
            assert set(detail) <= {"type", "value", "debug"} and not detail["type"].startswith("type.googleapis")
            assert "=" not in detail["value"] and base64.b64decode(detail["value"] + "==")
