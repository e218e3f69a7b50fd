"""API fields as documented, over the real server: TableMeld.cards holds laid-off cards too (and its layoffs say
which), the big_gin event reports deadwood like the other hand-end events, and the Gin defender's option
defender_deadwood is pinned into the settings and played by the referee (AnalyzeHand validates it)."""

from __future__ import annotations

import grpc
from google.protobuf import json_format

import wire
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import GIN_KNOCK_DEAL, ORGANIZER, Client, Game, deal, expect_error, move_from_text


def _knocked(client: Client, **options: pb.OptionValue) -> tuple[Game, dict[int, str]]:
    """Refkit's knock deal: seat 1 draws 2C and knocks with KC (AS-3S, 4H-6H, 7D-9D); seat 0 is to lay off."""
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], options=options)
    client.move(game, game.tokens[1], move_from_text("draw stock"))
    client.move(game, game.tokens[1], move_from_text("knock KC"))
    return game, game.tokens


def test_table_meld_cards_include_the_laid_off_cards_and_layoffs_name_them(client: Client) -> None:
    """game.proto TableMeld: `cards` is every card of the meld now; `layoffs` is which of them were laid off."""
    game, tokens = _knocked(client)
    view = client.move(game, tokens[0], move_from_text("layoff 4S 0")).view
    (spades,) = [m for m in view.melds if m.id == 0]
    assert list(spades.cards) == ["AS", "2S", "3S", "4S"]
    assert [(x.card, x.seat) for x in spades.layoffs] == [("4S", 0)]
    assert {x.card for x in spades.layoffs} <= set(spades.cards)  # a client must not add the two
    # the Python clients read it the same way: View.melds[i].cards is the whole meld
    (meld,) = [m for m in wire.typed_view_from_proto(view).melds if m.id == 0]
    assert meld.cards == ("AS", "2S", "3S", "4S") and meld.layoffs == (("4S", 0),)
    assert len(meld.cards) == 4


def test_big_gin_event_reports_deadwood_like_the_other_hand_end_events(client: Client) -> None:
    """The knocked and declared events carry `deadwood`; big_gin does too (0: every card is melded)."""
    big = deal(0, ["JH QH KH 2D 3D 9C 8C 6C 4H QS", "AS 2S 3S 4S 7H 8H 9H KC KD KS"], "JD", "TH")
    game = client.create("gin", token=ORGANIZER, preset_deals=[big])
    client.move(game, game.tokens[1], move_from_text("draw stock"))
    response = client.move(game, game.tokens[1], pb.Move(big_gin=pb.Move.BigGin()))
    by_kind = {e.kind: json_format.MessageToDict(e.data) for e in response.events}
    assert by_kind["big_gin"]["deadwood"] == 0
    assert by_kind["hand_ended"]["reason"] == "big_gin" and by_kind["hand_ended"]["points"] == 31 + 42


def test_defender_deadwood_is_pinned_in_the_settings_and_played(client: Client) -> None:
    """CreateGame pins `defender_deadwood` (default `best`). Refkit's defender, `4S 7H TD JS QS KS 5C 5D 9C 8C`,
    says "done" at once after the knock (K = 2): `declared` counts every card, 78, and the knocker scores 76;
    `best` still melds JS-QS-KS: 48, and the knocker scores 46."""
    plain = client.create("gin")
    assert plain.created.settings.options["defender_deadwood"].string_value == "best"
    game, tokens = _knocked(client, defender_deadwood=pb.OptionValue(string_value="declared"))
    assert game.created.settings.options["defender_deadwood"].string_value == "declared"
    done = client.move(game, tokens[0], move_from_text("done"))
    assert done.view.last_hand.defender_deadwood == 78 and done.view.last_hand.points == 78 - 2
    best, tokens = _knocked(client)
    done = client.move(best, tokens[0], move_from_text("done"))
    assert done.view.last_hand.defender_deadwood == 48 and done.view.last_hand.points == 48 - 2


def test_analyze_hand_validates_defender_deadwood(client: Client) -> None:
    """AnalyzeHand reports no defender's deadwood (it analyzes one hand), so the option changes nothing there;
    it is still checked like every option: Gin only (Rummy refuses any value but the default), `best` or
    `declared`."""
    hand = ["JS", "QS", "KS", "5C", "5D"]
    for value in ("best", "declared"):
        got = client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(
            cards=hand, options={"defender_deadwood": pb.OptionValue(string_value=value)}))
        assert got.min_deadwood == 10
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):
        client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(
            cards=hand, profile="rummy", options={"defender_deadwood": pb.OptionValue(string_value="declared")}))
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):
        client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(
            cards=hand, options={"defender_deadwood": pb.OptionValue(string_value="minimum")}))
