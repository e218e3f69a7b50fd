"""The referee's in-process helpers: the stored form of a state, and the caches."""

from __future__ import annotations

import json
import random

import pytest

import engine
from server.cache import config_json, progress_json, state_from_stored

PROFILES = [
    ("gin", 2, {}),
    ("gin", 2, {"hollywood": True, "oklahoma": True}),
    ("gin", 2, {"first_upcard_rule": "take_or_pass", "stock_end_rule": "fiftieth_card"}),
    ("rummy", 3, {}),
    ("rummy", 6, {"restock": "turn_over", "ace_high_low": True}),
]


def _random_play(rules: engine.Rules, seed: int, moves: int) -> list[engine.GameState]:
    rng = random.Random(seed)
    state = engine.new_game(rules, rng.randbytes(32))
    states = [state]
    while state.phase != "match_over" and len(states) < moves:
        state, _ = engine.apply(state, state.to_act, rng.choice(engine.legal_moves(state)))
        states.append(state)
    return states


@pytest.mark.parametrize(("profile", "players", "overrides"), PROFILES)
def test_the_stored_state_is_the_engine_json_byte_for_byte(
    profile: str, players: int, overrides: dict[str, object]
) -> None:
    """A game stores its config once (the engine's config with only the options that differ from a fixed base)
    and its progress with every move (the engine's JSON byte for byte: orjson writes it), and the two give back
    the state exactly."""
    rules = engine.rules_from_profile(profile, players=players, **overrides)
    for seed in range(3):
        states = _random_play(rules, seed, 400)
        config = config_json(states[0])
        full = engine.config_to_dict(states[0])
        compact = json.loads(config)
        assert compact["seed"] == full["seed"] and compact["presets"] == full["presets"]
        assert set(compact["rules"]) < set(full["rules"]) and len(config) < 200
        assert all(full["rules"][k] == v for k, v in compact["rules"].items())
        for state in states:
            stored = progress_json(state)
            assert stored == json.dumps(engine.progress_to_dict(state), separators=(",", ":")).encode()
            assert config_json(state) == config
            again = state_from_stored(config, stored)
            assert again == state
            assert engine.state_to_json(again) == engine.state_to_json(state)
