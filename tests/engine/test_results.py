"""Typed events and results: every event's kind is an ``EventKind`` with the fields ``engine.events`` names, and
every hand and match result, of random matches of every profile (played to their end, resigned, lost on time),
reads into ``HandResult`` / ``MatchResult`` and back to the very same dict."""

from __future__ import annotations

import json
import random

import pytest

import engine as E

CONFIGS = [("gin", None), ("gin-standard", None), ("oklahoma-gin", None), ("hollywood-gin", None), ("rummy", 2),
           ("rummy", 4), ("rummy-g4a", None)]  # fmt: skip


def _matches(profile: str, players: int | None, count: int) -> list[list[E.Event]]:
    out = []
    for n in range(count):
        rnd = random.Random(f"{profile}:{players}:{n}")
        rules = E.rules_from_profile(profile, players, max_turns=rnd.randint(6, 40), max_hands=rnd.randint(1, 3))
        state, events = E.new_game_with_events(rules, bytes([n]) * 32)
        played = list(events)
        ending = n % 3  # 0: to its end, 1: a resign, 2: a loss on time
        while state.phase != "match_over":
            if ending and rnd.random() < 0.02:
                move: E.Move = E.Resign() if ending == 1 else E.LoseOnTime()
                seat = rnd.randrange(rules.players) if ending == 1 else state.to_act
            else:
                move, seat = rnd.choice(E.legal_moves(state)), state.to_act
            state, events = E.apply(state, seat, move)
            played += events
        result = E.match_result_of(state)
        assert result is not None and result.to_dict() == state.result
        hand = E.hand_result_of(state)
        assert hand is not None and hand.to_dict() == state.last_hand
        out.append(played)
    return out


@pytest.mark.parametrize(("profile", "players"), CONFIGS)
def test_results_read_into_records_and_back(profile: str, players: int | None) -> None:
    reasons, ends = set(), set()
    for played in _matches(profile, players, 12):
        for e in played:
            if e.kind == E.EventKind.HAND_ENDED:
                record = E.HandResult.from_dict(e.public)
                again = record.to_dict()
                assert again == e.public and list(again) == list(e.public)  # the same keys in the same order
                assert json.dumps(again) == json.dumps(e.public)
                assert (record.hollywood is not None) == (profile == "hollywood-gin")
                reasons.add(record.reason)
            elif e.kind == E.EventKind.MATCH_ENDED:
                result = E.MatchResult.from_dict(e.public)
                assert json.dumps(result.to_dict()) == json.dumps(e.public)
                ends.add(result.ended)
    assert {"completed", "resigned", "time"} <= ends, ends
    assert {"resigned", "time"} < reasons, reasons


@pytest.mark.parametrize(("profile", "players"), CONFIGS)
def test_event_kinds_and_fields_are_the_declared_ones(profile: str, players: int | None) -> None:
    for played in _matches(profile, players, 4):
        for e in played:
            assert type(e.kind) is E.EventKind
            assert set(e.public) <= E.PUBLIC_FIELDS[e.kind], e
            assert set(e.secret or ()) <= E.SECRET_FIELDS.get(e.kind, frozenset()), e


def test_event_kind_values_are_the_stored_strings() -> None:
    assert str(E.EventKind.DREW) == "drew" and json.dumps(E.EventKind.MATCH_ENDED) == '"match_ended"'
    assert {k.value for k in E.EventKind} >= {"hand_started", "clock_started", "game_abandoned", "auto_moved"}
    assert len(E.EventKind) == 20
