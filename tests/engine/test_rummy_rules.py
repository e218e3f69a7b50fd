"""Rule-clause scenario tests for Rummy (RULES.md sections 1, 3 and 4 as they apply to Rummy).

Every scenario starts from a preset deal written in card text. Unless a test says otherwise the last seat deals, so
seat 0 acts first. In three-player scenarios the two idle seats hold

    seat 1: KH QD JS 9C 4D 2H AS   (value 46, one ace)
    seat 2: KD QH TS 8S 5D 6H AH   (value 50, one ace)

and in two-player scenarios seat 1 holds KH QD JS 9C 4D 2H AS 8H TS 6D (value 70).

Each test is named after the clause it checks; its docstring cites the clause.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import pytest

from engine import (
    REFEREE,
    SPECTATOR,
    Deal,
    Discard,
    DrawDiscard,
    DrawStock,
    Event,
    GameState,
    IllegalMoveError,
    InvalidMoveError,
    InvariantError,
    LayOff,
    MeldMove,
    Move,
    RuleError,
    apply,
    card_text,
    cards_of,
    event_for,
    legal_moves,
    mask_of,
    new_game,
    parse_card,
    parse_move,
    rules_from_profile,
    state_to_json,
    view,
)

SEED = b"rummy-rules-scenario-test-seed-01"
IDLE1 = "KH QD JS 9C 4D 2H AS"
IDLE2 = "KD QH TS 8S 5D 6H AH"
IDLE_VALUE = 46 + 50
TWO_IDLE = "KH QD JS 9C 4D 2H AS 8H TS 6D"  # the idle seat of two-player scenarios (value 70)


# ------------------------------------------------------------------------------------------------- builders


def card(text: str) -> int:
    """One card from its text."""
    return parse_card(text)


def mask(text: str) -> int:
    """Mask of space-separated card texts."""
    return mask_of(parse_card(t) for t in text.split())


def deal(dealer: int, hands: list[str], upcard: str, stock_top_first: str = "") -> Deal:
    """A preset deal from card text: the stock holds ``stock_top_first`` (first = top) above every card not named,
    so the deal is exactly 52 cards (new_game validates it)."""
    hand_cards = tuple(tuple(parse_card(t) for t in h.split()) for h in hands)
    top = [parse_card(t) for t in stock_top_first.split()]
    used = {c for h in hand_cards for c in h} | {parse_card(upcard)} | set(top)
    rest = [c for c in range(52) if c not in used]
    return Deal(dealer, hand_cards, parse_card(upcard), tuple(reversed(top + rest)))


def start(hands: list[str], upcard: str, stock: str = "", *, dealer: int | None = None, profile: str = "rummy",
          **options: Any) -> GameState:
    """A Rummy game whose first hand is the given preset deal (dealer: the last seat unless given)."""
    rules = rules_from_profile(profile, players=len(hands), **options)
    d = deal(len(hands) - 1 if dealer is None else dealer, hands, upcard, stock)
    return new_game(rules, SEED, (d,))


def play(s: GameState, *moves: str) -> tuple[GameState, list[Event]]:
    """Apply moves in text form, each by the seat to act; returns the state and all events."""
    events: list[Event] = []
    for text in moves:
        s, ev = apply(s, s.to_act, parse_move(text))
        events.extend(ev)
    return s, events


def idle(s: GameState) -> tuple[GameState, list[Event]]:
    """One turn that changes nothing on the table: draw the top of the stock and discard that card."""
    top = s.stock[-1]
    s, ev1 = apply(s, s.to_act, DrawStock())
    s, ev2 = apply(s, s.to_act, Discard(top))
    return s, [*ev1, *ev2]


def refused(s: GameState, seat: int, move: Move | str, code: str) -> RuleError:
    """Apply must raise ``code`` and leave the state unchanged, byte for byte."""
    if isinstance(move, str):
        move = parse_move(move)
    before = state_to_json(s)
    with pytest.raises(RuleError) as exc:
        apply(s, seat, move)
    assert exc.value.code == code, exc.value.message
    assert state_to_json(s) == before
    return exc.value


def texts(text: str) -> list[str]:
    """Card texts in the engine's listing order (by suit S H D C, then rank)."""
    return [card_text(c) for c in cards_of(mask(text))]


def kinds(events: Sequence[Event]) -> list[str]:
    """Event kinds, in order."""
    return [e.kind for e in events]


def ended(events: Sequence[Event]) -> dict[str, Any]:
    """The public record of the hand that ended among ``events``."""
    (e,) = [e for e in events if e.kind == "hand_ended"]
    return e.public


# ------------------------------------------------------------------------------------------------- the turn


def test_turn_begins_with_drawing_one_card() -> None:
    """Section 1 "A turn begins with drawing exactly one card: the top of the stock or the top of the discard pile";
    section 3 turn step (1)."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC")
    assert s.to_act == 0 and s.phase == "draw"
    assert set(legal_moves(s)) == {DrawStock(), DrawDiscard()}
    refused(s, 0, "discard 9D", "WRONG_PHASE")
    refused(s, 0, "meld 3S 3H 3D", "WRONG_PHASE")
    a, _ = play(s, "draw stock")
    assert a.hands[0] == mask("3S 3H 3D 4C 5C 6C 9D JC")
    assert a.discard == (card("TC"),) and len(a.stock) == len(s.stock) - 1
    assert a.phase == "play"
    refused(a, 0, "draw stock", "WRONG_PHASE")
    refused(a, 0, "draw discard", "WRONG_PHASE")
    b, _ = play(s, "draw discard")
    assert b.hands[0] == mask("3S 3H 3D 4C 5C 6C 9D TC")
    assert b.discard == () and b.stock == s.stock


def test_turn_ends_with_a_discard_and_play_passes_to_the_next_seat() -> None:
    """Section 3 turn step (3) "Discard one card, which ends the turn"; section 1 "play always passes to the next
    seat" (seat n-1 is followed by seat 0)."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S 7D")
    s, events = play(s, "draw stock", "discard 9D")
    assert kinds(events) == ["drew", "discarded"]
    assert (s.to_act, s.phase, s.discard[-1], s.turns) == (1, "draw", card("9D"), 1)
    s, _ = idle(s)
    assert s.to_act == 2
    s, _ = idle(s)
    assert s.to_act == 0 and s.hand_no == 0


def test_discarding_the_card_taken_from_the_discard_pile_refused() -> None:
    """Section 1: "A card taken from the discard pile may not be discarded in the same turn" (DISCARD_TAKEN_CARD),
    and it is not offered by legal_moves."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S")
    s, _ = play(s, "draw discard")
    refused(s, 0, "discard TC", "DISCARD_TAKEN_CARD")
    assert Discard(card("TC")) not in legal_moves(s)
    assert Discard(card("9D")) in legal_moves(s)


def test_card_taken_from_the_discard_pile_may_be_discarded_on_a_later_turn() -> None:
    """Section 1: the taken card "may be discarded on a later turn"."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S")
    s, _ = play(s, "draw discard", "discard 9D")
    s, _ = idle(s)
    s, _ = idle(s)
    s, _ = play(s, "draw stock")
    assert Discard(card("TC")) in legal_moves(s)
    s, _ = play(s, "discard TC")
    assert s.discard[-1] == card("TC")


def test_discard_taken_card_allowed_option() -> None:
    """Section 1 option ``discard_taken_card_allowed`` (default false): when true the taken card may be discarded at
    once."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC", discard_taken_card_allowed=True)
    s, _ = play(s, "draw discard")
    assert Discard(card("TC")) in legal_moves(s)
    s, _ = play(s, "discard TC")
    assert s.discard == (card("TC"),) and s.to_act == 1


# ------------------------------------------------------------------------------------------------- melding


def test_meld_a_set_and_a_run_from_the_hand() -> None:
    """Section 3 turn step (2): "meld (put down a new set or run from your hand) ... as many times as you like"
    (default unlimited); melds are public."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "7C")
    s, events = play(s, "draw stock", "meld 3s 3h 3d", "meld 4C 5C 6C 7C")
    assert kinds(events) == ["drew", "melded", "melded"]
    assert s.hands[0] == mask("9D")
    assert [(m.id, m.owner, m.kind, m.cards) for m in s.melds] == [
        (0, 0, "set", mask("3S 3H 3D")), (1, 0, "run", mask("4C 5C 6C 7C"))]
    assert s.phase == "play" and s.to_act == 0
    table = view(s, 2)["melds"]
    assert [m["cards"] for m in table] == [["3S", "3H", "3D"], ["4C", "5C", "6C", "7C"]]


def test_meld_a_set_of_four() -> None:
    """Section 1: a set is 3 or 4 cards of one rank."""
    s = start(["3S 3H 3D 3C 5C 6C 9D", IDLE1, IDLE2], "TC", "7C")
    s, _ = play(s, "draw stock", "meld 3S 3H 3D 3C")
    assert s.melds[0].kind == "set" and s.melds[0].cards.bit_count() == 4


@pytest.mark.parametrize("text", ["meld 3S 3H", "meld 3S 3H 4C", "meld 4C 5C 7C", "meld 3S 4C 5C 6C",
                                  "meld 9D 7C 5C", "meld 3S"])
def test_invalid_meld_refused(text: str) -> None:
    """Section 1 melds: anything that is not a set of 3-4 or a run of 3+ is refused (INVALID_MELD), changing
    nothing."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "7C")
    s, _ = play(s, "draw stock")
    refused(s, 0, text, "INVALID_MELD")


def test_meld_of_cards_not_held_refused() -> None:
    """Melding takes cards "from your hand": cards of another hand, the stock or the discard pile are refused."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "7C")
    s, _ = play(s, "draw stock")
    refused(s, 0, "meld 3S 3H 3C", "CARD_NOT_IN_HAND")
    refused(s, 0, "meld 4C 5C 6C 7C 8C", "CARD_NOT_IN_HAND")
    refused(s, 0, "meld KH KD KC", "CARD_NOT_IN_HAND")


def test_qka_meld_only_with_ace_high_low() -> None:
    """Sections 1 and 3: ``Q-K-A`` is a run only with ``ace_high_low``; ``A-2-3`` is a run either way."""
    hands = ["QC KC AC 2C 3C 9D 9S", IDLE1, IDLE2]
    low = start(hands, "TC", "7D")
    low, _ = play(low, "draw stock")
    refused(low, 0, "meld QC KC AC", "INVALID_MELD")
    assert MeldMove(mask("QC KC AC")) not in legal_moves(low)
    assert MeldMove(mask("AC 2C 3C")) in legal_moves(low)
    high = start(hands, "TC", "7D", ace_high_low=True)
    high, _ = play(high, "draw stock")
    assert MeldMove(mask("QC KC AC")) in legal_moves(high)
    assert MeldMove(mask("AC 2C 3C")) in legal_moves(high)
    high, _ = play(high, "meld QC KC AC")
    assert high.melds[0].kind == "run"
    assert view(high, 1)["melds"][0]["cards"] == ["QC", "KC", "AC"]


def test_never_round_the_corner_in_play() -> None:
    """Section 1: "``K-A-2`` and ``Q-K-A-2`` are never runs", even with ``ace_high_low``."""
    hands = ["QC KC AC 2C 3C 9D 9S", IDLE1, IDLE2]
    for ace_high_low in (False, True):
        s = start(hands, "TC", "7D", ace_high_low=ace_high_low)
        s, _ = play(s, "draw stock")
        refused(s, 0, "meld KC AC 2C", "INVALID_MELD")
        refused(s, 0, "meld QC KC AC 2C", "INVALID_MELD")
        refused(s, 0, "meld QC KC AC 2C 3C", "INVALID_MELD")


def test_max_melds_per_turn_limits_new_melds() -> None:
    """Section 3 option ``max_melds_per_turn``: at most that many new melds per turn (MELD_LIMIT_REACHED); laying off
    is still allowed, and the count starts again next turn."""
    s = start(["3S 3H 3D 3C 5C 6C 7C", IDLE1, IDLE2], "TC", "9D QC 7S 8D", max_melds_per_turn=1)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    refused(s, 0, "meld 5C 6C 7C", "MELD_LIMIT_REACHED")
    moves = legal_moves(s)
    assert not [mv for mv in moves if isinstance(mv, MeldMove)]
    assert LayOff(card("3C"), 0) in moves
    s, _ = play(s, "layoff 3C 0", "discard 9D")
    s, _ = idle(s)
    s, _ = idle(s)
    s, _ = play(s, "draw stock")
    assert MeldMove(mask("5C 6C 7C")) in legal_moves(s)
    s, _ = play(s, "meld 5C 6C 7C")
    assert s.hands[0] == mask("8D")


def test_max_melds_per_turn_two_allows_two() -> None:
    """Section 3 option ``max_melds_per_turn`` = 2: two new melds in one turn, not three."""
    s = start(["3S 3H 3D 5C 6C 7C 9D 9S 9H KC", TWO_IDLE], "TC", "2D", max_melds_per_turn=2)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 5C 6C 7C")
    refused(s, 0, "meld 9D 9S 9H", "MELD_LIMIT_REACHED")
    assert s.hands[0] == mask("9D 9S 9H KC 2D")


def test_max_melds_per_turn_unlimited_by_default() -> None:
    """Section 3: "as many times as you like (option ``max_melds_per_turn``, default unlimited)"."""
    s = start(["3S 3H 3D 5C 6C 7C 9D 9S 9H KC", TWO_IDLE], "TC", "2D")
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 5C 6C 7C", "meld 9D 9S 9H")
    assert len(s.melds) == 3 and s.hands[0] == mask("KC 2D")


# ------------------------------------------------------------------------------------------------- laying off

#: seat 0 melds 5H-6H-7H (meld 0) and QS-QD-QC (meld 1); seat 1 lays off onto them
TABLE_HANDS = ["5H 6H 7H QS QD QC 2C", "8H 9H TH 4H QH 3S 9C", "KD 2S TS 8S 5D 6S AH"]
TABLE_STOCK = "KS 2D 7D"


def _table() -> GameState:
    s = start(TABLE_HANDS, "TC", TABLE_STOCK)
    s, _ = play(s, "draw stock", "meld 5H 6H 7H", "meld QS QD QC", "discard KS")
    return s


def test_lay_off_on_another_players_meld_run_ends_set_fourth_chained() -> None:
    """Section 3: "lay off (add cards from your hand to any meld on the table, yours or another player's: the 4th
    card of a set, or cards extending a run at either end), as many times as you like"; chained layoffs count as
    part of the run."""
    s = _table()
    assert s.to_act == 1
    s, events = play(s, "draw stock", "layoff 8H 0", "layoff 9H 0", "layoff TH 0", "layoff 4H 0", "layoff QH 1")
    assert kinds(events) == ["drew"] + ["laid_off"] * 5
    assert s.hands[1] == mask("3S 9C 2D")
    run, group = s.melds
    assert (run.owner, run.cards) == (0, mask("4H 5H 6H 7H 8H 9H TH"))
    assert run.layoffs == tuple((card(t), 1) for t in ("8H", "9H", "TH", "4H"))
    assert (group.owner, group.cards) == (0, mask("QS QD QC QH"))
    shown = view(s, SPECTATOR)["melds"]
    assert shown[0]["cards"] == ["4H", "5H", "6H", "7H", "8H", "9H", "TH"]
    assert shown[1]["layoffs"] == [{"card": "QH", "seat": 1}]


def test_lay_off_on_your_own_meld() -> None:
    """Section 3: lay off onto any meld "yours or another player's", in the turn it was melded or a later one."""
    s = start(["5C 6C 7C 8C 3S 3H 3D", IDLE1, IDLE2], "TC", "3C 2D 7D 4C")
    s, _ = play(s, "draw stock", "meld 5C 6C 7C", "layoff 8C 0", "discard 3C")
    assert s.melds[0].cards == mask("5C 6C 7C 8C")
    s, _ = idle(s)
    s, _ = idle(s)
    s, events = play(s, "draw stock", "layoff 4C 0", "meld 3S 3H 3D")
    assert kinds(events)[:3] == ["drew", "laid_off", "melded"]
    assert ended(events)["winner"] == 0


@pytest.mark.parametrize(("move", "code"), [
    ("layoff 3S 0", "CANNOT_LAY_OFF"),
    ("layoff 9C 0", "CANNOT_LAY_OFF"),
    ("layoff 9H 0", "CANNOT_LAY_OFF"),
    ("layoff 8H 1", "CANNOT_LAY_OFF"),
    ("layoff 8H 2", "UNKNOWN_MELD"),
    ("layoff 8H 99", "UNKNOWN_MELD"),
    ("layoff JH 0", "CARD_NOT_IN_HAND"),
    ("layoff 7H 0", "CARD_NOT_IN_HAND"),
])
def test_lay_off_that_does_not_fit_refused(move: str, code: str) -> None:
    """Section 3: only the 4th card of a set or a card extending a run at either end may be laid off
    (CANNOT_LAY_OFF; a gap is not an end); the target must be a meld on the table (UNKNOWN_MELD) and the card must be
    in hand (CARD_NOT_IN_HAND). Nothing changes."""
    s = _table()
    s, _ = play(s, "draw stock")
    refused(s, 1, move, code)


def test_layoff_requires_own_meld_option() -> None:
    """Section 3 option ``layoff_requires_own_meld`` (default false): a seat with no meld of its own on the table may
    not lay off (LAYOFF_REQUIRES_OWN_MELD); once it has melded, it may."""
    hands = ["5H 6H 7H QS QD QC 2C", "8H JD JH JC 4H 3S 9C", "KD 2S TS 8S 5D 6S AH"]
    s = start(hands, "TC", TABLE_STOCK, layoff_requires_own_meld=True)
    s, _ = play(s, "draw stock", "meld 5H 6H 7H", "meld QS QD QC", "discard KS", "draw stock")
    refused(s, 1, "layoff 8H 0", "LAYOFF_REQUIRES_OWN_MELD")
    assert not [mv for mv in legal_moves(s) if isinstance(mv, LayOff)]
    s, _ = play(s, "meld JD JH JC")
    assert LayOff(card("8H"), 0) in legal_moves(s)
    s, _ = play(s, "layoff 8H 0", "layoff 4H 0")
    assert s.hands[1] == mask("3S 9C 2D")
    free = start(hands, "TC", TABLE_STOCK)
    free, _ = play(free, "draw stock", "meld 5H 6H 7H", "meld QS QD QC", "discard KS", "draw stock", "layoff 8H 0")
    assert free.melds[0].cards == mask("5H 6H 7H 8H")


def test_lay_off_ace_on_king_only_with_ace_high_low() -> None:
    """Sections 1 and 3: with ``ace_high_low`` an ace extends J-Q-K (``Q-K-A`` is a run); without it, it does not.
    A king never extends A-2-3."""
    hands = ["JC QC KC AD 2D 3D 9S", "AC KD 5S 9H 4D 2H AS", IDLE2.replace("KD", "7S")]
    for ace_high_low in (False, True):
        s = start(hands, "TC", "3C 2C", ace_high_low=ace_high_low)
        s, _ = play(s, "draw stock", "meld JC QC KC", "meld AD 2D 3D", "discard 3C", "draw stock")
        assert (LayOff(card("AC"), 0) in legal_moves(s)) is ace_high_low
        refused(s, 1, "layoff KD 1", "CANNOT_LAY_OFF")
        if ace_high_low:
            s, _ = play(s, "layoff AC 0")
            assert view(s, 0)["melds"][0]["cards"] == ["JC", "QC", "KC", "AC"]
        else:
            refused(s, 1, "layoff AC 0", "CANNOT_LAY_OFF")


@pytest.mark.parametrize("ace_high_low", [False, True])
def test_lay_off_up_to_the_thirteen_card_run(ace_high_low: bool) -> None:
    """Section 1: a run has "no upper length (A..K is one 13-card run)": layoffs at the low end grow 5S..KS to A..K,
    and then nothing more fits."""
    hands = ["5S 6S 7S 8S 9S TS JS QS KS 2C", "4S 3S 2S AS KH QD 9C 4D 2H 8H"]
    s = start(hands, "TC", "3C 7D", ace_high_low=ace_high_low)
    s, _ = play(s, "draw stock", "meld 5S 6S 7S 8S 9S TS JS QS KS", "discard 3C", "draw stock")
    s, _ = play(s, "layoff 4S 0", "layoff 3S 0", "layoff 2S 0", "layoff AS 0")
    assert s.melds[0].cards == mask("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS")
    assert view(s, 0)["melds"][0]["cards"] == texts("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS")
    assert not [mv for mv in legal_moves(s) if isinstance(mv, LayOff)]


# ------------------------------------------------------------------------------------------------- going out


def test_going_out_by_melding_needs_no_discard() -> None:
    """Section 3 "Going out": the hand becomes empty by melding; "a player who empties their hand by melding or
    laying off does not discard". The hand ends at once and the winner scores the others' cards."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    assert "discarded" not in kinds(events)
    info = ended(events)
    assert (info["winner"], info["reason"], info["going_rummy"]) == (0, "went_out", True)
    assert info["hands"][0] == [] and info["hand_values"] == [0, 46, 50]
    assert info["points"] == 2 * IDLE_VALUE
    assert s.scores == (2 * IDLE_VALUE, 0, 0) and s.hand_no == 1


def test_going_out_by_laying_off() -> None:
    """Section 3 "Going out": "by melding, laying off or discarding the last card"; laying off the last card needs no
    discard."""
    s = start(["3S 3H 3D 3C 4C 5C 6C", IDLE1, IDLE2], "9D", "7C", target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C", "layoff 7C 1", "layoff 3C 0")
    order = kinds(events)
    assert order[order.index("hand_ended") - 1] == "laid_off"
    assert "discarded" not in order
    info = ended(events)
    assert (info["winner"], info["points"], info["going_rummy"]) == (0, 2 * IDLE_VALUE, True)


def test_going_out_by_laying_off_on_another_players_meld() -> None:
    """Section 3 "Going out" by laying off the last card onto another player's meld; it is going rummy since seat 1
    had played no card before in the hand, whatever the others did."""
    hands = ["5H 6H 7H QS QD QC 2C", "8H 9H JD JH JC 4H TH", "KD 2S TS 8S 5D 6S AH"]
    s = start(hands, "TC", "KS QH", target_score=1000)
    s, _ = play(s, "draw stock", "meld 5H 6H 7H", "meld QS QD QC", "discard KS")
    s, events = play(s, "draw stock", "meld JD JH JC", "layoff 8H 0", "layoff 9H 0", "layoff TH 0", "layoff 4H 0",
                     "layoff QH 1")
    info = ended(events)
    assert (info["winner"], info["reason"], info["going_rummy"]) == (1, "went_out", True)
    assert info["hand_values"] == [2, 0, 42]
    assert info["points"] == 2 * (2 + 42)


def test_going_out_by_discarding_the_last_card() -> None:
    """Section 3 "Going out": "by ... discarding the last card"."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "TC", "9D", target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C")
    assert "hand_ended" not in kinds(events) and s.hands[0] == mask("9D")
    s, events = play(s, "discard 9D")
    info = ended(events)
    assert (info["winner"], info["points"], info["going_rummy"]) == (0, 2 * IDLE_VALUE, True)
    assert info["hands"][0] == []


def test_must_discard_to_go_out_option() -> None:
    """Section 3 option ``must_discard_to_go_out``: "the last card must be discarded, so no meld or lay-off may empty
    the hand" (MUST_DISCARD_TO_GO_OUT); discarding the last card goes out."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "TC", "8C", must_discard_to_go_out=True, target_score=1000)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    refused(s, 0, "meld 4C 5C 6C 7C 8C", "MUST_DISCARD_TO_GO_OUT")
    assert MeldMove(mask("4C 5C 6C 7C 8C")) not in legal_moves(s)
    s, _ = play(s, "meld 4C 5C 6C 7C")
    refused(s, 0, "layoff 8C 1", "MUST_DISCARD_TO_GO_OUT")
    assert set(legal_moves(s)) == {Discard(card("8C"))}
    s, events = play(s, "discard 8C")
    info = ended(events)
    assert (info["winner"], info["points"], info["going_rummy"]) == (0, 2 * IDLE_VALUE, True)


def test_must_discard_to_go_out_off_by_default() -> None:
    """Section 3: ``must_discard_to_go_out`` defaults to false: a meld or lay-off may empty the hand."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "TC", "8C")
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C")
    assert LayOff(card("8C"), 1) in legal_moves(s)


def test_meld_leaving_only_the_card_taken_from_the_discard_pile_refused() -> None:
    """Section 3: "A meld or lay-off that would leave only the card just taken from the discard pile is refused (the
    player could then neither discard nor go out)"."""
    s = start(["3S 3H 3D 3C 5C 6C 7C", IDLE1, IDLE2], "KC", "8C")
    s, _ = play(s, "draw discard", "meld 3S 3H 3D 3C")
    refused(s, 0, "meld 5C 6C 7C", "WOULD_STRAND_TAKEN_CARD")
    assert set(legal_moves(s)) == {Discard(card(t)) for t in ("5C", "6C", "7C")}


def test_lay_off_leaving_only_the_card_taken_from_the_discard_pile_refused() -> None:
    """Section 3: "A meld or lay-off that would leave only the card just taken from the discard pile is refused"."""
    s = start(["3S 3H 3D 5C 6C 7C 8C", IDLE1, IDLE2], "KC", "2D")
    s, _ = play(s, "draw discard", "meld 3S 3H 3D", "meld 5C 6C 7C")
    refused(s, 0, "layoff 8C 1", "WOULD_STRAND_TAKEN_CARD")
    assert set(legal_moves(s)) == {Discard(card("8C"))}
    s, events = play(s, "discard 8C")
    assert s.hands[0] == mask("KC") and "hand_ended" not in kinds(events)


def test_leaving_only_the_taken_card_refused_even_when_it_may_be_discarded() -> None:
    """Section 3's refusal has no exception: with ``discard_taken_card_allowed`` too, a meld or lay-off that would
    leave only the card just taken from the discard pile is refused (the player may discard it instead)."""
    s = start(["3S 3H 3D 5C 6C 7C 8C", IDLE1, IDLE2], "KC", "2D", discard_taken_card_allowed=True)
    s, _ = play(s, "draw discard", "meld 3S 3H 3D", "meld 5C 6C 7C")
    refused(s, 0, "layoff 8C 1", "WOULD_STRAND_TAKEN_CARD")
    assert set(legal_moves(s)) == {Discard(card("8C")), Discard(card("KC"))}
    s, events = play(s, "discard KC")
    assert s.hands[0] == mask("8C") and "hand_ended" not in kinds(events)


def test_meld_may_use_the_card_taken_from_the_discard_pile() -> None:
    """Section 3: the card taken from the discard pile may be melded at once (only discarding it is refused)."""
    s = start(["3S 3H 4C 5C 6C 7C 9D", IDLE1, IDLE2], "3D", "8C")
    s, _ = play(s, "draw discard", "meld 3S 3H 3D", "meld 4C 5C 6C 7C")
    assert s.hands[0] == mask("9D") and s.known[0] == 0


# ------------------------------------------------------------------------------------------------- scoring


@pytest.mark.parametrize(("profile", "multiplier"), [("rummy", 2), ("rummy-g4a", 1)])
def test_hand_score_is_the_value_left_in_the_other_hands(profile: str, multiplier: int) -> None:
    """Section 3 "Hand score": "The player who goes out scores the value of all cards left in the other players'
    hands" (ace 1, faces 10; section 1), times the going-rummy multiplier of the profile."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", profile=profile, target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    info = ended(events)
    assert info["hand_values"] == [0, 46, 50]
    assert info["points"] == multiplier * 96
    assert s.scores == (multiplier * 96, 0, 0)
    assert s.boxes == (1, 0, 0)


@pytest.mark.parametrize(("profile", "ace", "multiplier"), [("rummy", 15, 2), ("rummy-g4a", 11, 1)])
def test_ace_high_low_ace_left_in_hand_scores_ace_value_high_low(profile: str, ace: int, multiplier: int) -> None:
    """Section 3 "Ace high and low": "an ace left in hand is worth ``ace_value_high_low`` points": 15 in ``rummy``
    (seed 004), 11 in ``rummy-g4a`` (seed 000)."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", profile=profile, target_score=1000,
              ace_high_low=True)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    info = ended(events)
    assert info["hand_values"] == [0, 45 + ace, 49 + ace]
    assert info["points"] == multiplier * (94 + 2 * ace)


def test_going_rummy_not_when_melded_in_an_earlier_turn() -> None:
    """Section 3 "Going rummy": only "a player who goes out in one turn without having melded or laid off any card
    earlier in the hand" has the score multiplied; a meld in an earlier turn means a plain score."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC 2C QS 7C", target_score=1000)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "discard 9D")
    s, _ = idle(s)
    s, _ = idle(s)
    s, events = play(s, "draw stock", "meld 4C 5C 6C 7C", "discard JC")
    info = ended(events)
    assert (info["winner"], info["going_rummy"], info["points"]) == (0, False, IDLE_VALUE)


def test_going_rummy_not_when_laid_off_in_an_earlier_turn() -> None:
    """Section 3 "Going rummy": a lay-off in an earlier turn (with no meld of one's own) also spoils going rummy."""
    hands = ["8S 8H 8D KC 9H 2S 3D", "8C 4S 5S 6S JD JH JC", "KD QH TS 9S 5D 6H AH"]
    s = start(hands, "TC", "2C 2D QS 4C 7S", target_score=1000)
    s, _ = play(s, "draw stock", "meld 8S 8H 8D", "discard 2C")
    s, _ = play(s, "draw stock", "layoff 8C 0", "discard 2D")
    s, _ = idle(s)
    s, _ = idle(s)
    s, events = play(s, "draw stock", "meld 4S 5S 6S 7S", "meld JD JH JC")
    info = ended(events)
    assert (info["winner"], info["going_rummy"]) == (1, False)
    assert info["hand_values"] == [10 + 9 + 2 + 3, 0, 51]
    assert info["points"] == 24 + 51


# ------------------------------------------------------------------------------------------------- stock runs out

RESTOCK_HANDS = ["3S 3H 3D 5C 6C 7C 9S JC KS 2D", TWO_IDLE]


def _until_stock_rebuilt(s: GameState) -> tuple[tuple[int, ...], GameState, list[Event]]:
    """Idle turns until the stock has to be rebuilt; returns the discard pile just before that, the state after
    it and the events of the last turn."""
    for _ in range(60):
        pile = (*s.discard, s.stock[-1])
        s, events = idle(s)
        if {"restocked", "hand_ended"} & set(kinds(events)):
            return pile, s, events
    raise AssertionError("the stock was never rebuilt")


def test_restock_turn_over_bottom_card_becomes_top_of_stock() -> None:
    """Section 3 "Stock runs out": "If the stock is empty when a turn begins, all cards of the discard pile except its
    top card first become the new stock (option ``restock``: ... ``turn_over``: the pile turned face down without
    shuffling, so its bottom card becomes the top of the stock)"; then the player draws from either pile."""
    s = start(RESTOCK_HANDS, "TC", restock="turn_over")
    top = s.stock[-1]
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    s, _ = apply(s, 0, Discard(top))
    pile, s, events = _until_stock_rebuilt(s)
    assert len(pile) == 32 and pile[0] == card("TC")
    assert "restocked" in kinds(events) and s.restocks == 1
    assert s.discard == pile[-1:], "the top discard stays"
    assert s.stock == tuple(reversed(pile[:-1])) and s.stock[-1] == card("TC")
    assert (s.phase, set(legal_moves(s))) == ("draw", {DrawStock(), DrawDiscard()})
    drawn, _ = apply(s, s.to_act, DrawStock())
    assert drawn.hands[s.to_act] >> card("TC") & 1
    taken, _ = apply(s, s.to_act, DrawDiscard())
    assert taken.hands[s.to_act] >> pile[-1] & 1 and taken.discard == ()


def test_restock_shuffle_keeps_the_top_discard() -> None:
    """Section 3 "Stock runs out", ``restock`` = ``shuffle`` (default): the discard pile except its top card is
    shuffled into the new stock; the top discard stays. Only the referee sees the new stock's order."""
    s = start(RESTOCK_HANDS, "TC")
    assert s.rules.restock == "shuffle"
    top = s.stock[-1]
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    s, _ = apply(s, 0, Discard(top))
    pile, s, events = _until_stock_rebuilt(s)
    assert s.discard == pile[-1:]
    assert sorted(s.stock) == sorted(pile[:-1]) and len(s.stock) == 31
    assert s.stock != tuple(reversed(pile[:-1])), "shuffled, not turned over"
    (restocked,) = [e for e in events if e.kind == "restocked"]
    assert "stock" not in event_for(restocked, 0) and "stock" not in event_for(restocked, SPECTATOR)
    assert event_for(restocked, REFEREE)["stock"] == [card_text(c) for c in s.stock]
    assert "stock" not in view(s, 0) and view(s, 0)["stock_size"] == 31


def test_stall_guard_no_meld_since_the_deal_ends_the_hand_with_no_score() -> None:
    """Section 3 stall guard: "if the stock has to be rebuilt and no card was melded or laid off since the previous
    rebuild (for the first rebuild: since the deal), the hand ends with no score"; the deal passes on."""
    s = start(RESTOCK_HANDS, "TC")
    _, s, events = _until_stock_rebuilt(s)
    info = ended(events)
    assert (info["reason"], info["winner"], info["points"]) == ("stalled", None, 0)
    assert "restocked" not in kinds(events)
    assert s.scores == (0, 0) and s.hands_played == 1 and s.hand_no == 1
    assert (s.dealer, s.to_act) == (0, 1)


def test_stall_guard_counts_from_the_previous_rebuild() -> None:
    """Section 3 stall guard: a meld before the first rebuild lets it happen; with no meld or lay-off between the
    first and the second rebuild, the hand ends with no score at the second."""
    s = start(RESTOCK_HANDS, "TC")
    top = s.stock[-1]
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    s, _ = apply(s, 0, Discard(top))
    _, s, events = _until_stock_rebuilt(s)
    assert "restocked" in kinds(events)
    _, s, events = _until_stock_rebuilt(s)
    assert ended(events)["reason"] == "stalled" and s.scores == (0, 0)


def test_stall_guard_meld_after_a_rebuild_allows_the_next_rebuild() -> None:
    """Section 3 stall guard: a meld between two rebuilds lets the second rebuild happen."""
    s = start(RESTOCK_HANDS, "TC")
    top = s.stock[-1]
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    s, _ = apply(s, 0, Discard(top))
    _, s, _ = _until_stock_rebuilt(s)
    if s.to_act != 0:
        s, _ = idle(s)
    top = s.stock[-1]
    s, _ = play(s, "draw stock", "meld 5C 6C 7C")
    s, _ = apply(s, 0, Discard(top))
    _, s, events = _until_stock_rebuilt(s)
    assert "restocked" in kinds(events) and s.restocks == 2 and s.hand_no == 0


def test_stock_empty_and_one_discard_ends_the_hand_with_no_score() -> None:
    """Section 3: "If the stock is empty and the discard pile holds only one card, the hand ends with no score".

    Legal play never reaches this (the stock only empties by a draw from it, so the pile then holds at least two
    cards when the next turn begins); the state is built by hand: seat 0 has taken the only discard and the stock's
    cards are moved into seat 2's hand."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC")
    s, _ = play(s, "draw discard", "meld 3S 3H 3D")
    odd = s.copy()
    stock = mask_of(odd.stock)
    odd.stock = ()
    odd.hands = (odd.hands[0], odd.hands[1], odd.hands[2] | stock)
    odd, events = apply(odd, 0, Discard(card("9D")))
    info = ended(events)
    assert (info["reason"], info["winner"], info["points"]) == ("no_cards_left", None, 0)
    assert odd.scores == (0, 0, 0) and odd.hand_no == 1 and odd.dealer == 0


# ------------------------------------------------------------------------------------------------- turn cap, match


def test_turn_cap_ends_the_hand_as_a_draw_after_the_capping_discard() -> None:
    """Section 1 termination guard: "a hand that reaches ``max_turns`` turns ... ends as a drawn hand with no score
    ... A turn counts when it ends with a discard; the check is made after that discard"."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", max_turns=4)
    for turn in range(3):
        s, events = idle(s)
        assert s.turns == turn + 1 and "hand_ended" not in kinds(events)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D")
    assert s.hand_no == 0, "melding does not end a turn"
    s, last = apply(s, 0, Discard(card("9D")))
    info = ended(last)
    assert (info["reason"], info["winner"], info["points"]) == ("turn_cap", None, 0)
    assert s.scores == (0, 0, 0) and s.hand_no == 1 and s.turns == 0


def test_turn_cap_going_out_on_the_capping_discard_scores() -> None:
    """Section 1 termination guard and section 3 going out: a discard that empties the hand goes out at once, so
    the cap checked "after that discard" finds the hand already won."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "TC", "9D", max_turns=1, target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C", "discard 9D")
    info = ended(events)
    assert (info["reason"], info["winner"], info["points"]) == ("went_out", 0, 2 * IDLE_VALUE)


def test_deal_passes_to_the_next_seat_after_each_hand_including_drawn_hands() -> None:
    """Section 3 "Match": "The deal passes to the next seat after each hand, drawn hands included"; section 1: the
    dealer's next seat acts first."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", dealer=1, max_turns=1)
    assert (s.dealer, s.to_act) == (1, 2)
    seen = []
    for _ in range(4):
        s, events = idle(s)
        assert ended(events)["reason"] == "turn_cap"
        seen.append((s.hand_no, s.dealer, s.to_act))
    assert seen == [(1, 2, 0), (2, 0, 1), (3, 1, 2), (4, 2, 0)]
    assert s.hands_played == 4 and s.scores == (0, 0, 0)


def test_deal_passes_to_the_next_seat_after_a_won_hand() -> None:
    """Section 3 "Match": the deal passes to the next seat (not to the winner, unlike Gin)."""
    hands = ["5S 5H 9D JC JD 2C 4H", "3S 3H 3D 4C 5C 6C 7C", IDLE2]
    s = start(hands, "TC", "KS", dealer=0, target_score=1000)
    assert s.to_act == 1
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C", "discard KS")
    assert ended(events)["winner"] == 1
    assert (s.dealer, s.to_act) == (1, 2)


def test_match_ends_when_a_player_reaches_target_score() -> None:
    """Section 3 "Match": "The first player to reach ``target_score`` wins"; nothing may be played afterwards."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", target_score=192)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    assert kinds(events)[-2:] == ["hand_ended", "match_ended"]
    assert s.phase == "match_over" and s.result is not None
    assert s.result["winners"] == [0] and s.result["totals"] == [192, 0, 0]
    assert legal_moves(s) == []
    for seat in range(3):
        refused(s, seat, "draw stock", "GAME_OVER")
    assert view(s, 1)["result"]["winners"] == [0]


def test_match_goes_on_below_target_score() -> None:
    """Section 3 "Match": below ``target_score`` the next hand is dealt."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", target_score=193)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    assert s.phase == "draw" and s.result is None and s.scores == (192, 0, 0)


def test_max_hands_highest_total_wins() -> None:
    """Section 3 option ``max_hands``: "after that many hands (drawn hands count), the highest total wins"."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", max_hands=2, max_turns=1, target_score=1000)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    assert s.phase == "draw" and s.hand_no == 1
    s, events = idle(s)
    assert ended(events)["reason"] == "turn_cap"
    assert s.phase == "match_over" and s.hands_played == 2
    assert s.result == {"totals": [192, 0, 0], "winners": [0], "ended": "completed", "seat_ends": ["finished"] * 3}


def test_max_hands_tie_for_the_highest_total_is_a_shared_win() -> None:
    """Section 3 option ``max_hands``: "a tie for the highest total is a shared win"."""
    rules = rules_from_profile("rummy-g4a", players=2, max_hands=2)
    winner, loser = "3S 3H 3D 4C 5C 6C 7C 9S 9H 9D", TWO_IDLE
    first = deal(1, [winner, loser], "TD", "8C")
    second = deal(0, [loser, winner], "TD", "8C")
    s = new_game(rules, SEED, (first, second))
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C", "meld 9S 9H 9D")
    assert s.scores == (70, 0) and (s.dealer, s.to_act) == (0, 1)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C", "meld 9S 9H 9D")
    assert s.phase == "match_over"
    assert s.result == {"totals": [70, 70], "winners": [0, 1], "ended": "completed", "seat_ends": ["finished"] * 2}


def test_max_hands_all_drawn_hands_everyone_shares_the_win() -> None:
    """Section 3 option ``max_hands``: drawn hands count; all totals 0 is a tie for the highest total."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", max_hands=1, max_turns=2)
    s, _ = idle(s)
    s, _ = idle(s)
    assert s.phase == "match_over"
    assert s.result == {"totals": [0, 0, 0], "winners": [0, 1, 2], "ended": "completed", "seat_ends": ["finished"] * 3}


# ------------------------------------------------------------------------------------------------- refused moves


@pytest.mark.parametrize(("seat", "move", "code"), [
    (0, "draw stock", "NOT_YOUR_TURN"),
    (2, "draw discard", "NOT_YOUR_TURN"),
    (1, "discard 3S", "WRONG_PHASE"),
    (1, "meld JD JH JC", "WRONG_PHASE"),
    (1, "layoff 8H 0", "WRONG_PHASE"),
    (1, "pass", "WRONG_PHASE"),
    (1, "knock 3S", "WRONG_PHASE"),
    (1, "done", "WRONG_PHASE"),
])
def test_refused_before_drawing_changes_nothing(seat: int, move: str, code: str) -> None:
    """Section 4: "A move is ... applied out of turn" never (NOT_YOUR_TURN); section 3: the turn begins with a draw
    (WRONG_PHASE); "A rejected move changes anything" never: the state is unchanged byte for byte."""
    refused(_table(), seat, move, code)


@pytest.mark.parametrize(("seat", "move", "code"), [
    (0, "discard 2C", "NOT_YOUR_TURN"),
    (2, "meld KD QD JD", "NOT_YOUR_TURN"),
    (1, "draw stock", "WRONG_PHASE"),
    (1, "draw discard", "WRONG_PHASE"),
    (1, "pass", "WRONG_PHASE"),
    (1, "knock 3S", "WRONG_PHASE"),
    (1, "declare best", "WRONG_PHASE"),
    (1, "discard KD", "CARD_NOT_IN_HAND"),
    (1, "discard 5H", "CARD_NOT_IN_HAND"),
    (1, "discard KS", "CARD_NOT_IN_HAND"),
    (1, "meld 8H 9H TH JH", "CARD_NOT_IN_HAND"),
    (1, "meld 8H 9H 3S", "INVALID_MELD"),
    (1, "meld 8H 9H", "INVALID_MELD"),
    (1, "meld 8H 9H TH 4H", "INVALID_MELD"),
    (1, "layoff 3S 0", "CANNOT_LAY_OFF"),
    (1, "layoff 9H 1", "CANNOT_LAY_OFF"),
    (1, "layoff 8H 5", "UNKNOWN_MELD"),
    (1, "layoff 6H 0", "CARD_NOT_IN_HAND"),
])
def test_refused_after_drawing_changes_nothing(seat: int, move: str, code: str) -> None:
    """Section 4: a move out of turn, a second draw, a card not held, an invalid meld, a lay-off that does not fit
    or names no meld is refused with its reason code and changes nothing."""
    s, _ = play(_table(), "draw stock")
    refused(s, seat, move, code)


@pytest.mark.parametrize(("seat", "move", "code"), [
    (3, DrawStock(), "INVALID_SEAT"),
    (-1, DrawStock(), "INVALID_SEAT"),
    (1, Discard(52), "INVALID_CARD"),
    (1, MeldMove(0), "INVALID_CARD"),
    (1, MeldMove(1 << 52), "INVALID_CARD"),
    (1, LayOff(-1, 0), "INVALID_CARD"),
])
def test_malformed_move_refused_changes_nothing(seat: int, move: Move, code: str) -> None:
    """Malformed requests (no such seat, no such card) are InvalidMoveError and change nothing."""
    s, _ = play(_table(), "draw stock")
    err = refused(s, seat, move, code)
    assert isinstance(err, InvalidMoveError)


def test_a_move_cannot_be_applied_twice() -> None:
    """Section 4: "A move is applied twice" never: the same draw or discard sent again is refused."""
    s = _table()
    once, _ = apply(s, 1, DrawStock())
    refused(once, 1, DrawStock(), "WRONG_PHASE")
    twice, _ = apply(once, 1, Discard(card("3S")))
    err = refused(twice, 1, Discard(card("3S")), "NOT_YOUR_TURN")
    assert isinstance(err, IllegalMoveError)
    assert state_to_json(s) == state_to_json(_table()), "apply never modifies its input"


@pytest.mark.parametrize("fault", ["duplicate", "missing"])
def test_card_conservation_is_checked_after_every_move(fault: str) -> None:
    """Section 4: "A card appears in two places, or one of the 52 disappears" never: the referee checks the invariant
    after every move, so a corrupted state (built by hand) makes the next move fail loudly (InvariantError)."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC")
    odd = s.copy()
    if fault == "duplicate":
        odd.hands = (odd.hands[0] | 1 << odd.stock[0], *odd.hands[1:])
    else:
        odd.hands = (odd.hands[0] & ~mask("9D"), *odd.hands[1:])
    with pytest.raises(InvariantError):
        apply(odd, 0, DrawStock())


# ------------------------------------------------------------------------------------------------- legal_moves

COMPLETENESS_GAMES: list[tuple[str, dict[str, Any]]] = [
    ("rummy", {"players": 2}),
    ("rummy", {"players": 3, "ace_high_low": True}),
    ("rummy", {"players": 4, "must_discard_to_go_out": True}),
    ("rummy", {"players": 2, "max_melds_per_turn": 1}),
    ("rummy", {"players": 3, "layoff_requires_own_meld": True}),
    ("rummy", {"players": 5, "discard_taken_card_allowed": True}),
    ("rummy", {"players": 6, "restock": "turn_over"}),
    ("rummy-g4a", {"ace_high_low": True, "must_discard_to_go_out": True, "max_melds_per_turn": 2}),
]


def _random_move(s: GameState, rnd: random.Random) -> Move:
    """A random legal move that favours taking the discard and putting cards on the table."""
    moves = legal_moves(s)
    if s.phase == "draw":
        return DrawDiscard() if DrawDiscard() in moves and rnd.random() < 0.5 else DrawStock()
    table = [mv for mv in moves if not isinstance(mv, Discard)]
    if table and rnd.random() < 0.8:
        return rnd.choice(table)
    return rnd.choice([mv for mv in moves if isinstance(mv, Discard)])


def _candidates(s: GameState) -> set[Move]:
    """Every draw and discard, every subset of 3+ cards of the hand as a meld, every card onto every meld id (and
    one unknown id), plus the moves of the other variant."""
    hand = cards_of(s.hands[s.to_act])
    out: set[Move] = {DrawStock(), DrawDiscard(), parse_move("pass"), parse_move("done"), parse_move("knock 2C")}
    out |= {Discard(c) for c in range(52)}
    for size in range(3, len(hand) + 1):
        out |= {MeldMove(mask_of(combo)) for combo in combinations(hand, size)}
    ids = [m.id for m in s.melds] + [s.next_meld_id + 3]
    out |= {LayOff(c, i) for c in range(52) for i in ids}
    return out


@pytest.mark.parametrize(("profile", "options"), COMPLETENESS_GAMES)
def test_legal_moves_is_exactly_the_set_of_moves_apply_accepts(profile: str, options: dict[str, Any]) -> None:
    """Design ``legal_moves``: "the complete list of legal moves of the seat to act": every meld and lay-off legal
    right now is listed, every listed move applies without error, and every other candidate move (every subset of the
    hand as a meld, every card onto every meld, every discard and draw) is refused. Checked at every point of random
    games under each Rummy option."""
    rules = rules_from_profile(profile, **options)
    checked = 0
    for game_no in range(2):
        seed = hashlib.sha256(f"complete {profile} {options} {game_no}".encode()).digest()
        rnd = random.Random(seed)
        s = new_game(rules, seed)
        for _ in range(250):
            if s.phase == "match_over":
                break
            listed = legal_moves(s)
            assert len(set(listed)) == len(listed), "no move is listed twice"
            accepted = set()
            for mv in _candidates(s):
                try:
                    apply(s, s.to_act, mv)
                except RuleError:
                    continue
                accepted.add(mv)
            assert accepted == set(listed), (s, accepted ^ set(listed))
            checked += 1
            s, _ = apply(s, s.to_act, _random_move(s, rnd))
    assert checked > 300


# ------------------------------------------------------------------------------------------------- views


def test_view_a_seat_sees_its_hand_and_cards_taken_from_the_discard_pile() -> None:
    """Section 4: a player never sees another hand or the stock order; visible to everyone: the discard pile, melds,
    hand sizes, the stock size, and "any card taken from the discard pile (everyone saw it)"."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S")
    s, _ = play(s, "draw discard", "meld 3S 3H 3D", "discard 9D")
    mine = view(s, 0)
    theirs = view(s, 1)
    assert mine["hand"] == texts("TC 4C 5C 6C")
    assert theirs["hand"] == texts(IDLE1)
    for v in (mine, theirs, view(s, SPECTATOR)):
        assert v["known_cards"] == [["TC"], [], []]
        assert v["hand_sizes"] == [4, 7, 7]
        assert v["discard_pile"] == ["9D"] and v["stock_size"] == len(s.stock)
        assert v["melds"][0]["cards"] == ["3S", "3H", "3D"]
        assert "hands" not in v and "stock" not in v and "seed" not in v
    text = json.dumps(theirs)
    for hidden in ("4C", "5C", "6C", "KD", "QH", "JC", "QC", "7S"):
        assert f'"{hidden}"' not in text
    s, _ = idle(s)
    s, _ = idle(s)
    s, _ = play(s, "draw stock", "discard TC")
    assert view(s, 2)["known_cards"] == [[], [], []], "a taken card that left the hand is no longer listed"


def test_view_spectator_sees_no_hand_referee_sees_all() -> None:
    """Section 4 views: a spectator sees only what everyone sees; the referee view holds every hand and the stock
    order (never the seed)."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S")
    spectator = view(s, SPECTATOR)
    assert "hand" not in spectator and "hands" not in spectator and "stock" not in spectator
    referee = view(s, REFEREE)
    assert referee["hands"] == [texts("3S 3H 3D 4C 5C 6C 9D"), texts(IDLE1), texts(IDLE2)]
    assert referee["stock"][-3:] == ["7S", "QC", "JC"]
    assert len(referee["stock"]) == 30
    assert SEED.hex() not in json.dumps(referee) and SEED.hex() not in json.dumps(spectator)


def test_view_events_hide_the_card_drawn_from_the_stock() -> None:
    """Section 4: the card drawn from the stock is seen by the drawer (and the referee) only; a card taken from the
    discard pile is seen by all; each seat sees only its own dealt cards."""
    s = start(["3S 3H 3D 4C 5C 6C 9D", IDLE1, IDLE2], "TC", "JC QC 7S")
    s, events = play(s, "draw stock")
    (drew,) = events
    assert event_for(drew, 0)["card"] == "JC" and event_for(drew, REFEREE)["card"] == "JC"
    assert "card" not in event_for(drew, 1) and "card" not in event_for(drew, SPECTATOR)
    s, _ = play(s, "discard 9D")
    s, events = play(s, "draw discard")
    assert all(event_for(events[0], v)["card"] == "9D" for v in (0, 1, 2, SPECTATOR))


def test_view_dealt_cards_only_to_their_seat() -> None:
    """Section 4: at the deal of the next hand each seat sees its own cards only (the referee sees all)."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", target_score=1000)
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    dealt = [e for e in events if e.kind == "dealt"]
    assert [e.seat for e in dealt] == [0, 1, 2]
    for e in dealt:
        assert event_for(e, e.seat)["cards"] == view(s, e.seat)["hand"]
        assert event_for(e, REFEREE)["cards"] == view(s, e.seat)["hand"]
        assert "cards" not in event_for(e, (e.seat + 1) % 3)
        assert "cards" not in event_for(e, SPECTATOR)
        assert event_for(e, SPECTATOR)["count"] == 7


def test_view_after_the_hand_all_hands_are_revealed() -> None:
    """Section 4: "At the end of a hand all hands are revealed" (``last_hand`` in every view)."""
    s = start(["3S 3H 3D 4C 5C 6C 7C", IDLE1, IDLE2], "9D", "8C", target_score=1000)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C 8C")
    for viewer in (0, 1, 2, SPECTATOR):
        last = view(s, viewer)["last_hand"]
        assert last["hands"] == [[], texts(IDLE1), texts(IDLE2)]
        assert last["winner"] == 0


def test_view_never_shows_a_hidden_card_in_random_games() -> None:
    """Section 4: "A player sees a card they may not see" never: in random games every card text in a seat's view is
    in its own hand, on the table, in the discard pile or taken from it; a spectator sees public cards only."""
    for players in (2, 4, 6):
        rules = rules_from_profile("rummy", players=players)
        seed = hashlib.sha256(f"views {players}".encode()).digest()
        rnd = random.Random(seed)
        s = new_game(rules, seed)
        while s.hand_no == 0 and s.turns < 60:
            public = {c for m in s.melds for c in cards_of(m.cards)} | set(s.discard)
            for k in s.known:
                public |= set(cards_of(k))
            for viewer in (*range(players), SPECTATOR):
                allowed = public | (set(cards_of(s.hands[viewer])) if viewer >= 0 else set())
                shown = set(re.findall(r'"([A2-9TJQK][SHDC])"', json.dumps(view(s, viewer))))
                assert shown <= {card_text(c) for c in allowed}
            s, _ = apply(s, s.to_act, _random_move(s, rnd))
