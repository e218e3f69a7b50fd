"""Rule-clause scenario tests for Gin Rummy: RULES.md sections 1, 2 and 4 as they apply to Gin.

Every scenario starts from a preset deal written as card text (``tests/engine/helpers.py``). Each test is named
after the clause it checks; its docstring quotes or cites that clause. Seat 0 acts first wherever the deal names
seat 1 as the dealer ("The dealer's next seat acts first in every hand").
"""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any

import pytest

import engine as E
from engine import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    GameState,
    IllegalMoveError,
    InvalidMoveError,
    InvalidOptionsError,
    Knock,
    LayOff,
    MeldMove,
    Pass,
    Rules,
)
from tests.engine.helpers import (
    burn_turns,
    gin_deal,
    hand_ended,
    mask,
    of_kind,
    play,
    start,
    texts,
)


def gin(**overrides: Any) -> Rules:
    """Rules of the default ``gin`` profile with overrides."""
    return E.rules_from_profile("gin", **overrides)


def c(text: str) -> int:
    """One card from its text."""
    return E.parse_card(text)


def refused(state: GameState, seat: int, move: E.Move, code: str) -> None:
    """The move is refused with ``code`` (IllegalMoveError) and the state is exactly as before."""
    before = E.state_to_json(state)
    with pytest.raises(IllegalMoveError) as err:
        E.apply(state, seat, move)
    assert err.value.code == code, err.value.message
    assert E.state_to_json(state) == before


def knocked(events: list[E.Event]) -> dict[str, Any]:
    """The public record of the knock among ``events``."""
    (event,) = of_kind(events, "knocked")
    return event.public


def meld_cards(melds: list[dict[str, Any]]) -> set[frozenset[str]]:
    """Table melds (as in events and views) as sets of card texts."""
    return {frozenset(m["cards"]) for m in melds}


def meld_id(state: GameState, text: str) -> int:
    """The id of the table meld made of exactly these cards."""
    want = mask(text)
    (found,) = [m.id for m in state.melds if m.cards == want]
    return found


def melds(*groups: str) -> tuple[int, ...]:
    """Declared melds from card texts."""
    return tuple(mask(g) for g in groups)


def legal_knocks(state: GameState) -> set[str]:
    """The discards of the legal knocks of the seat to act."""
    return {E.card_text(m.discard) for m in E.legal_moves(state) if isinstance(m, Knock)}


# ------------------------------------------------------------------------------------ deadwood (section 2)


def _brute_min_deadwood(hand: int) -> int:
    """Reference: try every set of disjoint melds inside the hand (no pruning, no memo of the engine)."""
    inside = [m for m in E.melds.all_melds() if m & hand == m]

    def best(i: int, used: int) -> int:
        if i == len(inside):
            return E.mask_value(hand & ~used)
        skip = best(i + 1, used)
        if inside[i] & used:
            return skip
        return min(skip, best(i + 1, used | inside[i]))

    return best(0, 0)


TRAPS = {
    # a four-of-a-kind that must be broken to keep two runs: the 5-set leaves 6S 7S 6H 7H (26),
    # the two runs 5S-7S and 5H-7H leave only 5D 5C (10); JC QC are dead either way
    "four_of_a_kind_broken_for_two_runs": ("5S 5H 5D 5C 6S 7S 6H 7H JC QC", "AD 2D 3D 4D 6D 7D 8D 9D TD JD", 30),
    # 7H belongs in the run 7H-8H-9H (leaving 7S 7D = 14), not in the 7-set (leaving 8H 9H = 17)
    "card_in_run_not_set": ("7S 7D 7H 8H 9H AC 2C 3C KS QS", "AD 2D 3D 4D 5D 8D 9D TD JD QD", 34),
    # 8H belongs in the 8-set (leaving 6H 7H = 13), not in the run 6H-7H-8H (leaving 8S 8D = 16)
    "card_in_set_not_run": ("8S 8D 8H 6H 7H AC 2C 3C KS QS", "AD 2D 3D 4D 5D 9D TD JD QD KD", 33),
}


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_gin_deadwood_is_the_exact_minimum_not_greedy(name: str) -> None:
    """RULES.md 2: "Deadwood is the total value of the cards not in melds, for the arrangement of melds that
    minimizes it. It must be computed exactly (... greedy "biggest meld first" is wrong ...)". After gin the
    defender's deadwood is their minimum deadwood, so the gin score shows it."""
    trap, gin_hand, dead = TRAPS[name]
    assert E.min_deadwood(mask(trap)) == dead == _brute_min_deadwood(mask(trap))
    s = start(gin(), gin_deal(dealer=1, hands=[gin_hand, trap], upcard="2H", stock_top_first="KH"))
    s, events = play(s, "draw stock", "knock KH")
    ended = hand_ended(events)
    assert ended["reason"] == "gin"
    assert ended["defender_deadwood"] == dead
    assert ended["points"] == 25 + dead


def test_gin_knock_arrangement_breaks_four_of_a_kind_for_two_runs() -> None:
    """RULES.md 2: "if none is given, the referee picks one minimum-deadwood arrangement and reports it with the
    knock": with four 5s, 6S 7S and 6H 7H, the minimum keeps the runs 5S-7S and 5H-7H, not the 5-set."""
    s = start(gin(), gin_deal(
        dealer=1, hands=["5S 5H 5D 5C 6S 7S 6H 7H JC QC", "2H 6D QH 3D 8D JD 2C 7C 9C QS"], upcard="4H",
        stock_top_first="KC",
    ))
    s, events = play(s, "draw stock", "knock 5D")
    k = knocked(events)
    assert k["deadwood"] == 5 and k["deadwood_cards"] == ["5C"]
    assert meld_cards(k["melds"]) == {frozenset({"5S", "6S", "7S"}), frozenset({"5H", "6H", "7H"}),
                                      frozenset({"JC", "QC", "KC"})}


def test_gin_deadwood_matches_exhaustive_search_on_random_hands() -> None:
    """RULES.md 2: deadwood "must be computed exactly (exhaustive search over all candidate melds)": the
    engine's solver agrees with a plain enumeration of disjoint meld sets on hands rich in melds."""
    rnd = random.Random(20261130)
    all_melds = E.melds.all_melds()
    for _ in range(300):
        hand = 0
        while hand.bit_count() < 10:
            hand |= rnd.choice(all_melds) if rnd.random() < 0.4 else 1 << rnd.randrange(52)
        size = rnd.choice((10, 11))
        while hand.bit_count() > size:
            hand &= ~(1 << rnd.choice(E.cards_of(hand)))
        assert E.min_deadwood(hand) == _brute_min_deadwood(hand), E.mask_text(hand)


# ---------------------------------------------------------------------------- 11-card knock detection (2)


def test_gin_can_knock_only_through_the_one_discard_that_leaves_the_limit() -> None:
    """RULES.md 2: "With 11 cards in hand, "can knock" means: some legal discard ... leaves 10 cards whose
    minimum deadwood is at most the limit". AS-4S, 7H-TH, 5C, 4D and the drawn KC: only discarding KC leaves
    9; discarding 5C leaves 14, 4D 15, any meld card more."""
    s = start(gin(), gin_deal(
        dealer=1, hands=["AS 2S 3S 4S 7H 8H 9H TH 5C 4D", "2H 6H QH 3D 8D JD 2C 7C 9C QS"], upcard="5S",
        stock_top_first="KC",
    ))
    s, _ = play(s, "draw stock")
    assert legal_knocks(s) == {"KC"}
    assert E.knock_discards(s.hands[0], 10) == [c("KC")]
    refused(s, 0, Knock(c("5C")), "KNOCK_OVER_LIMIT")
    refused(s, 0, Knock(c("4S")), "KNOCK_OVER_LIMIT")
    s, events = play(s, "knock KC")
    assert knocked(events)["deadwood"] == 9


def test_gin_knock_may_need_discarding_a_meld_card() -> None:
    """RULES.md 2: a legal discard is "not the card just taken from the discard pile": holding AS-4S, 7H-9H and
    KC KD KS and taking QD, the only knocks discard an end of the 4-card run (AS or 4S), leaving QD (10)."""
    s = start(gin(), gin_deal(
        dealer=1, hands=["AS 2S 3S 4S 7H 8H 9H KC KD KS", "2H 6H QH 3D 8D JD 2C 7C 9C QS"], upcard="QD",
    ))
    s, _ = play(s, "draw discard")
    assert legal_knocks(s) == {"AS", "4S"}
    refused(s, 0, Knock(c("QD")), "DISCARD_TAKEN_CARD")
    refused(s, 0, Discard(c("QD")), "DISCARD_TAKEN_CARD")
    s, events = play(s, "knock 4S")
    k = knocked(events)
    assert k["deadwood"] == 10 and k["deadwood_cards"] == ["QD"] and not k["gin"]
    assert meld_cards(k["melds"]) == {frozenset({"AS", "2S", "3S"}), frozenset({"7H", "8H", "9H"}),
                                      frozenset({"KC", "KD", "KS"})}


@pytest.mark.parametrize("allowed", [False, True])
def test_gin_taken_card_is_a_knock_discard_only_with_discard_taken_card_allowed(allowed: bool) -> None:
    """RULES.md 2: "(so not the card just taken from the discard pile, unless `discard_taken_card_allowed`)":
    AS-4S, 7H-TH, 5C, 4D take KC; only discarding KC would leave 9."""
    s = start(gin(discard_taken_card_allowed=allowed), gin_deal(
        dealer=1, hands=["AS 2S 3S 4S 7H 8H 9H TH 5C 4D", "2H 6H QH 3D 8D JD 2C 7C 9C QS"], upcard="KC",
    ))
    s, _ = play(s, "draw discard")
    assert E.knock_discards(s.hands[0], 10) == [c("KC")]
    assert E.knock_discards(s.hands[0], 10, c("KC")) == []
    if not allowed:
        assert legal_knocks(s) == set()
        refused(s, 0, Knock(c("KC")), "DISCARD_TAKEN_CARD")
        return
    assert legal_knocks(s) == {"KC"}
    s, events = play(s, "knock KC")
    assert knocked(events)["deadwood"] == 9
    assert s.phase == "layoff" and s.to_act == 1


# ------------------------------------------------------------------------------ declared arrangements (2)

KNOCKER = "AS 2S 3S 4S 5S 7H 8H 9H 2D 3C"  # AS-5S, 7H-9H, deadwood 2D 3C = 5
DEFENDER = "6S 7S 4C 5C 6C TD JD QD KH QH"  # 4C-6C, TD-QD, deadwood 6S 7S KH QH = 33; 6S 7S extend AS-5S


def _declared_deal() -> E.Deal:
    return gin_deal(dealer=1, hands=[KNOCKER, DEFENDER], upcard="4H", stock_top_first="KC")


def test_gin_knock_without_melds_gets_a_minimum_arrangement_picked() -> None:
    """RULES.md 2: "if none is given, the referee picks one minimum-deadwood arrangement and reports it with the
    knock"; "Scoring always uses the arrangement that was declared or picked": K = 5, the defender lays 6S and
    7S off on AS-5S (D = 20), the knocker scores D - K = 15."""
    s = start(gin(), _declared_deal())
    s, events = play(s, "draw stock", "knock KC")
    k = knocked(events)
    assert k["deadwood"] == 5 and set(k["deadwood_cards"]) == {"2D", "3C"}
    assert meld_cards(k["melds"]) == {frozenset({"AS", "2S", "3S", "4S", "5S"}), frozenset({"7H", "8H", "9H"})}
    s, events = play(s, Declare())
    assert {e.public["card"] for e in of_kind(events, "laid_off")} == {"6S", "7S"}
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("knock", 0, 15)
    assert (ended["knocker_deadwood"], ended["defender_deadwood"]) == (5, 20)


def test_gin_knocker_may_declare_a_non_minimal_arrangement_that_changes_layoffs() -> None:
    """RULES.md 2: "The knocker may declare any valid arrangement (it matters: it decides what the defender can
    lay off)": declaring AS-4S (5S kept as deadwood, K = 10) leaves the defender no place for 6S and 7S, so
    D = 33 and the knocker scores 23 instead of 15."""
    s = start(gin(), _declared_deal())
    s, events = play(s, "draw stock", Knock(c("KC"), melds("AS 2S 3S 4S", "7H 8H 9H")))
    k = knocked(events)
    assert k["deadwood"] == 10 and set(k["deadwood_cards"]) == {"5S", "2D", "3C"}
    run = meld_id(s, "AS 2S 3S 4S")
    assert not [m for m in E.legal_moves(s) if isinstance(m, LayOff) and m.card in (c("6S"), c("7S"))]
    refused(s, 1, LayOff(c("6S"), run), "CANNOT_LAY_OFF")
    s, events = play(s, Declare())
    assert not of_kind(events, "laid_off")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("knock", 0, 23)
    assert (ended["knocker_deadwood"], ended["defender_deadwood"]) == (10, 33)


@pytest.mark.parametrize("declared", [
    ("AS 2S 3S", "7H 8H 9H"),  # 4S 5S 2D 3C = 14
    ("AS 2S 3S 4S",),  # 5S 7H 8H 9H 2D 3C = 34
])
def test_gin_knock_with_declared_deadwood_over_the_limit_is_refused(declared: tuple[str, ...]) -> None:
    """RULES.md 2: "It is legal when the 10 cards left have declared deadwood <= `knock_limit`"; section 4: "A
    rejected move changes anything" must never happen."""
    s = start(gin(), _declared_deal())
    s, _ = play(s, "draw stock")
    refused(s, 0, Knock(c("KC"), melds(*declared)), "KNOCK_OVER_LIMIT")


def test_gin_knock_with_an_invalid_declared_meld_is_refused() -> None:
    """RULES.md 2: the knocker declares "any valid arrangement"; section 1: "A card belongs to at most one
    meld". A non-meld, a card in two melds, or a card not held is refused and changes nothing."""
    s = start(gin(), _declared_deal())
    s, _ = play(s, "draw stock")
    refused(s, 0, Knock(c("KC"), melds("AS 2S 4S", "7H 8H 9H")), "INVALID_MELD")
    refused(s, 0, Knock(c("KC"), melds("AS 2S 3S 4S", "3S 4S 5S", "7H 8H 9H")), "INVALID_MELD")
    refused(s, 0, Knock(c("KC"), melds("AS 2S 3S 4S 5S 6S", "7H 8H 9H")), "CARD_NOT_IN_HAND")
    with pytest.raises(InvalidMoveError) as err:  # the discard melded too: named twice (malformed, not a rule)
        E.apply(s, 0, Knock(c("KC"), melds("AS 2S 3S 4S 5S", "JC QC KC")))
    assert err.value.code == "DUPLICATE_CARD"


@pytest.mark.parametrize("split", [True, False])
def test_gin_touching_runs_may_be_declared_as_two_melds_or_one(split: bool) -> None:
    """RULES.md 2: "Two runs of one suit that touch (4H-5H-6H and 7H-8H-9H) may be declared as two melds or as
    one." Split, the defender's 7S goes on 4S-6S (not on AS-3S); whole, on AS-6S."""
    s = start(gin(), gin_deal(
        dealer=1, hands=["AS 2S 3S 4S 5S 6S 7H 8H 9H 2D", "7S 8S 4C 5C 6C TD JD QD KH QH"], upcard="4H",
        stock_top_first="KC",
    ))
    declared = ("AS 2S 3S", "4S 5S 6S", "7H 8H 9H") if split else ("AS 2S 3S 4S 5S 6S", "7H 8H 9H")
    s, events = play(s, "draw stock", Knock(c("KC"), melds(*declared)))
    k = knocked(events)
    assert k["deadwood"] == 2
    assert meld_cards(k["melds"]) == {frozenset(g.split()) for g in declared}
    if split:
        refused(s, 1, LayOff(c("7S"), meld_id(s, "AS 2S 3S")), "CANNOT_LAY_OFF")
        target = meld_id(s, "4S 5S 6S")
    else:
        target = meld_id(s, "AS 2S 3S 4S 5S 6S")
    s, events = play(s, LayOff(c("7S"), target), LayOff(c("8S"), target), Done())
    ended = hand_ended(events)
    assert (ended["defender_deadwood"], ended["points"]) == (20, 18)


# ------------------------------------------------------------------------------------------ layoffs (2)

RUN_KNOCKER = "5H 6H 7H AS 2S 3S KC KD KS 2D"  # 5H-7H, AS-3S, K-set, deadwood 2D; knocks with the drawn QC


def test_gin_layoffs_chain_on_a_run() -> None:
    """RULES.md 2: "cards laid off earlier count as part of the run, so 8H, 9H, TH can all go on 5H-6H-7H"; TH
    or 9H alone does not fit before 8H is there."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "8H 9H TH 4D 6D 8D TC 3C 5C QS"], upcard="JD", stock_top_first="QC",
    ))
    s, _ = play(s, "draw stock", "knock QC")
    run = meld_id(s, "5H 6H 7H")
    refused(s, 1, LayOff(c("TH"), run), "CANNOT_LAY_OFF")
    refused(s, 1, LayOff(c("9H"), run), "CANNOT_LAY_OFF")
    s, _ = play(s, LayOff(c("8H"), run))
    refused(s, 1, LayOff(c("TH"), run), "CANNOT_LAY_OFF")
    s, _ = play(s, LayOff(c("9H"), run), LayOff(c("TH"), run))
    assert texts(next(m for m in s.melds if m.id == run).cards) == {"5H", "6H", "7H", "8H", "9H", "TH"}
    s, events = play(s, Done())
    ended = hand_ended(events)
    assert (ended["defender_deadwood"], ended["points"]) == (46, 44)


@pytest.mark.parametrize(("target", "then_9h", "dead"), [("run", True, 58), ("set", False, 67)])
def test_gin_layoff_names_its_target_and_a_card_fitting_two_melds_changes_what_follows(
    target: str, then_9h: bool, dead: int
) -> None:
    """RULES.md 2: "Each layoff names its target meld: a card that fits two melds changes what can follow."
    8H fits 5H-6H-7H and 8S-8D-8C; on the run it lets 9H follow, on the set it does not."""
    s = start(gin(), gin_deal(
        dealer=1, hands=["5H 6H 7H 8S 8D 8C AS 2S 3S 2D", "8H 9H 4D 6D JD TC 3C 5C QS KS"], upcard="7C",
        stock_top_first="KC",
    ))
    s, _ = play(s, "draw stock", "knock KC")
    run, eights = meld_id(s, "5H 6H 7H"), meld_id(s, "8S 8D 8C")
    s, _ = play(s, LayOff(c("8H"), run if target == "run" else eights))
    if then_9h:
        s, _ = play(s, LayOff(c("9H"), run))
    else:
        refused(s, 1, LayOff(c("9H"), run), "CANNOT_LAY_OFF")
        refused(s, 1, LayOff(c("9H"), eights), "CANNOT_LAY_OFF")
    s, events = play(s, Done())
    assert hand_ended(events)["defender_deadwood"] == dead


def test_gin_layoffs_go_only_onto_the_knockers_melds() -> None:
    """RULES.md 2: "Layoffs go only onto the knocker's melds; the knocker never lays off." The defender's own
    meld TC-JC-QC takes no layoff, and the knocker has no move in the layoff phase."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "TC JC QC 9C 4D 6D 8D 3C 5C QS"], upcard="JD", stock_top_first="QH",
    ))
    s, _ = play(s, "draw stock", "knock QH")
    s, _ = play(s, MeldMove(mask("TC JC QC")))
    own = meld_id(s, "TC JC QC")
    refused(s, 1, LayOff(c("9C"), own), "CANNOT_LAY_OFF")
    refused(s, 0, Done(), "NOT_YOUR_TURN")
    refused(s, 0, LayOff(c("2D"), meld_id(s, "AS 2S 3S")), "NOT_YOUR_TURN")


def test_gin_defender_may_declare_in_one_move_and_a_bad_declaration_changes_nothing() -> None:
    """RULES.md 2: "The defender may make the declaration as one move or as single meld and lay-off moves followed
    by a final "done"". One move melds TC-JC-QC and lays 8H then 9H off on 5H-7H (listed in any order that can
    be played); a declaration with a layoff that does not fit, or a non-meld, is refused as a whole and changes
    nothing."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "TC JC QC 8H 9H 4D 6D 3C 5C QS"], upcard="JD", stock_top_first="KH",
    ))
    s, _ = play(s, "draw stock", "knock KH")
    run = meld_id(s, "5H 6H 7H")
    _, out_of_order = play(s, Declare(melds("TC JC QC"), ((c("9H"), run), (c("8H"), run))))
    assert hand_ended(out_of_order)["defender_deadwood"] == 4 + 6 + 3 + 5 + 10
    refused(s, 1, Declare(melds("TC JC QC"), ((c("9H"), run), (c("4D"), run))), "CANNOT_LAY_OFF")
    refused(s, 1, Declare(melds("TC JC QC"), ((c("8H"), run), (c("QS"), run))), "CANNOT_LAY_OFF")
    refused(s, 1, Declare(melds("TC JC 9H"), ()), "INVALID_MELD")
    refused(s, 1, MeldMove(mask("4D 6D 8H")), "INVALID_MELD")
    s, events = play(s, Declare(melds("TC JC QC"), ((c("8H"), run), (c("9H"), run))))
    assert [e.public["card"] for e in of_kind(events, "laid_off")] == ["8H", "9H"]
    ended = hand_ended(events)
    assert (ended["defender_deadwood"], ended["points"]) == (4 + 6 + 3 + 5 + 10, 28 - 2)


def test_gin_declaration_naming_a_card_twice_is_refused_and_changes_nothing() -> None:
    """RULES.md 1: "A card belongs to at most one meld" and 4: a card never appears in two places. A one-move
    declaration that lays the same card off twice, or melds a card and lays it off too, names a card twice: a
    malformed move (DUPLICATE_CARD, whatever the state), not a card the defender lacks; a card in two of its melds
    is INVALID_MELD, as in a knock's melds. Each is refused as a whole and changes nothing."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "TC JC QC 8H 9H 4D 6D 3C 5C QS"], upcard="JD", stock_top_first="KH",
    ))
    s, _ = play(s, "draw stock", "knock KH")
    run, kings = meld_id(s, "5H 6H 7H"), meld_id(s, "KC KD KS")
    for declaration in (
        Declare(melds("TC JC QC"), ((c("8H"), run), (c("8H"), run))),  # the same layoff twice
        Declare(melds("TC JC QC"), ((c("8H"), run), (c("9H"), run), (c("8H"), run))),
        Declare((), ((c("8H"), run), (c("8H"), kings))),  # one card onto two melds
        Declare(melds("TC JC QC"), ((c("8H"), run), (c("QC"), run))),  # melded and laid off
        Declare(None, ((c("9H"), run), (c("8H"), run), (c("9H"), run))),
    ):
        before = E.state_to_json(s)
        with pytest.raises(InvalidMoveError) as err:
            E.apply(s, 1, declaration)
        assert err.value.code == "DUPLICATE_CARD", err.value.message
        assert E.state_to_json(s) == before
    refused(s, 1, Declare(melds("TC JC QC") * 2, ()), "INVALID_MELD")  # one meld declared twice
    s, events = play(s, Declare(melds("TC JC QC"), ((c("8H"), run), (c("9H"), run))))  # still the defender's
    assert hand_ended(events)["defender_deadwood"] == 4 + 6 + 3 + 5 + 10


def test_gin_knock_discarding_a_card_of_its_own_melds_is_refused_and_changes_nothing() -> None:
    """A knock names its discard and the melds of the 10 cards kept: a discard that is also in one of those melds
    names a card twice (DUPLICATE_CARD, malformed whatever the state, as in a declaration), not a card the
    knocker lacks."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "TC JC QC 8H 9H 4D 6D 3C 5C QS"], upcard="JD", stock_top_first="KH",
    ))
    s, _ = play(s, "draw stock")
    for knock in (Knock(c("KH"), melds("5H 6H 7H", "AS 2S 3S", "KC KD KS KH")),
                  Knock(c("2D"), melds("5H 6H 7H", "AS 2S 3S", "KC KD KS", "2D 2S 2H"))):  # fmt: skip
        before = E.state_to_json(s)
        with pytest.raises(InvalidMoveError) as err:
            E.apply(s, 0, knock)
        assert err.value.code == "DUPLICATE_CARD", err.value.message
        assert E.state_to_json(s) == before
    s, events = play(s, Knock(c("KH"), melds("5H 6H 7H", "AS 2S 3S", "KC KD KS")))
    assert knocked(events)["deadwood"] == 2 and s.to_act == 1, "the same knock without the discard melded"


def _best_defender_deadwood(hand: int, knocker_melds: tuple[int, ...]) -> int:
    """Reference optimum over every sequence of layoffs (then own melds by exact deadwood)."""

    @cache
    def best(hand: int, table: tuple[int, ...]) -> int:
        result = E.min_deadwood(hand)
        for i, meld in enumerate(table):
            for card in E.cards_of(hand):
                if E.extends(meld, card):
                    result = min(result, best(hand & ~(1 << card), (*table[:i], meld | 1 << card, *table[i + 1:])))
        return result

    return best(hand, knocker_melds)


def test_gin_best_declaration_breaks_the_defenders_own_meld_to_lay_off() -> None:
    """RULES.md 2: "The defender may break up their own possible melds to lay off"; "the referee can also compute
    the defender's best declaration (minimum deadwood over melds and layoffs together)". Melding all four 8s
    leaves 42; the best keeps 8S-8D-8C and lays 8H then 9H off on 5H-6H-7H: 33."""
    defender = "8S 8D 8C 8H 9H 4D 6D TC 3C QS"
    s = start(gin(), gin_deal(dealer=1, hands=[RUN_KNOCKER, defender], upcard="JD", stock_top_first="QC"))
    s, _ = play(s, "draw stock", "knock QC")
    table = tuple(m.cards for m in s.melds)
    assert E.min_deadwood(mask(defender)) == 42
    assert _best_defender_deadwood(mask(defender), table) == 33
    s, events = play(s, Declare())
    assert {e.public["card"] for e in of_kind(events, "laid_off")} == {"8H", "9H"}
    ended = hand_ended(events)
    assert (ended["defender_deadwood"], ended["points"]) == (33, 31)


def test_gin_best_declaration_equals_the_optimum_on_random_knocks() -> None:
    """RULES.md 2: the best declaration is the "minimum deadwood over melds and layoffs together": compared with
    an exhaustive search over layoff sequences for random knocker melds and defender hands near them."""
    rnd = random.Random(7)
    all_melds = E.melds.all_melds()
    for _ in range(200):
        table: list[int] = []
        used = 0
        while len(table) < rnd.choice((1, 2, 3)):
            m = rnd.choice(all_melds)
            if not m & used:
                table.append(m)
                used |= m
        near = [x for x in range(52) if not used >> x & 1 and any(E.extends(m, x) for m in table)]
        others = [x for x in range(52) if not used >> x & 1 and x not in near]
        hand = E.mask_of(rnd.sample(near, min(len(near), rnd.randint(1, 5))))
        while hand.bit_count() < 10:
            hand |= 1 << rnd.choice(others)
        ids = tuple(enumerate(table))
        got = E.best_declaration(hand, ids)
        assert got.deadwood == _best_defender_deadwood(hand, tuple(table)), (E.mask_text(hand), table)
        # the declaration it returns is playable and really leaves that deadwood
        left, tab = hand, dict(ids)
        for meld in got.melds:
            assert E.meld_kind(meld) and meld & left == meld
            left &= ~meld
        for card, i in got.layoffs:
            assert left >> card & 1 and E.extends(tab[i], card)
            left &= ~(1 << card)
            tab[i] |= 1 << card
        assert E.mask_value(left) == got.deadwood


# ------------------------------------------------------------------------------------- hand score (2)

K9 = "AS 2S 3S 4S 7H 8H 9H TH 5C 4D"  # knocks with the drawn KC: K = 9


def _knock_k9(defender: str, **overrides: Any) -> tuple[GameState, list[E.Event]]:
    s = start(gin(**overrides), gin_deal(dealer=1, hands=[K9, defender], upcard="5S", stock_top_first="KC"))
    s, events = play(s, "draw stock", "knock KC")
    assert knocked(events)["deadwood"] == 9
    s, more = play(s, Declare())
    return s, events + more


def test_gin_knock_scores_defender_deadwood_minus_knocker_deadwood() -> None:
    """RULES.md 2: "K < D: knocker scores D - K." D counts after layoffs (6H goes on 7H-TH): 61 - 9 = 52; the
    winner of a hand deals the next."""
    s, events = _knock_k9("2H 6H QH 3D 8D JD 2C 7C 9C QS")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("knock", 0, 52)
    assert (ended["knocker_deadwood"], ended["defender_deadwood"]) == (9, 61)
    assert s.scores == (52, 0) and s.boxes == (1, 0)
    assert s.dealer == 0 and s.to_act == 1


def test_gin_undercut_scores_bonus_plus_difference_for_the_defender() -> None:
    """RULES.md 2: "K > D ...: the defender scores `undercut_bonus` (25) + (K - D)": K 9, D 4 (4H): 30 to the
    defender, who deals next."""
    s, events = _knock_k9("JS QS KS 5D 6D 7D AC 2C 3C 4H")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("undercut", 1, 30)
    assert s.scores == (0, 30) and s.dealer == 1


def test_gin_tie_is_undercut_by_default() -> None:
    """RULES.md 2: "K > D, or K = D (option `undercut_on_tie`, default true): the defender scores
    `undercut_bonus` (25) + (K - D)": K = D = 9 gives the defender 25."""
    s, events = _knock_k9("JS QS KS 5D 6D 7D AC 2C 3C 9D")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("undercut", 1, 25)
    assert s.scores == (0, 25)


def test_gin_tie_scores_nothing_without_undercut_on_tie_and_the_same_dealer_deals() -> None:
    """RULES.md 2: "With `undercut_on_tie` false, K = D scores nothing for either player"; "after a hand nobody
    won (a drawn hand, a scoreless tie) the same dealer deals again"."""
    s, events = _knock_k9("JS QS KS 5D 6D 7D AC 2C 3C 9D", undercut_on_tie=False)
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("tie", None, 0)
    assert s.scores == (0, 0) and s.boxes == (0, 0)
    assert s.hand_no == 1 and s.dealer == 1 and s.to_act == 0


def test_gin_defender_reaching_zero_by_laying_off_undercuts_and_is_not_gin() -> None:
    """RULES.md 2: "A defender who reaches 0 by laying off has undercut; that is not gin." The defender melds
    8S-8D-8C and TD-QD and lays 4H 3H and 8H 9H off on 5H-7H: 25 + (2 - 0)."""
    s = start(gin(), gin_deal(
        dealer=1, hands=[RUN_KNOCKER, "8S 8D 8C 3H 4H 8H 9H QD JD TD"], upcard="6C", stock_top_first="QC",
    ))
    s, _ = play(s, "draw stock", "knock QC")
    s, events = play(s, Declare())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("undercut", 1, 27)
    assert ended["defender_deadwood"] == 0


GIN10 = "AS 2S 3S 4S 7H 8H 9H KC KD KS"  # ten cards in melds
GIN_DEFENDER = "5S 6S JH 2D 3D 9C 8C 6C 4H QS"  # no melds, 63; 5S 6S would extend AS-4S


def test_gin_gin_scores_bonus_plus_defender_minimum_deadwood_and_ends_without_layoffs() -> None:
    """RULES.md 2: "Knocking with 0 deadwood is gin"; "After a knock (not after gin or big gin) the defender lays
    down ..."; "after gin ... the defender's minimum deadwood, no layoffs"; "Gin: knocker scores `gin_bonus` (25)
    + D. Gin can never be undercut." 5S and 6S would extend AS-4S but stay deadwood: 25 + 63."""
    s = start(gin(), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="5D"))
    s, events = play(s, "draw stock", "knock 5D")
    assert knocked(events)["gin"] is True
    assert not of_kind(events, "laid_off") and not of_kind(events, "declared")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("gin", 0, 88)
    assert ended["defender_deadwood"] == 63
    assert s.hand_no == 1 and s.phase == "draw"  # the next hand is already dealt: no layoff phase
    refused(s, s.to_act, LayOff(c("5S"), 0), "WRONG_PHASE")


def test_gin_gin_bonus_is_the_option_value() -> None:
    """RULES.md 2: "Gin: knocker scores `gin_bonus` (25) + D" with the option changed to 40."""
    s = start(gin(gin_bonus=40), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="5D"))
    s, events = play(s, "draw stock", "knock 5D")
    assert hand_ended(events)["points"] == 40 + 63


def test_gin_big_gin_scores_big_gin_bonus_plus_deadwood_without_a_discard() -> None:
    """RULES.md 2: "Big gin (option `big_gin_bonus`, default 31 ...): after drawing, if all 11 cards form melds,
    the player may go out at once without discarding"; "Big gin: `big_gin_bonus` (31) + D"."""
    s = start(gin(), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="TH"))
    s, _ = play(s, "draw stock")
    assert BigGin() in E.legal_moves(s)
    s, events = play(s, BigGin())
    assert not of_kind(events, "discarded") and not of_kind(events, "laid_off")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("big_gin", 0, 31 + 63)
    revealed = set().union(*(set(m["cards"]) for m in ended["melds"]))
    assert revealed == set(GIN10.split()) | {"TH"}


def test_gin_big_gin_refused_when_disabled_and_gin_needs_a_discard() -> None:
    """RULES.md 2: "`big_gin_bonus`, default 31; 0 disables it": BIG_GIN_DISABLED, and the eleven melded cards
    go out as gin by discarding a meld card (an end of a 4-card run): 25 + 63."""
    s = start(gin(big_gin_bonus=0), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD",
                                             stock_top_first="TH"))
    s, _ = play(s, "draw stock")
    assert BigGin() not in E.legal_moves(s)
    refused(s, 0, BigGin(), "BIG_GIN_DISABLED")
    assert {"AS", "4S", "7H", "TH"} <= legal_knocks(s)
    s, events = play(s, "knock AS")
    ended = hand_ended(events)
    assert (ended["reason"], ended["points"]) == ("gin", 25 + 63)


def test_gin_big_gin_refused_when_not_all_cards_meld() -> None:
    """RULES.md 2: big gin only "if all 11 cards form melds": with the drawn 5D left over it is refused."""
    s = start(gin(), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="5D"))
    s, _ = play(s, "draw stock")
    assert BigGin() not in E.legal_moves(s)
    refused(s, 0, BigGin(), "NOT_ALL_MELDED")
    refused(s, 0, BigGin(melds("AS 2S 3S 4S", "7H 8H 9H", "KC KD KS")), "NOT_ALL_MELDED")


def test_gin_defender_deadwood_is_the_minimum_of_the_cards_left() -> None:
    """RULES.md 2: "D = defender's deadwood after melds and layoffs", deadwood being "the total value of the cards
    not in melds, for the arrangement of melds that minimizes it": a defender who says "done" at once still has
    JS-KS, 5D-7D and AC-3C counted as melds, so D = 4 (4H) and K = 9 is undercut."""
    s = start(gin(), gin_deal(dealer=1, hands=[K9, "JS QS KS 5D 6D 7D AC 2C 3C 4H"], upcard="5S",
                              stock_top_first="KC"))
    s, _ = play(s, "draw stock", "knock KC")
    s, events = play(s, Done())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"], ended["defender_deadwood"]) == ("undercut", 1, 30, 4)


# ------------------------------------------------------------------------- first turn and drawing (1, 2)

PLAIN = ("AS 2S 3S 4S 7H 8H 9H TH 5C 3C", "2H 6H QH 3D 8D JD 2C 7C 9C QS")  # 8 (5C 3C) and 67, no interplay


def test_gin_first_upcard_rule_none_first_player_draws_from_either_pile() -> None:
    """RULES.md 2: "`none` (seed 001: the first player simply draws from either pile)"; nobody passes."""
    s = start(gin(), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    assert s.phase == "draw" and s.to_act == 0
    assert set(E.legal_moves(s)) == {DrawStock(), DrawDiscard()}
    refused(s, 0, Pass(), "WRONG_PHASE")
    s, _ = play(s, "draw discard")
    assert s.hands[0] >> c("KD") & 1 and s.discard == ()


def test_gin_take_or_pass_both_pass_then_non_dealer_must_draw_stock() -> None:
    """RULES.md 2: "`take_or_pass` (standard: the non-dealer may take the upcard or pass; if passed, the dealer may
    take it or pass; if both pass, the non-dealer must draw from the stock and may no longer take that upcard)"."""
    s = start(gin(first_upcard_rule="take_or_pass"), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    assert s.phase == "take_or_pass" and s.to_act == 0
    refused(s, 0, DrawStock(), "WRONG_PHASE")
    refused(s, 1, Pass(), "NOT_YOUR_TURN")
    s, _ = play(s, "pass")
    assert s.phase == "take_or_pass" and s.to_act == 1
    s, _ = play(s, "pass")
    assert s.phase == "draw" and s.to_act == 0
    assert E.legal_moves(s) == [DrawStock()]
    refused(s, 0, DrawDiscard(), "MUST_DRAW_STOCK")
    s, _ = play(s, "draw stock")
    assert s.phase == "discard" and s.to_act == 0 and s.discard == (c("KD"),)


def test_gin_take_or_pass_dealer_may_take_the_passed_upcard() -> None:
    """RULES.md 2: "if passed, the dealer may take it or pass": the dealer takes KD, discards, and the non-dealer
    then draws from either pile as usual."""
    s = start(gin(first_upcard_rule="take_or_pass"), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play(s, "pass", "draw discard")
    assert s.to_act == 1 and s.phase == "discard" and s.hands[1] >> c("KD") & 1
    s, _ = play(s, "discard QS")
    assert s.to_act == 0 and s.phase == "draw"
    assert set(E.legal_moves(s)) == {DrawStock(), DrawDiscard()}


def test_gin_taken_card_may_not_be_discarded_in_the_same_turn_but_on_a_later_one() -> None:
    """RULES.md 1: "A card taken from the discard pile may not be discarded in the same turn (option
    `discard_taken_card_allowed`, default false). It may be discarded on a later turn.\""""
    s = start(gin(), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play(s, "draw discard")
    assert Discard(c("KD")) not in E.legal_moves(s)
    refused(s, 0, Discard(c("KD")), "DISCARD_TAKEN_CARD")
    s, _ = play(s, "discard 3C")
    s, _ = burn_turns(s, 1)  # seat 1
    s, _ = play(s, "draw stock")
    assert Discard(c("KD")) in E.legal_moves(s)
    s, _ = play(s, "discard KD")
    assert s.discard[-1] == c("KD") and s.to_act == 1


def test_gin_taken_card_may_be_discarded_at_once_with_discard_taken_card_allowed() -> None:
    """RULES.md 1: option `discard_taken_card_allowed` lifts the same-turn restriction."""
    s = start(gin(discard_taken_card_allowed=True), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play(s, "draw discard")
    assert Discard(c("KD")) in E.legal_moves(s)
    s, _ = play(s, "discard KD")
    assert s.discard == (c("KD"),) and s.to_act == 1


@pytest.mark.parametrize(("seat", "move", "code", "after_draw"), [
    (1, DrawStock(), "NOT_YOUR_TURN", False),
    (1, Discard(c("QS")), "NOT_YOUR_TURN", True),
    (0, Discard(c("3C")), "WRONG_PHASE", False),
    (0, Knock(c("3C")), "WRONG_PHASE", False),
    (0, DrawStock(), "WRONG_PHASE", True),
    (0, Declare(), "WRONG_PHASE", True),
    (0, Discard(c("QS")), "CARD_NOT_IN_HAND", True),
    (0, Knock(c("QS")), "CARD_NOT_IN_HAND", True),
])
def test_gin_refused_move_changes_nothing(seat: int, move: E.Move, code: str, after_draw: bool) -> None:
    """RULES.md 4, what must never happen: "A move is applied ... out of turn"; "A rejected move changes anything".
    The refusal carries its reason code and the full state (``state_to_json``) is identical afterwards."""
    s = start(gin(), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    if after_draw:
        s, _ = play(s, "draw stock")
    refused(s, seat, move, code)


# ----------------------------------------------------------------------------------- end of stock (2)

STOCK_END_HANDS = ("AS 2S 3S 4S 7H 8H 9H TH 5C 3C", "JS QS KS 5D 6D 7D AC 2C 9D 8C")  # 8 and 20; 3C helps seat 1


def test_gin_stock_down_to_two_after_a_discard_draws_the_hand() -> None:
    """RULES.md 2: "If the stock is down to 2 cards after a player discards without knocking, the hand is drawn: no
    score"; "after a hand nobody won (a drawn hand ...) the same dealer deals again"."""
    s = start(gin(), gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    assert len(s.stock) == 3 and s.hand_no == 0
    s, events = burn_turns(s, 1)
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("stock_end", None, 0)
    assert s.scores == (0, 0) and s.hand_no == 1 and s.dealer == 1 and s.to_act == 0


def test_gin_player_who_drew_the_third_last_card_may_still_knock() -> None:
    """RULES.md 2: "The player who drew the third-last card may still knock on that turn.\""""
    s = start(gin(), gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    drawn = s.stock[-1]
    s, _ = play(s, "draw stock")
    assert len(s.stock) == 2
    assert E.card_text(drawn) in legal_knocks(s)
    s, events = play(s, Knock(drawn))
    assert knocked(events)["deadwood"] == 8 and s.phase == "layoff"
    s, events = play(s, Declare())
    assert hand_ended(events)["reason"] == "knock"


def test_gin_fiftieth_card_next_player_may_take_the_last_discard_only_to_knock() -> None:
    """RULES.md 2: "`fiftieth_card`: the next player may take that last discard only in order to knock (or go big
    gin) with it, or pass, which draws the hand; drawing from the 2-card stock is refused." Seat 1 takes 3C
    (AC-2C-3C) and must knock; a plain discard is refused."""
    s = start(gin(stock_end_rule="fiftieth_card"), gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 3C")
    assert len(s.stock) == 2 and s.phase == "last_card" and s.to_act == 1 and s.hand_no == 0
    assert set(E.legal_moves(s)) == {Pass(), DrawDiscard()}
    refused(s, 1, DrawStock(), "STOCK_END")
    s, _ = play(s, "draw discard")
    assert not [m for m in E.legal_moves(s) if isinstance(m, Discard)]
    refused(s, 1, Discard(c("9D")), "MUST_KNOCK_WITH_LAST_CARD")
    refused(s, 1, Knock(c("3C")), "DISCARD_TAKEN_CARD")
    assert legal_knocks(s) == {"9D", "8C"}
    s, events = play(s, "knock 9D")
    assert knocked(events)["deadwood"] == 8
    s, events = play(s, Declare())
    assert hand_ended(events)["reason"] in ("knock", "undercut")


def test_gin_fiftieth_card_useless_last_discard_may_only_be_passed_which_draws_the_hand() -> None:
    """RULES.md 2: "`fiftieth_card`: ... may take that last discard only in order to knock ... or pass, which
    draws the hand": 5C does not let seat 1 knock, so taking it is refused; the pass draws the hand."""
    s = start(gin(stock_end_rule="fiftieth_card"), gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 5C")
    assert E.legal_moves(s) == [Pass()]
    refused(s, 1, DrawDiscard(), "MUST_KNOCK_WITH_LAST_CARD")
    s, events = play(s, "pass")
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("stock_end", None, 0)
    assert s.hand_no == 1 and s.dealer == 1


# --------------------------------------------------------------------------------- turn cap (1)


def test_gin_max_turns_draws_the_hand() -> None:
    """RULES.md 1: "a hand that reaches `max_turns` turns ... ends as a drawn hand with no score"; "A turn counts
    when it ends with a discard; the check is made after that discard"."""
    s = start(gin(max_turns=3), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, events = burn_turns(s, 2)
    assert not of_kind(events, "hand_ended") and s.turns == 2
    s, events = burn_turns(s, 1)
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("turn_cap", None, 0)
    assert s.hand_no == 1 and s.dealer == 1 and s.scores == (0, 0)


def test_gin_max_turns_does_not_stop_a_knock_on_the_last_turn() -> None:
    """RULES.md 1: a turn counts "when it ends with a discard"; a knock ends the hand by itself and is scored."""
    s = start(gin(max_turns=1), gin_deal(dealer=1, hands=PLAIN, upcard="KD", stock_top_first="KC"))
    s, events = play(s, "draw stock", "knock KC")
    assert s.phase == "layoff"
    s, events = play(s, Declare())
    assert hand_ended(events)["reason"] == "knock"


@pytest.mark.parametrize(("stock_end_rule", "reason", "phase"), [
    ("draw", "stock_end", "draw"), ("fiftieth_card", None, "last_card"),
])
def test_gin_stock_end_on_the_same_discard_takes_precedence_over_max_turns(
    stock_end_rule: str, reason: str | None, phase: str
) -> None:
    """RULES.md 1: "(a Gin stock end on the same discard takes precedence)": with `max_turns` 29 the 29th discard
    leaves 2 in the stock; it is a stock end (and with `fiftieth_card` the last-card offer), not a turn cap."""
    s = start(gin(max_turns=29, stock_end_rule=stock_end_rule), gin_deal(dealer=1, hands=STOCK_END_HANDS,
                                                                        upcard="KD"))
    s, events = burn_turns(s, 29)
    assert s.phase == phase
    if reason is None:
        assert not of_kind(events, "hand_ended") and s.to_act == 1
    else:
        assert hand_ended(events)["reason"] == reason


# ------------------------------------------------------------------------------------- Oklahoma (2)


@pytest.mark.parametrize(("upcard", "limit"), [
    ("7D", 7), ("2D", 2), ("TD", 10), ("JH", 10), ("QD", 10), ("KD", 10),
])
def test_oklahoma_knock_limit_is_the_first_upcard_value(upcard: str, limit: int) -> None:
    """RULES.md 2, `oklahoma-gin`: "the knock limit of each deal is the value of its first upcard (J Q K = 10)".
    Knocking with 8 (5C 3C) is allowed only when the limit is at least 8."""
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(dealer=1, hands=PLAIN, upcard=upcard,
                                                            stock_top_first="KC"))
    assert s.knock_limit == limit and E.view(s, 0)["knock_limit"] == limit
    s, _ = play(s, "draw stock")
    if limit >= 8:
        s, events = play(s, "knock KC")
        assert knocked(events)["deadwood"] == 8
    else:
        assert legal_knocks(s) == set()
        refused(s, 0, Knock(c("KC")), "KNOCK_OVER_LIMIT")


def test_oklahoma_knock_limit_stays_when_the_upcard_is_taken() -> None:
    """RULES.md 2: the limit is the value of the first upcard, "whoever takes that card": seat 0 takes the 7D and
    the limit stays 7 (5C 3C plus 7D would be 15; discarding 5C leaves 10 > 7)."""
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(dealer=1, hands=PLAIN, upcard="7D"))
    s, _ = play(s, "draw discard")
    assert s.knock_limit == 7
    refused(s, 0, Knock(c("5C")), "KNOCK_OVER_LIMIT")
    s, _ = play(s, "discard 5C")
    assert s.knock_limit == 7


@pytest.mark.parametrize(("oklahoma_ace", "limit"), [("gin_only", 0), ("one", 1)])
def test_oklahoma_ace_upcard_means_gin_only_or_one(oklahoma_ace: str, limit: int) -> None:
    """RULES.md 2: "an ace upcard means gin only (option `oklahoma_ace`: `gin_only` or `one`)": with the drawn AC,
    discarding 4S leaves deadwood 1 (refused when gin only), discarding AC is gin."""
    rules = E.rules_from_profile("oklahoma-gin", oklahoma_ace=oklahoma_ace)
    s = start(rules, gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="AD", stock_top_first="AC"))
    assert s.knock_limit == limit
    s, _ = play(s, "draw stock")
    if limit == 0:
        assert legal_knocks(s) == {"AC"}
        refused(s, 0, Knock(c("4S")), "KNOCK_OVER_LIMIT")
        s, events = play(s, "knock AC")
        assert hand_ended(events)["reason"] == "gin"
    else:
        assert legal_knocks(s) == {"AC", "AS", "4S"}
        s, events = play(s, "knock 4S")
        assert knocked(events)["deadwood"] == 1


WINNER10 = "AS 2S 3S 4S 5S AH 2H 3H 4H 5H"  # gin in hand
LOSERS = {  # defender deadwood -> a 10-card hand with exactly that minimum deadwood
    5: "7D 8D 9D TD 7C 8C 9C TC 2D 3C",
    15: "7D 8D 9D TD 7C 8C 9C TC KS 5D",
    79: "KH KD QH QD JS JC TS 2C 3D 4C",
    98: "KH KD QH QD JS JC TS TC 9H 9D",
}


def win_deal(dealer: int, winner: int, loser_deadwood: int, upcard: str = "KC") -> E.Deal:
    """A deal in which ``winner`` holds gin and the other seat a hand of the given minimum deadwood."""
    hands = [LOSERS[loser_deadwood]] * 2
    hands[winner] = WINNER10
    return gin_deal(dealer=dealer, hands=hands, upcard=upcard, stock_top_first="QC JD")


def play_win(s: GameState, winner: int) -> tuple[GameState, list[E.Event]]:
    """Play a ``win_deal`` hand: both pass a take-or-pass upcard, the loser burns a turn if first, the winner gins."""
    events: list[E.Event] = []
    if s.phase == "take_or_pass":
        s, more = play(s, "pass", "pass")
        events += more
    if s.to_act != winner:
        s, more = burn_turns(s, 1)
        events += more
    s, more = play(s, DrawStock(), Knock(s.stock[-1]))
    assert hand_ended(more)["winner"] == winner
    return s, events + more


@pytest.mark.parametrize(("upcard", "spades_double", "points"), [
    ("KC", True, 123), ("KS", True, 246), ("KS", False, 123),
])
def test_oklahoma_spade_upcard_doubles_the_gin_score_bonus_included(
    upcard: str, spades_double: bool, points: int
) -> None:
    """RULES.md 2: "a spade upcard doubles the hand score, bonuses included (option `spades_double`, default
    on)": gin 25 + 98 = 123, doubled 246."""
    rules = E.rules_from_profile("oklahoma-gin", spades_double=spades_double)
    s = start(rules, win_deal(dealer=1, winner=0, loser_deadwood=98, upcard=upcard))
    s, events = play_win(s, 0)
    assert hand_ended(events)["points"] == points
    assert s.scores[0] == points


@pytest.mark.parametrize(("defender", "upcard", "reason", "points"), [
    ("2H 6H QH 3D 8D JD 2C 7C 9C QS", "TD", "knock", 52),
    ("2H 6H QH 3D 8D JD 2C 7C 9C QS", "TS", "knock", 104),
    ("JS QS KS 5D 6D 7D AC 2C 3C 4H", "TD", "undercut", 30),
    ("JS QS KS 5D 6D 7D AC 2C 3C 4H", "TS", "undercut", 60),
])
def test_oklahoma_spade_upcard_doubles_knock_and_undercut_scores(
    defender: str, upcard: str, reason: str, points: int
) -> None:
    """RULES.md 2: "a spade upcard doubles the hand score, bonuses included": D - K = 52 becomes 104, the
    undercut 25 + 5 = 30 becomes 60."""
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(dealer=1, hands=[K9, defender], upcard=upcard,
                                                            stock_top_first="KC"))
    s, _ = play(s, "draw stock", "knock KC")
    s, events = play(s, Declare())
    ended = hand_ended(events)
    assert (ended["reason"], ended["points"]) == (reason, points)


@pytest.mark.parametrize(("profile", "over"), [("oklahoma-gin", False), ("gin", True)])
def test_oklahoma_target_score_is_150(profile: str, over: bool) -> None:
    """RULES.md 2, `oklahoma-gin`: "target 150" (the default target is 100): 123 points end a plain gin match but
    not an Oklahoma one."""
    rules = E.rules_from_profile(profile)
    assert rules.target_score == (100 if over else 150)
    s = start(rules, win_deal(dealer=1, winner=0, loser_deadwood=98))
    s, _ = play_win(s, 0)
    assert s.scores == (123, 0)
    assert (s.phase == "match_over") is over


# ----------------------------------------------------------------------------------- match (2)


def test_gin_match_ends_at_target_score() -> None:
    """RULES.md 2: "Hand scores add up; the first to reach `target_score` (default 100) wins the match": 40 then
    123 for seat 0; nothing more can be played."""
    s = start(gin(), win_deal(dealer=1, winner=0, loser_deadwood=15), win_deal(dealer=0, winner=0, loser_deadwood=98))
    s, _ = play_win(s, 0)
    assert s.scores == (40, 0) and s.phase != "match_over"
    s, events = play_win(s, 0)
    assert s.scores == (163, 0) and s.phase == "match_over"
    assert of_kind(events, "match_ended")
    assert s.result is not None and s.result["winners"] == [0]
    assert E.legal_moves(s) == []
    refused(s, 0, DrawStock(), "GAME_OVER")


@pytest.mark.parametrize("winner", [0, 1])
def test_gin_winner_of_a_hand_deals_the_next(winner: int) -> None:
    """RULES.md 2: "The winner of a hand deals the next"; section 1: "The dealer's next seat acts first"."""
    s = start(gin(), win_deal(dealer=0, winner=winner, loser_deadwood=5))
    s, _ = play_win(s, winner)
    assert s.hand_no == 1 and s.dealer == winner and s.to_act == 1 - winner


def test_gin_max_hands_ends_the_match_drawn_hands_included() -> None:
    """RULES.md 3 (the `max_hands` option, also offered for Gin): "after that many hands (drawn hands count), the
    highest total wins": a turn-capped hand and one win of 40 end a two-hand match."""
    s = start(gin(max_hands=2, max_turns=2), gin_deal(dealer=1, hands=PLAIN, upcard="KD"),
              win_deal(dealer=1, winner=0, loser_deadwood=15))
    s, events = burn_turns(s, 2)
    assert hand_ended(events)["reason"] == "turn_cap" and s.phase != "match_over"
    s, _ = play_win(s, 0)
    assert s.phase == "match_over" and s.hands_played == 2
    assert s.result is not None and s.result["winners"] == [0] and s.result["totals"] == [40, 0]


def test_gin_max_hands_tie_is_a_shared_win() -> None:
    """RULES.md 3, `max_hands`: "a tie for the highest total is a shared win": one drawn hand, 0 to 0."""
    s = start(gin(max_hands=1, max_turns=1), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = burn_turns(s, 1)
    assert s.phase == "match_over"
    assert s.result is not None and s.result["winners"] == [0, 1]


def test_gin_standard_profile_values() -> None:
    """RULES.md 2, profiles: "`gin-standard` | `first_upcard_rule=take_or_pass`, gin 20, undercut 10, big gin off,
    box 20, game 100, shutout 200"."""
    r = E.rules_from_profile("gin-standard")
    assert (r.first_upcard_rule, r.gin_bonus, r.undercut_bonus, r.big_gin_bonus) == ("take_or_pass", 20, 10, 0)
    assert (r.box_bonus, r.game_bonus, r.shutout_game_bonus, r.target_score) == (20, 100, 200, 100)


def test_gin_standard_shutout_bonus_replaces_game_bonus() -> None:
    """RULES.md 2: "`shutout_game_bonus` (replaces `game_bonus` when the loser scored no hand points)"; boxes are
    "per hand won, added at the end": gin 20 + 98 = 118, one box 20, shutout 200."""
    s = start(E.rules_from_profile("gin-standard"), win_deal(dealer=1, winner=0, loser_deadwood=98))
    s, _ = play_win(s, 0)
    assert s.phase == "match_over" and s.scores == (118, 0)
    assert s.result is not None and s.result["winners"] == [0]
    assert s.result["totals"] == [118 + 20 + 200, 0]


def test_gin_standard_boxes_do_not_count_toward_the_target() -> None:
    """RULES.md 2: "`box_bonus` (per hand won, added at the end, not counted toward the target), `game_bonus` (to
    the match winner)": 99 plus a box would pass 100, yet the match goes on; it ends at 124 with 2 boxes and the
    game bonus 100; the loser keeps 25 and a box."""
    s = start(E.rules_from_profile("gin-standard"), win_deal(dealer=1, winner=0, loser_deadwood=79),
              win_deal(dealer=0, winner=1, loser_deadwood=5), win_deal(dealer=1, winner=0, loser_deadwood=5))
    s, _ = play_win(s, 0)
    assert s.scores == (99, 0) and s.phase != "match_over"
    s, _ = play_win(s, 1)
    assert s.scores == (99, 25) and s.phase != "match_over"
    s, _ = play_win(s, 0)
    assert s.scores == (124, 25) and s.phase == "match_over" and s.boxes == (2, 1)
    assert s.result is not None and s.result["winners"] == [0]
    assert s.result["totals"] == [124 + 2 * 20 + 100, 25 + 20]


# -------------------------------------------------------------------------------- Hollywood (2)


def _hollywood(*deals: E.Deal) -> GameState:
    return start(E.rules_from_profile("hollywood-gin"), *deals)


def test_hollywood_wins_enter_game_one_then_two_then_all_three() -> None:
    """RULES.md 2, `hollywood-gin`: "A hand win is entered in every open game g for which g = 1, or the winner
    already had a score in game g-1 before this hand, or game g-1 has ended (so: 1st win in game 1, 2nd in games 1
    and 2, 3rd and later in all three ...)". "The match ends when all three games have ended; the winner is the
    player with the higher sum over the three games"."""
    plan = [  # (winner, loser deadwood, points, games entered, games after the hand, games ended)
        (0, 15, 40, [0], [[40, 0], [0, 0], [0, 0]], [False, False, False]),
        (0, 15, 40, [0, 1], [[80, 0], [40, 0], [0, 0]], [False, False, False]),
        (1, 5, 30, [0], [[80, 30], [40, 0], [0, 0]], [False, False, False]),
        (0, 15, 40, [0, 1, 2], [[120, 30], [80, 0], [40, 0]], [True, False, False]),
        (1, 5, 30, [1], [[120, 30], [80, 30], [40, 0]], [True, False, False]),
        (1, 98, 123, [1, 2], [[120, 30], [80, 153], [40, 123]], [True, True, True]),
    ]
    deals, dealer = [], 1
    for winner, dead, *_ in plan:
        deals.append(win_deal(dealer=dealer, winner=winner, loser_deadwood=dead))
        dealer = winner
    s = _hollywood(*deals)
    for winner, _, points, entered, games, ended in plan:
        assert s.phase != "match_over"
        s, events = play_win(s, winner)
        record = hand_ended(events)
        assert (record["points"], record["games_entered"]) == (points, entered)
        assert [list(g) for g in s.games] == games and list(s.games_ended) == ended
    assert s.phase == "match_over"
    assert s.scores == (240, 306)
    assert s.result is not None and s.result["winners"] == [1] and s.result["totals"] == [240, 306]


def test_hollywood_player_shut_out_of_game_one_starts_game_two() -> None:
    """RULES.md 2: "a player shut out of one game starts the next": seat 0 ends game 1 at 123 with seat 1 at 0;
    seat 1's first win goes to game 2 only, the second to games 2 and 3."""
    s = _hollywood(win_deal(dealer=1, winner=0, loser_deadwood=98), win_deal(dealer=0, winner=1, loser_deadwood=5),
                   win_deal(dealer=1, winner=1, loser_deadwood=5))
    s, events = play_win(s, 0)
    assert hand_ended(events)["games_entered"] == [0] and list(s.games_ended) == [True, False, False]
    s, events = play_win(s, 1)
    assert hand_ended(events)["games_entered"] == [1]
    s, events = play_win(s, 1)
    assert hand_ended(events)["games_entered"] == [1, 2]
    assert [list(g) for g in s.games] == [[123, 0], [0, 60], [0, 30]]
    assert s.phase != "match_over"


def test_hollywood_a_win_of_no_points_still_counts_as_a_score_in_its_game() -> None:
    """RULES.md 2, `hollywood-gin`: "1st win in game 1, 2nd in games 1 and 2": a win counts by being entered,
    not by its points. With `undercut_bonus` 0, seat 1 undercuts K = D = 9 for 0 points (entered in game 1);
    its next win goes into games 1 and 2."""
    s = start(gin(hollywood=True, undercut_bonus=0),
              gin_deal(dealer=1, hands=[K9, "JS QS KS 5D 6D 7D AC 2C 3C 9D"], upcard="5S", stock_top_first="KC"),
              win_deal(dealer=1, winner=1, loser_deadwood=5))
    s, events = play(s, "draw stock", "knock KC", Declare())
    record = hand_ended(events)
    assert (record["reason"], record["winner"], record["points"], record["games_entered"]) == ("undercut", 1, 0, [0])
    s, events = play_win(s, 1)
    assert hand_ended(events)["games_entered"] == [0, 1]
    assert [list(g) for g in s.games] == [[0, 30], [0, 30], [0, 0]]


# ---------------------------------------------------------------------------------------- views (4)


def _view_json(s: GameState, viewer: int) -> str:
    return json.dumps(E.view(s, viewer))


def _hidden(s: GameState, seat: int) -> set[str]:
    """Cards of a seat's hand that nobody else may see: not taken from the discard pile, not knocked face up."""
    return texts(s.hands[seat] & ~s.known[seat])


def _assert_not_shown(hidden: set[str], shown: str) -> None:
    leaked = {t for t in hidden if f'"{t}"' in shown}
    assert not leaked, f"leaked {sorted(leaked)}"


def test_gin_view_hides_the_other_hand_except_cards_taken_from_the_discard_pile() -> None:
    """RULES.md 4: "A player sees a card they may not see: another hand, the stock order" must never happen;
    "Visible to everyone: ... any card taken from the discard pile (everyone saw it)". Events too."""
    s = start(gin(), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, events = play(s, "draw stock", "discard 3C", "draw discard", "discard QS", "draw stock")
    assert E.view(s, 0)["known_cards"][1] == ["3C"] and E.view(s, E.SPECTATOR)["known_cards"][1] == ["3C"]
    assert "3C" in E.view(s, 1)["hand"]
    for viewer, other in ((0, 1), (1, 0), (E.SPECTATOR, 0), (E.SPECTATOR, 1)):
        shown = _view_json(s, viewer) + json.dumps([E.event_for(e, viewer) for e in events])
        _assert_not_shown(_hidden(s, other), shown)
    assert "hand" not in E.view(s, E.SPECTATOR) and "hands" not in E.view(s, E.SPECTATOR)
    assert "stock" not in E.view(s, 0) and "seed" not in _view_json(s, 0)


def test_gin_view_after_a_knock_shows_the_knockers_melds_and_deadwood_but_not_the_defenders_hand() -> None:
    """RULES.md 4: "Gin: the knocker's melds and deadwood become public when they knock (the defender's cards stay
    hidden until the hand ends)"."""
    s = start(gin(), gin_deal(dealer=1, hands=[K9, "2H 6H QH 3D 8D JD 2C 7C 9C QS"], upcard="5S",
                              stock_top_first="KC"))
    s, events = play(s, "draw stock", "knock KC")
    knocker_cards = set(K9.split())
    for viewer in (1, E.SPECTATOR):
        v = E.view(s, viewer)
        public = set().union(*(set(m["cards"]) for m in v["melds"])) | set(v["knock"]["deadwood_cards"])
        assert public == knocker_cards and v["knock"]["deadwood"] == 9
    shown = _view_json(s, 0) + json.dumps([E.event_for(e, 0) for e in events])
    _assert_not_shown(texts(s.hands[1]), shown)
    _assert_not_shown(texts(s.hands[1]), _view_json(s, E.SPECTATOR))


def test_gin_all_hands_are_revealed_in_last_hand_when_the_hand_ends() -> None:
    """RULES.md 4: "At the end of a hand all hands are revealed": ``last_hand`` shows both seats' cards (hands and
    table melds with layoffs), to everyone, while the new hand stays hidden."""
    defender = "2H 6H QH 3D 8D JD 2C 7C 9C QS"
    s = start(gin(), gin_deal(dealer=1, hands=[K9, defender], upcard="5S", stock_top_first="KC"))
    s, _ = play(s, "draw stock", "knock KC", Declare())
    for viewer in (0, 1, E.SPECTATOR):
        last = E.view(s, viewer)["last_hand"]
        shown = set().union(*map(set, last["hands"])) | set().union(*(set(m["cards"]) for m in last["melds"]))
        assert shown == set(K9.split()) | set(defender.split())
    fresh = E.view(s, E.SPECTATOR)
    del fresh["last_hand"]  # the finished hand reuses the card texts of the new one
    _assert_not_shown(texts(s.hands[0] | s.hands[1]) - texts(s.known[0] | s.known[1]), json.dumps(fresh))


# ------------------------------------------------------------------------------ option validation (2)


@pytest.mark.parametrize(("make", "name"), [
    (lambda: E.rules_from_profile("gin", players=3), "players"),
    (lambda: Rules(game="gin", players=3), "players"),
    (lambda: E.rules_from_profile("gin", knock_limit=-1), "knock_limit"),
    (lambda: E.rules_from_profile("gin", no_such_option=1), "no_such_option"),
    (lambda: E.rules_from_profile("gin-royale"), "gin-royale"),
    (lambda: E.rules_from_profile("gin", ace_high_low=True), "ace_high_low"),
    (lambda: E.rules_from_profile("gin", oklahoma_ace="two"), "oklahoma_ace"),
    (lambda: E.rules_from_profile("gin", stock_end_rule="sudden_death"), "stock_end_rule"),
    (lambda: E.rules_from_profile("gin", first_upcard_rule="always"), "first_upcard_rule"),
])
def test_gin_invalid_options_are_refused_naming_the_option(make: Any, name: str) -> None:
    """RULES.md, head: "A game is created from a profile plus overrides, validated when the game is created";
    section 1: "Seat count ... (Gin: 2 ...)". The error is InvalidOptionsError and names the culprit."""
    with pytest.raises(InvalidOptionsError) as err:
        make()
    assert name in err.value.message


def test_gin_oklahoma_refuses_a_knock_limit_override() -> None:
    """RULES.md 2, oklahoma-gin: the knock limit of each deal is the value of its first upcard, so a separate
    knock_limit option makes no sense with it and is refused naming the option."""
    with pytest.raises(E.InvalidOptionsError, match="knock_limit"):
        E.rules_from_profile("oklahoma-gin", knock_limit=5)
