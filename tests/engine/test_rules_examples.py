"""docs/rules.md section 8, "Scoring, worked through": every worked example is played here from its preset deal,
and the score the docs print in bold is the score the engine gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import engine as E
from engine import Declare, Done, IllegalMoveError, Knock, MeldMove
from engine.scoring import record_hand_win
from tests.engine.helpers import deal_from_text, gin_deal, hand_ended, mask, play, start

RULES_MD = Path(__file__).resolve().parents[2] / "docs" / "rules.md"

K9 = "AS 2S 3S 4S 7H 8H 9H TH 5C 4D"  # knocks with the drawn KC: K = 9
NO_MELD = "2H 6H QH 3D 8D JD 2C 7C 9C QS"  # lays 6H off: D = 61
THREE_MELDS = "JS QS KS 5D 6D 7D AC 2C 3C 4H"
TIE = "JS QS KS 5D 6D 7D AC 2C 3C 9D"
GIN10 = "AS 2S 3S 4S 7H 8H 9H KC KD KS"
GIN_DEFENDER = "JH QH KH 2D 3D 9C 8C 6C 4H QS"  # minimum deadwood 42


def _bold_numbers() -> set[int]:
    text = RULES_MD.read_text()
    section = text[text.index("## 8. Scoring, worked through"):text.index("## 9. Reason codes")]
    return {int(n) for n in re.findall(r"\*\*(\d+)\*\*", section)}


def _knock(defender: str, *declaration: E.Move | str, profile: str = "gin", upcard: str = "5S",
           **options: Any) -> dict[str, Any]:  # fmt: skip
    s = start(E.rules_from_profile(profile, **options),
              gin_deal(dealer=1, hands=[K9, defender], upcard=upcard, stock_top_first="KC"))  # fmt: skip
    s, _ = play(s, "draw stock", "knock KC")
    _, events = play(s, *(declaration or (Declare(),)))
    return hand_ended(events)


def _gin(stock_top: str, last: E.Move | str) -> dict[str, Any]:
    s = start(E.rules_from_profile("gin"), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD",
                                                    stock_top_first=stock_top))  # fmt: skip
    _, events = play(s, "draw stock", last)
    return hand_ended(events)


def _points(ended: dict[str, Any]) -> int:
    return int(ended["points"])


GIN_EXAMPLES = {
    "knock": (lambda: _points(_knock(NO_MELD)), 52),
    "undercut": (lambda: _points(_knock(THREE_MELDS)), 30),
    "tie is an undercut": (lambda: _points(_knock(TIE)), 25),
    "done at once, best": (lambda: _points(_knock(THREE_MELDS, Done())), 30),
    "done at once, declared": (lambda: _points(_knock(THREE_MELDS, Done(), defender_deadwood="declared")), 49),
    "two melds, declared": (lambda: _points(_knock(
        THREE_MELDS, MeldMove(mask("JS QS KS")), MeldMove(mask("5D 6D 7D")), Done(), defender_deadwood="declared")), 1),
    "gin": (lambda: _points(_gin("5D", "knock 5D")), 67),
    "big gin": (lambda: _points(_gin("TH", E.BigGin())), 73),
    "oklahoma knock": (lambda: _points(_knock(NO_MELD, profile="oklahoma-gin", upcard="TS")), 104),
    "oklahoma undercut": (lambda: _points(_knock(THREE_MELDS, profile="oklahoma-gin", upcard="TS")), 60),
}


@pytest.mark.parametrize("name", sorted(GIN_EXAMPLES))
def test_gin_worked_example(name: str) -> None:
    compute, points = GIN_EXAMPLES[name]
    assert compute() == points
    assert points in _bold_numbers(), f"docs/rules.md section 8 no longer shows **{points}** ({name})"


def test_gin_tie_without_undercut_on_tie_scores_nothing() -> None:
    ended = _knock(TIE, undercut_on_tie=False)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("tie", None, 0)


def test_oklahoma_seven_upcard_refuses_the_knock_with_nine() -> None:
    s = start(E.rules_from_profile("oklahoma-gin"),
              gin_deal(dealer=1, hands=[K9, NO_MELD], upcard="7D", stock_top_first="KC"))  # fmt: skip
    s, _ = play(s, "draw stock")
    assert s.knock_limit == 7
    with pytest.raises(IllegalMoveError, match="KNOCK_OVER_LIMIT"):
        E.apply(s, 0, Knock(E.parse_card("KC")))


def test_oklahoma_spade_king_upcard_doubles_a_gin_against_98() -> None:
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(
        dealer=1, hands=["AS 2S 3S 4S 5S AH 2H 3H 4H 5H", "KH KD QH QD JS JC TS TC 9H 9D"], upcard="KS",
        stock_top_first="QC"))  # fmt: skip
    s, events = play(s, "draw stock", "knock QC")
    assert _points(hand_ended(events)) == 246 and 246 in _bold_numbers()


def test_hollywood_worked_example() -> None:
    """Ann (seat 0) and Bob (seat 1): 20, 15, 30, 10, 25 go into the games the docs name."""
    s = E.new_game(E.rules_from_profile("hollywood-gin"), b"docs-hollywood-example").copy()
    entered = [record_hand_win(s, seat, points) for seat, points in ((0, 20), (1, 15), (0, 30), (0, 10), (1, 25))]
    assert entered == [[0], [0], [0, 1], [0, 1, 2], [0, 1]]
    assert s.games == ((60, 40), (40, 25), (10, 0))


RUMMY_HANDS = ["3S 3H 3D 4C 5C 6C 7C", "KH QD JS 9C 4D 2H AS", "KD QH TS 8S 5D 6H AH"]


@pytest.mark.parametrize(("profile", "ace_high_low", "points"), [
    ("rummy", False, 192), ("rummy-g4a", False, 96), ("rummy", True, 248), ("rummy-g4a", True, 116),
])  # fmt: skip
def test_rummy_going_rummy_worked_example(profile: str, ace_high_low: bool, points: int) -> None:
    rules = E.rules_from_profile(profile, players=3, target_score=1000, ace_high_low=ace_high_low)
    s = E.new_game(rules, b"docs-rummy-example-seed", (deal_from_text(2, RUMMY_HANDS, "9D", "8C"),))
    _, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    ended = hand_ended(events)
    assert ended["going_rummy"] is True and ended["points"] == points
    assert points in _bold_numbers()


def test_rummy_plain_going_out_worked_example() -> None:
    """Laying 3S-3H-3D down on an earlier turn makes the same going out a plain 96."""
    rules = E.rules_from_profile("rummy", players=3, target_score=1000)
    hands = ["3S 3H 3D 4C 5C 6C 9D", *RUMMY_HANDS[1:]]
    s = E.new_game(rules, b"docs-rummy-example-seed", (deal_from_text(2, hands, "TC", "JC 2C QS 7C"),))
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "discard 9D")
    for _ in range(2):  # the others draw and throw the same card back
        top = s.stock[-1]
        s, _ = play(s, E.DrawStock(), E.Discard(top))
    _, events = play(s, "draw stock", "meld 4C 5C 6C 7C", "discard JC")
    ended = hand_ended(events)
    assert (ended["going_rummy"], ended["points"]) == (False, 96) and 96 in _bold_numbers()
