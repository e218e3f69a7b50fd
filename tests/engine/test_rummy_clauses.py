"""More Rummy rule-clause scenarios (RULES.md sections 1, 3 and 4), for the clauses and edge cases that
test_rummy_rules.py does not pin: what every viewer sees at each moment of a hand, scoring with five and six
players, ace-high layoffs, going out on the last card of the stock, the stall guard after a lay-off, and an
independent reading of section 3 (a reference model) checked against the engine move by move in random games.

Each test is named after the clause it checks; its docstring cites the clause.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable
from itertools import combinations
from typing import Any

import pytest

import engine as E
from engine import (
    SPECTATOR,
    Discard,
    DrawDiscard,
    DrawStock,
    Event,
    GameState,
    LayOff,
    MeldMove,
    Move,
    RuleError,
    apply,
    event_for,
    legal_moves,
    new_game,
    rules_from_profile,
    state_to_json,
    view,
)
from tests.engine.helpers import cards, deal_from_text, hand_ended, mask, of_kind, play, rummy_deal, start

SEED = b"rummy-clauses-scenario-seed-0001"


def game(hands: list[str], upcard: str, stock_top_first: str = "", *, dealer: int | None = None,
         profile: str = "rummy", **options: Any) -> GameState:  # fmt: skip
    """A Rummy match whose first hand is the given preset deal (dealer: the last seat unless given)."""
    rules = rules_from_profile(profile, players=len(hands), **options)
    d = rummy_deal(len(hands) - 1 if dealer is None else dealer, hands, upcard, stock_top_first)
    return start(rules, d, seed=SEED)


def idle(s: GameState) -> tuple[GameState, list[Event]]:
    """A turn that puts nothing on the table: draw the top of the stock and discard that card."""
    return play(s, DrawStock(), Discard(s.stock[-1]))


def refused(s: GameState, seat: int, move: Move | str, code: str) -> None:
    """``move`` is refused with ``code`` and changes nothing."""
    before = state_to_json(s)
    with pytest.raises(RuleError) as exc:
        apply(s, seat, E.parse_move(move) if isinstance(move, str) else move)
    assert exc.value.code == code, exc.value.message
    assert state_to_json(s) == before


def card_texts_in(value: Any) -> set[str]:
    """Every card text in a JSON-able value (a view, an event as one viewer sees it)."""
    return set(re.findall(r'"([A2-9TJQK][SHDC])"', json.dumps(value)))


def names(text: str) -> set[str]:
    """Card texts of space-separated card text, normalized (``10H`` is ``TH``)."""
    return {E.card_text(c) for c in cards(text)}


# ------------------------------------------------------------------------------------------------- section 4


VIEWERS = (0, 1, 2, SPECTATOR)
SEEN_HANDS = ["5H 6H 7H QS QD QC 2C", "8H 9H JD JH JC 4H 3S", "KD 2S TS 8S 5D 6S AH"]


def _public_part(v: dict[str, Any]) -> dict[str, Any]:
    return {k: x for k, x in v.items() if k not in ("viewer", "hand")}


def _check_moment(s: GameState, *, discard: list[str], stock: int, sizes: list[int], known: list[list[str]],
                  taken: str | None, melds: list[list[str]]) -> None:  # fmt: skip
    """At this moment every viewer sees the same public part (these values); each seat sees its own hand, no one
    else's; the spectator sees no hand; no view shows a card that is neither public nor the viewer's."""
    public = set(discard) | {c for m in melds for c in m} | {c for k in known for c in k}
    parts = []
    for viewer in VIEWERS:
        v: dict[str, Any] = dict(view(s, viewer))
        assert v["discard_pile"] == discard
        assert v["stock_size"] == stock and v["hand_sizes"] == sizes
        assert v["known_cards"] == known and v["taken_card"] == taken
        assert [m["cards"] for m in v["melds"]] == melds
        assert "hands" not in v and "stock" not in v
        own: set[str] = set()
        if viewer == SPECTATOR:
            assert "hand" not in v
        else:
            own = set(v["hand"])
            assert own == {E.card_text(c) for c in E.cards_of(s.hands[viewer])}
        assert card_texts_in(v) <= public | own, (viewer, card_texts_in(v) - public - own)
        parts.append(_public_part(v))
    assert all(p == parts[0] for p in parts)


def test_visibility_at_each_moment_of_a_hand() -> None:
    """Section 4: "Visible to everyone: the upcard and the discard pile, melds and lay-offs on the table, hand sizes,
    the stock size, and any card taken from the discard pile (everyone saw it). At the end of a hand all hands are
    revealed"; a player never sees another hand or the stock order. Checked after every move of one three-player
    hand, for each seat and a spectator: the deal, a draw from the stock, melds, a discard, a draw from the discard
    pile (and that card while it stays in the hand), lay-offs onto another seat's meld, and going out."""
    s, deal_events = E.new_game_with_events(
        rules_from_profile("rummy", players=3, target_score=1000),
        SEED, (rummy_deal(2, SEEN_HANDS, "TC", "KS 2D 7D TH"),),
    )  # fmt: skip
    (started,) = of_kind(deal_events, "hand_started")
    for viewer in VIEWERS:
        seen = event_for(started, viewer)
        assert (seen["upcard"], seen["stock_size"], seen["hand_sizes"], seen["dealer"], seen["to_act"]) == (
            "TC", 30, [7, 7, 7], 2, 0)
    for e in of_kind(deal_events, "dealt"):
        for viewer in VIEWERS:
            assert ("cards" in event_for(e, viewer)) is (viewer == e.seat)
    _check_moment(s, discard=["TC"], stock=30, sizes=[7, 7, 7], known=[[], [], []], taken=None, melds=[])

    s, events = play(s, "draw stock")
    for viewer in VIEWERS:
        assert ("card" in event_for(events[0], viewer)) is (viewer == 0)
    _check_moment(s, discard=["TC"], stock=29, sizes=[8, 7, 7], known=[[], [], []], taken=None, melds=[])
    s, _ = play(s, "meld 5H 6H 7H", "meld QS QD QC")
    melds = [["5H", "6H", "7H"], ["QS", "QD", "QC"]]
    _check_moment(s, discard=["TC"], stock=29, sizes=[2, 7, 7], known=[[], [], []], taken=None, melds=melds)
    s, _ = play(s, "discard KS")
    _check_moment(s, discard=["TC", "KS"], stock=29, sizes=[1, 7, 7], known=[[], [], []], taken=None, melds=melds)

    s, events = play(s, "draw discard")
    assert all(event_for(events[0], viewer)["card"] == "KS" for viewer in VIEWERS)
    _check_moment(s, discard=["TC"], stock=29, sizes=[1, 8, 7], known=[[], ["KS"], []], taken="KS", melds=melds)
    s, _ = play(s, "meld JD JH JC", "layoff 8H 0", "layoff 9H 0", "layoff 4H 0")
    melds = [["4H", "5H", "6H", "7H", "8H", "9H"], ["QS", "QD", "QC"], ["JH", "JD", "JC"]]
    _check_moment(s, discard=["TC"], stock=29, sizes=[1, 2, 7], known=[[], ["KS"], []], taken="KS", melds=melds)
    assert view(s, SPECTATOR)["melds"][0]["layoffs"] == [{"card": c, "seat": 1} for c in ("8H", "9H", "4H")]
    s, _ = play(s, "discard 3S")
    _check_moment(s, discard=["TC", "3S"], stock=29, sizes=[1, 1, 7], known=[[], ["KS"], []], taken=None,
                  melds=melds)  # fmt: skip

    s, _ = idle(s)  # seat 2: 2D
    s, _ = idle(s)  # seat 0: 7D
    _check_moment(s, discard=["TC", "3S", "2D", "7D"], stock=27, sizes=[1, 1, 7], known=[[], ["KS"], []],
                  taken=None, melds=melds)  # fmt: skip
    s, events = play(s, "draw stock", "layoff TH 0", "discard KS")
    info = hand_ended(events)
    assert (info["winner"], info["reason"], info["going_rummy"]) == (1, "went_out", False)
    assert info["points"] == 2 + (10 + 2 + 10 + 8 + 5 + 6 + 1)
    for viewer in VIEWERS:
        shown = event_for(of_kind(events, "hand_ended")[0], viewer)
        assert shown["hands"][:2] == [["2C"], []] and set(shown["hands"][2]) == names(SEEN_HANDS[2])
        last = view(s, viewer)["last_hand"]
        assert last is not None and last["hands"] == shown["hands"]
        assert last["melds"][0]["cards"] == ["4H", "5H", "6H", "7H", "8H", "9H", "TH"]


# ------------------------------------------------------------------------------------------------- scoring

SIX = ["3S 3H 3D 4C 5C 6C", "KH QD JS 9C 4D 2H", "KD QH TS 8S 5D 6H", "KS QS JH 9D 8D 7S", "AS AH AD 2S 2D 9S",
       "TC JC QC KC 6S 5S"]  # fmt: skip
#: the values of seats 1..5 with an ace worth 1; seat 4 holds three aces
SIX_VALUES = [45, 49, 54, 16, 51]


@pytest.mark.parametrize("players", [5, 6])
@pytest.mark.parametrize(("profile", "ace_high_low", "ace", "multiplier"), [
    ("rummy", False, 1, 2), ("rummy", True, 15, 2), ("rummy-g4a", False, 1, 1), ("rummy-g4a", True, 11, 1)])
def test_going_out_scores_every_other_hand_with_five_and_six_players(
        players: int, profile: str, ace_high_low: bool, ace: int, multiplier: int) -> None:  # fmt: skip
    """Section 3: five or six players get 6 cards each; "The player who goes out scores the value of all cards left
    in the other players' hands" (every other hand, not one), aces at 1 or at ``ace_value_high_low`` with
    ``ace_high_low``, times ``going_rummy_multiplier`` for going rummy; only the winner scores."""
    s = game(SIX[:players], "8C", "7C", profile=profile, ace_high_low=ace_high_low, target_score=1000)
    assert [h.bit_count() for h in s.hands] == [6] * players and len(s.stock) == 52 - 6 * players - 1
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C")
    info = hand_ended(events)
    values = [v + (3 * (ace - 1) if i == 3 else 0) for i, v in enumerate(SIX_VALUES[: players - 1])]  # seat 4: 3 aces
    assert info["hand_values"] == [0, *values]
    assert (info["winner"], info["going_rummy"], info["points"]) == (0, True, multiplier * sum(values))
    assert s.scores == (multiplier * sum(values),) + (0,) * (players - 1)


def test_going_out_on_the_last_card_of_the_stock() -> None:
    """Section 3: the stock is rebuilt only "If the stock is empty when a turn begins": a player who draws the last
    card of the stock and goes out in that turn wins the hand, with no rebuild. Six players: 15 cards of stock, and
    seat 2 draws the 15th on the hand's 15th turn."""
    hands = [SIX[1], SIX[3], SIX[0], SIX[4], SIX[5], SIX[2]]
    named = {c for h in hands for c in cards(h)} | set(cards("8C 7C"))
    rest = " ".join(E.card_text(c) for c in range(52) if c not in named)
    s = start(rules_from_profile("rummy", players=6, target_score=1000),
              deal_from_text(5, hands, "8C", rest + " 7C", hand_size=6), seed=SEED)  # fmt: skip
    for _ in range(14):
        s, _ = idle(s)
    assert (s.to_act, len(s.stock), s.stock[-1]) == (2, 1, E.parse_card("7C"))
    s, events = play(s, "draw stock", "meld 3S 3H 3D", "meld 4C 5C 6C 7C")
    assert "restocked" not in [e.kind for e in events]
    info = hand_ended(events)
    assert (info["winner"], info["reason"], info["going_rummy"]) == (2, "went_out", True)
    assert info["points"] == 2 * (45 + 54 + 16 + 51 + 49)


# ------------------------------------------------------------------------------------------------- melds, layoffs


def test_ace_high_low_layoffs_at_both_ends_never_round_the_corner() -> None:
    """Sections 1 and 3 with ``ace_high_low``: Q-K-A takes the jack below it (J-Q-K-A) but never the two above it
    (Q-K-A-2 rounds the corner); an ace still goes below 2-3-4 (A-2-3-4), and then no king goes below that ace."""
    hands = ["QC KC AC 2D 3D 4D 9S", "JC 2C AD KD 5S 9H 4H", "KH QH TS 8S 5D 6H AH"]
    s = game(hands, "TC", "7S 8D", ace_high_low=True)
    s, _ = play(s, "draw stock", "meld QC KC AC", "meld 2D 3D 4D", "discard 9S", "draw stock")
    moves = legal_moves(s)
    assert LayOff(E.parse_card("JC"), 0) in moves and LayOff(E.parse_card("AD"), 1) in moves
    refused(s, 1, "layoff 2C 0", "CANNOT_LAY_OFF")
    refused(s, 1, "layoff KD 1", "CANNOT_LAY_OFF")
    s, _ = play(s, "layoff JC 0", "layoff AD 1")
    assert [m["cards"] for m in view(s, 2)["melds"]] == [["JC", "QC", "KC", "AC"], ["AD", "2D", "3D", "4D"]]
    refused(s, 1, "layoff KD 1", "CANNOT_LAY_OFF")
    refused(s, 1, "layoff 2C 0", "CANNOT_LAY_OFF")


def test_ten_is_accepted_as_10_in_moves() -> None:
    """RULES.md card text: "accept ``10`` for ten on input": ``meld 10H JH QH`` is the meld TH-JH-QH."""
    s = game(["TH JH QH 3S 4D 8C 9C", "KH QD JS 9D 4H 2H AS", "KD QC TS 8S 5D 6H AH"], "KC", "2C")
    s, events = play(s, "draw stock", "meld 10H JH QH", "discard 2C")
    assert s.melds[0].cards == mask("TH JH QH")
    assert of_kind(events, "melded")[0].public["meld"]["cards"] == ["TH", "JH", "QH"]


@pytest.mark.parametrize("must_discard", [False, True])
def test_the_card_taken_from_the_discard_pile_may_be_laid_off_at_once(must_discard: bool) -> None:
    """Section 1: only discarding the taken card is refused in that turn, so it may be laid off at once; section 3
    going out: then the last card goes out by a lay-off, or, with ``must_discard_to_go_out``, by its discard."""
    hands = ["3S 3H 3D 5C 6C 7C 9S TS JS KS", "KH QD 8S 9C 4D 2H AS 8H 9H 6D"]
    s = game(hands, "TC", "2D QS", must_discard_to_go_out=must_discard, target_score=1000)
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "meld 5C 6C 7C", "meld 9S TS JS", "discard 2D")
    s, _ = idle(s)  # seat 1 draws and discards the QS
    s, _ = play(s, "draw discard")
    assert s.hands[0] == mask("KS QS") and s.taken == E.parse_card("QS")
    assert set(legal_moves(s)) == {Discard(E.parse_card("KS")), LayOff(E.parse_card("QS"), 2)}
    s, _ = play(s, "layoff QS 2")
    if must_discard:
        refused(s, 0, "layoff KS 2", "MUST_DISCARD_TO_GO_OUT")
        s, events = play(s, "discard KS")
    else:
        s, events = play(s, "layoff KS 2")
        assert "discarded" not in [e.kind for e in events]
    info = hand_ended(events)
    assert (info["winner"], info["going_rummy"], info["points"]) == (0, False, 67)


# ------------------------------------------------------------------------------------------------- stock runs out


def _until_rebuilt(s: GameState) -> tuple[GameState, list[Event]]:
    for _ in range(80):
        s, events = idle(s)
        if {"restocked", "hand_ended"} & {e.kind for e in events}:
            return s, events
    raise AssertionError("the stock was never rebuilt")


def test_stall_guard_a_lay_off_alone_counts_as_play() -> None:
    """Section 3 stall guard: the hand ends at a rebuild only if "no card was melded or laid off since the previous
    rebuild": a lay-off onto another seat's meld, with no meld since that rebuild, lets the next rebuild happen; the
    rebuild after it, with nothing played in between, ends the hand with no score."""
    hands = ["3S 3H 3D 5C 6C 7C 9S JC KS 2D", "KH QD JS 9C 4D 2H AS 8H TS 3C"]
    s = game(hands, "TC", "QS", restock="turn_over")
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "discard QS")
    s, events = _until_rebuilt(s)
    assert "restocked" in [e.kind for e in events]
    if s.to_act != 1:
        s, _ = idle(s)
    top = s.stock[-1]
    s, _ = play(s, DrawStock(), LayOff(E.parse_card("3C"), 0), Discard(top))
    s, events = _until_rebuilt(s)
    assert "restocked" in [e.kind for e in events] and s.restocks == 2 and s.hand_no == 0
    s, events = _until_rebuilt(s)
    info = hand_ended(events)
    assert (info["reason"], info["winner"], info["points"]) == ("stalled", None, 0)
    assert s.scores == (0, 0) and s.hand_no == 1 and s.dealer == 0


def test_after_a_rebuild_the_top_discard_taken_may_not_be_discarded() -> None:
    """Section 3: after the rebuild "the player draws from either pile as usual": the discard left on the pile may
    be taken, and section 1's rule holds for it (not discarded in that turn)."""
    hands = ["3S 3H 3D 5C 6C 7C 9S JC KS 2D", "KH QD JS 9C 4D 2H AS 8H TS 6D"]
    s = game(hands, "TC", "QS")
    s, _ = play(s, "draw stock", "meld 3S 3H 3D", "discard QS")
    s, events = _until_rebuilt(s)
    assert "restocked" in [e.kind for e in events] and len(s.discard) == 1
    top = s.discard[-1]
    s, _ = play(s, DrawDiscard())
    assert s.taken == top and s.discard == ()
    refused(s, s.to_act, Discard(top), "DISCARD_TAKEN_CARD")


# ------------------------------------------------------------------------------------------------- a reference model


def _rank(c: int) -> int:
    return c % 13


def _is_set(cs: Iterable[int]) -> bool:
    cs = list(cs)
    return len(cs) in (3, 4) and len({_rank(c) for c in cs}) == 1


def _is_run(cs: Iterable[int], ace_high: bool) -> bool:
    cs = list(cs)
    if len(cs) < 3 or len({c // 13 for c in cs}) != 1:
        return False
    for high in (False, True) if ace_high else (False,):
        ranks = sorted(13 if high and _rank(c) == 0 else _rank(c) for c in cs)
        if ranks == list(range(ranks[0], ranks[0] + len(ranks))):
            return True
    return False


def _value(c: int, r: E.Rules) -> int:
    if _rank(c) == 0:
        return r.ace_value_high_low if r.ace_high_low else 1
    return min(_rank(c) + 1, 10)


def _reference_moves(s: GameState) -> set[Move]:
    """Section 3 read afresh: the moves the seat to act may make, from the rules text alone."""
    r = s.rules
    if s.phase == "draw":
        draws: set[Move] = {DrawStock()}
        return draws | {DrawDiscard()} if s.discard else draws
    seat = s.to_act
    hand = set(E.cards_of(s.hands[seat]))
    taken = s.taken if s.taken >= 0 else None

    def leaves_ok(rest: set[int]) -> bool:
        if not rest and r.must_discard_to_go_out:
            return False
        return rest != {taken}  # refused with discard_taken_card_allowed too: the text has no exception

    out: set[Move] = {Discard(c) for c in hand if c != taken or r.discard_taken_card_allowed}
    if not r.max_melds_per_turn or s.melds_this_turn < r.max_melds_per_turn:
        for k in range(3, len(hand) + 1):
            for combo in combinations(sorted(hand), k):
                if (_is_set(combo) or _is_run(combo, r.ace_high_low)) and leaves_ok(hand - set(combo)):
                    out.add(MeldMove(E.mask_of(combo)))
    if not r.layoff_requires_own_meld or any(m.owner == seat for m in s.melds):
        for m in s.melds:
            table = set(E.cards_of(m.cards))
            for c in hand:
                fits = _is_set(table | {c}) if _is_set(table) else _is_run(table | {c}, r.ace_high_low)
                if fits and leaves_ok(hand - {c}):
                    out.add(LayOff(c, m.id))
    return out


REFERENCE_GAMES: list[tuple[str, dict[str, Any]]] = [
    ("rummy", {"players": 2}),
    ("rummy", {"players": 3, "ace_high_low": True}),
    ("rummy", {"players": 4, "must_discard_to_go_out": True, "discard_taken_card_allowed": True}),
    ("rummy", {"players": 5, "max_melds_per_turn": 1, "layoff_requires_own_meld": True}),
    ("rummy", {"players": 6, "restock": "turn_over"}),
    ("rummy-g4a", {"ace_high_low": True, "restock": "turn_over"}),
    ("rummy", {"players": 3, "target_score": 40}),
    ("rummy", {"players": 2, "max_hands": 3}),
]


@pytest.mark.parametrize(("profile", "options"), REFERENCE_GAMES)
def test_engine_agrees_with_a_reference_reading_of_section_3(profile: str, options: dict[str, Any]) -> None:
    """Section 3 as a whole, against an independent model of it: at every point of random games the legal moves
    are exactly the model's; every hand won scores the model's points (the others' cards, aces per option, the
    going-rummy multiplier exactly when the winner played no card in an earlier turn); the deal passes to the next
    seat, and the match ends exactly when a total reaches ``target_score`` or ``max_hands`` hands are played, the
    highest total winning (a tie shared); a rebuilt stock is the discard pile less its top card (turned over: in
    reverse), and a hand ends ``stalled`` exactly when nothing was played since the previous rebuild."""
    r = rules_from_profile(profile, **options)
    seed = hashlib.sha256(f"reference {profile} {options}".encode()).digest()
    rnd = random.Random(seed)
    s = new_game(r, seed)
    n = r.players
    played = [False] * n
    this_turn = active = False
    ends = {"went_out": 0, "restocked": 0}
    for _ in range(1200):
        if s.phase == "match_over":
            break
        seat = s.to_act
        listed = set(legal_moves(s))
        assert listed == _reference_moves(s), (s, listed ^ _reference_moves(s))
        if s.phase == "draw":
            move: Move = DrawDiscard() if DrawDiscard() in listed and rnd.random() < 0.4 else DrawStock()
        else:
            table = [m for m in listed if not isinstance(m, Discard)]
            move = rnd.choice(table) if table and rnd.random() < 0.5 else rnd.choice(
                [m for m in listed if isinstance(m, Discard)])
        before = s
        others = sum(_value(c, r) for i in range(n) if i != seat for c in E.cards_of(before.hands[i]))
        s, events = apply(s, seat, move)
        kinds = [e.kind for e in events]
        this_turn = this_turn or isinstance(move, (MeldMove, LayOff))
        active = active or this_turn
        if "hand_ended" in kinds:
            info = hand_ended(events)
            if info["reason"] == "went_out":
                ends["went_out"] += 1
                assert info["going_rummy"] is (not played[seat])
                assert info["points"] == others * (1 if played[seat] else r.going_rummy_multiplier)
            elif info["reason"] == "stalled":
                assert not active and not before.stock
            else:
                assert info["reason"] == "turn_cap" and before.turns + 1 == r.max_turns, info["reason"]
            over = max(s.scores) >= r.target_score or 0 < r.max_hands <= s.hands_played
            assert (s.phase == "match_over") is over
            if over:
                assert s.result is not None
                assert s.result["winners"] == [i for i in range(n) if s.scores[i] == max(s.scores)]
            else:
                assert (s.dealer, s.to_act) == ((before.dealer + 1) % n, (before.dealer + 2) % n)
            played, this_turn, active = [False] * n, False, False
        elif isinstance(move, Discard):
            played[seat] = played[seat] or this_turn
            this_turn = False
            assert s.to_act == (seat + 1) % n
            if "restocked" in kinds:
                ends["restocked"] += 1
                pile = (*before.discard, move.card)
                assert not before.stock and active and s.discard == pile[-1:]
                if r.restock == "turn_over":
                    assert s.stock == tuple(reversed(pile[:-1]))
                else:
                    assert sorted(s.stock) == sorted(pile[:-1])
                active = False
            else:
                assert s.stock == before.stock
    assert ends["went_out"] >= 1 and ends["restocked"] >= 1, ends
    if "target_score" in options or "max_hands" in options:
        assert s.phase == "match_over"
