"""engine.analyze_hand: minimum deadwood, optimal arrangements, Gin knock discards (the AnalyzeHand RPC's rules)."""

from __future__ import annotations

import pytest

import engine as E
from tests.engine.helpers import mask, texts


def test_eleven_gin_cards_with_touching_runs_and_two_knock_discards() -> None:
    got = E.analyze_hand(mask("AS 2S 3S 4S 5S 6S 7H 7D 7C KC QD"), E.rules_from_profile("gin"))
    assert got.min_deadwood == 20 and not got.truncated
    arrangements = {frozenset(frozenset(texts(m)) for m in a.melds) for a in got.arrangements}
    run, low, high, sevens = (frozenset(x.split()) for x in ("AS 2S 3S 4S 5S 6S", "AS 2S 3S", "4S 5S 6S", "7H 7D 7C"))
    assert arrangements == {frozenset({run, sevens}), frozenset({low, high, sevens})}
    assert all(texts(a.deadwood_cards) == {"KC", "QD"} for a in got.arrangements)
    assert [(E.card_text(k.card), k.deadwood) for k in got.knock_discards] == [("QD", 10), ("KC", 10)]


def test_knock_discards_only_for_eleven_gin_cards() -> None:
    assert not E.analyze_hand(mask("AS 2S 3S 4S 5S 6S 7H 7D 7C KC"), E.rules_from_profile("gin")).knock_discards
    rummy = E.rules_from_profile("rummy")
    assert not E.analyze_hand(mask("AS 2S 3S 4S 5S 6S 7H 7D 7C KC QD"), rummy).knock_discards


def test_rummy_aces_high_and_low() -> None:
    assert E.analyze_hand(mask("QS KS AS"), E.rules_from_profile("rummy")).min_deadwood == 21
    high = E.rules_from_profile("rummy", ace_high_low=True)
    assert E.analyze_hand(mask("QS KS AS"), high).min_deadwood == 0
    assert E.analyze_hand(mask("AS 5D"), high).min_deadwood == 20  # a leftover ace is worth 15


def test_arrangements_are_cut_at_the_limit() -> None:
    hand = mask("AS 2S 3S 4S 5S 6S 7H 7D 7C KC QD")
    cut = E.analyze_hand(hand, E.rules_from_profile("gin"), max_arrangements=1)
    assert len(cut.arrangements) == 1 and cut.truncated


@pytest.mark.parametrize("hand", ["", "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS"])
def test_a_hand_of_no_card_or_over_eleven_is_refused(hand: str) -> None:
    with pytest.raises(E.InvalidMoveError) as refused:
        E.analyze_hand(mask(hand), E.rules_from_profile("gin"))
    assert refused.value.code == "INVALID_HAND_SIZE"
