"""In-process caches of the referee: parsed game meta and configuration, the latest state of recently played
games, and the state's storage form (JSON, encoded by orjson, in two parts:
the game's configuration, written once at creation, compact (only the options that differ from a fixed base),
and its progress, the engine's JSON, written by every move); the seats as an earlier version showed them."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, cast

import orjson

import engine
from server.memo import MIB, Memo, frozen_mapping
from server.ports import StoredGame
from server.settings import DEFAULTS
from wire.views import SeatDict

#: Values of the memos below are read-only (server.memo.freeze): they are shared by every caller of a game's meta.
_META: Memo[bytes, Mapping[str, Any]] = Memo("parsed_meta")
_CONFIGS: Memo[bytes, engine.Config] = Memo("parsed_config", share=2.0)
_PUBLIC_SEATS: Memo[bytes, tuple[SeatDict, ...]] = Memo("public_seats")
#: Parsed JSON takes about this many times the bytes of its text (measured with tracemalloc: states 2.4-2.8x,
#: meta 3.1x), plus a fixed cost per entry.
PARSED_FACTOR = 3
ENTRY_BYTES = 256


def parsed_meta(raw: bytes) -> Mapping[str, Any]:
    """A game's parsed meta (profile, seat labels, spectators): parsed once per distinct value and shared, so
    read-only all the way down (its objects are read-only mappings, its arrays tuples)."""
    meta = _META.get(raw)
    if meta is None:
        meta = _META.put(raw, frozen_mapping(json.loads(raw)), (PARSED_FACTOR + 1) * len(raw) + ENTRY_BYTES)
    return meta


# The rules a stored config is written against: a game stores only the options that differ from these. Frozen
# here (not taken from a profile) so that a later change of a profile's defaults cannot change a stored game.
_BASE_RULES: dict[str, Any] = {
    "game": "gin", "players": 2, "max_turns": 1000, "discard_taken_card_allowed": False, "target_score": 100,
    "max_hands": 0, "first_upcard_rule": "none", "knock_limit": 10, "gin_bonus": 25, "big_gin_bonus": 31,
    "undercut_bonus": 25, "undercut_on_tie": True, "stock_end_rule": "draw", "box_bonus": 0, "game_bonus": 0,
    "shutout_game_bonus": 0, "oklahoma": False, "oklahoma_ace": "gin_only", "spades_double": True,
    "hollywood": False, "ace_high_low": False, "ace_value_high_low": 15, "going_rummy_multiplier": 2,
    "must_discard_to_go_out": False, "max_melds_per_turn": 0, "layoff_requires_own_meld": False,
    "restock": "shuffle", "defender_deadwood": "best",
}  # fmt: skip  (an option added later goes here with its default value, so that stored configs read the same)
CONFIG_FORMAT = 2
_CONFIG_PREFIX = b'{"v":2,'


class OldStorageFormat(Exception):
    """A game stored by an earlier version of the referee (a layout this one does not read)."""


def config_json(state: engine.GameState) -> bytes:
    """What a game stores once: ``engine.config_to_dict`` (rules, seed, preset deals) as compact JSON, by orjson,
    the rules as they differ from a fixed base."""
    config = engine.config_to_dict(state)
    rules = {k: v for k, v in config["rules"].items() if _BASE_RULES.get(k, _MISSING) != v}
    return orjson.dumps({"v": CONFIG_FORMAT, "rules": rules, "seed": config["seed"], "presets": config["presets"]})


_MISSING = object()


def is_current_config(raw: bytes) -> bool:
    """Whether a stored config is of this layout (an earlier one has none, or the engine's format)."""
    return raw.startswith(_CONFIG_PREFIX)


def progress_json(state: engine.GameState) -> bytes:
    """What every move stores: ``engine.progress_to_dict`` as JSON, by orjson (the engine's JSON is plain ASCII:
    the same bytes as ``json.dumps`` with compact separators, in a quarter of the time)."""
    return orjson.dumps(engine.progress_to_dict(state))


def parsed_config(raw: bytes) -> engine.Config:
    """A game's parsed configuration: parsed once per distinct value (it never changes during a match)."""
    config = _CONFIGS.get(raw)
    if config is None:
        if not is_current_config(raw):
            raise OldStorageFormat("the game was stored by an earlier version of the referee")
        d = orjson.loads(raw)
        rules = {**_BASE_RULES, **d["rules"]}
        config = engine.config_from_dict({"v": 1, "rules": rules, "seed": d["seed"],
                                          "presets": d["presets"]})  # fmt: skip
        _CONFIGS.put(raw, config, (PARSED_FACTOR + 1) * len(raw) + ENTRY_BYTES)
    return config


def initial_state(config: bytes) -> engine.GameState:
    """The state at version 0 of the game of ``config`` (the engine is deterministic: the same deal again)."""
    rules, seed, presets = parsed_config(config)
    return engine.new_game(rules, seed, presets)


def state_from_stored(config: bytes, progress: bytes) -> engine.GameState:
    """The state stored as ``config_json`` and ``progress_json``."""
    return engine.state_from_parts(parsed_config(config), orjson.loads(progress))


def public_seats(raw: bytes) -> tuple[SeatDict, ...]:
    """What a view shows of a game's seats (name, label, open), from its meta: built once per distinct meta, and
    shared by the views of that meta, so read-only (a tuple of read-only mappings)."""
    seats = _PUBLIC_SEATS.get(raw)
    if seats is None:
        made = tuple(cast(SeatDict, frozen_mapping({"name": s["name"], "kind": s["kind"], "open": not s["auth"]}))
                     for s in parsed_meta(raw)["seats"])  # fmt: skip  (read-only mappings, typed as the seats)
        seats = _PUBLIC_SEATS.put(raw, made, len(raw) + PARSED_FACTOR * 64 * len(made) + ENTRY_BYTES)
    return seats


def seats_at(raw: bytes, version: int) -> list[SeatDict]:
    """``public_seats`` as the answer of the move that made ``version`` showed them: a seat joined at a game
    version >= ``version`` (after that commit) was still open then, under the name it had before."""
    seats: list[SeatDict] = []
    for seat in parsed_meta(raw)["seats"]:
        joined = seat.get("joined")
        if joined is not None and joined >= version:
            seats.append({"name": seat.get("was", seat["name"]), "kind": seat["kind"], "open": True})
        else:
            seats.append({"name": seat["name"], "kind": seat["kind"], "open": not seat["auth"]})
    return seats


#: Default bounds of the state cache (``serve --state-cache-games / --state-cache-mib``).
STATE_CACHE_GAMES = DEFAULTS.caches.state_games
STATE_CACHE_MIB = DEFAULTS.caches.state_mib


def state_entry_bytes(game: StoredGame) -> int:
    """An estimate of what one state cache entry holds: the stored bytes and the parsed state."""
    return (PARSED_FACTOR + 1) * len(game.progress_json) + len(game.config) + len(game.meta) + 4 * ENTRY_BYTES


class StateCache:
    """The games this process played last, parsed. A load finding the very same version and bytes skips the JSON
    parse, and a move may be applied to the latest state known here without loading first: Redis stays the
    authority, since the commit only succeeds if the game is still at that version. At most ``size`` games and
    ``max_mib`` MiB (estimated: ``state_entry_bytes``); the least recently used go first."""

    def __init__(self, size: int = STATE_CACHE_GAMES, max_mib: float = STATE_CACHE_MIB) -> None:
        if size < 1 or max_mib <= 0:
            raise ValueError(f"a state cache holds at least one game and some bytes, not {size} and {max_mib} MiB")
        self._size = size
        self._max_bytes = int(max_mib * MIB)
        self._bytes = 0
        self._games: OrderedDict[str, tuple[StoredGame, engine.GameState]] = OrderedDict()
        self._sizes: dict[str, int] = {}  # estimated bytes of each entry

    def get(self, game: StoredGame) -> engine.GameState:
        """The state stored in ``game`` (from the cache when it is the very same)."""
        hit = self._games.get(game.game_id)
        if hit is not None and hit[0].version == game.version and hit[0].progress_json == game.progress_json:
            self._games.move_to_end(game.game_id)
            return hit[1]
        try:
            state = state_from_stored(game.config, game.progress_json)
        except OldStorageFormat:
            raise
        except Exception as exc:  # a stored state that does not load is a bug, never the caller's fault
            raise RuntimeError(f"game {game.game_id}: stored state does not load") from exc
        self.put(game, state)
        return state

    def latest(self, game_id: str) -> tuple[StoredGame, engine.GameState] | None:
        """The last version of the game this process loaded or committed (possibly stale)."""
        return self._games.get(game_id)

    def put(self, game: StoredGame, state: engine.GameState) -> None:
        """Remember ``game`` and its parsed state."""
        nbytes = state_entry_bytes(game)
        games, sizes = self._games, self._sizes
        self._bytes += nbytes - sizes.get(game.game_id, 0)
        sizes[game.game_id] = nbytes
        games[game.game_id] = (game, state)
        games.move_to_end(game.game_id)
        while len(games) > self._size or (self._bytes > self._max_bytes and len(games) > 1):
            self._bytes -= sizes.pop(games.popitem(last=False)[0])

    def forget(self, game_id: str) -> None:
        """Drop a game (it is not where the cache thought)."""
        if self._games.pop(game_id, None) is not None:
            self._bytes -= self._sizes.pop(game_id)

    def __len__(self) -> int:
        return len(self._games)

    @property
    def nbytes(self) -> int:
        """The estimated bytes held now."""
        return self._bytes
