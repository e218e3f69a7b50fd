"""Hypothesis: random legal games of every profile and player count, with invariants checked after every step.

- the 52 cards are conserved (every card in exactly one place);
- only the seat to act can move; every rejected move changes nothing (byte-for-byte state JSON);
- no view or event shows a viewer a card it may not see (RULES.md section 4);
- the state survives a serialization round trip;
- every game ends (turn cap, max_hands).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import engine as E
from engine.cards import card_text, cards_of

CARD_RE = re.compile(r'"([A2-9TJQK][SHDC])"')

GAME_CONFIGS: list[tuple[str, int | None]] = [
    ("gin", None), ("gin-standard", None), ("oklahoma-gin", None), ("hollywood-gin", None),
    ("rummy", 2), ("rummy", 3), ("rummy", 4), ("rummy", 5), ("rummy", 6), ("rummy-g4a", None),
]


@st.composite
def rules_strategy(draw: st.DrawFn) -> E.Rules:
    """Any profile and player count, with a few table options varied on top."""
    profile, players = draw(st.sampled_from(GAME_CONFIGS))
    overrides: dict[str, Any] = {
        "max_turns": draw(st.integers(5, 80)),
        "max_hands": draw(st.integers(1, 3)),
        "discard_taken_card_allowed": draw(st.booleans()),
    }
    if profile.startswith("rummy"):
        overrides["must_discard_to_go_out"] = draw(st.booleans())
        overrides["ace_high_low"] = draw(st.booleans())
        overrides["restock"] = draw(st.sampled_from(["shuffle", "turn_over"]))
        overrides["layoff_requires_own_meld"] = draw(st.booleans())
        overrides["max_melds_per_turn"] = draw(st.integers(0, 2))
    else:
        overrides["first_upcard_rule"] = draw(st.sampled_from(["none", "take_or_pass"]))
        overrides["stock_end_rule"] = draw(st.sampled_from(["draw", "fiftieth_card"]))
        overrides["undercut_on_tie"] = draw(st.booleans())
        overrides["defender_deadwood"] = draw(st.sampled_from(["best", "declared"]))
        if profile != "oklahoma-gin":  # Oklahoma's upcard sets the limit
            overrides["knock_limit"] = draw(st.integers(0, 25))
    return E.rules_from_profile(profile, players, **overrides)


def hidden_from(state: E.GameState, viewer: int) -> set[str]:
    """Card texts ``viewer`` may not see now: other seats' unknown cards and the whole stock."""
    hidden: set[int] = set(state.stock)
    for seat, hand in enumerate(state.hands):
        if seat != viewer:
            hidden.update(cards_of(hand & ~state.known[seat]))
    return {card_text(c) for c in hidden}


def visible_cards(view: dict[str, Any]) -> set[str]:
    """Cards mentioned in a view, leaving out the finished hand's reveal and the match result."""
    current = {k: v for k, v in view.items() if k not in ("last_hand", "result")}
    return set(CARD_RE.findall(json.dumps(current)))


def check_views(state: E.GameState) -> None:
    """Every seat and a spectator see nothing they may not see."""
    for viewer in [*range(state.rules.players), E.SPECTATOR]:
        leak = visible_cards(E.view(state, viewer)) & hidden_from(state, viewer)
        assert not leak, f"viewer {viewer} sees {leak}"
    ref = E.view(state, E.REFEREE)
    assert len(visible_cards(ref)) == 52 or state.phase == "match_over"


def check_events(events: tuple[E.Event, ...], players: int) -> None:
    """A secret part of an event reaches only its seat (and the referee)."""
    for ev in events:
        if ev.secret is None:
            continue
        secret_cards = set(CARD_RE.findall(json.dumps(ev.secret)))
        public_cards = set(CARD_RE.findall(json.dumps(ev.public)))
        for viewer in [*range(players), E.SPECTATOR]:
            seen = set(CARD_RE.findall(json.dumps(E.event_for(ev, viewer))))
            if viewer != ev.secret_for:
                assert not (seen & (secret_cards - public_cards)), (ev.kind, viewer)


class RandomGame(RuleBasedStateMachine):
    """Plays a random legal game; between moves, tries illegal and out-of-turn moves that must change nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.state: E.GameState | None = None

    @initialize(rules=rules_strategy(), seed=st.binary(min_size=16, max_size=16))
    def start(self, rules: E.Rules, seed: bytes) -> None:
        self.state = E.new_game(rules, seed)

    def _s(self) -> E.GameState:
        assert self.state is not None
        return self.state

    @rule(data=st.data())
    def play_legal_move(self, data: st.DataObject) -> None:
        s = self._s()
        moves = E.legal_moves(s)
        if s.phase == "match_over":
            assert moves == []
            return
        assert moves, f"no legal move in phase {s.phase}"
        move = data.draw(st.sampled_from(moves))
        before = E.state_to_json(s)
        new, events = E.apply(s, s.to_act, move)
        assert E.state_to_json(s) == before, "apply modified its input"
        E.check_cards(new)
        check_events(events, s.rules.players)
        self.state = new

    @rule(data=st.data())
    def other_seat_cannot_move(self, data: st.DataObject) -> None:
        s = self._s()
        moves = E.legal_moves(s)
        if not moves:
            return
        seat = data.draw(st.sampled_from([i for i in range(s.rules.players) if i != s.to_act]))
        before = E.state_to_json(s)
        try:
            E.apply(s, seat, data.draw(st.sampled_from(moves)))
        except E.IllegalMoveError as exc:
            assert exc.code == "NOT_YOUR_TURN"
        else:
            raise AssertionError("a seat moved out of turn")
        assert E.state_to_json(s) == before

    @rule(data=st.data())
    def rejected_moves_change_nothing(self, data: st.DataObject) -> None:
        s = self._s()
        card = data.draw(st.integers(0, 51))
        cards = data.draw(st.frozensets(st.integers(0, 51), min_size=1, max_size=5))
        mask = E.mask_of(cards)
        move = data.draw(st.sampled_from([
            E.DrawStock(), E.DrawDiscard(), E.Pass(), E.Discard(card), E.Knock(card), E.Knock(card, (mask,)),
            E.BigGin(), E.MeldMove(mask), E.LayOff(card, data.draw(st.integers(-1, 12))), E.Declare(), E.Done(),
        ]))
        before = E.state_to_json(s)
        legal = E.legal_moves(s)
        try:
            new, events = E.apply(s, max(s.to_act, 0), move)
        except E.RuleError:
            assert E.state_to_json(s) == before
            assert move not in legal or s.phase == "match_over", f"listed move refused: {move}"
            return
        E.check_cards(new)
        check_events(events, s.rules.players)
        self.state = new

    @invariant()
    def cards_conserved_and_views_clean(self) -> None:
        if self.state is None:
            return
        E.check_cards(self.state)
        check_views(self.state)

    @invariant()
    def serialization_round_trip(self) -> None:
        if self.state is None:
            return
        text = E.state_to_json(self.state)
        again = E.state_from_json(text)
        assert again == self.state
        assert E.state_to_json(again) == text


TestRandomGame = RandomGame.TestCase
TestRandomGame.settings = settings(
    max_examples=60, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rules_strategy(), seed=st.binary(min_size=16, max_size=16), data=st.data())
def test_every_game_ends(rules: E.Rules, seed: bytes, data: st.DataObject) -> None:
    """Termination guard (RULES.md section 1): with the turn cap and max_hands, every match ends."""
    s = E.new_game(rules, seed)
    bound = rules.max_hands * (rules.max_turns * 2 * rules.players + 100)
    for _ in range(bound):
        if s.phase == "match_over":
            break
        moves = E.legal_moves(s)
        s, _events = E.apply(s, s.to_act, data.draw(st.sampled_from(moves)))
    assert s.phase == "match_over"
    assert s.hands_played <= rules.max_hands
    assert s.result is not None and s.result["winners"]
