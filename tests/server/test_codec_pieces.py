"""server.codec's cached pieces of a move's answer (the seats, legal moves and last hand of a view in wire format)
encode exactly what the plain wire codec does, on many random games."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
import wire
from engine.options import rules_from_profile
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec, memo
from server.memo import freeze
from server.model import MoveOutcome
from wire import events as wire_events

PROFILES = ("gin", "oklahoma-gin", "hollywood-gin", "rummy")


def _plain(outcome: MoveOutcome) -> bytes:
    assert outcome.view is not None
    response = rpb.SubmitMoveResponse(version=outcome.version)
    for e in outcome.events:
        wire_events.fill_event(response.events.add(), e)  # no cache at all
    wire.fill_view(response.view, outcome.view)
    return response.SerializeToString(deterministic=True)  # a Struct's map order is upb's: compared sorted


def _outcomes(profile: str, seed: int, moves: int) -> list[MoveOutcome]:
    rng = random.Random(seed)
    state, _ = engine.new_game_with_events(rules_from_profile(profile), rng.randbytes(32))
    seats = freeze([{"name": f"P{i}", "kind": "human", "open": False} for i in range(state.rules.players)])
    made = []
    for version in range(1, moves + 1):
        if state.phase == "match_over":
            break
        seat = state.to_act
        legal = engine.legal_moves(state)
        state, events = engine.apply(state, seat, rng.choice(legal))
        told: list[Any] = [engine.event_for(e, seat) for e in events]
        for i, e in enumerate(told, 1):
            e["version"], e["index"] = version, i
        view: Any = engine.view(state, seat)
        view["game_id"], view["version"], view["role"], view["seats"] = "g_x", version, "seat", seats
        if state.to_act == seat and state.phase != "match_over":
            view["legal_moves"] = engine.legal_moves(state)
        made.append(MoveOutcome(version, told, view))
    return made


@pytest.mark.parametrize("profile", PROFILES)
def test_a_move_answer_with_cached_pieces_equals_the_plain_encoding(profile: str) -> None:
    for seed in range(6):
        outcomes = _outcomes(profile, seed, 400)
        for _ in range(2):  # the second time from the caches
            for outcome in outcomes:
                fast = codec.move_response_to_proto(outcome).SerializeToString(deterministic=True)
                assert fast == _plain(outcome), (profile, seed, outcome.version)


def test_seats_of_another_tuple_are_not_taken_for_cached_ones() -> None:
    outcome = _outcomes("gin", 1, 3)[-1]
    assert outcome.view is not None
    renamed: Any = {**outcome.view, "seats": freeze([{"name": "Z", "kind": "bot", "open": True}] * 2)}
    view = pb.GameView()
    codec._fill_view(view, outcome.view)
    codec._fill_view(view := pb.GameView(), renamed)
    assert [s.display_name for s in view.seats] == ["Z", "Z"] and all(s.open for s in view.seats)


def test_the_pieces_tables_stay_within_their_bounds() -> None:
    try:
        memo.configure(64, 0.05)
        for seed in range(3):
            for outcome in _outcomes("gin", seed, 300):
                codec.move_response_to_proto(outcome)
        for table in memo.tables():
            assert len(table) <= table.max_entries and table.nbytes <= table.max_bytes, table.name
        assert {"view_seats", "last_hand_bytes"} <= {t.name for t in memo.tables()}
    finally:
        memo.configure()
