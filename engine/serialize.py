"""Compact, versioned JSON of the full state (for storage), with an exact round trip.

A state is two parts: its game's configuration (rules, seed, preset deals), which never changes during a match,
and its progress (everything else). Storage may keep them apart, so that a move writes only the progress."""

from __future__ import annotations

import functools
import json
from typing import Any, NamedTuple

from engine.deal import Deal
from engine.errors import InvalidMoveError, excerpt
from engine.options import Rules
from engine.state import PHASE_OF, GameState, TableMeld

FORMAT_VERSION = 1

# stored as they are (phase: its text), and stored as arrays (read back as tuples)
_PLAIN = (
    "hand_no", "dealer", "to_act", "taken", "turns", "passes", "must_knock", "upcard", "knock_limit", "knocker",
    "knock_deadwood", "played", "active_since_restock", "restocks", "next_meld_id", "hands_played", "last_hand",
    "result",
)  # fmt: skip
_TUPLES = ("hands", "stock", "discard", "known", "scores", "boxes", "games_ended")
#: The stored "melds_this_turn" packs two fields of the state (format 1, unchanged): the count of new melds, and
#: in this bit whether the seat to act melded or laid off this turn (``played_this_turn``).
_PLAYED_THIS_TURN = 0x80

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


def config_to_dict(s: GameState) -> dict[str, Any]:
    """What never changes in a match: the rules, the secret seed and the preset deals (storage only). Stored once
    per game, apart from ``progress_to_dict``, which changes with every move."""
    return {
        "v": FORMAT_VERSION,
        "rules": _rules_to_dict(s.rules),
        "seed": s.seed.hex(),
        "presets": [[p.dealer, [list(h) for h in p.hands], p.upcard, list(p.stock)] for p in s.presets],
    }


def progress_to_dict(s: GameState) -> dict[str, Any]:
    """Everything else of the state (contains every secret: storage only). Tuples stand for JSON arrays. Every
    move stores one: the dict is written out in one literal (tests/engine/test_state_copy.py checks that it
    holds every field)."""
    return {
        "v": FORMAT_VERSION,
        "hand_no": s.hand_no,
        "dealer": s.dealer,
        "phase": s.phase,
        "to_act": s.to_act,
        "taken": s.taken,
        "turns": s.turns,
        "passes": s.passes,
        "must_knock": s.must_knock,
        "upcard": s.upcard,
        "knock_limit": s.knock_limit,
        "knocker": s.knocker,
        "knock_deadwood": s.knock_deadwood,
        "played": s.played,
        "melds_this_turn": (s.melds_this_turn | _PLAYED_THIS_TURN) if s.played_this_turn else s.melds_this_turn,
        "active_since_restock": s.active_since_restock,
        "restocks": s.restocks,
        "next_meld_id": s.next_meld_id,
        "hands_played": s.hands_played,
        "last_hand": s.last_hand,
        "result": s.result,
        "hands": s.hands,
        "stock": s.stock,
        "discard": s.discard,
        "known": s.known,
        "scores": s.scores,
        "boxes": s.boxes,
        "games_ended": s.games_ended,
        "games": s.games,
        "game_boxes": s.game_boxes,
        "melds": [(m.id, m.owner, m.kind, m.cards, m.layoffs) for m in s.melds],
    }


class Config(NamedTuple):
    """A parsed ``config_to_dict``: shared by every state of its game (all three are immutable)."""

    rules: Rules
    seed: bytes
    presets: tuple[Deal, ...]


def config_from_dict(d: dict[str, Any]) -> Config:
    """Inverse of ``config_to_dict``."""
    _check_format(d)
    return Config(
        _rules_from_items(tuple(d["rules"].items())),
        bytes.fromhex(d["seed"]),
        tuple(Deal(p[0], tuple(tuple(h) for h in p[1]), p[2], tuple(p[3])) for p in d["presets"]),
    )


def state_from_parts(config: Config, progress: dict[str, Any]) -> GameState:
    """The state of ``config_from_dict`` and ``progress_to_dict`` output."""
    _check_format(progress)
    s = GameState.__new__(GameState)
    s.rules, s.seed, s.presets = config
    for name in _PLAIN:
        setattr(s, name, progress[name])
    s.phase = PHASE_OF[progress["phase"]]
    packed = progress["melds_this_turn"]
    s.melds_this_turn = packed & ~_PLAYED_THIS_TURN
    s.played_this_turn = bool(packed & _PLAYED_THIS_TURN)
    for name in _TUPLES:
        setattr(s, name, tuple(progress[name]))
    s.games = tuple(tuple(g) for g in progress["games"])
    s.game_boxes = tuple(tuple(g) for g in progress["game_boxes"])
    s.melds = tuple(TableMeld(m[0], m[1], m[2], m[3], tuple((x[0], x[1]) for x in m[4])) for m in progress["melds"])
    return s


def _check_format(d: dict[str, Any]) -> None:
    if d.get("v") != FORMAT_VERSION:
        raise InvalidMoveError("BAD_STATE", f"unsupported state format {excerpt(d.get('v'))}")


def state_to_dict(s: GameState) -> dict[str, Any]:
    """The full state as plain JSON-able data (contains every secret: storage only): ``config_to_dict`` and
    ``progress_to_dict`` in one."""
    return {**config_to_dict(s), **progress_to_dict(s)}


def state_from_dict(d: dict[str, Any]) -> GameState:
    """Inverse of ``state_to_dict``."""
    return state_from_parts(config_from_dict(d), d)


def state_to_json(s: GameState) -> str:
    """Compact JSON text of the full state."""
    return json.dumps(state_to_dict(s), separators=(",", ":"))


def state_from_json(text: str | bytes) -> GameState:
    """Parse ``state_to_json`` output."""
    return state_from_dict(json.loads(text))
