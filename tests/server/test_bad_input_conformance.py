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
