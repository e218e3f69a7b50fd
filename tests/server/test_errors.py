"""Every status code the API returns, each with its google.rpc.ErrorInfo reason; and the token matrix: for every
RPC, the token of another seat, of another game, a garbage token and no token get the documented status."""

from __future__ import annotations

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, free_port
from server.store import game_key
from tests.server.refkit import GIN_KNOCK_DEAL as KNOCK_DEAL
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, expect_error, md, move_from_text

C = grpc.StatusCode
DRAW = move_from_text("draw stock")


@pytest.fixture
def game(client: Client) -> Game:
    """A Gin game from a known deal (dealer 0: seat 1 acts first), spectators allowed."""
    return client.create("gin", token=ORGANIZER, preset_deals=[KNOCK_DEAL], allow_spectators=True)


def _watch_first(client: Client, game: Game, token: str | None) -> rpb.WatchGameResponse:
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token))
    try:
        first: rpb.WatchGameResponse = next(stream)
        return first
    finally:
        stream.cancel()


# ------------------------------------------------------------------------------------- one test per code


def test_invalid_argument(client: Client, game: Game) -> None:
    seat = game.tokens[1]
    with expect_error(C.INVALID_ARGUMENT, "INVALID_CARD"):
        client.move(game, seat, pb.Move(discard=pb.Move.Discard(card="ZZ")))
    with expect_error(C.INVALID_ARGUMENT, "MISSING_MOVE"):
        client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id), metadata=md(seat))
    with expect_error(C.INVALID_ARGUMENT, "INVALID_GAME_ID"):
        client.stub.GetGame(rpb.GetGameRequest(game_id="no such/id"), metadata=md(seat))
    with expect_error(C.INVALID_ARGUMENT, "UNKNOWN_OPTION"):
        client.create("gin", options={"no_such_option": pb.OptionValue(bool_value=True)})
    with expect_error(C.INVALID_ARGUMENT, "INVALID_OPTION"):
        client.create("gin", options={"knock_limit": pb.OptionValue(string_value="ten")})
    with expect_error(C.INVALID_ARGUMENT, "UNKNOWN_PROFILE"):
        client.create("canasta")
    with expect_error(C.INVALID_ARGUMENT, "INVALID_OPTION"):
        client.create("gin", names=("A", "B", "C"))  # Gin is for two
    with expect_error(C.INVALID_ARGUMENT, "INVALID_DEAL"):
        client.create("gin", token=ORGANIZER, preset_deals=[pb.PresetDeal(dealer=0, upcard="AS")])
    with expect_error(C.INVALID_ARGUMENT, "INVALID_HAND_SIZE"):
        client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=[]))


def test_failed_precondition(client: Client, game: Game) -> None:
    with expect_error(C.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
        client.move(game, game.tokens[0], DRAW)
    client.move(game, game.tokens[1], DRAW)
    with expect_error(C.FAILED_PRECONDITION, "CARD_NOT_IN_HAND"):
        client.move(game, game.tokens[1], move_from_text("discard 4S"))
    with expect_error(C.FAILED_PRECONDITION, "SEAT_TAKEN"):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id=game.game_id, seat=0, display_name="Eve"))


def test_aborted_on_a_stale_expected_version(client: Client, game: Game) -> None:
    client.move(game, game.tokens[1], DRAW, expected_version=0)
    with expect_error(C.ABORTED, "VERSION_MISMATCH"):
        client.move(game, game.tokens[1], move_from_text("discard KC"), expected_version=0)
    with expect_error(C.ABORTED, "VERSION_MISMATCH"):
        client.stub.ValidateMove(
            rpb.ValidateMoveRequest(game_id=game.game_id, move=move_from_text("discard KC"), expected_version=5),
            metadata=md(game.tokens[1]),
        )


def test_unauthenticated(client: Client, game: Game) -> None:
    with expect_error(C.UNAUTHENTICATED, "MISSING_TOKEN"):
        client.view(game, None)  # type: ignore[arg-type]
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.view(game, "garbage")
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id),
                            metadata=(("authorization", f"Basic {game.tokens[0]}"),))  # fmt: skip


def test_permission_denied(client: Client, game: Game) -> None:
    with expect_error(C.PERMISSION_DENIED, "SPECTATOR"):
        client.move(game, game.spectator, DRAW)
    with expect_error(C.PERMISSION_DENIED, "MATCH_NOT_OVER"):
        client.replay(game, game.tokens[0])
    with expect_error(C.PERMISSION_DENIED, "ORGANIZER_ONLY"):
        client.create("gin", token=game.tokens[0], seed=b"0123456789abcdef")


def test_not_found(client: Client) -> None:
    missing = Game("nosuchgame", {}, "", rpb.CreateGameResponse())
    with expect_error(C.NOT_FOUND, "GAME_NOT_FOUND"):
        client.view(missing, "some-token")
    with expect_error(C.NOT_FOUND, "GAME_NOT_FOUND"):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id="nosuchgame", display_name="Eve"))


def test_resource_exhausted(client: Client) -> None:
    with expect_error(C.RESOURCE_EXHAUSTED, "TOO_MANY_PRESETS"):
        client.create("gin", token=ORGANIZER, preset_deals=[KNOCK_DEAL] * 201)
    # over the transport's 256 KiB limit: refused by gRPC itself, before the referee sees it (no ErrorInfo)
    with pytest.raises(grpc.RpcError) as caught:
        client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(profile="x" * 300_000))
    assert caught.value.code() == C.RESOURCE_EXHAUSTED


def test_unavailable_without_redis() -> None:
    dead = ServerThread(f"redis://127.0.0.1:{free_port()}/0")
    client = Client(dead.address)
    try:
        with expect_error(C.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.create("gin")
        with expect_error(C.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.view(Game("g", {}, "", rpb.CreateGameResponse()), "token")
        client.stub.Ping(rpb.PingRequest())  # what needs no storage still works
    finally:
        client.close()
        dead.stop()


def test_internal_for_a_corrupt_stored_state(client: Client, game: Game, redis_server: RedisProcess) -> None:
    redis.Redis.from_url(redis_server.url).hset(game_key(game.game_id), "state", '{"v": 1, "rules": "TD"}')
    with expect_error(C.INTERNAL, "INTERNAL") as caught:
        client.view(game, game.tokens[0])
    assert "TD" not in caught[0].details()


# ------------------------------------------------------------------------------------------ token matrix

OTHER_SEAT, OTHER_GAME, GARBAGE, NONE = "other seat", "other game", "garbage", "none"


def _token(kind: str, game: Game, other: Game) -> str | None:
    return {OTHER_SEAT: game.tokens[0], OTHER_GAME: other.tokens[1], GARBAGE: "x" * 43, NONE: None}[kind]


UNAUTH = {OTHER_GAME: "BAD_TOKEN", GARBAGE: "BAD_TOKEN", NONE: "MISSING_TOKEN"}


@pytest.mark.parametrize("kind", [OTHER_SEAT, OTHER_GAME, GARBAGE, NONE])
def test_token_matrix(client: Client, game: Game, kind: str) -> None:
    """Seat 1 is to act; the caller holds a token that is not seat 1's."""
    other = client.create("gin")
    token = _token(kind, game, other)
    gid = game.game_id

    def denied(call: object) -> None:
        assert callable(call)
        if kind == OTHER_SEAT:
            call()
        else:
            with expect_error(C.UNAUTHENTICATED, UNAUTH[kind]):
                call()

    # GetGame / WatchGame: a seat's token only ever shows that seat's own view
    if kind == OTHER_SEAT:
        assert client.view(game, token).viewer_seat == 0  # type: ignore[arg-type]
        assert _watch_first(client, game, token).snapshot.viewer_seat == 0
    else:
        denied(lambda: client.view(game, token))  # type: ignore[arg-type]
        denied(lambda: _watch_first(client, game, token))
    # SubmitMove / ValidateMove: another seat's token cannot play seat 1's turn
    for rpc in (client.stub.SubmitMove, client.stub.ValidateMove):
        request_type = rpb.SubmitMoveRequest if rpc is client.stub.SubmitMove else rpb.ValidateMoveRequest
        if kind == OTHER_SEAT:
            with expect_error(C.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
                rpc(request_type(game_id=gid, move=DRAW), metadata=md(token))
        else:
            denied(lambda rpc=rpc, rt=request_type: rpc(rt(game_id=gid, move=DRAW), metadata=md(token)))
    # GetReplay before the end
    if kind == OTHER_SEAT:
        with expect_error(C.PERMISSION_DENIED, "MATCH_NOT_OVER"):
            client.replay(game, token)
    else:
        denied(lambda: client.replay(game, token))
    # CreateGame with organizer-only fields: only the organizer token will do
    if kind == NONE:
        with expect_error(C.UNAUTHENTICATED, "MISSING_TOKEN"):
            client.create("gin", token=token, seed=b"0123456789abcdef")
    else:
        with expect_error(C.PERMISSION_DENIED, "ORGANIZER_ONLY"):
            client.create("gin", token=token, seed=b"0123456789abcdef")
    # JoinGame, AnalyzeHand, Ping take no token: one sent is ignored
    with expect_error(C.FAILED_PRECONDITION, "SEAT_TAKEN"):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id=gid, display_name="Eve"), metadata=md(token))
    client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", "2S", "3S"]), metadata=md(token))
    client.stub.Ping(rpb.PingRequest(), metadata=md(token))
    # nothing of this changed the game
    assert client.view(game, game.tokens[1]).version == 0


def test_not_in_hand_says_nothing_about_where_the_card_is(client: Client, game: Game) -> None:
    client.move(game, game.tokens[1], DRAW)  # seat 1 holds the knocker's hand + 2C; 4S is seat 0's, 9H in stock
    details = []
    for card in ("4S", "9H"):
        with expect_error(C.FAILED_PRECONDITION, "CARD_NOT_IN_HAND") as caught:
            client.move(game, game.tokens[1], move_from_text(f"discard {card}"))
        details.append(caught[0].details().replace(card, "<card>"))
    assert details[0] == details[1]


def test_no_status_is_unknown_for_a_garbage_move(client: Client, game: Game) -> None:
    bad = [
        pb.Move(lay_off=pb.Move.LayOff(card="AS", meld_id=-5)),
        pb.Move(meld=pb.Move.Meld(cards=["AS", "AS", "AS"])),
        pb.Move(knock=pb.Move.Knock(discard="KC", melds=pb.Melds(melds=[pb.Cards(cards=[])]))),
        pb.Move(declare=pb.Move.Declare(best=True, melds=[pb.Cards(cards=["AS"])])),
        pb.Move(discard=pb.Move.Discard(card="")),
    ]
    for move in bad:
        with pytest.raises(grpc.RpcError) as caught:
            client.move(game, game.tokens[1], move)
        assert caught.value.code() in (C.INVALID_ARGUMENT, C.FAILED_PRECONDITION), caught.value.details()


def test_a_log_line_names_an_engine_error_by_its_code_never_its_text() -> None:
    """The background loops log what stopped them with ``errors.describe``; an engine error's text may name a card
    (RULES.md section 4: logs never carry one), so it is logged by its type and reason code."""
    from engine.errors import IllegalMoveError
    from server.errors import describe

    text = describe(IllegalMoveError("CARD_NOT_IN_HAND", "7H is not in the hand of seat 1"))
    assert text == "IllegalMoveError CARD_NOT_IN_HAND" and "7H" not in text
    assert describe(TimeoutError()) == "TimeoutError" and describe(OSError("refused")) == "refused"
