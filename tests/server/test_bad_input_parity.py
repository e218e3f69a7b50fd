"""Bad requests get the same status and reason code as before the wire refactor (issue 11), on every transport.

The table was taken from the referee of commit f6cb0f5 (before ``wire/`` and ``wire.Malformed``) and checked
against this one: each bad request, over gRPC, Connect JSON, Connect proto and gRPC-Web, must be refused with
exactly that status and ErrorInfo reason. And the moves refused leave every Redis key of the game byte for byte as
it was (RULES.md section 4: a rejected move changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
import redis
from google.protobuf.message import Message

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, expect_error, md
from tests.server.webkit import PROTOCOLS, call

M = pb.Move
OV = pb.OptionValue
SEATS = [pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")]
FORFEIT = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH)
PER_MOVE = pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=5000))
CARDS12 = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS"]
UNKNOWN_ENUM: Any = 99  # an enum value no version knows
INVALID, FAILED, ABORTED = "INVALID_ARGUMENT", "FAILED_PRECONDITION", "ABORTED"
_RESPONSES: dict[str, type[Message]] = {
    "CreateGame": rpb.CreateGameResponse, "SubmitMove": rpb.SubmitMoveResponse,
    "ValidateMove": rpb.ValidateMoveResponse, "AnalyzeHand": rpb.AnalyzeHandResponse,
    "Resign": rpb.ResignResponse, "GetReplay": rpb.GetReplayResponse, "JoinGame": rpb.JoinGameResponse,
    "GetGame": rpb.GetGameResponse,
}  # fmt: skip


def _create(**fields: object) -> rpb.CreateGameRequest:
    return rpb.CreateGameRequest(profile="gin", seats=SEATS, **fields)  # type: ignore[arg-type]


#: CreateGame requests (sent with the organizer's token), the status and the reason f6cb0f5 answered
CREATES: list[tuple[str, rpb.CreateGameRequest, str, str]] = [
    ("unknown profile", rpb.CreateGameRequest(profile="nope", seats=SEATS), INVALID, "UNKNOWN_PROFILE"),
    ("unknown option", _create(options={"zzz": OV(int_value=1)}), INVALID, "UNKNOWN_OPTION"),
    ("option without a value", _create(options={"knock_limit": OV()}), INVALID, "INVALID_OPTION"),
    ("option of the wrong type", _create(options={"knock_limit": OV(string_value="x")}), INVALID, "INVALID_OPTION"),
    ("target_score twice", _create(options={"target_score": OV(int_value=100)},
                                   match=rpb.MatchSettings(target_score=100)), INVALID, "INVALID_OPTION"),
    ("unknown seat kind", rpb.CreateGameRequest(profile="gin", seats=[pb.SeatSpec(display_name="A", kind=UNKNOWN_ENUM),
                                                                      SEATS[1]]), INVALID, "INVALID_SEATS"),
    ("one seat", rpb.CreateGameRequest(profile="gin", seats=SEATS[:1]), INVALID, "INVALID_OPTION"),
    ("seven seats", rpb.CreateGameRequest(profile="rummy", seats=[pb.SeatSpec(display_name=f"P{i}")
                                                                  for i in range(7)]), INVALID, "INVALID_SEATS"),
    ("empty name", rpb.CreateGameRequest(profile="gin", seats=[pb.SeatSpec(display_name=""), SEATS[1]]), INVALID,
     "INVALID_NAME"),
    ("policy without a time control", _create(timeout_policy=FORFEIT), INVALID, "INVALID_TIME_CONTROL"),
    ("empty time control with a policy", _create(time_control=pb.TimeControl(), timeout_policy=FORFEIT), INVALID,
     "INVALID_TIME_CONTROL"),
    ("unknown policy", _create(time_control=PER_MOVE, timeout_policy=pb.TimeoutPolicy(kind=UNKNOWN_ENUM)), INVALID,
     "INVALID_TIME_CONTROL"),
    ("max_auto_moves with forfeit", _create(time_control=PER_MOVE, timeout_policy=pb.TimeoutPolicy(
        kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH, max_auto_moves=3)), INVALID, "INVALID_TIME_CONTROL"),
    ("per move limit 0", _create(time_control=pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=0))), INVALID,
     "INVALID_TIME_CONTROL"),
    ("open seat with a time control", rpb.CreateGameRequest(
        profile="gin", seats=[pb.SeatSpec(display_name="A", open=True), SEATS[1]], time_control=PER_MOVE), INVALID,
     "INVALID_TIME_CONTROL"),
    ("preset deal with a bad card", _create(preset_deals=[pb.PresetDeal(dealer=0, upcard="ZZ")]), INVALID,
     "INVALID_CARD"),
    ("preset deal with a card twice", _create(preset_deals=[pb.PresetDeal(
        dealer=0, hands=[pb.Cards(cards=["AS", "AS"])], upcard="2S")]), INVALID, "DUPLICATE_CARD"),
    ("spectator delay out of range", _create(allow_spectators=True, spectator_delay=pb.SpectatorDelay(moves=10**9)),
     INVALID, "INVALID_OPTION"),
]  # fmt: skip

#: AnalyzeHand requests, the status and the reason f6cb0f5 answered (the hand's size is checked first)
ANALYSES: list[tuple[str, rpb.AnalyzeHandRequest, str, str]] = [
    ("no card", rpb.AnalyzeHandRequest(), INVALID, "INVALID_HAND_SIZE"),
    ("twelve cards", rpb.AnalyzeHandRequest(cards=CARDS12), INVALID, "INVALID_HAND_SIZE"),
    ("twelve cards, unknown profile", rpb.AnalyzeHandRequest(cards=CARDS12, profile="nope"), INVALID,
     "INVALID_HAND_SIZE"),
    ("twelve cards, unknown option", rpb.AnalyzeHandRequest(cards=CARDS12, options={"zz": OV(int_value=1)}), INVALID,
     "INVALID_HAND_SIZE"),
    ("a card twice", rpb.AnalyzeHandRequest(cards=["AS", "AS"]), INVALID, "DUPLICATE_CARD"),
    ("a bad card", rpb.AnalyzeHandRequest(cards=["ZZ"]), INVALID, "INVALID_CARD"),
    ("unknown profile", rpb.AnalyzeHandRequest(cards=["AS"], profile="nope"), INVALID, "UNKNOWN_PROFILE"),
    ("unknown option", rpb.AnalyzeHandRequest(cards=["AS"], options={"zz": OV(int_value=1)}), INVALID,
     "UNKNOWN_OPTION"),
    ("option without a value", rpb.AnalyzeHandRequest(cards=["AS"], options={"knock_limit": OV()}), INVALID,
     "INVALID_OPTION"),
]  # fmt: skip


def _moves(hand: list[str]) -> list[tuple[str, M, str, str]]:
    """Moves of the seat to act at version 0 of a Gin game (phase draw), the status and the reason of f6cb0f5,
    for SubmitMove and ValidateMove alike."""
    a, b, c = hand[:3]
    return [
        ("no move", M(), INVALID, "MISSING_MOVE"),
        ("a bad card", M(discard=M.Discard(card="ZZ")), INVALID, "INVALID_CARD"),
        ("an empty card", M(discard=M.Discard(card="")), INVALID, "INVALID_CARD"),
        ("a discard before drawing", M(discard=M.Discard(card=a)), FAILED, "WRONG_PHASE"),
        ("a knock naming a card twice", M(knock=M.Knock(discard=a, melds=pb.Melds(melds=[pb.Cards(cards=[b, b, c])]))),
         INVALID, "DUPLICATE_CARD"),
        ("a meld in Gin", M(meld=M.Meld(cards=[a, b, c])), FAILED, "WRONG_PHASE"),
        ("a negative meld id", M(lay_off=M.LayOff(card=a, meld_id=-1)), INVALID, "BAD_MOVE"),
        ("an unknown meld id", M(lay_off=M.LayOff(card=a, meld_id=99)), FAILED, "WRONG_PHASE"),
        ("declare best with melds", M(declare=M.Declare(best=True, melds=[pb.Cards(cards=[a])])), INVALID,
         "BAD_MOVE"),
        ("declare naming a card twice", M(declare=M.Declare(melds=[pb.Cards(cards=[a, a])])), INVALID,
         "DUPLICATE_CARD"),
        ("big gin before drawing", M(big_gin=M.BigGin()), FAILED, "WRONG_PHASE"),
        ("a pass in the draw phase", M(pass_turn=M.PassTurn()), FAILED, "WRONG_PHASE"),
        ("done in the draw phase", M(done=M.Done()), FAILED, "WRONG_PHASE"),
    ]  # fmt: skip


def _requests(game: Game, hand: list[str]) -> Iterator[tuple[str, str, Message, str | None, str, str]]:
    """(name, method, request, token, status, reason) of every bad request of the table."""
    mover, other = game.tokens[1], game.tokens[0]  # (GIN_KNOCK_DEAL-like games: see the fixture, seat 1 acts)
    for name, create, status, reason in CREATES:
        yield f"create: {name}", "CreateGame", create, ORGANIZER, status, reason
    for name, analyze, status, reason in ANALYSES:
        yield f"analyze: {name}", "AnalyzeHand", analyze, None, status, reason
    gid = game.game_id
    for name, move, status, reason in _moves(hand):
        yield f"move: {name}", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=move), mover, status, reason
        validate = rpb.ValidateMoveRequest(game_id=gid, move=move)
        yield f"validate: {name}", "ValidateMove", validate, mover, status, reason
    draw = M(draw_stock=M.DrawStock())
    other_requests: list[tuple[str, str, Message, str | None, str, str]] = [
        ("expected_version beyond any game", "SubmitMove",
         rpb.SubmitMoveRequest(game_id=gid, move=draw, expected_version=2**60), mover, INVALID, "VERSION_AHEAD"),
        ("a stale expected_version", "SubmitMove",
         rpb.SubmitMoveRequest(game_id=gid, move=draw, expected_version=7), mover, ABORTED, "VERSION_MISMATCH"),
        ("a long request_id", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=draw, request_id="x" * 500),
         mover, INVALID, "INVALID_REQUEST_ID"),
        ("an unprintable request_id", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=draw, request_id="a\x01"),
         mover, INVALID, "INVALID_REQUEST_ID"),
        ("not the seat's turn", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=draw), other, FAILED,
         "NOT_YOUR_TURN"),
        ("no token", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=draw), None, "UNAUTHENTICATED",
         "MISSING_TOKEN"),
        ("a spectator's move", "SubmitMove", rpb.SubmitMoveRequest(game_id=gid, move=draw), game.spectator,
         "PERMISSION_DENIED", "SPECTATOR"),
        ("a spectator's resignation", "Resign", rpb.ResignRequest(game_id=gid), game.spectator, "PERMISSION_DENIED",
         "SPECTATOR"),
        ("a stale resignation", "Resign", rpb.ResignRequest(game_id=gid, expected_version=5), mover, ABORTED,
         "VERSION_MISMATCH"),
        ("an unknown game", "SubmitMove", rpb.SubmitMoveRequest(game_id="nope", move=draw), mover, "NOT_FOUND",
         "GAME_NOT_FOUND"),
        ("a bad game id", "SubmitMove", rpb.SubmitMoveRequest(game_id="{x}", move=draw), mover, INVALID,
         "INVALID_GAME_ID"),
        ("a replay before the end", "GetReplay", rpb.GetReplayRequest(game_id=gid), mover, "PERMISSION_DENIED",
         "MATCH_NOT_OVER"),
        ("a replay page too large", "GetReplay", rpb.GetReplayRequest(game_id=gid, max_events=5000), ORGANIZER,
         INVALID, "INVALID_PAGE_SIZE"),
        ("a join with no open seat", "JoinGame", rpb.JoinGameRequest(game_id=gid, display_name="X"), None, FAILED,
         "SEAT_TAKEN"),
        ("a join of seat 9", "JoinGame", rpb.JoinGameRequest(game_id=gid, display_name="X", seat=9), None, INVALID,
         "INVALID_SEAT"),
        ("a join of seat -1", "JoinGame", rpb.JoinGameRequest(game_id=gid, display_name="X", seat=-1), None, INVALID,
         "INVALID_SEAT"),
        ("a view with a bad token", "GetGame", rpb.GetGameRequest(game_id=gid), "nope", "UNAUTHENTICATED",
         "BAD_TOKEN"),
    ]  # fmt: skip
    yield from other_requests


def _snapshot(r: redis.Redis, game_id: str) -> dict[bytes, object]:
    """Every key of the game, with its value, as Redis holds it."""
    readers: dict[bytes, Callable[[bytes], object]] = {
        b"hash": lambda k: sorted(r.hgetall(k).items()), b"list": lambda k: r.lrange(k, 0, -1),
        b"string": r.get, b"stream": r.xrange, b"set": lambda k: sorted(r.smembers(k)),
    }  # fmt: skip
    dump: dict[bytes, object] = {}
    for key in sorted(r.scan_iter(match=f"*{{{game_id}}}*")):
        kind: Any = r.type(key)
        dump[key] = readers[kind](key) if kind in readers else kind
    return dump


@pytest.fixture
def bad_game(client: Client) -> tuple[Game, list[str]]:
    """A Gin game whose seat 1 acts first (phase draw), and that seat's hand."""
    return seat_1_to_act(client)


def seat_1_to_act(client: Client) -> tuple[Game, list[str]]:
    """A new Gin game whose seat 1 acts first (phase draw), and that seat's hand."""
    game = client.create("gin", token=ORGANIZER, allow_spectators=True, seed=bytes(range(32)))
    view = client.view(game, game.tokens[1])
    if view.to_act != 1:  # the seed decides the dealer: make seat 1 the one to act
        game.tokens = {0: game.tokens[1], 1: game.tokens[0]}
        view = client.view(game, game.tokens[1])
    assert view.to_act == 1 and view.phase == pb.PHASE_DRAW
    return game, list(view.hand)


def test_bad_requests_over_grpc_get_the_reasons_they_got_before_and_change_nothing(
    client: Client, referee_server: ServerThread, bad_game: tuple[Game, list[str]]
) -> None:
    game, hand = bad_game
    store = redis.Redis.from_url(referee_server.redis_url)
    before = _snapshot(store, game.game_id)
    assert before, "the game's keys were not found"
    for name, method, request, token, status, reason in _requests(game, hand):
        with expect_error(getattr(grpc.StatusCode, status), reason):
            getattr(client.stub, method)(request, metadata=md(token), timeout=30)
            pytest.fail(f"{name}: accepted")
    assert _snapshot(store, game.game_id) == before


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bad_requests_over_http_get_the_reasons_they_got_before(web: ServerThread, protocol: str) -> None:
    client = Client(web.address)
    try:
        game, hand = seat_1_to_act(client)
        with httpx.Client(base_url=web.http_url, timeout=60.0) as http:
            for name, method, request, token, status, reason in _requests(game, hand):
                answer = call(http, protocol, method, request, _RESPONSES[method], token)
                assert (answer.status, answer.reason) == (status, reason), (name, answer)
    finally:
        client.close()
