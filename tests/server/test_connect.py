"""The HTTP port (server.http_server, server.connect_api) through a real referee and a real Redis: every RPC by
Connect JSON, Connect binary and gRPC-Web, with the statuses and reasons native gRPC gives for the same calls;
Connect GET for the side-effect-free methods; health; size limits; malformed bodies; CORS; WatchGame over Connect
resumed after a cut with no gap and no duplicate."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    bot_move,
    md,
    move_from_text,
    reason_of,
)
from tests.server.webkit import PROTOCOLS, SERVICE, Answer, call, connect_error_answer, envelope, envelopes, watch

ORIGIN = "http://table.example"


@pytest.fixture(scope="module")
def web(redis_server: RedisProcess) -> Iterator[ServerThread]:
    """A referee with its HTTP port, CORS allowed for ORIGIN only."""
    with ServerThread(redis_server.url, http=True, cors_origins=(ORIGIN,)) as server:
        yield server


@pytest.fixture(scope="module")
def grpc_client(web: ServerThread) -> Iterator[Client]:
    client = Client(web.address)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def http(web: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=web.http_url, timeout=60.0) as client:
        yield client


def grpc_answer(client: Client, method: str, request: Message, token: str | None,
                raw_token_header: str | None = None) -> Answer:  # fmt: skip
    metadata = md(token) if raw_token_header is None else (("authorization", raw_token_header),)
    try:
        response = getattr(client.stub, method)(request, metadata=metadata, timeout=60)
    except grpc.RpcError as exc:
        return Answer(exc.code().name, reason_of(exc), None, b"", exc.details() or "")
    return Answer("OK", None, response)


@dataclass
class Case:
    """One call of the comparison table: made by gRPC and by each HTTP protocol, with the same outcome."""

    name: str
    method: str
    request: Callable[[Game, Game], Message]  # (a started 2-seat game, a game with an open seat)
    token: Callable[[Game, Game], str | None]
    status: str
    reason: str | None
    same_response: bool = False  # the responses themselves are equal (deterministic calls)
    raw_token_header: str | None = None


def _big_name() -> rpb.CreateGameRequest:
    return rpb.CreateGameRequest(profile="gin", seats=[pb.SeatSpec(display_name="x" * (300 * 1024))])


ANY_ID = "g_AAAAAAAAAAAAAAAAAAAAAA"
SEAT1 = 1  # the dealer is seat 0: seat 1 acts first
CASES = [
    Case("ping", "Ping", lambda g, o: rpb.PingRequest(), lambda g, o: None, "OK", None, True),
    Case("analyze", "AnalyzeHand", lambda g, o: rpb.AnalyzeHandRequest(cards=["AS", "2S", "7H", "KD"]),
         lambda g, o: None, "OK", None, True),
    Case("analyze a bad card", "AnalyzeHand", lambda g, o: rpb.AnalyzeHandRequest(cards=["ZZ"]),
         lambda g, o: None, "INVALID_ARGUMENT", "INVALID_CARD"),
    Case("analyze an unknown profile", "AnalyzeHand", lambda g, o: rpb.AnalyzeHandRequest(cards=["AS"],
         profile="poker"), lambda g, o: None, "INVALID_ARGUMENT", "UNKNOWN_PROFILE"),
    Case("create", "CreateGame", lambda g, o: rpb.CreateGameRequest(profile="gin", seats=[
         pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")]), lambda g, o: None, "OK", None),
    Case("create an unknown profile", "CreateGame", lambda g, o: rpb.CreateGameRequest(profile="poker", seats=[
         pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")]),
         lambda g, o: None, "INVALID_ARGUMENT", "UNKNOWN_PROFILE"),
    Case("create with a seed, no token", "CreateGame", lambda g, o: rpb.CreateGameRequest(
         profile="gin", seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")], seed=bytes(32)),
         lambda g, o: None, "UNAUTHENTICATED", "MISSING_TOKEN"),
    Case("create with a seed, a seat token", "CreateGame", lambda g, o: rpb.CreateGameRequest(
         profile="gin", seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")], seed=bytes(32)),
         lambda g, o: g.tokens[0], "PERMISSION_DENIED", "ORGANIZER_ONLY"),
    Case("create over 256 KiB", "CreateGame", lambda g, o: _big_name(), lambda g, o: None,
         "RESOURCE_EXHAUSTED", None),
    Case("join a taken seat", "JoinGame", lambda g, o: rpb.JoinGameRequest(game_id=g.game_id, seat=0,
         display_name="Z"), lambda g, o: None, "FAILED_PRECONDITION", "SEAT_TAKEN"),
    Case("join an unknown game", "JoinGame", lambda g, o: rpb.JoinGameRequest(game_id=ANY_ID, display_name="Z"),
         lambda g, o: None, "NOT_FOUND", "GAME_NOT_FOUND"),
    Case("view", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=g.game_id), lambda g, o: g.tokens[1],
         "OK", None, True),
    Case("spectate", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=g.game_id), lambda g, o: g.spectator,
         "OK", None, True),
    Case("view, no token", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=g.game_id), lambda g, o: None,
         "UNAUTHENTICATED", "MISSING_TOKEN"),
    Case("view, another game's token", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=g.game_id),
         lambda g, o: o.tokens[0], "UNAUTHENTICATED", "BAD_TOKEN"),
    Case("view, not a bearer", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=g.game_id),
         lambda g, o: None, "UNAUTHENTICATED", "BAD_TOKEN", raw_token_header="Basic abc"),
    Case("view a bad id", "GetGame", lambda g, o: rpb.GetGameRequest(game_id="no such game!"),
         lambda g, o: g.tokens[0], "INVALID_ARGUMENT", "INVALID_GAME_ID"),
    Case("view an unknown game", "GetGame", lambda g, o: rpb.GetGameRequest(game_id=ANY_ID),
         lambda g, o: g.tokens[0], "NOT_FOUND", "GAME_NOT_FOUND"),
    Case("move out of turn", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock")), lambda g, o: g.tokens[0], "FAILED_PRECONDITION", "NOT_YOUR_TURN"),
    Case("move without a move", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id),
         lambda g, o: g.tokens[SEAT1], "INVALID_ARGUMENT", "MISSING_MOVE"),
    Case("move a card not held", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=move_from_text("discard QC")), lambda g, o: g.tokens[SEAT1], "FAILED_PRECONDITION", None),
    Case("move a bad card", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=pb.Move(discard=pb.Move.Discard(card="1X"))), lambda g, o: g.tokens[SEAT1],
         "INVALID_ARGUMENT", "INVALID_CARD"),
    Case("move as a spectator", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock")), lambda g, o: g.spectator, "PERMISSION_DENIED", "SPECTATOR"),
    Case("move at another version", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock"), expected_version=7), lambda g, o: g.tokens[SEAT1],
         "ABORTED", "VERSION_MISMATCH"),
    Case("move, no token", "SubmitMove", lambda g, o: rpb.SubmitMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock")), lambda g, o: None, "UNAUTHENTICATED", "MISSING_TOKEN"),
    Case("validate", "ValidateMove", lambda g, o: rpb.ValidateMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock")), lambda g, o: g.tokens[SEAT1], "OK", None, True),
    Case("validate out of turn", "ValidateMove", lambda g, o: rpb.ValidateMoveRequest(game_id=g.game_id,
         move=move_from_text("draw stock")), lambda g, o: g.tokens[0], "FAILED_PRECONDITION", "NOT_YOUR_TURN"),
    Case("replay before the end", "GetReplay", lambda g, o: rpb.GetReplayRequest(game_id=g.game_id),
         lambda g, o: g.tokens[0], "PERMISSION_DENIED", "MATCH_NOT_OVER"),
    Case("replay as the organizer", "GetReplay", lambda g, o: rpb.GetReplayRequest(game_id=g.game_id),
         lambda g, o: ORGANIZER, "OK", None, True),
]  # fmt: skip
RESPONSES: dict[str, type[Message]] = {
    m.name: getattr(rpb, m.output_type.name) for m in rpb.DESCRIPTOR.services_by_name["RefereeService"].methods
}


@pytest.fixture(scope="module")
def games(grpc_client: Client) -> tuple[Game, Game]:
    started = grpc_client.create("gin", allow_spectators=True)
    other = grpc_client.create("gin")
    return started, other


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_call_has_the_same_outcome_by_grpc_and_by_every_http_protocol(
    case: Case, games: tuple[Game, Game], grpc_client: Client, http: httpx.Client
) -> None:
    game, other = games
    request, token = case.request(game, other), case.token(game, other)
    native = grpc_answer(grpc_client, case.method, request, token, case.raw_token_header)
    assert native.status == case.status, native
    if case.reason is not None:
        assert native.reason == case.reason, native
    for protocol in PROTOCOLS:
        got = call(http, protocol, case.method, request, RESPONSES[case.method], token,
                   raw_token_header=case.raw_token_header)  # fmt: skip
        assert (got.status, got.reason) == (native.status, native.reason), (protocol, got)
        if got.status != "OK" and native.reason is not None:  # the referee's words (a size limit: the transport's)
            assert got.error_message == native.error_message, protocol
        if case.same_response:
            assert got.message == native.message, protocol


def test_a_whole_gin_match_by_each_http_protocol(web: ServerThread, http: httpx.Client) -> None:
    """CreateGame, JoinGame, GetGame, ValidateMove, SubmitMove (a knock ends the match), then GetReplay, all by
    one protocol; the replay ends with the same scores as the last view."""
    for protocol in PROTOCOLS:
        created = call(http, protocol, "CreateGame", rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="Ann"), pb.SeatSpec(display_name="Bob", open=True)],
            preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(target_score=25)),
            rpb.CreateGameResponse, ORGANIZER)  # fmt: skip
        assert created.status == "OK", created
        game_id = created.message.game_id
        tokens = {t.seat: t.token for t in created.message.seat_tokens}
        joined = call(http, protocol, "JoinGame", rpb.JoinGameRequest(game_id=game_id, display_name="Bob"),
                      rpb.JoinGameResponse)  # fmt: skip
        assert joined.status == "OK" and joined.message.seat == 1, joined
        tokens[1] = joined.message.token
        last = None
        for seat, text in GIN_KNOCK_MOVES:
            move = move_from_text(text)
            checked = call(http, protocol, "ValidateMove", rpb.ValidateMoveRequest(game_id=game_id, move=move),
                           rpb.ValidateMoveResponse, tokens[seat])  # fmt: skip
            assert checked.status == "OK", checked
            moved = call(http, protocol, "SubmitMove", rpb.SubmitMoveRequest(
                game_id=game_id, move=move, request_id=f"{protocol}-{text}"), rpb.SubmitMoveResponse, tokens[seat])
            assert moved.status == "OK", (protocol, text, moved)
            last = moved.message
        assert last is not None and last.view.phase == pb.PHASE_MATCH_OVER
        view = call(http, protocol, "GetGame", rpb.GetGameRequest(game_id=game_id), rpb.GetGameResponse, tokens[0])
        scores = [s.score for s in last.view.seats]
        assert [s.score for s in view.message.view.seats] == scores and max(scores) >= 25
        replay = call(http, protocol, "GetReplay", rpb.GetReplayRequest(game_id=game_id), rpb.GetReplayResponse)
        assert replay.status == "OK", replay
        assert [s.score for s in replay.message.current.seats] == scores
        kinds = [e.kind for e in replay.message.events]
        assert "match_ended" in kinds


def test_connect_get_works_for_the_side_effect_free_methods_only(
    games: tuple[Game, Game], grpc_client: Client, http: httpx.Client
) -> None:
    game, _ = games
    headers = {"authorization": f"Bearer {game.tokens[1]}"}
    request = json_format.MessageToJson(rpb.GetGameRequest(game_id=game.game_id), indent=0).replace("\n", "")
    reply = http.get(f"/{SERVICE}/GetGame?connect=v1&encoding=json&message={quote(request)}", headers=headers)
    assert reply.status_code == 200, reply.text
    got = rpb.GetGameResponse()
    json_format.Parse(reply.content, got)
    assert got.view == grpc_client.view(game, game.tokens[1])
    for method in ("Ping", "AnalyzeHand", "GetReplay"):
        assert http.get(f"/{SERVICE}/{method}?connect=v1&encoding=json&message=%7B%7D").status_code != 405
    # a method with side effects refuses GET
    refused = http.get(f"/{SERVICE}/SubmitMove?connect=v1&encoding=json&message=%7B%7D", headers=headers)
    assert refused.status_code == 405
    # GET without its message: INVALID_ARGUMENT MALFORMED_REQUEST, like any undecodable request
    missing = http.get(f"/{SERVICE}/Ping?connect=v1&encoding=json")
    answer = connect_error_answer(missing.content, missing.status_code)
    assert (answer.status, answer.reason, missing.status_code) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST", 400)


@pytest.mark.parametrize(("content_type", "body"), [
    ("application/json", b"{not json"),
    ("application/json", b'{"gameId": 5}'),
    ("application/json", b"[1, 2]"),
    ("application/proto", b"\xff\xff\xff\xff"),
])  # fmt: skip
def test_an_undecodable_body_is_malformed_request(content_type: str, body: bytes, http: httpx.Client) -> None:
    reply = http.post(f"/{SERVICE}/GetGame", content=body, headers={"content-type": content_type})
    answer = connect_error_answer(reply.content, reply.status_code)
    assert (answer.status, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")
    assert "Traceback" not in answer.error_message


def test_native_grpc_and_unknown_paths_on_the_http_port_are_refused_plainly(http: httpx.Client) -> None:
    assert http.post(f"/{SERVICE}/Ping", content=b"", headers={"content-type": "application/grpc"}).status_code == 415
    assert http.post("/nothing/here", content=b"{}", headers={"content-type": "application/json"}).status_code == 404
    assert http.post(f"/{SERVICE}/Nope", content=b"{}", headers={"content-type": "application/json"}).status_code == 404


def test_health_over_http_is_the_grpc_health(http: httpx.Client, web: ServerThread) -> None:
    for service in ("", SERVICE):
        reply = http.post("/grpc.health.v1.Health/Check", json={"service": service})
        assert reply.status_code == 200 and reply.json() == {"status": "SERVING"}
    got = http.get("/grpc.health.v1.Health/Check?connect=v1&encoding=json&message=%7B%7D")
    assert got.json() == {"status": "SERVING"}
    unknown = http.post("/grpc.health.v1.Health/Check", json={"service": "nope"})
    assert connect_error_answer(unknown.content, unknown.status_code).status == "NOT_FOUND"
    with grpc.insecure_channel(web.address) as channel:
        from grpc_health.v1 import health_pb2_grpc

        native = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE))
    assert native.status == health_pb2.HealthCheckResponse.SERVING


def test_cors_is_refused_for_an_unknown_origin_and_allowed_for_a_configured_one(http: httpx.Client) -> None:
    preflight = {"access-control-request-method": "POST",
                 "access-control-request-headers": "authorization, content-type, connect-protocol-version"}
    allowed = http.options(f"/{SERVICE}/GetGame", headers={"origin": ORIGIN, **preflight})
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in allowed.headers["access-control-allow-methods"]
    for header in ("authorization", "content-type", "connect-protocol-version", "x-grpc-web"):
        assert header in allowed.headers["access-control-allow-headers"]
    refused = http.options(f"/{SERVICE}/GetGame", headers={"origin": "http://evil.example", **preflight})
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
    ping = {"content-type": "application/json"}
    ok = http.post(f"/{SERVICE}/Ping", content=b"{}", headers={"origin": ORIGIN, **ping})
    assert ok.headers["access-control-allow-origin"] == ORIGIN
    assert "grpc-status" in ok.headers["access-control-expose-headers"]
    other = http.post(f"/{SERVICE}/Ping", content=b"{}", headers={"origin": "http://evil.example", **ping})
    assert "access-control-allow-origin" not in other.headers


def test_cors_is_off_by_default(redis_server: RedisProcess) -> None:
    server = ServerThread(redis_server.url, http=True)
    try:
        with httpx.Client(base_url=server.http_url, timeout=60.0) as http:
            preflight = {"origin": ORIGIN, "access-control-request-method": "POST"}
            reply = http.options(f"/{SERVICE}/Ping", headers=preflight)
            assert "access-control-allow-origin" not in reply.headers
            plain = http.post(f"/{SERVICE}/Ping", content=b"{}", headers={"origin": ORIGIN,
                                                                          "content-type": "application/json"})
            assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers
    finally:
        server.stop()


def _play_to_the_end(client: Client, game: Game, rng: random.Random) -> None:
    while True:
        view = client.view(game, game.tokens[0])
        if view.phase == pb.PHASE_MATCH_OVER:
            return
        seat = view.to_act
        own = client.view(game, game.tokens[seat])
        client.move(game, game.tokens[seat], bot_move(own, rng))


def test_watch_over_connect_resumes_after_a_cut_with_no_gap_and_no_duplicate(
    grpc_client: Client, http: httpx.Client
) -> None:
    game = grpc_client.create("gin", token=ORGANIZER, seed=bytes(range(32)),
                              match=rpb.MatchSettings(target_score=100, max_hands=1))  # fmt: skip
    rng = random.Random(9)
    for _ in range(3):  # a few moves before watching
        seat = grpc_client.view(game, game.tokens[0]).to_act
        grpc_client.move(game, game.tokens[seat], bot_move(grpc_client.view(game, game.tokens[seat]), rng))
    first, end = watch(http, rpb.WatchGameRequest(game_id=game.game_id), game.tokens[0], limit=1)
    assert end is None and first[0].message.HasField("snapshot")
    start = first[0].message.snapshot.version
    _play_to_the_end(grpc_client, game, rng)  # meanwhile, the game goes on to its end
    seen: list[tuple[int, int]] = []
    position: dict[str, Any] = {"after_version": start}
    cuts = 0
    while True:
        parts, end = watch(http, rpb.WatchGameRequest(game_id=game.game_id, **position), game.tokens[0], limit=5)
        for part in parts:
            assert part.message.HasField("event")
            seen.append((part.message.event.version, part.message.event.index))
        if end is not None:
            assert end.status == "OK", end
            break
        cuts += 1
        last_version, last_index = seen[-1]
        position = {"after_version": last_version, "after_index": last_index}
    assert cuts >= 2
    # the same game through the gRPC stream, from the same position: exactly the same events, once each
    stream = grpc_client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=start),
                                        metadata=md(game.tokens[0]), timeout=60)  # fmt: skip
    native = [(m.event.version, m.event.index) for m in stream]
    assert seen == native and len(set(seen)) == len(seen)
    assert seen == sorted(seen)


def test_watch_over_connect_refuses_like_grpc(games: tuple[Game, Game], http: httpx.Client) -> None:
    game, other = games
    _, end = watch(http, rpb.WatchGameRequest(game_id=game.game_id), other.tokens[0])
    assert end is not None and (end.status, end.reason) == ("UNAUTHENTICATED", "BAD_TOKEN")
    _, end = watch(http, rpb.WatchGameRequest(game_id=game.game_id), None)
    assert end is not None and (end.status, end.reason) == ("UNAUTHENTICATED", "MISSING_TOKEN")


def test_watch_over_grpc_web_streams_the_same_events(grpc_client: Client, http: httpx.Client) -> None:
    """WatchGame by gRPC-Web (binary frames, the status in the trailer frame) from a position: the events of the
    gRPC stream from there, in order, then grpc-status 0 once the match is over."""
    game = grpc_client.create("gin", token=ORGANIZER, seed=bytes(range(1, 33)),
                              match=rpb.MatchSettings(target_score=100, max_hands=1))  # fmt: skip
    _play_to_the_end(grpc_client, game, random.Random(4))
    request = rpb.WatchGameRequest(game_id=game.game_id, after_version=2)
    reply = http.post(f"/{SERVICE}/WatchGame", content=envelope(request.SerializeToString()),
                      headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1",
                               "authorization": f"Bearer {game.tokens[1]}"})  # fmt: skip
    assert reply.status_code == 200
    frames = list(envelopes(reply.content))
    trailer = frames[-1]
    assert trailer[0] & 0x80 and trailer[1].lower().replace(b" ", b"").startswith(b"grpc-status:0"), trailer
    got = [rpb.WatchGameResponse.FromString(payload).event for flags, payload in frames[:-1]]
    stream = grpc_client.stub.WatchGame(request, metadata=md(game.tokens[1]), timeout=60)
    assert [(e.version, e.index, e.kind) for e in got] == [(m.event.version, m.event.index, m.event.kind)
                                                           for m in stream]  # fmt: skip
    assert got and got[-1].kind == "match_ended"
