"""The hot path's written-out code: ``GameState.copy`` copies every slot, ``progress_to_dict`` stores every field
in the stored format (format 1, unchanged), and both agree with plain generic versions on random states."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import engine as E
from engine.state import GameState

#: the stored progress's keys, in their stored order (format 1)
FORMAT_1_KEYS = (
    "v", "hand_no", "dealer", "phase", "to_act", "taken", "turns", "passes", "must_knock", "upcard", "knock_limit",
    "knocker", "knock_deadwood", "played", "melds_this_turn", "active_since_restock", "restocks", "next_meld_id",
    "hands_played", "last_hand", "result", "hands", "stock", "discard", "known", "scores", "boxes", "games_ended",
    "games", "game_boxes", "melds",
)  # fmt: skip
_CONFIG = ("rules", "seed", "presets")


def _plain_copy(s: GameState) -> GameState:
    new = GameState.__new__(GameState)
    for name in GameState.__slots__:
        setattr(new, name, getattr(s, name))
    return new


def _plain_progress(s: GameState) -> dict[str, Any]:
    """progress_to_dict by its definition: every field but the configuration's, as stored."""
    d: dict[str, Any] = {"v": E.serialize.FORMAT_VERSION}
    for name in FORMAT_1_KEYS[1:]:
        if name == "melds_this_turn":
            d[name] = s.melds_this_turn + (0x80 if s.played_this_turn else 0)
        elif name == "melds":
            d[name] = [(m.id, m.owner, m.kind, m.cards, m.layoffs) for m in s.melds]
        else:
            d[name] = getattr(s, name)
    return d


def _random_state(profile: tuple[str, int | None], seed: int, moves: int) -> GameState:
    rules = E.rules_from_profile(profile[0], players=profile[1])
    s = E.new_game(rules, seed.to_bytes(16, "big"))
    rng = random.Random(seed)
    for _ in range(moves):
        legal = E.legal_moves(s)
        if not legal:
            break
        s, _ = E.apply(s, s.to_act, rng.choice(legal))
    return s


_states = st.builds(
    _random_state,
    st.sampled_from([("gin", None), ("gin-standard", None), ("oklahoma-gin", None), ("hollywood-gin", None),
                     ("rummy", 2), ("rummy", 4), ("rummy-g4a", None)]),
    st.integers(0, 2**32),
    st.integers(0, 400),
)


def test_copy_copies_every_slot() -> None:
    s = GameState.__new__(GameState)
    for name in GameState.__slots__:
        setattr(s, name, object())  # a distinct value in every slot
    c = s.copy()
    missed = [n for n in GameState.__slots__ if getattr(c, n, None) is not getattr(s, n)]
    assert not missed, missed


def test_progress_holds_every_field_but_the_configuration() -> None:
    assert set(FORMAT_1_KEYS) - {"v"} | {"played_this_turn"} == set(GameState.__slots__) - set(_CONFIG)


@settings(max_examples=60, deadline=None)
@given(_states)
def test_copy_and_progress_agree_with_plain_versions(s: GameState) -> None:
    c = s.copy()
    assert c is not s and c == s == _plain_copy(s)
    assert all(getattr(c, n) is getattr(s, n) for n in GameState.__slots__)
    progress = E.progress_to_dict(s)
    assert tuple(progress) == FORMAT_1_KEYS
    assert json.dumps(progress) == json.dumps(_plain_progress(s))
    assert E.state_from_parts(E.config_from_dict(E.config_to_dict(s)), json.loads(json.dumps(progress))) == s


def test_a_rummy_turn_that_melded_is_stored_as_before_and_read_back() -> None:
    # Format 1 packs both facts into melds_this_turn: the count, and 0x80 once the seat melded or laid off.
    s = E.new_game(E.rules_from_profile("rummy"), bytes(16))
    s.melds_this_turn, s.played_this_turn = 2, True
    stored = json.loads(E.state_to_json(s))
    assert stored["melds_this_turn"] == 0x82
    back = E.state_from_dict(stored)
    assert (back.melds_this_turn, back.played_this_turn) == (2, True)
    stored["melds_this_turn"] = 0  # a turn with no meld yet
    back = E.state_from_dict(stored)
    assert (back.melds_this_turn, back.played_this_turn) == (0, False)


def test_a_loaded_phase_and_game_are_the_enums() -> None:
    s = E.state_from_json(E.state_to_json(E.new_game(E.rules_from_profile("rummy"), bytes(16))))
    assert type(s.phase) is E.Phase and s.phase is E.Phase.DRAW and json.dumps(s.phase) == '"draw"'
    assert type(s.rules.game) is E.GameKind and json.dumps(s.rules.game) == '"rummy"'
    assert E.Rules.from_dict({"game": "rummy", "players": 3}).game is E.GameKind.RUMMY
