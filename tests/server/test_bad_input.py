"""Bad input on the wire (issue 8, items 2, 6, 7, 9, 11), through the real server over real sockets and a real Redis:
bodies that do not decode, numbers out of range, huge echoed text, resent moves compared byte for byte, and the
authorization header where no token is needed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.protobuf.message import DecodeError

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import wire
from server.codec import MAX_VERSION
from server.errors import MAX_MESSAGE
from server.wire import MalformedLog
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    expect_error,
    md,
    move_from_text,
    reason_of,
)

C = grpc.StatusCode
SERVICE = "/rummy.v1.RefereeService/"
UNARY = ("CreateGame", "JoinGame", "GetGame", "SubmitMove", "ValidateMove", "GetReplay", "AnalyzeHand", "Ping")
# bytes that are no message of any of these types: invalid UTF-8 in field 1 (a string in every request that has
# a field 1), a truncated varint, a length running past the end, a wrong wire type (group end), a bad tag
UNDECODABLE = (bytes.fromhex("0a02fffe"), bytes.fromhex("08"), bytes.fromhex("0a05ab"), bytes.fromhex("0c"),
               bytes.fromhex("00"), b"\x80" * 11)  # fmt: skip
U64 = 2**64 - 1


@pytest.fixture
def raw(referee_server: ServerThread) -> Iterator[grpc.Channel]:
    """A channel that sends and receives bytes as they are (no serializers)."""
    channel = grpc.insecure_channel(referee_server.address)
    try:
        yield channel
    finally:
        channel.close()


@pytest.fixture
def game(client: Client) -> Game:
    """Gin from a known deal (dealer 0: seat 1 acts first)."""
    return client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], allow_spectators=True)


def _decodes(method: str, body: bytes) -> bool:
    try:
        getattr(rpb, f"{method}Request").FromString(body)
        return True
    except DecodeError:
        return False


def _refused(call: grpc.RpcError, reason: str) -> None:
    assert call.code() == C.INVALID_ARGUMENT, (call.code(), call.details())
    assert reason_of(call) == reason, call.details()


# ------------------------------------------------------------------------------ bodies that do not decode


@pytest.mark.parametrize("body", UNDECODABLE, ids=lambda b: b.hex())
def test_an_undecodable_body_is_malformed_request_on_every_rpc(raw: grpc.Channel, game: Game, body: bytes) -> None:
    refused = 0
    for method in UNARY:
        if _decodes(method, body):  # e.g. a PingRequest has no field 1: field 1 is an unknown field there
            continue
        with pytest.raises(grpc.RpcError) as caught:
            raw.unary_unary(SERVICE + method)(body, metadata=md(game.tokens[1]), timeout=10)
        _refused(caught.value, "MALFORMED_REQUEST")
        refused += 1
    assert refused >= 7
    with pytest.raises(grpc.RpcError) as caught:
        next(raw.unary_stream(SERVICE + "WatchGame")(body, metadata=md(game.tokens[1]), timeout=10))
    _refused(caught.value, "MALFORMED_REQUEST")


def test_a_known_field_with_a_wrong_wire_type_is_malformed_not_absent(raw: grpc.Channel, game: Game,
                                                                      client: Client) -> None:  # fmt: skip
    """Protobuf keeps a field sent with another wire type than its own as an unknown field and reads the field as
    absent: a move whose expected_version came as bytes would be applied at any version. Refused instead, at any
    depth; a field number the message does not have stays accepted (a newer client's field)."""
    draw = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock")).SerializeToString()
    bare = rpb.SubmitMoveRequest(game_id=game.game_id).SerializeToString()
    lay_off = b"\x0a\x02AS" + b"\x12\x01\x05"  # Move.LayOff: card "AS", meld_id (2, a varint) as bytes
    seat = md(game.tokens[1])
    for body in (
        draw + b"\x1a\x01\x05",  # expected_version (3, a varint) as length-delimited bytes
        draw + b"\x21" + bytes(8),  # request_id (4, a string) as a fixed64
        bare + b"\x12\x02\x10\x00",  # a Move whose draw_discard (2, a message) is a varint
        bare + b"\x12" + bytes([len(lay_off) + 2, 0x42, len(lay_off)]) + lay_off,  # two levels down
    ):
        with pytest.raises(grpc.RpcError) as caught:
            raw.unary_unary(SERVICE + "SubmitMove")(body, metadata=seat, timeout=10)
        _refused(caught.value, "MALFORMED_REQUEST")
    assert client.view(game, game.tokens[1]).version == 0  # nothing applied
    for method, body in (("GetGame", bytes.fromhex("0801")), ("JoinGame", bytes.fromhex("12017f")),
                         ("AnalyzeHand", bytes.fromhex("0d00000000"))):  # fmt: skip
        with pytest.raises(grpc.RpcError) as caught:
            raw.unary_unary(SERVICE + method)(body, timeout=10)
        _refused(caught.value, "MALFORMED_REQUEST")
    # an unknown field number is no error
    assert raw.unary_unary(SERVICE + "Ping")(bytes.fromhex("0a02fffe"), timeout=10) == b""
    moved = raw.unary_unary(SERVICE + "SubmitMove")(draw + bytes.fromhex("f80601"), metadata=seat, timeout=10)
    assert rpb.SubmitMoveResponse.FromString(moved).version == 1


def test_health_and_reflection_refuse_undecodable_bodies(raw: grpc.Channel) -> None:
    body = bytes.fromhex("0a02fffe")
    with pytest.raises(grpc.RpcError) as caught:
        raw.unary_unary("/grpc.health.v1.Health/Check")(body, timeout=10)
    _refused(caught.value, "MALFORMED_REQUEST")
    with pytest.raises(grpc.RpcError) as caught:
        next(raw.unary_stream("/grpc.health.v1.Health/Watch")(body, timeout=10))
    _refused(caught.value, "MALFORMED_REQUEST")
    reflect = raw.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
    with pytest.raises(grpc.RpcError) as caught:
        list(reflect(iter([b"\x3a\x00", body]), timeout=10))  # a good request (list_services), then garbage
    _refused(caught.value, "MALFORMED_REQUEST")
    assert raw.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10) == b"\x08\x01"  # SERVING
    watch = raw.unary_stream("/grpc.health.v1.Health/Watch")(b"", timeout=10)  # it streams with context.write
    assert next(watch) == b"\x08\x01"
    watch.cancel()
    services = list(reflect(iter([b"\x3a\x00"]), timeout=10))
    assert len(services) == 1 and b"rummy.v1.RefereeService" in services[0]


def test_undecodable_bodies_log_one_short_line_not_a_traceback_each(
    raw: grpc.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(40):
        with pytest.raises(grpc.RpcError):
            raw.unary_unary(SERVICE + "GetGame")(bytes.fromhex("0a02fffe"), timeout=10)
    lines = [r for r in caplog.records if r.name == "rummy_referee" or r.name.startswith("grpc")]
    assert len(lines) <= 2, [r.getMessage() for r in lines]  # one per 10 s (a second if the test straddles one)
    assert all(r.exc_info is None and len(r.getMessage()) < 200 for r in lines)


def test_the_malformed_log_says_how_many_it_left_out(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rummy_referee")
    note = MalformedLog(every_s=3600.0)
    for _ in range(5):
        note.note("/x/Y", ValueError("Error parsing message: Wire format was corrupt"))
    note._next = 0.0  # the period is over
    note.note("/x/Y", ValueError("Error parsing message: Wire format was corrupt"))
    messages = [r.getMessage() for r in caplog.records if r.name == "rummy_referee"]
    assert len(messages) == 2 and note.seen == 6
    assert "Wire format was corrupt" in messages[0] and "4 more" in messages[1]


# ------------------------------------------------------------------------------------- numbers out of range


def test_a_huge_after_version_is_version_ahead(client: Client, game: Game) -> None:
    for after in (U64, 2**63, MAX_VERSION + 1):
        with expect_error(C.INVALID_ARGUMENT, "VERSION_AHEAD"):
            client.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id, after_version=after),
                                  metadata=md(ORGANIZER))  # fmt: skip
        with expect_error(C.INVALID_ARGUMENT, "VERSION_AHEAD"):
            stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=after),
                                           metadata=md(game.tokens[0]), timeout=10)  # fmt: skip
            next(stream)
    # the largest accepted one is just an empty page
    page = client.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id, after_version=MAX_VERSION),
                                 metadata=md(ORGANIZER))  # fmt: skip
    assert not page.events and not page.HasField("next_after_version")


def test_every_numeric_field_is_range_checked(client: Client, game: Game) -> None:
    seat, draw = game.tokens[1], move_from_text("draw stock")
    for rpc, request in (
        (client.stub.SubmitMove, rpb.SubmitMoveRequest(game_id=game.game_id, move=draw, expected_version=U64)),
        (client.stub.ValidateMove, rpb.ValidateMoveRequest(game_id=game.game_id, move=draw, expected_version=U64)),
        (client.stub.Resign, rpb.ResignRequest(game_id=game.game_id, expected_version=U64)),
        (client.stub.Resign, rpb.ResignRequest(game_id=game.game_id, expected_version=MAX_VERSION + 1)),
    ):
        with expect_error(C.INVALID_ARGUMENT, "VERSION_AHEAD"):
            rpc(request, metadata=md(seat))
    for meld_id in (-1, -(2**31)):
        with expect_error(C.INVALID_ARGUMENT, "BAD_MOVE"):
            client.move(game, seat, pb.Move(lay_off=pb.Move.LayOff(card="AS", meld_id=meld_id)))
        declare = pb.Move.Declare(layoffs=[pb.LayOffCard(card="AS", meld_id=meld_id)])
        with expect_error(C.INVALID_ARGUMENT, "BAD_MOVE"):
            client.move(game, seat, pb.Move(declare=declare))
    with expect_error(C.FAILED_PRECONDITION):  # well formed: the rules judge it (here: not in the draw phase)
        client.move(game, seat, pb.Move(lay_off=pb.Move.LayOff(card="AS", meld_id=2**31 - 1)))
    seats = [pb.SeatSpec(display_name="Ann"), pb.SeatSpec(open=True)]
    open_game = client.stub.CreateGame(rpb.CreateGameRequest(seats=seats)).game_id
    for seat_no in (-1, -(2**31), 2, 2**31 - 1):
        with expect_error(C.INVALID_ARGUMENT, "INVALID_SEAT"):
            client.stub.JoinGame(rpb.JoinGameRequest(game_id=open_game, seat=seat_no, display_name="Eve"))
    with expect_error(C.INVALID_ARGUMENT, "INVALID_PAGE_SIZE"):
        client.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id, max_events=2**32 - 1), metadata=md(ORGANIZER))
    for name in ("knock_limit", "target_score", "max_hands", "gin_bonus", "box_bonus", "max_turns"):
        for value in (2**63 - 1, -(2**63)):
            with expect_error(C.INVALID_ARGUMENT, "INVALID_OPTION"):
                client.create("gin", options={name: pb.OptionValue(int_value=value)})
    for match_fields in ({"target_score": -(2**31)}, {"target_score": 2**31 - 1}, {"max_hands": 2**31 - 1}):
        with expect_error(C.INVALID_ARGUMENT, "INVALID_OPTION"):
            client.create("rummy", match=rpb.MatchSettings(**match_fields))
    for dealer in (-1, 2**31 - 1):
        bad_deal = pb.PresetDeal()
        bad_deal.CopyFrom(GIN_KNOCK_DEAL)
        bad_deal.dealer = dealer
        with expect_error(C.INVALID_ARGUMENT, "INVALID_DEAL"):
            client.create("gin", token=ORGANIZER, preset_deals=[bad_deal])
    for kind in (3, -1, 2**31 - 1):
        with expect_error(C.INVALID_ARGUMENT, "INVALID_SEATS"):
            client.stub.CreateGame(rpb.CreateGameRequest(seats=[pb.SeatSpec(display_name="A", kind=kind),  # type: ignore[arg-type]
                                                                pb.SeatSpec(display_name="B")]))  # fmt: skip
    assert client.view(game, seat).version == 0  # nothing of this changed the game


# ------------------------------------------------------------------------------------------ echoed input


def test_errors_echo_at_most_a_short_prefix_of_the_input(client: Client, game: Game) -> None:
    huge = "X" * 10_000
    with expect_error(C.INVALID_ARGUMENT, "INVALID_CARD") as caught:
        client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=[huge]))
    assert len(caught[0].details()) < 100
    attempts = [
        ("INVALID_CARD", lambda: client.move(game, game.tokens[1], pb.Move(discard=pb.Move.Discard(card=huge)))),
        ("UNKNOWN_PROFILE", lambda: client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS"], profile=huge))),
        ("UNKNOWN_OPTION", lambda: client.create("gin", options={huge: pb.OptionValue(bool_value=True)})),
        ("INVALID_OPTION", lambda: client.create("gin", options={huge: pb.OptionValue()})),
        ("INVALID_OPTION", lambda: client.create("gin", options={"knock_limit": pb.OptionValue(string_value=huge)})),
        ("INVALID_OPTION",
         lambda: client.create("gin", options={"first_upcard_rule": pb.OptionValue(string_value=huge)})),
        ("DUPLICATE_CARD", lambda: client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", " " * 9000 + "AS"]))),
        ("INVALID_NAME", lambda: client.create("gin", names=(huge, "Bob"))),
        ("INVALID_GAME_ID", lambda: client.stub.GetGame(rpb.GetGameRequest(game_id=huge), metadata=md("t"))),
        ("INVALID_REQUEST_ID", lambda: client.move(game, game.tokens[1], move_from_text("draw stock"),
                                                   request_id=huge)),
    ]  # fmt: skip
    for reason, attempt in attempts:
        with expect_error(C.INVALID_ARGUMENT, reason) as caught:
            attempt()
        assert len(caught[0].details()) <= MAX_MESSAGE and len(caught[0].details()) < 200, reason
    assert client.view(game, game.tokens[1]).version == 0


# ------------------------------------------------------------------------------------- byte-identical answers


def test_thirty_concurrent_resends_are_the_same_bytes(raw: grpc.Channel, client: Client) -> None:
    # the knock scores 25: the last move ends the hand and the match (hand and match results with their details)
    game = client.create(
        "gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(target_score=20)
    )
    submit = raw.unary_unary(SERVICE + "SubmitMove")
    moves = [move_from_text(text) for _, text in GIN_KNOCK_MOVES]
    tokens = [game.tokens[seat] for seat, _ in GIN_KNOCK_MOVES]
    for step, (move, token) in enumerate(zip(moves, tokens, strict=True)):  # the last one ends the hand
        body = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, request_id=f"move-{step}").SerializeToString()
        start = threading.Barrier(30)

        def send(_: int, body: bytes = body, token: str = token, start: threading.Barrier = start) -> bytes:
            start.wait(30)
            answer: bytes = submit(body, metadata=md(token), timeout=60)
            return answer

        with ThreadPoolExecutor(30) as pool:
            answers = list(pool.map(send, range(30)))
        assert len(set(answers)) == 1, f"move {step}: {len(set(answers))} different answers"
        assert rpb.SubmitMoveResponse.FromString(answers[0]).version == step + 1
        assert submit(body, metadata=md(token), timeout=60) == answers[0]  # and once more, later
    last = rpb.SubmitMoveResponse.FromString(answers[0])
    assert [e.kind for e in last.events][-1] == "match_ended" and last.view.result.winners == [1]
    assert client.view(game, game.tokens[0]).version == len(moves)


def test_a_response_is_encoded_the_same_whatever_order_its_maps_were_filled_in() -> None:
    keys = [f"k{i}" for i in range(40)]  # a map this size is a hash table: plain encoding follows its history
    encodings = set()
    for order in (keys, keys[::-1], keys[1::2] + keys[::2]):
        response = rpb.SubmitMoveResponse(version=1)
        response.events.add().data.update(dict.fromkeys(order, 1))
        encodings.add(wire.encode(response))
    assert len(encodings) == 1


def test_the_server_sends_the_deterministic_encoding(raw: grpc.Channel, game: Game) -> None:
    got = raw.unary_unary(SERVICE + "GetGame")(rpb.GetGameRequest(game_id=game.game_id).SerializeToString(),
                                               metadata=md(game.tokens[1]), timeout=10)  # fmt: skip
    response = rpb.GetGameResponse.FromString(got)
    assert len(response.settings.options) > 20 and response.view.legal_moves
    assert got == wire.encode(response)


# --------------------------------------------------------------------------------- the authorization header

MALFORMED_HEADERS = ("Bearer", "Bearer ", "Bearer    ", "Basic abc", "bearer", "", "token-without-scheme")


@pytest.mark.parametrize("header", MALFORMED_HEADERS)
def test_a_malformed_header_is_no_token_where_none_is_needed(client: Client, header: str) -> None:
    auth = (("authorization", header),)
    seats = [pb.SeatSpec(display_name="Ann"), pb.SeatSpec(open=True)]
    created = client.stub.CreateGame(rpb.CreateGameRequest(profile="gin", seats=seats), metadata=auth)
    assert created.game_id
    client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name="Eve"), metadata=auth)
    client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", "2S", "3S"]), metadata=auth)
    client.stub.Ping(rpb.PingRequest(), metadata=auth)


@pytest.mark.parametrize("header", MALFORMED_HEADERS)
def test_a_malformed_header_is_bad_token_where_one_is_needed(client: Client, header: str) -> None:
    auth = (("authorization", header),)
    match = rpb.MatchSettings(target_score=20)
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=match)
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.stub.CreateGame(
            rpb.CreateGameRequest(seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")],
                                  seed=b"0123456789abcdef"), metadata=auth)  # fmt: skip
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id), metadata=auth)  # before the end
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=auth)
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock")),
                               metadata=auth)  # fmt: skip
    for seat, text in GIN_KNOCK_MOVES:  # the knock scores 25: the match is over, and a replay needs no token
        client.move(game, game.tokens[seat], move_from_text(text))
    client.replay(game, None)
    assert client.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id), metadata=auth).events
