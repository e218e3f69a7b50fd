"""An adversary's moves against RULES.md, through the real server over real sockets and a real Redis: each
malformed or illegal move is refused with its status and stable reason (docs/rules.md section 9), by SubmitMove
and ValidateMove alike, and leaves the game as it was (RULES.md 4: "A rejected move changes anything" must never
happen): every seat's GetGame and the version are the same before and after."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    Game,
    deal,
    expect_error,
    md,
    move_from_text,
)

C = grpc.StatusCode
INVALID, FAILED, ABORTED = C.INVALID_ARGUMENT, C.FAILED_PRECONDITION, C.ABORTED


def _views(client: Client, game: Game) -> list[bytes]:
    return [client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md(token))
            .view.SerializeToString(deterministic=True) for token in game.tokens.values()]  # fmt: skip


def refused(client: Client, game: Game, seat: int, move: pb.Move, code: grpc.StatusCode, reason: str,
            **fields: Any) -> None:  # fmt: skip
    """``move`` by ``seat`` is refused with ``code`` and ``reason`` by SubmitMove and ValidateMove, and the game
    is unchanged."""
    before = _views(client, game)
    token = md(game.tokens[seat])
    with expect_error(code, reason):
        client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id, move=move, **fields), metadata=token)
    fields.pop("request_id", None)
    with expect_error(code, reason):
        client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=move, **fields), metadata=token)
    assert _views(client, game) == before


def moved(client: Client, game: Game, seat: int, *texts: str) -> int:
    version = 0
    for text in texts:
        version = client.move(game, game.tokens[seat], move_from_text(text)).version
    return version


def cards(*groups: str) -> list[pb.Cards]:
    return [pb.Cards(cards=g.split()) for g in groups]


def lay_off(card: str, meld_id: int) -> pb.Move:
    return pb.Move(lay_off=pb.Move.LayOff(card=card, meld_id=meld_id))


def meld(text: str) -> pb.Move:
    return pb.Move(meld=pb.Move.Meld(cards=text.split()))


def declare(melds: list[pb.Cards], *layoffs: tuple[str, int]) -> pb.Move:
    return pb.Move(declare=pb.Move.Declare(melds=melds, layoffs=[pb.LayOffCard(card=c, meld_id=i) for c, i in layoffs]))


def table_meld(client: Client, game: Game, text: str) -> int:
    """The id of the table meld made of exactly these cards."""
    view = client.view(game, game.tokens[0])
    (found,) = [m.id for m in view.melds if sorted(m.cards) == sorted(text.split())]
    return int(found)


# ------------------------------------------------------------------------------------------------- Gin


@pytest.fixture
def gin(client: Client) -> Game:
    """GIN_KNOCK_DEAL (tests/server/refkit.py): seat 1 holds AS-3S 4H-6H 7D-9D KC, draws 2C, knocks with KC."""
    return client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])


def test_gin_discard_phase_refusals(client: Client, gin: Game) -> None:
    refused(client, gin, 1, move_from_text("discard AS"), FAILED, "WRONG_PHASE")  # before drawing
    refused(client, gin, 0, move_from_text("draw stock"), FAILED, "NOT_YOUR_TURN")
    assert moved(client, gin, 1, "draw stock") == 1
    discard = pb.Move(discard=pb.Move.Discard(card="4S"))  # the defender's card
    refused(client, gin, 1, discard, FAILED, "CARD_NOT_IN_HAND")
    refused(client, gin, 1, pb.Move(discard=pb.Move.Discard(card="QC")), FAILED, "CARD_NOT_IN_HAND")  # the upcard
    for text in ("", "ZZ", "1S", "A\x00S", "\uff21\uff33", "AS\u0301", "AS " * 3000, "11S", "0S"):
        refused(client, gin, 1, pb.Move(discard=pb.Move.Discard(card=text)), INVALID, "INVALID_CARD")
    knock = pb.Move.Knock
    refused(client, gin, 1, pb.Move(knock=knock(discard="KC", melds=pb.Melds(melds=cards("AS 2S")))), FAILED,
            "INVALID_MELD")  # fmt: skip
    refused(client, gin, 1, pb.Move(knock=knock(discard="KC", melds=pb.Melds(melds=[pb.Cards()]))), INVALID,
            "BAD_MOVE")  # fmt: skip
    refused(client, gin, 1, pb.Move(knock=knock(discard="KC", melds=pb.Melds(melds=cards("AS 2S 3S 4S")))),
            FAILED, "CARD_NOT_IN_HAND")  # fmt: skip
    refused(client, gin, 1, pb.Move(knock=knock(discard="KC", melds=pb.Melds(melds=cards("AS 2S 3S", "3S 4H 5H")))),
            FAILED, "INVALID_MELD")  # fmt: skip
    refused(client, gin, 1, pb.Move(knock=knock(discard="KC", melds=pb.Melds(melds=cards("AS 2S 3S")))), FAILED,
            "KNOCK_OVER_LIMIT")  # fmt: skip
    refused(client, gin, 1, lay_off("4H", 0), FAILED, "WRONG_PHASE")
    refused(client, gin, 1, meld("4H 5H 6H"), FAILED, "WRONG_PHASE")
    refused(client, gin, 1, pb.Move(), INVALID, "MISSING_MOVE")


def test_gin_request_fields_out_of_range(client: Client, gin: Game) -> None:
    draw = move_from_text("draw stock")
    refused(client, gin, 1, draw, ABORTED, "VERSION_MISMATCH", expected_version=1)
    refused(client, gin, 1, draw, ABORTED, "VERSION_MISMATCH", expected_version=10**9)
    refused(client, gin, 1, draw, INVALID, "VERSION_AHEAD", expected_version=2**53)
    refused(client, gin, 1, draw, INVALID, "VERSION_AHEAD", expected_version=2**64 - 1)  # -1 sent as an int64
    with expect_error(INVALID, "INVALID_REQUEST_ID"):
        client.move(gin, gin.tokens[1], draw, request_id="r" * 10_000)
    with expect_error(INVALID, "INVALID_REQUEST_ID"):
        client.move(gin, gin.tokens[1], draw, request_id="a\x00b")
    for game_id in (gin.game_id + "\x00", "\x00", "gäme", "\uff47ame", gin.game_id + "\u200b", "g" * 10_000, " "):
        with expect_error(INVALID, "INVALID_GAME_ID"):
            client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game_id, move=draw), metadata=md(gin.tokens[1]))
        with expect_error(INVALID, "INVALID_GAME_ID"):
            client.stub.GetGame(rpb.GetGameRequest(game_id=game_id), metadata=md(gin.tokens[1]))
    assert client.view(gin, gin.tokens[1]).version == 0


def test_gin_declaration_naming_a_card_twice_is_duplicate_card(client: Client, gin: Game) -> None:
    """RULES.md 1 and 4: a card is in one place only. A declaration that lays a card off twice, or melds it and
    lays it off, is malformed (DUPLICATE_CARD), not a card the defender lacks; in two of its melds INVALID_MELD."""
    assert moved(client, gin, 1, "draw stock", "knock KC") == 2
    spades, hearts = table_meld(client, gin, "AS 2S 3S"), table_meld(client, gin, "4H 5H 6H")
    refused(client, gin, 0, declare([], ("4S", spades), ("4S", spades)), INVALID, "DUPLICATE_CARD")
    refused(client, gin, 0, declare([], ("4S", spades), ("7H", hearts), ("4s", spades)), INVALID, "DUPLICATE_CARD")
    refused(client, gin, 0, declare(cards("JS QS KS"), ("KS", spades)), INVALID, "DUPLICATE_CARD")
    refused(client, gin, 0, declare(cards("JS QS KS", "JS QS KS")), FAILED, "INVALID_MELD")
    refused(client, gin, 1, declare([], ("4S", spades), ("4S", spades)), INVALID, "DUPLICATE_CARD")  # malformed first
    assert client.move(gin, gin.tokens[0], declare(cards("JS QS KS"), ("4S", spades), ("7H", hearts))).version == 3


def test_gin_defender_refusals(client: Client, gin: Game) -> None:
    """The defender (seat 0: 4S 7H TD JS-QS-KS 5C 5D 9C 8C) after the knock."""
    assert moved(client, gin, 1, "draw stock", "knock KC") == 2
    spades, hearts, diamonds = (table_meld(client, gin, t) for t in ("AS 2S 3S", "4H 5H 6H", "7D 8D 9D"))
    refused(client, gin, 1, move_from_text("done"), FAILED, "NOT_YOUR_TURN")
    refused(client, gin, 0, lay_off("4S", -1), INVALID, "BAD_MOVE")
    refused(client, gin, 0, lay_off("4S", -(2**31)), INVALID, "BAD_MOVE")
    refused(client, gin, 0, lay_off("4S", 99), FAILED, "UNKNOWN_MELD")
    refused(client, gin, 0, lay_off("4S", 2**31 - 1), FAILED, "UNKNOWN_MELD")
    refused(client, gin, 0, lay_off("4S", hearts), FAILED, "CANNOT_LAY_OFF")
    refused(client, gin, 0, lay_off("3H", hearts), FAILED, "CARD_NOT_IN_HAND")  # fits, but the stock's
    refused(client, gin, 0, meld("JS QS"), FAILED, "INVALID_MELD")
    refused(client, gin, 0, meld(""), INVALID, "INVALID_CARD")
    refused(client, gin, 0, declare(cards("JS QS")), FAILED, "INVALID_MELD")
    refused(client, gin, 0, declare([pb.Cards()]), INVALID, "BAD_MOVE")
    refused(client, gin, 0, declare([], ("4S", hearts)), FAILED, "CANNOT_LAY_OFF")
    # the defender's own meld is no target: layoffs go only onto the knocker's melds
    assert moved(client, gin, 0, "meld JS QS KS") == 3
    own = table_meld(client, gin, "JS QS KS")
    refused(client, gin, 0, lay_off("TS", own), FAILED, "CARD_NOT_IN_HAND")
    refused(client, gin, 0, lay_off("TD", own), FAILED, "CANNOT_LAY_OFF")
    refused(client, gin, 0, lay_off("JS", own), FAILED, "CARD_NOT_IN_HAND")  # already on the table
    ended = client.move(gin, gin.tokens[0], declare([], ("4S", spades), ("7H", hearts), ("TD", diamonds)))
    assert ended.version == 4


# ----------------------------------------------------------------------------------------------- Rummy

# dealer 0, seat 1 first: K-A-2 of spades, Q-K-A of hearts, 5C-6C-7C; seat 0 holds 3D 3H 3S and 8C (fits 5C-7C)
RUMMY_DEAL = deal(0, ["3D 3H 3S 8C 9H 4D 2H TH JD 6S", "KS AS 2S QH KH AH 5C 6C 7C 9D"], "8D", "JC TC")


def _rummy(client: Client, **options: bool) -> Game:
    values = {name: pb.OptionValue(bool_value=v) for name, v in options.items()}
    return client.create("rummy", token=ORGANIZER, preset_deals=[RUMMY_DEAL], options=values)


def test_rummy_melds_that_are_no_runs(client: Client) -> None:
    game = _rummy(client)
    assert moved(client, game, 1, "draw stock") == 1
    refused(client, game, 1, meld("KS AS 2S"), FAILED, "INVALID_MELD")  # never round the corner
    refused(client, game, 1, meld("QH KH AH"), FAILED, "INVALID_MELD")  # ace_high_low off
    refused(client, game, 1, meld("5C 6C"), FAILED, "INVALID_MELD")
    refused(client, game, 1, meld("5C 6C 6C"), INVALID, "DUPLICATE_CARD")
    refused(client, game, 1, meld(""), INVALID, "INVALID_CARD")
    refused(client, game, 1, meld("5C 6C 7C 8C"), FAILED, "CARD_NOT_IN_HAND")
    refused(client, game, 1, lay_off("JC", 0), FAILED, "UNKNOWN_MELD")
    refused(client, game, 1, lay_off("JC", -1), INVALID, "BAD_MOVE")
    refused(client, game, 1, declare(cards("5C 6C 7C")), FAILED, "WRONG_PHASE")
    high = _rummy(client, ace_high_low=True)
    assert moved(client, high, 1, "draw stock") == 1
    refused(client, high, 1, meld("KS AS 2S"), FAILED, "INVALID_MELD")  # not with ace_high_low either
    assert moved(client, high, 1, "meld QH KH AH") == 2


def test_gin_the_card_just_taken_is_not_discarded_nor_knocked_with(client: Client, gin: Game) -> None:
    assert moved(client, gin, 1, "draw discard") == 1  # the upcard QC
    refused(client, gin, 1, move_from_text("discard QC"), FAILED, "DISCARD_TAKEN_CARD")
    refused(client, gin, 1, move_from_text("knock QC"), FAILED, "DISCARD_TAKEN_CARD")
    assert moved(client, gin, 1, "discard KC") == 2


def test_gin_take_or_pass(client: Client) -> None:
    take_or_pass = {"first_upcard_rule": pb.OptionValue(string_value="take_or_pass")}
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], options=take_or_pass)
    refused(client, game, 1, move_from_text("draw stock"), FAILED, "WRONG_PHASE")
    moved(client, game, 1, "pass")
    refused(client, game, 1, move_from_text("pass"), FAILED, "NOT_YOUR_TURN")
    moved(client, game, 0, "pass")
    refused(client, game, 1, move_from_text("draw discard"), FAILED, "MUST_DRAW_STOCK")
    refused(client, game, 1, move_from_text("pass"), FAILED, "WRONG_PHASE")
    assert moved(client, game, 1, "draw stock") == 3


def test_rummy_the_card_just_taken_is_not_discarded(client: Client) -> None:
    game = _rummy(client)
    assert moved(client, game, 1, "draw discard") == 1
    refused(client, game, 1, move_from_text("discard 8D"), FAILED, "DISCARD_TAKEN_CARD")
    assert moved(client, game, 1, "discard 9D") == 2


def test_rummy_layoff_requires_own_meld(client: Client) -> None:
    game = _rummy(client, layoff_requires_own_meld=True)
    moved(client, game, 1, "draw stock", "meld 5C 6C 7C", "discard 9D")
    run = table_meld(client, game, "5C 6C 7C")
    assert moved(client, game, 0, "draw stock") == 4
    refused(client, game, 0, lay_off("8C", run), FAILED, "LAYOFF_REQUIRES_OWN_MELD")
    refused(client, game, 0, lay_off("4C", run), FAILED, "CARD_NOT_IN_HAND")
    assert moved(client, game, 0, "meld 3D 3H 3S", f"layoff 8C {run}") == 6


# ------------------------------------------------------------------------------------ idempotency, tokens


def test_a_refused_move_does_not_take_its_request_id(client: Client, gin: Game) -> None:
    """A refused move changes nothing, its request_id's record included: the key is still free afterwards, and
    a refused move sent with the key of an applied one does not change that one's answer."""
    token = gin.tokens[1]
    for move, reason in ((move_from_text("discard AS"), "WRONG_PHASE"), (pb.Move(), "MISSING_MOVE"),
                         (move_from_text("draw stock"), "VERSION_MISMATCH")):  # fmt: skip
        with expect_error(FAILED if reason == "WRONG_PHASE" else INVALID if reason == "MISSING_MOVE" else ABORTED,
                          reason):  # fmt: skip
            client.move(gin, token, move, request_id="k1", expected_version=0 if reason != "VERSION_MISMATCH" else 5)
    first = client.move(gin, token, move_from_text("draw stock"), request_id="k1")
    assert first.version == 1
    assert client.move(gin, token, move_from_text("draw stock"), request_id="k1") == first  # the resent answer
    with expect_error(FAILED, "IDEMPOTENCY_KEY_REUSED"):
        client.move(gin, token, move_from_text("discard AS"), request_id="k1")
    assert client.view(gin, token).version == 1


def test_moves_with_tokens_that_hold_no_seat_here(client: Client, gin: Game) -> None:
    other = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], allow_spectators=True)
    draw = move_from_text("draw stock")
    before = _views(client, gin)
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.move(gin, other.tokens[1], draw)  # a seat of another game
    with expect_error(C.PERMISSION_DENIED, "SPECTATOR"):
        client.move(other, other.spectator, draw)
    with expect_error(C.PERMISSION_DENIED, "ORGANIZER_NO_SEAT"):
        client.move(gin, ORGANIZER, draw)  # a valid token that holds no seat (docs/rules.md 9)
    with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
        client.move(gin, gin.tokens[1] + "x", draw)
    assert _views(client, gin) == before
