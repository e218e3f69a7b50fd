"""In-process caches of the referee: parsed game meta and configuration, the latest state of recently played
games, and the commit ids of this process; and the state's storage form (engine JSON, encoded by orjson, in two
parts: the game's configuration, written once at creation, and its progress, written by every move)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import secrets
from collections import OrderedDict
from typing import Any

import orjson

import engine
from server.memo import MIB, Memo
from server.store import StoredGame

_META: Memo[bytes, dict[str, Any]] = Memo("parsed_meta")
_CONFIGS: Memo[bytes, engine.Config] = Memo("parsed_config", share=2.0)
_PUBLIC_SEATS: Memo[bytes, list[dict[str, Any]]] = Memo("public_seats")
#: Parsed JSON takes about this many times the bytes of its text (measured with tracemalloc: states 2.4-2.8x,
#: meta 3.1x), plus a fixed cost per entry.
PARSED_FACTOR = 3
ENTRY_BYTES = 256


def parsed_meta(raw: bytes) -> dict[str, Any]:
    """A game's parsed meta (profile, seat labels, spectators): parsed once per distinct value, never mutated."""
    meta = _META.get(raw)
    if meta is None:
        meta = _META.put(raw, json.loads(raw), (PARSED_FACTOR + 1) * len(raw) + ENTRY_BYTES)
    return meta


def config_json(state: engine.GameState) -> bytes:
    """What a game stores once: ``engine.config_to_dict`` (rules, seed, preset deals) as JSON, by orjson."""
    return orjson.dumps(engine.config_to_dict(state))


def progress_json(state: engine.GameState) -> bytes:
    """What every move stores: ``engine.progress_to_dict`` as JSON, by orjson (the engine's JSON is plain ASCII:
    the same bytes as ``json.dumps`` with compact separators, in a quarter of the time)."""
    return orjson.dumps(engine.progress_to_dict(state))


def parsed_config(raw: bytes) -> engine.Config:
    """A game's parsed configuration: parsed once per distinct value (it never changes during a match)."""
    config = _CONFIGS.get(raw)
    if config is None:
        config = engine.config_from_dict(orjson.loads(raw))
        _CONFIGS.put(raw, config, (PARSED_FACTOR + 1) * len(raw) + ENTRY_BYTES)
    return config


def config_of_full_state(raw: bytes) -> bytes:
    """``config_json`` of a state stored whole (``engine.state_to_dict``: how games were stored before the config
    had a field of its own); raises if ``raw`` is no such state."""
    return orjson.dumps(engine.config_to_dict(engine.state_from_dict(orjson.loads(raw))))


def state_from_stored(config: bytes, progress: bytes) -> engine.GameState:
    """The state stored as ``config_json`` and ``progress_json``."""
    return engine.state_from_parts(parsed_config(config), orjson.loads(progress))


def public_seats(raw: bytes) -> list[dict[str, Any]]:
    """What a view shows of a game's seats (name, label, open), from its meta: built once per distinct meta, and
    shared by the views of that meta (never mutated)."""
    seats = _PUBLIC_SEATS.get(raw)
    if seats is None:
        made = [{"name": s["name"], "kind": s["kind"], "open": not s["auth"]} for s in parsed_meta(raw)["seats"]]
        seats = _PUBLIC_SEATS.put(raw, made, len(raw) + PARSED_FACTOR * 64 * len(made) + ENTRY_BYTES)
    return seats


# Commit ids only need to be unique among the commits of one game: a random prefix per process and a counter.
_COMMIT_PREFIX = secrets.token_hex(8)
commit_ids = (f"{_COMMIT_PREFIX}-{n}" for n in itertools.count())


#: Default bounds of the state cache (``serve --state-cache-games / --state-cache-mib``).
STATE_CACHE_GAMES = 4096
STATE_CACHE_MIB = 32.0


def state_entry_bytes(game: StoredGame) -> int:
    """An estimate of what one state cache entry holds: the stored bytes and the parsed state."""
    return (PARSED_FACTOR + 1) * len(game.state_json) + len(game.config) + len(game.meta) + 4 * ENTRY_BYTES


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
        if hit is not None and hit[0].version == game.version and hit[0].state_json == game.state_json:
            self._games.move_to_end(game.game_id)
            return hit[1]
        try:
            state = state_from_stored(game.config, game.state_json)
        except Exception as exc:  # a stored state that does not load is a bug, never the caller's fault
            raise RuntimeError(f"game {game.game_id}: stored state does not load") from exc
        self.put(game, state)
        return state

    def latest(self, game_id: str) -> tuple[StoredGame, engine.GameState] | None:
        """The last version of the game this process loaded or committed (possibly stale)."""
        return self._games.get(game_id)

    def put(self, game: StoredGame, state: engine.GameState) -> None:
        """Remember ``game`` (without its idempotency record) and its parsed state."""
        if game.idem_record is not None:
            game = dataclasses.replace(game, idem_record=None)
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
