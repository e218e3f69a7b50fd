"""Compact, versioned JSON of the full state (for storage), with an exact round trip."""

from __future__ import annotations

import functools
import json
from typing import Any

from engine.deal import Deal
from engine.errors import InvalidMoveError
from engine.options import Rules
from engine.state import GameState, TableMeld

FORMAT_VERSION = 1

_PLAIN = (
    "hand_no", "dealer", "phase", "to_act", "taken", "turns", "passes", "must_knock", "upcard", "knock_limit",
    "knocker", "knock_deadwood", "played", "melds_this_turn", "active_since_restock", "restocks", "next_meld_id",
    "hands_played", "last_hand", "result",
)
_TUPLES = ("hands", "stock", "discard", "known", "scores", "boxes", "games_ended")

# Every state of a game shares its Rules object, and a game's rules never change: convert them once, not on every
# (de)serialization of a state (that was a third of the cost of state_to_dict).
_RULES_DICTS: dict[int, tuple[Rules, dict[str, Any]]] = {}
_RULES_CACHE_SIZE = 1024


def _rules_to_dict(rules: Rules) -> dict[str, Any]:
    hit = _RULES_DICTS.get(id(rules))
    if hit is None or hit[0] is not rules:  # keyed by id, so the entry keeps its Rules alive: no id reuse
        if len(_RULES_DICTS) >= _RULES_CACHE_SIZE:
            _RULES_DICTS.clear()
        hit = _RULES_DICTS[id(rules)] = (rules, rules.to_dict())
    return dict(hit[1])  # a copy: the caller owns what state_to_dict returns


@functools.lru_cache(maxsize=_RULES_CACHE_SIZE)
def _rules_from_items(items: tuple[tuple[str, Any], ...]) -> Rules:
    return Rules.from_dict(dict(items))  # Rules is immutable: states loaded with the same options share one


def state_to_dict(s: GameState) -> dict[str, Any]:
    """The full state as plain JSON-able data (contains every secret: storage only)."""
    d: dict[str, Any] = {"v": FORMAT_VERSION, "rules": _rules_to_dict(s.rules), "seed": s.seed.hex()}
    d["presets"] = [[p.dealer, [list(h) for h in p.hands], p.upcard, list(p.stock)] for p in s.presets]
    for name in _PLAIN:
        d[name] = getattr(s, name)
    for name in _TUPLES:
        d[name] = list(getattr(s, name))
    d["games"] = [list(g) for g in s.games]
    d["game_boxes"] = [list(g) for g in s.game_boxes]
    d["melds"] = [[m.id, m.owner, m.kind, m.cards, [list(x) for x in m.layoffs]] for m in s.melds]
    return d


def state_from_dict(d: dict[str, Any]) -> GameState:
    """Inverse of ``state_to_dict``."""
    if d.get("v") != FORMAT_VERSION:
        raise InvalidMoveError("BAD_STATE", f"unsupported state format {d.get('v')!r}")
    s = GameState.__new__(GameState)
    s.rules = _rules_from_items(tuple(d["rules"].items()))
    s.seed = bytes.fromhex(d["seed"])
    s.presets = tuple(
        Deal(p[0], tuple(tuple(h) for h in p[1]), p[2], tuple(p[3])) for p in d["presets"]
    )
    for name in _PLAIN:
        setattr(s, name, d[name])
    for name in _TUPLES:
        setattr(s, name, tuple(d[name]))
    s.games = tuple(tuple(g) for g in d["games"])
    s.game_boxes = tuple(tuple(g) for g in d["game_boxes"])
    s.melds = tuple(
        TableMeld(m[0], m[1], m[2], m[3], tuple((x[0], x[1]) for x in m[4])) for m in d["melds"]
    )
    return s


def state_to_json(s: GameState) -> str:
    """Compact JSON text of the full state."""
    return json.dumps(state_to_dict(s), separators=(",", ":"))


def state_from_json(text: str | bytes) -> GameState:
    """Parse ``state_to_json`` output."""
    return state_from_dict(json.loads(text))
