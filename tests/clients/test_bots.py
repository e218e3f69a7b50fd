"""Bots: only ever legal moves in every profile and option set, strong against baselines, the View value and the
analysis helpers they stand on. Everything runs through the engine directly (clients.bots.arena), seeded."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import engine as E
from clients.bots import Bot, StrongBot, make_bot
from clients.bots.analysis import (
    CARD_WEIGHT,
    best_melds,
    completers,
    expected_deadwood,
    layable,
    left_cost,
)
from clients.bots.arena import MoveClock, play_match
from clients.bots.gin_bot import GinBot
from clients.bots.memory import HandMemory
from clients.bots.rummy_bot import RummyBot
from clients.view import View, card_mask, card_texts
from engine.melds import all_melds, meldable


def _seed(*parts: object) -> bytes:
    return ":".join(str(p) for p in ("bots", *parts)).encode().ljust(16, b".")


# ----------------------------------------------------------------------------------------------- legality

#: (profile, players, overrides): every profile and the options that change what is legal
CONFIGS: list[tuple[str, int | None, dict[str, Any]]] = [
    ("gin", None, {}),
    ("gin-standard", None, {}),
    ("oklahoma-gin", None, {"target_score": 60}),
    ("hollywood-gin", None, {"target_score": 30}),
    ("gin", None, {"first_upcard_rule": "take_or_pass"}),
    ("gin", None, {"stock_end_rule": "fiftieth_card", "knock_limit": 0}),
    ("gin", None, {"stock_end_rule": "fiftieth_card", "discard_taken_card_allowed": True}),
    ("gin", None, {"undercut_on_tie": False, "big_gin_bonus": 0, "knock_limit": 3}),
    ("oklahoma-gin", None, {"oklahoma_ace": "one", "spades_double": False, "target_score": 60}),
    *[("rummy", n, {}) for n in range(2, 7)],
    ("rummy-g4a", None, {}),
    ("rummy", 3, {"must_discard_to_go_out": True}),
    ("rummy", 4, {"ace_high_low": True, "restock": "turn_over"}),
    ("rummy", 2, {"ace_high_low": True, "must_discard_to_go_out": True, "discard_taken_card_allowed": True}),
    ("rummy", 3, {"max_melds_per_turn": 1, "layoff_requires_own_meld": True}),
    ("rummy-g4a", 5, {"going_rummy_multiplier": 3, "max_turns": 60}),
]


def _is_legal(move: E.Move, legal: Sequence[E.Move]) -> bool:
    """``move`` is one of ``legal``, or a Knock / BigGin declaring its own melds for a move ``legal`` allows."""
    if move in legal:
        return True
    if isinstance(move, E.Knock):
        return E.Knock(move.discard) in legal
    if isinstance(move, E.BigGin):
        return E.BigGin() in legal
    return False


def _assert_match_over(state: E.GameState, players: int) -> None:
    """The match finished: the phase says so and the result names the winners and every seat's total."""
    assert state.phase == "match_over"
    assert state.result is not None
    assert len(state.result["totals"]) == players and all(isinstance(t, int) for t in state.result["totals"])
    assert state.result["winners"] and set(state.result["winners"]) <= set(range(players)), state.result


def _check_move(state: E.GameState, seat: int, view: View, legal: Sequence[E.Move], move: E.Move) -> None:
    assert view.seat == seat == state.to_act
    assert _is_legal(move, legal), (view.phase, E.move_text(move), [E.move_text(m) for m in legal])


@pytest.mark.parametrize(("profile", "players", "overrides"), CONFIGS, ids=lambda x: str(x))
def test_bots_only_ever_return_legal_moves(profile: str, players: int | None, overrides: dict[str, Any]) -> None:
    """Every bot, in every seat, against every other bot: the moves are legal (engine.apply accepts them, and
    they are in the legal list or declare melds for a knock it allows)."""
    rules = E.rules_from_profile(profile, players, **{"max_hands": 4, **overrides})
    names = ["strong", "random", "gin" if rules.game == "gin" else "rummy"]
    n = rules.players
    lineups = [["strong"] * n, ["random"] * n, *[[names[(i + k) % 3] for k in range(n)] for i in range(3)]]
    for i, lineup in enumerate(lineups):
        bots = [make_bot(name, seed=i * 10 + k) for k, name in enumerate(lineup)]
        state = play_match(rules, bots, _seed(profile, players, i, *overrides.items()), on_move=_check_move)
        assert state.phase == "match_over"
        _assert_match_over(state, n)


def test_bots_work_without_events() -> None:
    """A bot that is never told any event (a client that only polls views) still plays legally."""

    class Deaf:
        def __init__(self, bot: Bot) -> None:
            self.bot = bot
            self.name = bot.name

        def choose(self, view: View, legal: Sequence[E.Move]) -> E.Move:
            return self.bot.choose(view, legal)

        def observe(self, event: Mapping[str, Any]) -> None:
            pass

    for profile, players in (("gin", None), ("rummy", 4)):
        rules = E.rules_from_profile(profile, players, max_hands=3)
        bots = [Deaf(make_bot("strong", k)) for k in range(rules.players)]
        state = play_match(rules, bots, _seed("deaf", profile), on_move=_check_move)
        _assert_match_over(state, rules.players)


# ----------------------------------------------------------------------------------------------- strength


class GreedyGin:
    """A baseline: takes a pile card that melds, discards to minimize deadwood (highest card on ties), knocks as
    soon as it can with its lowest deadwood, defends with the best declaration."""

    name = "greedy-gin"

    def choose(self, view: View, legal: Sequence[E.Move]) -> E.Move:
        hand = view.hand_mask()
        if view.phase == "layoff":
            return E.Declare()
        for m in legal:
            if isinstance(m, E.BigGin):
                return m
        knocks = [m for m in legal if isinstance(m, E.Knock)]
        if knocks:
            return min(knocks, key=lambda m: (E.min_deadwood(hand & ~(1 << m.discard)), m.discard))
        top = view.top_discard()
        if view.phase in ("take_or_pass", "draw", "last_card") and top is not None:
            if E.DrawDiscard() in legal and meldable(hand | 1 << top) >> top & 1:
                return E.DrawDiscard()
            return E.DrawStock() if E.DrawStock() in legal else E.Pass()
        discards = [m for m in legal if isinstance(m, E.Discard)]
        return min(discards, key=lambda m: (E.min_deadwood(hand & ~(1 << m.card)), -E.CARD_VALUE[m.card], m.card))

    def observe(self, event: Mapping[str, Any]) -> None:
        pass


def _gin_match_wins(strong: str, opponent: Any, matches: int, **overrides: Any) -> float:
    rules = E.rules_from_profile("gin", **overrides)
    wins = 0
    for i in range(matches):
        seat = i % 2
        bots: list[Bot] = [opponent(i), opponent(i)]
        bots[seat] = make_bot(strong, seed=i)
        state = play_match(rules, bots, _seed("gin-strength", i))
        assert state.result is not None
        wins += state.result["winners"] == [seat]
    return wins / matches


def test_strong_gin_beats_random() -> None:
    """Strong Gin wins at least 80% of 20 matches to 100 against the random bot, alternating seats."""
    assert _gin_match_wins("gin", lambda i: make_bot("random", i), 20) >= 0.8


def test_strong_gin_beats_a_greedy_deadwood_minimizer() -> None:
    """Against a sensible greedy baseline (a fair coin would win half) over 40 matches to 50 points."""
    assert _gin_match_wins("gin", lambda i: GreedyGin(), 40, target_score=50) >= 0.6


def _rummy_hand_wins(players: int, hands: int, **overrides: Any) -> float:
    rules = E.rules_from_profile("rummy", players, max_hands=1, **overrides)
    wins = 0
    for i in range(hands):
        seat = i % players
        bots = [make_bot("random", i * 10 + k) for k in range(players)]
        bots[seat] = make_bot("rummy", seed=i)
        state = play_match(rules, bots, _seed("rummy-strength", players, i))
        assert state.last_hand is not None
        wins += state.last_hand["winner"] == seat
    return wins / hands


def test_strong_rummy_beats_random() -> None:
    """Strong Rummy wins at least 80% of 3-player hands against two random bots (fair share: a third)."""
    assert _rummy_hand_wins(3, 60) >= 0.8


def test_strong_rummy_beats_random_heads_up_with_options() -> None:
    """Two players, high-and-low aces, last card discarded: still at least 80% of the hands."""
    assert _rummy_hand_wins(2, 30, ace_high_low=True, must_discard_to_go_out=True) >= 0.8


def test_bots_are_cheap() -> None:
    """A decision costs milliseconds at most (the bots are driven through a server for hundreds of hands)."""
    clock = MoveClock()
    play_match(E.rules_from_profile("gin", max_hands=6), [make_bot("gin", 1), make_bot("gin", 2)],
               _seed("cost", "gin"), clock)
    play_match(E.rules_from_profile("rummy", 2, max_hands=3), [make_bot("rummy", 1), make_bot("rummy", 2)],
               _seed("cost", "rummy"), clock)
    assert clock.per_move_ms("gin") < 20
    assert clock.per_move_ms("rummy") < 20


# ----------------------------------------------------------------------------------------------- decisions


def _gin_view(hand: str, pile: str, phase: str = "draw", **over: Any) -> View:
    rules = E.rules_from_profile("gin").to_dict()
    d: dict[str, Any] = {
        "game": "gin", "viewer": 0, "phase": phase, "to_act": 0, "dealer": 1, "hand_no": 0,
        "hand": hand.split(), "hand_sizes": [len(hand.split()), 10], "known_cards": [[], []], "melds": [],
        "discard_pile": pile.split(), "stock_size": 20, "taken_card": None, "upcard": pile.split()[0],
        "knock_limit": 10, "knock": None, "scores": [0, 0], "turns": 10,
    }
    d.update(over)
    return View.from_engine(d, rules)


def test_gin_bot_takes_a_discard_that_makes_a_meld_and_leaves_a_useless_one() -> None:
    hand = "2S 3S 4S 7H 8H 9H QD JD KC 5C"
    assert GinBot().choose(_gin_view(hand, "AD KD"), [E.DrawStock(), E.DrawDiscard()]) == E.DrawDiscard()
    assert GinBot().choose(_gin_view(hand, "AD 9C"), [E.DrawStock(), E.DrawDiscard()]) == E.DrawStock()


def test_gin_bot_goes_gin_and_holds_out_for_gin_late() -> None:
    view = _gin_view("2S 3S 4S 5S 7H 8H 9H QD KD JD 9C", "AD", phase="discard")
    move = GinBot().choose(view, E.legal_moves(_state_with(view)))
    assert isinstance(move, E.Knock) and move.discard == E.parse_card("9C")
    view = _gin_view("2S 3S 4S 7H 8H 9H QD KD JD 5C 9C", "AD", phase="discard")
    move = GinBot().choose(view, E.legal_moves(_state_with(view)))
    assert isinstance(move, E.Knock) and move.discard == E.parse_card("9C")  # 5 deadwood early: knock
    view = _gin_view("2S 3S 4S 7H 8H 9H QD KD JD 5C 9C", "AD", phase="discard", turns=30)
    move = GinBot().choose(view, E.legal_moves(_state_with(view)))
    assert move == E.Discard(E.parse_card("9C"))  # 5 deadwood late in the hand: hold on for gin


def test_gin_bot_defends_with_the_best_declaration() -> None:
    view = _gin_view("2S 3S", "AD", phase="layoff")
    assert GinBot().choose(view, [E.Declare(), E.Done()]) == E.Declare()


def _state_with(view: View) -> E.GameState:
    """A Gin state where seat 0 holds the view's hand (the rest dealt arbitrarily), in the view's phase."""
    state = E.new_game(E.rules_from_profile("gin"), _seed("state"))
    s = state.copy()
    hand = view.hand_mask()
    pile = card_mask(view.discard_pile)
    rest = [c for c in range(52) if not (hand | pile) >> c & 1]
    s.hands = (hand, E.mask_of(rest[:10]))
    s.discard = tuple(E.parse_card(c) for c in view.discard_pile)
    s.stock = tuple(rest[10:])
    s.phase = view.phase
    s.to_act = 0
    s.taken = -1
    E.check_cards(s)
    return s


def test_gin_bot_avoids_feeding_a_card_the_opponent_collects() -> None:
    """Two equally useless ten-point cards: the king that melds with the kings the opponent took from the pile
    stays in hand."""
    view = _gin_view("2S 3S 4S 7H 8H 9H 5D 6D 7D KC QH", "AD", phase="discard",
                     known_cards=[[], ["KS", "KD"]], hand_sizes=[11, 10], turns=4)
    move = GinBot().choose(view, [E.Discard(E.parse_card(c)) for c in view.hand])
    assert move == E.Discard(E.parse_card("QH"))
    view = _gin_view("2S 3S 4S 7H 8H 9H 5D 6D 7D KC QH", "AD", phase="discard",
                     known_cards=[[], ["QS", "QD"]], hand_sizes=[11, 10], turns=4)
    move = GinBot().choose(view, [E.Discard(E.parse_card(c)) for c in view.hand])
    assert move == E.Discard(E.parse_card("KC"))


def test_rummy_bot_goes_out_when_it_can() -> None:
    rules = E.rules_from_profile("rummy", 3).to_dict()
    d: dict[str, Any] = {
        "game": "rummy", "viewer": 0, "phase": "play", "to_act": 0, "dealer": 2, "hand_no": 0,
        "hand": ["2S", "3S", "4S", "9D"], "hand_sizes": [4, 7, 7], "known_cards": [[], [], []],
        "melds": [{"id": 0, "owner": 1, "kind": "set", "cards": ["9S", "9H", "9C"], "layoffs": []}],
        "discard_pile": ["5C"], "stock_size": 10, "taken_card": None, "scores": [0, 0, 0], "turns": 9,
    }
    view = View.from_engine(d, rules)
    meld = E.MeldMove(card_mask(["2S", "3S", "4S"]))
    legal = [E.Discard(E.parse_card(c)) for c in view.hand] + [meld, E.LayOff(E.parse_card("9D"), 0)]
    bot = RummyBot()
    assert bot.choose(view, legal) == meld


# ----------------------------------------------------------------------------------------------- registry


def test_registry_builds_every_bot_by_name() -> None:
    for name in ("random", "gin", "rummy", "strong"):
        bot = make_bot(name, seed=3)
        assert isinstance(bot, Bot)
        assert bot.name == name
    assert isinstance(make_bot("strong"), StrongBot)
    with pytest.raises(ValueError, match="unknown bot"):
        make_bot("nobody")


def test_random_bot_is_reproducible_from_its_seed() -> None:
    legal = [E.Discard(c) for c in range(10)]
    view = _gin_view("AS", "2S", phase="discard")
    runs = []
    for _ in range(2):
        bot = make_bot("random", seed=7)
        runs.append([bot.choose(view, legal) for _ in range(20)])
    assert runs[0] == runs[1] and len(set(runs[0])) > 1


# ----------------------------------------------------------------------------------------------- view


@pytest.mark.parametrize(("profile", "players"), [("gin", None), ("hollywood-gin", None), ("rummy", 4)])
def test_view_from_engine_round_trip(profile: str, players: int | None) -> None:
    """Every field comes from the engine's view; to_dict reads back to the same View."""
    rules = E.rules_from_profile(profile, players)
    state = E.new_game(rules, _seed("view", profile))
    rng = random.Random(1)
    for _ in range(120):
        if state.phase == "match_over":
            break
        for seat in range(rules.players):
            v = View.from_engine(E.view(state, seat), rules.to_dict())
            assert v.seat == seat and v.players == rules.players and v.game == rules.game
            assert v.hand_mask() == state.hands[seat]
            assert [E.parse_card(c) for c in v.discard_pile] == list(state.discard)
            assert v.stock_size == len(state.stock)
            assert v.table_mask() == sum(m.cards for m in state.melds)
            assert all(v.known_mask(i) == state.known[i] for i in range(rules.players))
            assert v.taken() == (None if state.taken < 0 else state.taken)
            assert dict(v.rules) == rules.to_dict()
            seen = v.hand_mask() | v.pile_mask() | v.table_mask()
            assert v.unseen_mask() & seen == 0
            assert View.from_engine(v.to_dict(), rules.to_dict()) == v
        legal = E.legal_moves(state)
        state, _ = E.apply(state, state.to_act, legal[rng.randrange(len(legal))])


def test_card_helpers() -> None:
    assert card_mask(["AS", "10D", "KC"]) == (1 << 0) | (1 << E.parse_card("TD")) | (1 << 51)
    assert card_texts(card_mask(["KC", "AS"])) == ("AS", "KC")


# ----------------------------------------------------------------------------------------------- memory


def test_memory_records_discards_refusals_and_pickups() -> None:
    mem = HandMemory(2)
    events: list[dict[str, Any]] = [
        {"kind": "hand_started", "seat": 0, "hand_no": 0, "upcard": "7H", "hand_sizes": [10, 10]},
        {"kind": "passed", "seat": 1, "card": "7H"},
        {"kind": "drew", "seat": 0, "source": "stock", "stock_size": 30},
        {"kind": "discarded", "seat": 0, "card": "KS"},
        {"kind": "drew", "seat": 1, "source": "discard", "card": "KS"},
        {"kind": "discarded", "seat": 1, "card": "2C"},
    ]
    for ev in events:
        mem.observe(ev)
    assert mem.declined[1] == card_mask(["7H"])
    assert mem.declined[0] == card_mask(["7H"])  # seat 0 drew from the stock with 7H on the pile
    assert mem.taken[1] == card_mask(["KS"])
    assert mem.refused(1) == card_mask(["7H", "2C"])
    assert mem.pile == [E.parse_card("7H"), E.parse_card("2C")]


# ----------------------------------------------------------------------------------------------- analysis


def _random_hands(n: int, size: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        # clustered hands, so that melds are common
        suit_pick = rng.sample(range(4), 2)
        pool = [s * 13 + r for s in suit_pick for r in range(13)] + rng.sample(range(52), 12)
        out.append(E.mask_of(rng.sample(sorted(set(pool)), size)))
    return out


@pytest.mark.parametrize("ace_high", [False, True])
def test_completers_are_exactly_the_cards_that_meld(ace_high: bool) -> None:
    for hand in _random_hands(300, 7, 1):
        expected = 0
        for x in range(52):
            if not hand >> x & 1 and meldable(hand | 1 << x, ace_high) >> x & 1:
                expected |= 1 << x
        assert completers(hand, ace_high) == expected, card_texts(hand)


def _brute_left_cost(hand: int, ace_high: bool, ace_value: int, free: int) -> int:
    melds = [m for m in all_melds(ace_high) if m & hand == m]
    best = None
    for k in range(4):
        for combo in itertools.combinations(melds, k):
            covered = 0
            ok = True
            for m in combo:
                ok = ok and not covered & m
                covered |= m
            if not ok:
                continue
            left = [c for c in range(52) if (hand & ~covered & ~free) >> c & 1]
            cost = sum(CARD_WEIGHT + (ace_value if c % 13 == 0 else E.CARD_VALUE[c]) for c in left)
            best = cost if best is None else min(best, cost)
    assert best is not None
    return best


@pytest.mark.parametrize(("ace_high", "ace_value"), [(False, 1), (True, 15)])
def test_left_cost_and_best_melds_are_exact(ace_high: bool, ace_value: int) -> None:
    rng = random.Random(2)
    for hand in _random_hands(150, 8, 2):
        free = hand & E.mask_of(rng.sample(range(52), 10))
        cost = left_cost(hand, ace_high, ace_value, free)
        assert cost == _brute_left_cost(hand, ace_high, ace_value, free), card_texts(hand)
        melds = best_melds(hand, ace_high, ace_value, free)
        covered = 0
        for m in melds:
            assert E.meld_kind(m, ace_high) and not covered & m
            covered |= m
        left = hand & ~covered & ~free
        assert sum(CARD_WEIGHT + (ace_value if c % 13 == 0 else E.CARD_VALUE[c]) for c in E.cards_of(left)) == cost


def test_expected_deadwood_is_the_mean_over_every_draw() -> None:
    rng = random.Random(3)
    for hand in _random_hands(40, 10, 3):
        unseen = E.mask_of(rng.sample([c for c in range(52) if not hand >> c & 1], 25))
        draws = [E.min_deadwood11(hand | 1 << x) for x in E.cards_of(unseen)]
        assert expected_deadwood(hand, unseen) == pytest.approx(sum(draws) / len(draws))


def test_layable_follows_chains_on_runs() -> None:
    table = [card_mask(["5H", "6H", "7H"]), card_mask(["QS", "QD", "QC"])]
    hand = card_mask(["8H", "9H", "TH", "QH", "2C", "4H"])
    assert layable(hand, table) == card_mask(["8H", "9H", "TH", "QH", "4H"])
