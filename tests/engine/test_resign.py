"""Resign: any seat, at any time before the match is over, ends the match; the others win."""

from __future__ import annotations

import random

import pytest

import engine as E
from tests.engine.helpers import SEED


def _played(profile: str, players: int, moves: int, seed: bytes = SEED) -> E.GameState:
    """A game a few legal moves in (random but reproducible choices)."""
    s = E.new_game(E.rules_from_profile(profile, players), seed)
    rnd = random.Random(profile)
    for _ in range(moves):
        s, _ = E.apply(s, s.to_act, rnd.choice(E.legal_moves(s)))
        assert s.phase != "match_over"
    return s


def test_resign_is_never_a_legal_move() -> None:
    s = _played("gin", 2, 3)
    assert all(not isinstance(m, E.Resign) for m in E.legal_moves(s))


@pytest.mark.parametrize("by_seat_to_act", [True, False])
def test_gin_resign_ends_the_match_and_the_other_seat_wins(by_seat_to_act: bool) -> None:
    s = _played("gin", 2, 5)
    seat = s.to_act if by_seat_to_act else 1 - s.to_act
    new, events = E.apply(s, seat, E.Resign())
    assert [e.kind for e in events] == ["resigned", "hand_ended", "match_ended"]
    assert new.phase == "match_over" and new.to_act == -1
    assert new.result is not None
    assert new.result["winners"] == [1 - seat]
    assert new.result["ended"] == "resigned" and new.result["resigned"] == seat
    assert new.result["seat_ends"][seat] == "resigned" and new.result["seat_ends"][1 - seat] == "finished"
    ended = events[1].public
    assert ended["reason"] == "resigned" and ended["winner"] is None and ended["points"] == 0
    # the end of a hand shows every hand face up, as every hand end does
    assert [set(h) for h in ended["hands"]] == [{E.card_text(c) for c in E.cards_of(h)} for h in s.hands]
    assert new.hands_played == s.hands_played
    assert s.phase != "match_over"  # the state applied to is unchanged


def test_resign_after_the_match_is_over_is_refused() -> None:
    s, _ = E.apply(_played("gin", 2, 2), 0, E.Resign())
    for seat in (0, 1):
        with pytest.raises(E.IllegalMoveError) as exc:
            E.apply(s, seat, E.Resign())
        assert exc.value.code == "GAME_OVER"


def test_hollywood_resign_the_other_player_wins() -> None:
    s = _played("hollywood-gin", 2, 4)
    new, _ = E.apply(s, 0, E.Resign())
    assert new.result is not None and new.result["winners"] == [1]
    assert new.result["seat_ends"] == ["resigned", "finished"]


def test_rummy_three_seats_resign_the_highest_total_among_the_others_wins() -> None:
    s = _played("rummy", 3, 4)
    s = s.copy()
    s.scores = (90, 10, 40)  # the resigning seat leads: it still cannot win
    new, _ = E.apply(s, 0, E.Resign())
    assert new.result is not None
    assert new.result["winners"] == [2] and new.result["totals"] == [90, 10, 40]
    assert new.result["seat_ends"] == ["resigned", "finished", "finished"]
    s.scores = (0, 30, 30)
    tied, _ = E.apply(s, 1, E.Resign())
    assert tied.result is not None and tied.result["winners"] == [2]
    tied, _ = E.apply(s, 0, E.Resign())
    assert tied.result is not None and tied.result["winners"] == [1, 2]  # a tie among the others is shared


def test_a_match_played_to_its_end_says_so_for_every_seat() -> None:
    s = E.new_game(E.rules_from_profile("gin", 2, target_score=1), SEED)
    rnd = random.Random(1)
    while s.phase != "match_over":
        s, _ = E.apply(s, s.to_act, rnd.choice(E.legal_moves(s)))
    assert s.result is not None
    assert s.result["ended"] == "completed" and s.result["seat_ends"] == ["finished", "finished"]


def test_resign_text_and_dict_round_trip() -> None:
    assert E.move_text(E.Resign()) == "resign"
    assert E.parse_move("resign") == E.Resign()
    assert E.move_from_dict(E.move_to_dict(E.Resign())) == E.Resign()
