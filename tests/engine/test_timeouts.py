"""engine.timeouts: the move the referee plays for a seat whose decision is due, in every phase (pure)."""

from __future__ import annotations

import random

import pytest

import engine as E
from engine.timeouts import AUTO_MOVE, FORFEIT_MATCH, auto_move, continues, timeout_move
from tests.engine.helpers import SEED


def _walk(profile: str, players: int = 2, moves: int = 400) -> list[E.GameState]:
    """States of a random (reproducible) game: every phase it reaches."""
    s = E.new_game(E.rules_from_profile(profile, players), SEED)
    rnd = random.Random(profile)
    states = []
    for _ in range(moves):
        if s.phase == "match_over":
            break
        states.append(s)
        s, _ = E.apply(s, s.to_act, rnd.choice(E.legal_moves(s)))
    return states


@pytest.mark.parametrize(("profile", "players"), [("gin", 2), ("gin-standard", 2), ("oklahoma-gin", 2),
                                                  ("hollywood-gin", 2), ("rummy", 3), ("rummy-g4a", 4)])  # fmt: skip
def test_the_automatic_move_is_legal_and_fixed_in_every_phase(profile: str, players: int) -> None:
    seen = set()
    for s in _walk(profile, players):
        move = auto_move(s)
        assert move in E.legal_moves(s), (s.phase, move)
        seen.add(s.phase)
        if s.phase in ("take_or_pass", "last_card"):
            assert move == E.Pass()
        elif s.phase == "draw":
            assert move == E.DrawStock()
        elif s.phase == "layoff":
            assert move == E.Declare()  # declare best
        elif s.phase in ("discard", "play") and isinstance(move, E.Discard):
            discards = [m.card for m in E.legal_moves(s) if isinstance(m, E.Discard)]
            ace = s.rules.ace_value
            best = max((E.mask_value(1 << c, ace), c) for c in discards)
            assert (E.mask_value(1 << move.card, ace), move.card) == best
    assert {"draw"} <= seen


def test_after_a_draw_the_card_drawn_is_discarded_and_the_draw_continues() -> None:
    s = next(s for s in _walk("gin") if s.phase == "draw")
    after, events = E.apply(s, s.to_act, auto_move(s))
    assert continues(s, after, E.DrawStock())
    drawn = E.parse_card(next(e for e in events if e.kind == "drew").secret["card"])  # type: ignore[index]
    assert auto_move(after, drawn) == E.Discard(drawn)
    done, _ = E.apply(after, after.to_act, auto_move(after, drawn))
    assert not continues(after, done, E.Discard(drawn))


def test_forfeit_after_max_auto_moves_in_a_row() -> None:
    s = _walk("rummy")[0]
    assert timeout_move(s, FORFEIT_MATCH, 0, 3) == E.LoseOnTime()
    assert timeout_move(s, AUTO_MOVE, 2, 3) == auto_move(s)
    assert timeout_move(s, AUTO_MOVE, 3, 3) == E.LoseOnTime()
    new, events = E.apply(s, s.to_act, E.LoseOnTime())
    assert [e.kind for e in events] == ["hand_ended", "match_ended"]
    assert new.result is not None and new.result["ended"] == "time" and new.result["lost_on_time"] == s.to_act
    assert new.result["seat_ends"][s.to_act] == "lost_on_time" and s.to_act not in new.result["winners"]
    assert events[0].public["reason"] == "time"
    assert E.LoseOnTime() not in E.legal_moves(s)
    assert E.move_from_dict(E.move_to_dict(E.LoseOnTime())) == E.LoseOnTime()  # the log replays it
