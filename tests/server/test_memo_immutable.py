"""The memo layer holds only immutable values: what a caller gets from a memo (a game's parsed meta, its public
seats, a legal move's dict) cannot be changed by that caller, so it cannot change what another game (or the next
call) is answered."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import engine
from server import cache, memo, service

META = json.dumps({
    "profile": "gin", "spectator": "", "spectators": True, "organizer_deals": False,
    "seats": [{"name": "Ann", "kind": "human", "auth": "h0"}, {"name": "Bob", "kind": "bot", "auth": ""}],
    "delay": {"moves": 2, "until_hand_end": False},
}).encode()  # fmt: skip


def _mutations(value: Any) -> list[Callable[[], object]]:
    """Every way a caller might change ``value`` in place."""
    return [
        lambda: value.__setitem__("name", "Mallory"),
        lambda: value.update(name="Mallory"),
        lambda: value.pop("name"),
        lambda: value.clear(),
    ]


def _deep_values(value: Any) -> list[Any]:
    """``value`` and every container inside it."""
    found = [value]
    children = value.values() if hasattr(value, "values") else value if isinstance(value, tuple) else ()
    for child in children:
        if hasattr(child, "values") or isinstance(child, tuple):
            found += _deep_values(child)
    return found


def _assert_immutable(value: Any) -> None:
    for part in _deep_values(value):
        assert not isinstance(part, dict | list), f"a mutable {type(part).__name__} in a memoized value"
        for mutate in _mutations(part):
            with pytest.raises((TypeError, AttributeError)):
                mutate()


def test_parsed_meta_is_read_only_all_the_way_down() -> None:
    meta = cache.parsed_meta(META)
    _assert_immutable(meta)
    assert meta["seats"][0]["name"] == "Ann" and meta["delay"]["moves"] == 2
    assert cache.parsed_meta(META) is meta  # the very same value, shared: hence read-only


def test_public_seats_cannot_be_changed_by_a_caller() -> None:
    seats = cache.public_seats(META)
    _assert_immutable(seats)
    with pytest.raises(TypeError):
        seats[0]["name"] = "Mallory"  # type: ignore[index]
    with pytest.raises(AttributeError):
        seats.append({"name": "Eve"})  # type: ignore[attr-defined]
    again = cache.public_seats(META)
    assert [dict(s) for s in again] == [{"name": "Ann", "kind": "human", "open": False},
                                        {"name": "Bob", "kind": "bot", "open": True}]  # fmt: skip
    # a copy is the caller's own: changing it changes nothing shared
    mine = [{**s, "bot": "gin"} for s in again]
    mine[0]["name"] = "Mallory"
    assert cache.public_seats(META)[0]["name"] == "Ann"


def test_a_moves_log_json_is_shared_and_immutable() -> None:
    # (what the service memoizes per distinct move: its log JSON, as bytes; the legal moves of views are the
    # engine's own frozen moves, encoded by the codec)
    state = engine.new_game(engine.rules_from_profile("rummy", players=3), bytes(32))
    melded = engine.Knock(discard=engine.parse_card("5C"), melds=(0b111, 0b111 << 13))
    for move in [*engine.legal_moves(state), melded]:
        text = service._move_json(move)
        assert isinstance(text, bytes)
        assert service._move_json(move) is text  # shared by every commit of this move
        assert json.loads(text) == engine.move_to_dict(move)


def test_freeze_keeps_the_values() -> None:
    parsed = json.loads(META)
    frozen = memo.freeze(parsed)
    assert json.loads(META) == parsed  # the argument itself is left as it was
    assert frozen["seats"][1]["auth"] == "" and frozen["spectators"] is True
    assert {**frozen["delay"]} == {"moves": 2, "until_hand_end": False}
