"""Differential check of Rummy (RULES.md sections 1, 3 and 4): random matches played move by move on the engine
and on an independent model written from RULES.md alone (tests/engine/rummy_model.py), which must agree on
everything the rules decide.

Hypothesis picks the match: the profile (rummy or rummy-g4a), 2 to 6 seats, every section 3 option (and
``discard_taken_card_allowed``, ``target_score``, ``max_hands``, ``max_turns``), a seed, and either the seed's deal
or a preset deal (any dealer) with a few awkward cards planted in the first player's hand (Q-K-A-2 of one suit, a
set of four). Its drawn seed then drives the play: random choices among the legal moves, with a leaning towards
melding that differs per match (from never to always, so that stalls, rebuilt stocks, turn caps and going out all
come up), and a few random probes per move, mostly illegal: melds of the wrong shape, round-the-corner runs,
lay-offs that do not fit or go onto no meld, emptying the hand with ``must_discard_to_go_out``, leaving only the
card taken from the discard pile, discarding that card, melds past ``max_melds_per_turn``, lay-offs without an own
meld under ``layoff_requires_own_meld``, moves out of turn or of the wrong phase.

After every step the engine and the model must agree on: the set of legal moves; for each probe, whether it is
accepted, and when it is not, a reason the model also finds, with the state unchanged; the table (hands, stock
order, discard pile, melds with their owners and ids, the card taken, the turn count, the seat to act, the dealer);
a rebuilt stock (turned over: exactly the reversed pile); how and when each hand ends (going out, going rummy and
its points, ace values, the stall guard, the turn cap); the scores, the match's end and its winners.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import (
    SPECTATOR,
    Deal,
    Discard,
    DrawDiscard,
    DrawStock,
    Event,
    GameState,
    LayOff,
    MeldMove,
    Move,
    RuleError,
    Rules,
    apply,
    legal_moves,
    new_game,
    rules_from_profile,
    view,
)
from engine.cards import card_text
from engine.deal import shuffled
from tests.engine.rummy_model import PROFILE_TABLE, SHARED_OPTIONS, RummyModel, mask, melds_in

#: the most moves one match is played for (a match without max_hands may go on for long)
MAX_STEPS = 700
#: probes tried per step
PROBES = 2


# ------------------------------------------------------------------------------------------------- strategies

OPTION_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "ace_high_low": st.booleans(),
    "ace_value_high_low": st.integers(0, 20),
    "going_rummy_multiplier": st.integers(0, 4),
    "must_discard_to_go_out": st.booleans(),
    "max_melds_per_turn": st.integers(0, 3),
    "layoff_requires_own_meld": st.booleans(),
    "discard_taken_card_allowed": st.booleans(),
    "target_score": st.integers(1, 250),
    "max_hands": st.integers(0, 4),
}


def _plant(order: list[int], first: Sequence[int], wanted: Sequence[int]) -> None:
    """Swap the ``wanted`` cards into the deck positions ``first`` (the first player's cards)."""
    for pos, card in zip(first, wanted, strict=False):
        at = order.index(card)
        order[pos], order[at] = order[at], order[pos]


def _preset(draw: st.DrawFn, n: int, ready_only: bool = False) -> Deal:
    """A preset deal of a random deck, any dealer, a few awkward cards planted in the first player's hand."""
    k = 10 if n == 2 else 7 if n <= 4 else 6
    order = list(draw(st.permutations(range(52))))
    s = draw(st.integers(0, 3))
    # a hand that melds out at once (a set of rank s in S H D, a run of clubs above it: going rummy on the first
    # turn); none; Q-K-A-2 of one suit (round the corner); four of a kind
    ready = (s, s + 13, s + 26, *(39 + r for r in range(s + 1, s + k - 2)))
    corner = (11 + 13 * s, 12 + 13 * s, 13 * s, 1 + 13 * s)
    plant = ready if ready_only else draw(st.sampled_from([ready, (), corner, (s, s + 13, s + 26, s + 39)]))
    _plant(order, range(len(plant)), plant)
    dealer = draw(st.integers(0, n - 1))
    first = (dealer + 1) % n
    hands = [order[:k] if i == first else [] for i in range(n)]
    rest = order[k:]
    for i in range(n):
        if i != first:
            hands[i], rest = rest[:k], rest[k:]
    stock = rest[1:]
    if plant == ready and draw(st.booleans()):  # the stock's top card extends the run: the hand melds out whole
        nxt = 39 + s + k - 2
        where = stock.index(nxt) if nxt in stock else None
        if where is not None:
            stock[where], stock[-1] = stock[-1], stock[where]
    return Deal(dealer, tuple(tuple(h) for h in hands), rest[0], tuple(stock))


Match = tuple[Rules, bytes, tuple[Deal, ...], int, float, float]
#: the leanings towards melding: -1 holds every card until the hand can go out in one turn (going rummy)
MELD_BIASES = (0.6, -1.0, 1.0, 0.15, 0.05, 0.0)


@st.composite
def matches(draw: st.DrawFn, meld_biases: tuple[float, ...] = MELD_BIASES, ready_only: bool = False) -> Match:
    """A match to play: its rules, seed, preset deals (none, one, or two: the second with any dealer), the play's
    random seed and its leanings."""
    profile = draw(st.sampled_from(["rummy", "rummy-g4a"]))
    options: dict[str, Any] = {}
    players = draw(st.one_of(st.none(), st.integers(2, 6)))  # None: the profile's default seat count
    if players is not None:
        options["players"] = players
    for name, values in OPTION_VALUES.items():
        if draw(st.booleans()):
            options[name] = draw(values)
    options["restock"] = draw(st.sampled_from(["turn_over", "shuffle"]))
    # a few short caps (the cap's end, going out on the capping discard), mostly caps past a rebuilt stock
    options["max_turns"] = draw(st.sampled_from([200, 120, 300, 70, 1000, 9, 5, 2, 1]))
    rules = rules_from_profile(profile, **options)
    seed = draw(st.binary(min_size=16, max_size=16))
    count = 1 if ready_only else draw(st.sampled_from([1, 0, 2]))
    presets = tuple(_preset(draw, rules.players, ready_only) for _ in range(count))
    play_seed = draw(st.integers(0, 2**32))
    meld_bias = draw(st.sampled_from(meld_biases))
    take_bias = draw(st.sampled_from([0.0, 0.3, 0.7]))
    return rules, seed, presets, play_seed, meld_bias, take_bias


# ------------------------------------------------------------------------------------------------- comparison


def engine_table(s: GameState) -> dict[str, Any]:
    """The engine's table in the model's comparable form."""
    return {
        "phase": str(s.phase),
        "to_act": s.to_act,
        "dealer": s.dealer,
        "hand_no": s.hand_no,
        "hands": tuple(s.hands),
        "stock": tuple(s.stock),
        "discard": tuple(s.discard),
        "melds": [(m.id, m.owner, m.cards) for m in s.melds],
        "taken": s.taken,
        "known": tuple(s.known),
        "turns": s.turns,
        "scores": tuple(s.scores),
        "hands_played": s.hands_played,
    }


def check_same(model: RummyModel, s: GameState) -> None:
    """Engine and model agree on the table (after the match: on the scores and hands played)."""
    mine, theirs = model.table(), engine_table(s)
    if model.phase == "match_over" or theirs["phase"] == "match_over":
        keys = ("phase", "scores", "hands_played")
        mine, theirs = {k: mine[k] for k in keys}, {k: theirs[k] for k in keys}
    diff = {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}
    assert not diff, f"model vs engine: {diff}"


def check_outcome(model: RummyModel, out: Any, events: Sequence[Event], s: GameState) -> None:
    """The move's outcome (rebuilt stock, hand end, match end) is the model's."""
    kinds = [e.kind for e in events]
    assert ("restocked" in kinds) is out.restocked, (kinds, out)
    ended = [e.public for e in events if e.kind == "hand_ended"]
    if out.hand_end is None:
        assert not ended, (ended, model.table())
    else:
        assert len(ended) == 1, kinds
        info, want = ended[0], out.hand_end
        got = (info["reason"], info["winner"], info["points"])
        assert got == (want.reason, want.winner, want.points), (got, want)
        if want.reason == "went_out":
            assert info["going_rummy"] is want.going_rummy, (info, want)
            assert info["hand_values"] == want.hand_values, (info["hand_values"], want)
        assert [set(h) for h in info["hands"]] == [{card_text(c) for c in h} for h in want.hands], info["hands"]
    assert ("match_ended" in kinds) is out.match_over, kinds
    if out.match_over:
        assert s.result is not None and list(s.result["winners"]) == model.winners, (s.result, model.winners)


def _texts(cards: object) -> list[str]:
    return sorted(card_text(c) for c in cards)  # type: ignore[attr-defined]


def _all_texts(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value} if len(value) == 2 and value[0] in "A23456789TJQK" and value[1] in "SHDC" else set()
    if isinstance(value, dict):
        return set().union(*(_all_texts(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(_all_texts(v) for v in value))
    return set()


def check_view(model: RummyModel, s: GameState, viewer: int) -> None:
    """Section 4: a viewer sees its own hand and what is public (the discard pile, the melds, hand sizes, the
    stock size, cards taken from the discard pile and still held), and no other card of this hand."""
    v: dict[str, Any] = dict(view(s, viewer))
    assert sorted(v["discard_pile"]) == _texts(model.discard)
    assert v["stock_size"] == len(model.stock) and v["hand_sizes"] == [len(h) for h in model.hands]
    assert [sorted(k) for k in v["known_cards"]] == [_texts(k) for k in model.known]
    assert v["taken_card"] == (None if model.taken is None else card_text(model.taken)), v["taken_card"]
    assert [sorted(m["cards"]) for m in v["melds"]] == [_texts(m.cards) for m in model.melds]
    own = set(_texts(model.hands[viewer])) if viewer >= 0 else set()
    if viewer >= 0:
        assert sorted(v["hand"]) == sorted(own)
    else:
        assert "hand" not in v
    public = set(_texts(model.discard)) | {c for m in model.melds for c in _texts(m.cards)}
    public |= {c for k in model.known for c in _texts(k)}
    # last_hand shows the previous hand's cards, all revealed when it ended: not cards of this hand
    shown = _all_texts({k: x for k, x in v.items() if k not in ("last_hand", "result")})
    assert shown <= public | own, (viewer, shown - public - own)


# ------------------------------------------------------------------------------------------------- probes


def probes(model: RummyModel, rnd: random.Random, legal: set[Move]) -> list[tuple[int, Move]]:
    """A few moves to try, with the seat trying each: mostly ones the model finds illegal."""
    seat = model.to_act
    hand = sorted(model.hands[seat])
    universe: list[Move] = [DrawStock(), DrawDiscard()]
    universe += [Discard(c) for c in hand]
    for k in (3, 4, 5):
        if len(hand) >= k:
            universe += [MeldMove(mask(rnd.sample(hand, k))) for _ in range(3)]
    # every meld of the right shape (some too many, some emptying or stranding), and round-the-corner tries
    universe += [MeldMove(mask(m)) for m in melds_in(hand, True)]
    for s in range(4):  # round the corner: K-A-2, Q-K-A-2, K-A-2-3
        for ranks in ((12, 0, 1), (11, 12, 0, 1), (12, 0, 1, 2)):
            corner = [13 * s + r for r in ranks]
            if set(corner) <= model.hands[seat]:
                universe.append(MeldMove(mask(corner)))
    ids = [m.id for m in model.melds] + [len(model.melds) + 7]
    universe += [LayOff(c, i) for c in hand for i in ids]
    if model.taken is not None:
        universe.append(Discard(model.taken))
    outside = [c for c in range(52) if c not in model.hands[seat]]
    universe += [Discard(rnd.choice(outside)), LayOff(rnd.choice(outside), 0)]
    illegal = [m for m in universe if m not in legal]
    out: list[tuple[int, Move]] = []
    for _ in range(PROBES):
        pool = illegal if illegal and rnd.random() < 0.8 else universe
        out.append((seat, rnd.choice(pool)))
    # and always every meld and fitting lay-off that another rule refuses: the meld limit, emptying the hand with
    # must_discard_to_go_out, leaving only the taken card, a lay-off without an own meld
    if model.phase == "play":
        shaped: list[Move] = [MeldMove(mask(m)) for m in melds_in(hand, model.rules.ace_high_low)]
        shaped += [LayOff(c, m.id) for m in model.melds for c in hand if model.fits(m, c)]
        out += [(seat, m) for m in shaped if m not in legal]
    if legal and rnd.random() < 0.2:
        out.append(((seat + rnd.randrange(1, model.n)) % model.n, rnd.choice(sorted(legal, key=repr))))
    return out


def check_probe(model: RummyModel, s: GameState, seat: int, move: Move) -> None:
    """The engine accepts ``move`` exactly when the model does; a refusal names a reason the model finds, and
    changes nothing."""
    why = model.violations(seat, move)
    before = s.copy()
    try:
        apply(s, seat, move)
    except RuleError as exc:
        assert why, f"engine refused {move} by seat {seat} ({exc.code}: {exc.message}); the model allows it"
        assert exc.code in why, f"{move} by seat {seat}: engine says {exc.code}, the model {why}"
        event(f"refused: {exc.code}")
    else:
        assert not why, f"engine accepted {move} by seat {seat}; the model refuses it: {why}"
    assert s == before, "a refused or tried move changed the state"


# ------------------------------------------------------------------------------------------------- the test


def _friends(card: int, hand: set[int]) -> int:
    """How many cards of ``hand`` could share a meld with ``card``: the same rank, or the same suit two ranks off
    at most (a leaning for the play, so that hands are won; no rule)."""
    return sum(
        1
        for c in hand
        if c != card and (c % 13 == card % 13 or (c // 13 == card // 13 and abs(c % 13 - card % 13) <= 2))
    )


def _out_plan(hand: frozenset[int], ace_high_low: bool, spare: bool = True) -> list[tuple[int, ...]] | None:
    """Melds that use every card of ``hand`` but at most one (``spare``: the discard), or None."""
    if not hand or (spare and len(hand) == 1):
        return []
    low = min(hand)
    for meld in melds_in(hand, ace_high_low):
        if low in meld:
            rest = _out_plan(hand - set(meld), ace_high_low, spare)
            if rest is not None:
                return [meld, *rest]
    return _out_plan(hand - {low}, ace_high_low, False) if spare else None


def choose(model: RummyModel, legal: set[Move], rnd: random.Random, meld_bias: float, take_bias: float) -> Move:
    """The move to play: a draw (from the discard pile with ``take_bias``, more often when its top card fits the
    hand), then melds and lay-offs with ``meld_bias`` each time, then a discard (mostly of a card that fits least)."""
    moves = sorted(legal, key=repr)
    hand = model.hands[model.to_act]
    if model.phase == "draw":
        if DrawDiscard() in legal:
            fits = _friends(model.discard[-1], hand) >= 2
            if rnd.random() < (take_bias * 1.3 if fits else take_bias / 2):
                return DrawDiscard()
        return DrawStock() if DrawStock() in legal else moves[0]
    table = [m for m in moves if not isinstance(m, Discard)]
    if meld_bias < 0:  # hold every card until the whole hand can go out in this turn: going rummy
        plan = _out_plan(frozenset(hand), model.rules.ace_high_low)
        first = MeldMove(mask(plan[0])) if plan else None
        if first in legal:
            return first
        table = []
    if table and rnd.random() < meld_bias:
        return rnd.choice(table)
    discards = [m for m in moves if isinstance(m, Discard)]
    if not discards:
        return rnd.choice(table)
    if rnd.random() < 0.8:
        return min(discards, key=lambda m: (_friends(m.card, hand), rnd.random()))
    return rnd.choice(discards)


def play_match(match: Match) -> None:
    """Play one match on the engine and on the model, comparing them at every step."""
    rules, seed, presets, play_seed, meld_bias, take_bias = match
    rnd = random.Random(play_seed)  # the play's choices: not the referee's randomness, which comes from the seed
    s = new_game(rules, seed, presets=presets)
    shuffled_stock: list[tuple[int, ...]] = []
    model = RummyModel(
        rules, presets,
        deck=lambda hand_no: shuffled(list(range(52)), seed, f"deal:{hand_no}"),
        shuffle=lambda cards: shuffled_stock[-1],
    )  # fmt: skip
    check_same(model, s)
    for _ in range(MAX_STEPS):
        if model.phase == "match_over":
            assert not legal_moves(s)
            for seat in range(rules.players):
                check_probe(model, s, seat, DrawStock())
            break
        check_view(model, s, rnd.choice([*range(rules.players), SPECTATOR]))
        if model.phase == "draw":
            # a draw takes one card from the piles and the discard gives one back; melds come from hands: so a
            # turn begins with 52 - n*k cards in the piles, and RULES.md 3's "stock empty and one discard" end
            # cannot come in play (16 cards at the least, with six seats)
            assert len(model.stock) + len(model.discard) == 52 - rules.players * model.hand_size()
        legal = model.legal()
        engine_legal = set(legal_moves(s))
        assert engine_legal == legal, (
            f"legal moves differ: engine only {engine_legal - legal}, model only {legal - engine_legal}"
        )
        for seat, move in probes(model, rnd, legal):
            check_probe(model, s, seat, move)
        move = choose(model, legal, rnd, meld_bias, take_bias)
        seat, turns = model.to_act, model.turns
        s, events = apply(s, seat, move)
        shuffled_stock.append(tuple(s.stock))
        out = model.apply(seat, move)
        check_outcome(model, out, events, s)
        check_same(model, s)
        if out.restocked:
            event(f"restocked ({rules.restock})")
        if out.hand_end is not None:
            event(f"hand ended: {out.hand_end.reason}" + (" rummy" if out.hand_end.going_rummy else ""))
            if out.hand_end.reason == "went_out" and isinstance(move, Discard) and turns + 1 == rules.max_turns:
                event("went out on the capping discard")
        if out.match_over:
            event("match over by max_hands" if max(model.scores) < rules.target_score else "match over by target")
    assert (str(s.phase) == "match_over") is (model.phase == "match_over")


#: deterministic (derandomized, no example database): the same matches on every run
SETTINGS = settings(deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip


@settings(SETTINGS, max_examples=70)
@given(match=matches())
def test_engine_agrees_with_the_model_in_random_matches(match: Match) -> None:
    """RULES.md sections 1, 3 and 4 for Rummy: engine and model agree at every step of a random match."""
    play_match(match)


@settings(SETTINGS, max_examples=15)
@given(match=matches(meld_biases=(-1.0,), ready_only=True))
def test_engine_agrees_with_the_model_when_players_hold_for_going_rummy(match: Match) -> None:
    """Section 3 going rummy: the first player is dealt a hand that melds out at once (sometimes with the stock's
    top card as well: then, with ``must_discard_to_go_out``, the meld that would empty the hand is refused; with
    ``max_melds_per_turn`` 1 the second meld is), and players keep every card until they can go out in one turn, so
    that going rummy and its multiplier come up often; engine and model agree at every step."""
    play_match(match)


def test_profiles_are_the_table_of_section_3() -> None:
    """Section 3's profile table and shared options (section 1: ``max_turns`` 1000), and "Rummy: 2 to 6" seats."""
    for name, values in PROFILE_TABLE.items():
        r = rules_from_profile(name) if name == "rummy-g4a" else rules_from_profile(name, players=2)
        assert {k: getattr(r, k) for k in values} == values
        assert {k: getattr(r, k) for k in SHARED_OPTIONS} == SHARED_OPTIONS
        for players in range(2, 7):
            assert rules_from_profile(name, players=players).players == players
        for players in (1, 7):
            with pytest.raises(RuleError):
                rules_from_profile(name, players=players)
