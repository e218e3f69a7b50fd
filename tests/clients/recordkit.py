"""Checks of saved game records (clients.sdk.records) against the engine: the record's moves, played again from its
first deal, make exactly the events the referee recorded."""

from __future__ import annotations

import json
from typing import Any

import engine

#: The referee's events of a time control (docs/rules.md section 10).
CLOCK_EVENTS = ("clock_started", "clock_stopped", "timed_out", "auto_moved")


def _deal(d: dict[str, Any]) -> engine.Deal:
    return engine.Deal(
        d["dealer"], tuple(tuple(engine.parse_card(c) for c in h) for h in d["hands"]), engine.parse_card(d["upcard"]),
        tuple(engine.parse_card(c) for c in d["stock"]),
    )  # fmt: skip


def replay_first_hand(record: dict[str, Any]) -> int:
    """Play the record's moves of its first hand through the engine from its first deal, checking each move's
    events against the record's (asserts); the number of moves checked. A single-hand game is checked whole."""
    rules = engine.Rules.from_dict(record["settings"]["options"])
    first = record["deals"][0]
    assert first["stock"] is not None, "the first deal's stock is in every record"
    state = engine.new_game(rules, b"\0" * 32, (_deal(first),))
    recorded: dict[int, list[dict[str, Any]]] = {}
    for e in record["events"]:
        recorded.setdefault(e["version"], []).append({k: v for k, v in e.items() if k not in ("version", "index")})
    checked = 0
    for m in record["moves"]:
        if m["hand_no"] != first["hand_no"]:
            break
        state, events = engine.apply(state, m["seat"], engine.parse_move(m["move"]))
        made = json.loads(json.dumps([engine.event_for(e, engine.REFEREE) for e in events]))
        # the next hand's deal comes from the game's secret seed, which no record holds; the clock events of a
        # time control are the referee's, not the engine's
        made = [e for e in made if e["kind"] not in ("hand_started", "dealt")]
        want = [e for e in recorded[m["version"]] if e["kind"] not in ("hand_started", "dealt", *CLOCK_EVENTS)]
        assert made == want, (m, made, want)
        checked += 1
    return checked
