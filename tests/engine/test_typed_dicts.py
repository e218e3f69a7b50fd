"""The TypedDicts that type views and events across the service -> transport boundary (``engine.views.ViewDict``,
``engine.events.EventDict``, ``wire.views.GameViewDict``) name every key the dicts really have: mypy checks the
keys code reads against them, so a key the engine adds must be declared there too."""

from __future__ import annotations

import random

import pytest

import engine
from engine.events import EventDict
from engine.views import ViewDict

_PLAYERS = {"gin": 2, "gin-standard": 2, "oklahoma-gin": 2, "hollywood-gin": 2, "rummy": 4, "rummy-g4a": 3}


def test_every_field_of_every_event_kind_is_declared() -> None:
    declared = set(EventDict.__annotations__)
    for fields in (*engine.PUBLIC_FIELDS.values(), *engine.SECRET_FIELDS.values()):
        assert fields <= declared


@pytest.mark.parametrize("profile", sorted(_PLAYERS))
def test_views_and_events_have_only_declared_keys(profile: str) -> None:
    view_keys, event_keys = set(ViewDict.__annotations__), set(EventDict.__annotations__)
    rules = engine.rules_from_profile(profile, players=_PLAYERS[profile], max_hands=2, max_turns=60)
    rng = random.Random(len(profile))
    state, events = engine.new_game_with_events(rules, profile.encode().ljust(16, b"."))
    viewers = [*range(rules.players), engine.SPECTATOR, engine.REFEREE]
    for _ in range(400):
        for viewer in viewers:
            assert set(engine.view(state, viewer)) <= view_keys
            for e in events:
                assert set(engine.event_for(e, viewer)) <= event_keys
        if state.phase == "match_over":
            break
        state, events = engine.apply(state, state.to_act, rng.choice(engine.legal_moves(state)))
