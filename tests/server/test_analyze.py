"""AnalyzeHand: stateless deadwood analysis."""

from __future__ import annotations

import grpc

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import Client, expect_error


def _analyze(client: Client, cards: str, profile: str = "", **options: pb.OptionValue) -> rpb.AnalyzeHandResponse:
    response: rpb.AnalyzeHandResponse = client.stub.AnalyzeHand(
        rpb.AnalyzeHandRequest(cards=cards.split(), profile=profile, options=options)
    )
    return response


def test_eleven_gin_cards_with_touching_runs_and_two_knock_discards(client: Client) -> None:
    # AS..6S may be one run or two (A-3, 4-6); 7H 7D 7C a set; KC and QD left: 20. Dropping either leaves 10.
    got = _analyze(client, "AS 2S 3S 4S 5S 6S 7H 7D 7C KC QD")
    assert got.min_deadwood == 20
    arrangements = {frozenset(frozenset(m.cards) for m in a.melds) for a in got.arrangements}
    run, low, high, sevens = (frozenset(x.split()) for x in ("AS 2S 3S 4S 5S 6S", "AS 2S 3S", "4S 5S 6S", "7H 7D 7C"))
    assert arrangements == {frozenset({run, sevens}), frozenset({low, high, sevens})}
    assert len(got.arrangements) == 2
    assert all(sorted(a.deadwood_cards) == ["KC", "QD"] for a in got.arrangements)
    assert not got.arrangements_truncated
    assert sorted((k.card, k.deadwood) for k in got.knock_discards) == [("KC", 10), ("QD", 10)]


def test_ten_cards_have_no_knock_discards(client: Client) -> None:
    got = _analyze(client, "AS 2S 3S 4S 5S 6S 7H 7D 7C KC")
    assert got.min_deadwood == 10 and not got.knock_discards


def test_rummy_aces_high_and_low(client: Client) -> None:
    assert _analyze(client, "QS KS AS", "rummy").min_deadwood == 21  # aces low: Q-K-A is no run, the ace is 1
    high = _analyze(client, "QS KS AS", "rummy", ace_high_low=pb.OptionValue(bool_value=True))
    assert high.min_deadwood == 0
    assert _analyze(client, "AS 5D", "rummy", ace_high_low=pb.OptionValue(bool_value=True)).min_deadwood == 20


def test_bad_hands_are_invalid_arguments(client: Client) -> None:
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "DUPLICATE_CARD"):
        _analyze(client, "AS AS 2S")
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_HAND_SIZE"):
        _analyze(client, "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS")
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_CARD"):
        _analyze(client, "1S")


def test_oklahoma_takes_the_deals_knock_limit_as_an_option(client: Client) -> None:
    """RULES.md 2: under Oklahoma the knock limit of a deal is its first upcard's value, which AnalyzeHand cannot
    know: a `knock_limit` option gives it (CreateGame refuses one with oklahoma: there the upcard sets it), and
    without one the analysis uses 10, the highest an upcard can set."""
    hand = "AS 2S 3S 4S 5S 6S 7H 7D 7C 4C 3D"  # 4C discarded leaves 3 deadwood, 3D 4, AS or 6S 7, ...
    default = _analyze(client, hand, "oklahoma-gin")
    found = {(k.card, k.deadwood) for k in default.knock_discards}
    assert {("4C", 3), ("3D", 4), ("6S", 7), ("AS", 7)} <= found and max(d for _, d in found) <= 10
    three = _analyze(client, hand, "oklahoma-gin", knock_limit=pb.OptionValue(int_value=3))
    assert [(k.card, k.deadwood) for k in three.knock_discards] == [("4C", 3)]
    gin_only = _analyze(client, hand, "oklahoma-gin", knock_limit=pb.OptionValue(int_value=0))
    assert not gin_only.knock_discards
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):
        _analyze(client, hand, "oklahoma-gin", knock_limit=pb.OptionValue(int_value=100))
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):  # a game still refuses it
        client.stub.CreateGame(rpb.CreateGameRequest(profile="oklahoma-gin", options={
            "knock_limit": pb.OptionValue(int_value=3)}))  # fmt: skip
