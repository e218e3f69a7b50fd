"""In-process caches of the referee: parsed game meta and configuration, the latest state of recently played
games, and the commit ids of this process; and the state's storage form (engine JSON, encoded by orjson, in two
parts: the game's configuration, written once at creation, and its progress, written by every move)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import secrets
from collections import OrderedDict
from typing import Any

import orjson

import engine
from server.store import StoredGame


@functools.lru_cache(maxsize=4096)
def parsed_meta(raw: bytes) -> dict[str, Any]:
    """A game's parsed meta (profile, seat labels, spectators): parsed once per distinct value, never mutated."""
    meta: dict[str, Any] = json.loads(raw)
    return meta


def config_json(state: engine.GameState) -> bytes:
    """What a game stores once: ``engine.config_to_dict`` (rules, seed, preset deals) as JSON, by orjson."""
    return orjson.dumps(engine.config_to_dict(state))


def progress_json(state: engine.GameState) -> bytes:
    """What every move stores: ``engine.progress_to_dict`` as JSON, by orjson (the engine's JSON is plain ASCII:
    the same bytes as ``json.dumps`` with compact separators, in a quarter of the time)."""
    return orjson.dumps(engine.progress_to_dict(state))


@functools.lru_cache(maxsize=1024)
def parsed_config(raw: bytes) -> engine.Config:
    """A game's parsed configuration: parsed once per distinct value (it never changes during a match)."""
    return engine.config_from_dict(orjson.loads(raw))


def config_of_full_state(raw: bytes) -> bytes:
    """``config_json`` of a state stored whole (``engine.state_to_dict``: how games were stored before the config
    had a field of its own); raises if ``raw`` is no such state."""
    return orjson.dumps(engine.config_to_dict(engine.state_from_dict(orjson.loads(raw))))


def state_from_stored(config: bytes, progress: bytes) -> engine.GameState:
    """The state stored as ``config_json`` and ``progress_json``."""
    return engine.state_from_parts(parsed_config(config), orjson.loads(progress))


@functools.lru_cache(maxsize=4096)
def public_seats(raw: bytes) -> list[dict[str, Any]]:
    """What a view shows of a game's seats (name, label, open), from its meta: built once per distinct meta, and
    shared by the views of that meta (never mutated)."""
    seats = parsed_meta(raw)["seats"]
    return [{"name": seat["name"], "kind": seat["kind"], "open": not seat["auth"]} for seat in seats]


# Commit ids only need to be unique among the commits of one game: a random prefix per process and a counter.
_COMMIT_PREFIX = secrets.token_hex(8)
commit_ids = (f"{_COMMIT_PREFIX}-{n}" for n in itertools.count())


class StateCache:
    """The games this process played last, parsed. A load finding the very same version and bytes skips the JSON
    parse, and a move may be applied to the latest state known here without loading first: Redis stays the
    authority, since the commit only succeeds if the game is still at that version."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._games: OrderedDict[str, tuple[StoredGame, engine.GameState]] = OrderedDict()

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
        self._games[game.game_id] = (game, state)
        self._games.move_to_end(game.game_id)
        if len(self._games) > self._size:
            self._games.popitem(last=False)

    def forget(self, game_id: str) -> None:
        """Drop a game (it is not where the cache thought)."""
        self._games.pop(game_id, None)
