"""Rule-clause tests of the Gin defender's declaration: option ``defender_deadwood`` (RULES.md 2, "Hand score").

``best`` (the default) counts the minimum deadwood of the cards the defender has left after the melds and layoffs
they declared, so an undeclared meld still counts as a meld; ``declared`` counts every card neither in a declared
meld nor laid off (OpenSpiel's reading). After gin or big gin both count the minimum: the defender declares
nothing. Each scenario is a preset deal (``tests/engine/helpers.py``); seat 0 acts first (seat 1 deals).
"""

from __future__ import annotations

from typing import Any

import pytest

import engine as E
from engine import BigGin, Declare, Done, GameState, InvalidOptionsError, LayOff, MeldMove, Rules
from tests.engine.helpers import gin_deal, hand_ended, mask, of_kind, play, start

BOTH = ("best", "declared")


def gin(defender_deadwood: str, **overrides: Any) -> Rules:
    """Rules of the ``gin`` profile with the defender's option set."""
    return E.rules_from_profile("gin", defender_deadwood=defender_deadwood, **overrides)


def c(text: str) -> int:
    """One card from its text."""
    return E.parse_card(text)


def meld_id(state: GameState, text: str) -> int:
    """The id of the table meld made of exactly these cards."""
    want = mask(text)
    (found,) = [m.id for m in state.melds if m.cards == want]
    return found


def result(events: list[E.Event]) -> tuple[str, int | None, int, int]:
    """(reason, winner, points, defender_deadwood) of the hand that ended."""
    ended = hand_ended(events)
    return ended["reason"], ended["winner"], ended["points"], ended["defender_deadwood"]


def scored(state: GameState, expected: tuple[str, int, int, int]) -> None:
    """The hand's points went to its winner in the match score."""
    _, winner, points, _ = expected
    assert state.scores == tuple(points if seat == winner else 0 for seat in range(2))


# The knocker (seat 0) draws KC and knocks with it: melds AS-4S and 7H-TH, deadwood 5C 4D, K = 9. The defender
# holds three melds and 4H; none of their cards fits the knocker's melds (5S is the upcard, under the KC).
K9 = "AS 2S 3S 4S 7H 8H 9H TH 5C 4D"
THREE_MELDS = "JS QS KS 5D 6D 7D AC 2C 3C 4H"  # melded: 4 (4H); nothing declared: 58


def _after_knock(rule: str) -> GameState:
    s = start(gin(rule), gin_deal(dealer=1, hands=[K9, THREE_MELDS], upcard="5S", stock_top_first="KC"))
    s, _ = play(s, "draw stock", "knock KC")
    assert s.phase == "layoff" and s.knock_deadwood == 9
    return s


# ------------------------------------------------------------------------------------------- the default


def test_defender_deadwood_defaults_to_best_in_every_gin_profile() -> None:
    """RULES.md 2: "Option `defender_deadwood`: `best` (default)"; every Gin profile keeps the default."""
    assert Rules().defender_deadwood == "best"
    for name, values in E.PROFILES.items():
        rules = E.rules_from_profile(name)
        if rules.game == "gin":
            assert "defender_deadwood" not in values
            assert rules.to_dict()["defender_deadwood"] == "best"


# --------------------------------------------------------------------------------- knock: done at once


@pytest.mark.parametrize(("rule", "expected"), [
    ("best", ("undercut", 1, 25 + (9 - 4), 4)),
    ("declared", ("knock", 0, 58 - 9, 58)),
])  # fmt: skip
def test_defender_done_at_once_counts_undeclared_melds_only_under_best(
    rule: str, expected: tuple[str, int, int, int]
) -> None:
    """RULES.md 2: `best` "counts the minimum deadwood of the defender's cards left after their layoffs and
    declared melds, so an undeclared meld still counts as a meld"; `declared` "counts exactly what was declared".
    A defender who says "done" at once: best D = 4 undercuts K = 9; declared D = 58 loses 49 to the knock."""
    s, events = play(_after_knock(rule), Done())
    assert result(events) == expected
    scored(s, expected)
    scored(s, expected)
    (declared,) = of_kind(events, "declared")
    assert declared.public["deadwood"] == expected[3]


# ------------------------------------------------------------------ knock and undercut: piecewise melds


@pytest.mark.parametrize(("rule", "expected"), [
    ("best", ("undercut", 1, 25 + (9 - 4), 4)),
    ("declared", ("knock", 0, 10 - 9, 10)),
])  # fmt: skip
def test_defender_piecewise_declaration_leaving_a_meld_in_hand(rule: str, expected: tuple[str, int, int, int]) -> None:
    """RULES.md 2: "as single meld and lay-off moves followed by a final "done"". The defender lays down JS-KS and
    5D-7D and keeps AC-2C-3C in hand: best still melds it (D = 4, an undercut); declared counts it (D = 10 > 9:
    the knocker wins by 1)."""
    s, events = play(_after_knock(rule), MeldMove(mask("JS QS KS")), MeldMove(mask("5D 6D 7D")), Done())
    assert result(events) == expected
    scored(s, expected)


@pytest.mark.parametrize("rule", BOTH)
def test_defender_who_declares_every_meld_undercuts_under_both(rule: str) -> None:
    """RULES.md 2: "K > D ...: the defender scores `undercut_bonus` (25) + (K - D)": with all three melds laid
    down both readings count only 4H."""
    s, events = play(
        _after_knock(rule), MeldMove(mask("JS QS KS")), MeldMove(mask("5D 6D 7D")), MeldMove(mask("AC 2C 3C")), Done()
    )
    assert result(events) == ("undercut", 1, 25 + 5, 4)
    scored(s, ("undercut", 1, 30, 4))


@pytest.mark.parametrize(("rule", "expected"), [
    ("best", ("undercut", 1, 30, 4)),
    ("declared", ("knock", 0, 1, 10)),
])  # fmt: skip
def test_defender_one_shot_declare_counts_like_the_same_piecewise_declaration(
    rule: str, expected: tuple[str, int, int, int]
) -> None:
    """RULES.md 2: "The defender may make the declaration as one move or as single meld and lay-off moves": the
    one-shot Declare of JS-KS and 5D-7D scores exactly as the same two meld moves and "done"."""
    s, events = play(_after_knock(rule), Declare((mask("JS QS KS"), mask("5D 6D 7D")), ()))
    assert result(events) == expected
    scored(s, expected)


@pytest.mark.parametrize("rule", BOTH)
def test_defender_best_declaration_move_reaches_the_minimum_under_both(rule: str) -> None:
    """RULES.md 2: "the referee can also compute the defender's best declaration (minimum deadwood over melds and
    layoffs together)": it lays every meld down, so it scores the same under both readings."""
    s = _after_knock(rule)
    assert Declare() in E.legal_moves(s)
    s, events = play(s, Declare())
    assert result(events) == ("undercut", 1, 30, 4)
    assert len(of_kind(events, "melded")) == 3


# -------------------------------------------------------------------- knock: layoffs then an undeclared meld

# The knocker (seat 0) draws QC and knocks with it: 5H-7H, AS-3S, KC-KD-KS, deadwood 2D. The defender lays 8H and
# 9H off on 5H-7H and keeps the run 4D-5D-6D in hand; TC 3C 5C QS JC are deadwood (38) either way.
RUN_KNOCKER = "5H 6H 7H AS 2S 3S KC KD KS 2D"
LAYOFF_DEFENDER = "8H 9H 4D 5D 6D TC 3C 5C QS JC"


@pytest.mark.parametrize(("rule", "dead"), [("best", 38), ("declared", 38 + 4 + 5 + 6)])
def test_defender_laid_off_cards_never_count_and_an_undeclared_run_counts_only_under_declared(
    rule: str, dead: int
) -> None:
    """RULES.md 2: D is the "defender's deadwood after melds and layoffs"; `declared`: "every card neither in a
    declared meld nor laid off is deadwood". 8H and 9H laid off count under both; 4D-5D-6D only under declared."""
    s = start(gin(rule), gin_deal(dealer=1, hands=[RUN_KNOCKER, LAYOFF_DEFENDER], upcard="JD", stock_top_first="QC"))
    s, _ = play(s, "draw stock", "knock QC")
    run = meld_id(s, "5H 6H 7H")
    s, events = play(s, LayOff(c("8H"), run), LayOff(c("9H"), run), Done())
    assert result(events) == ("knock", 0, dead - 2, dead)


@pytest.mark.parametrize("rule", BOTH)
def test_defender_best_declaration_lays_off_and_melds_under_both(rule: str) -> None:
    """The best declaration lays 8H 9H off and melds 4D-5D-6D: D = 38 under both readings."""
    s = start(gin(rule), gin_deal(dealer=1, hands=[RUN_KNOCKER, LAYOFF_DEFENDER], upcard="JD", stock_top_first="QC"))
    s, _ = play(s, "draw stock", "knock QC")
    s, events = play(s, Declare())
    assert {e.public["card"] for e in of_kind(events, "laid_off")} == {"8H", "9H"}
    assert result(events) == ("knock", 0, 36, 38)


# ------------------------------------------------------------------------------------- after gin, big gin

GIN10 = "AS 2S 3S 4S 7H 8H 9H KC KD KS"  # ten cards in melds
GIN_DEFENDER = "JH QH KH 2D 3D 9C 8C 6C 4H QS"  # JH-QH-KH melds: minimum deadwood 42, 52 in all


@pytest.mark.parametrize("rule", BOTH)
def test_defender_after_gin_counts_the_minimum_under_both(rule: str) -> None:
    """RULES.md 2: "after gin or big gin, where the defender declares nothing: the defender's minimum deadwood, no
    layoffs"; "After gin or big gin both count the minimum". Gin: 25 + 42."""
    s = start(gin(rule), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="5D"))
    s, events = play(s, "draw stock", "knock 5D")
    assert not of_kind(events, "declared")
    assert result(events) == ("gin", 0, 25 + 42, 42)


@pytest.mark.parametrize("rule", BOTH)
def test_defender_after_big_gin_counts_the_minimum_under_both(rule: str) -> None:
    """RULES.md 2: "Big gin: `big_gin_bonus` (31) + D", D the defender's minimum deadwood under both readings; the
    big_gin event, like the other hand-end events, reports the going-out player's deadwood (0)."""
    s = start(gin(rule), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="TH"))
    s, events = play(s, "draw stock", BigGin())
    (big,) = of_kind(events, "big_gin")
    assert big.public["deadwood"] == 0
    assert result(events) == ("big_gin", 0, 31 + 42, 42)


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(("make", "says"), [
    (lambda: E.rules_from_profile("gin", defender_deadwood="minimum"), "must be one of best, declared"),
    (lambda: E.rules_from_profile("gin", defender_deadwood=True), "must be a str"),
    (lambda: E.rules_from_profile("rummy", defender_deadwood="declared"), "does not apply to rummy"),
    (lambda: E.rules_from_profile("rummy-g4a", defender_deadwood="best", players=3, target_score=90).replace(
        defender_deadwood="declared"), "does not apply to rummy"),
])  # fmt: skip
def test_defender_deadwood_validates_itself(make: Any, says: str) -> None:
    """RULES.md, head: options are "validated when the game is created": only Gin, only `best` or `declared`."""
    with pytest.raises(InvalidOptionsError) as err:
        make()
    assert err.value.code == "INVALID_OPTION"
    assert "defender_deadwood" in err.value.message and says in err.value.message


def test_defender_deadwood_is_pinned_into_the_saved_state() -> None:
    """RULES.md, head: "the complete option set is pinned into the game record": a saved game keeps `declared`."""
    s = _after_knock("declared")
    again = E.state_from_json(E.state_to_json(s))
    assert again.rules.defender_deadwood == "declared"
    _, events = play(again, Done())
    assert result(events) == ("knock", 0, 49, 58)


def test_a_game_saved_before_the_option_existed_loads_with_best() -> None:
    """Games stored before `defender_deadwood` existed have no such option in their pinned set: they keep today's
    rule, `best`, the default."""
    d = E.state_to_dict(_after_knock("best"))
    del d["rules"]["defender_deadwood"]
    old = E.state_from_dict(d)
    assert old.rules.defender_deadwood == "best"
    _, events = play(old, Done())
    assert result(events) == ("undercut", 1, 30, 4)
