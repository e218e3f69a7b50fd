"""engine.move_of_events: every move of random matches of every profile is read back off the events it made
(as the referee sees them), so that replaying the move read back gives the same game."""

from __future__ import annotations

import random

import pytest

import engine


@pytest.mark.parametrize("profile", sorted(engine.PROFILES))
def test_every_move_of_a_random_match_is_read_back_off_its_events(profile: str) -> None:
    rng = random.Random(f"history-{profile}")
    for game in range(3):
        state = engine.new_game(engine.rules_from_profile(profile), rng.randbytes(32))
        for _ in range(400):
            if state.phase == engine.Phase.MATCH_OVER:
                break
            seat = state.to_act
            move = engine.Resign() if rng.random() < 0.002 else rng.choice(engine.legal_moves(state))
            after, events = engine.apply(state, seat, move)
            seen = [engine.event_for(e, engine.REFEREE) for e in events]
            moved = [e for e in seen if e["kind"] in engine.MOVE_EVENTS]
            read = engine.move_of_events(moved)
            assert read is not None, (profile, game, move, seen)
            again, _ = engine.apply(state, seat, read)  # a shortcut (knock without melds) reads as its melds
            assert engine.state_to_json(again) == engine.state_to_json(after), (move, read)
            state = after


def test_events_that_no_move_makes_read_as_none() -> None:
    assert engine.move_of_events([]) is None
    assert engine.move_of_events([{"kind": "hand_started", "seat": -1}]) is None
