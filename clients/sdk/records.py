"""Saved games: one versioned JSON file per game, built from GetReplay's pages (the public API only).

A record (format ``rummy-referee/game-record``, version 1; docs/records.md) holds what GetReplay returns (the
settings, the referee's views at creation and at the end, every event with every card) and, read off those
events, every deal, every move and the result:

    with RefereeClient(address, organizer_token) as client:
        save_record(client, game_id, "game.json")
    record = load_record("game.json")
    record["moves"][0]  # {"version": 1, "seat": 1, "hand_no": 0, "move": "draw stock"}
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import engine
from clients.sdk.fairness import fairness_settings
from clients.sdk.values import Replay, Settings, time_control_text

if TYPE_CHECKING:
    from clients.sdk.client import RefereeClient

FORMAT = "rummy-referee/game-record"
VERSION = 1
#: The events a move makes (the others are the referee's own): ``engine.MOVE_EVENTS``.
MOVE_EVENTS = engine.MOVE_EVENTS
#: The move that made one version's events (``engine.move_of_events``).
move_of = engine.move_of_events


class RecordError(ValueError):
    """A file that is not a game record this version reads."""


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | list | set | frozenset):
        return list(value)
    raise TypeError(f"not JSON-able: {value!r}")


def settings_dict(settings: Settings) -> dict[str, Any]:
    """The game's settings as JSON-able values (with a time control: ``time_control``, its short text, and
    ``timeout_policy``)."""
    clock: dict[str, Any] = {}
    if settings.time_control is not None:
        policy = settings.timeout_policy
        clock = {"time_control": time_control_text(settings.time_control),
                 "timeout_policy": {"kind": policy.kind, "max_auto_moves": policy.max_auto_moves} if policy else None}
    return {
        "profile": settings.profile,
        "options": dict(settings.options),
        "seats": [{"name": s.name, "kind": s.kind, "open": s.open} for s in settings.seats],
        "spectators_allowed": settings.spectators_allowed,
        "organizer_deals": settings.organizer_deals,
        **fairness_settings(settings),  # the seed commitment, and once the match is over the seed: `verify`
        **clock,
    }


def moves_from_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every move of the game, in order: ``{"version", "seat", "hand_no", "move"}`` (a move text that
    ``engine.parse_move`` reads). An event that names its move (a ``move`` field) is taken at its word."""
    by_version: dict[int, list[Mapping[str, Any]]] = {}
    hand_of: dict[int, int] = {}
    hand_no = 0
    for e in events:
        version = int(e["version"])
        if e["kind"] == "hand_started":
            hand_no = int(e["hand_no"])
        if e["kind"] in MOVE_EVENTS:
            by_version.setdefault(version, []).append(e)
            hand_of.setdefault(version, hand_no)
    moves = []
    for version, evs in sorted(by_version.items()):
        named = next((e["move"] for e in evs if isinstance(e.get("move"), str)), None)
        move = move_of(evs)
        text = named if named is not None else engine.move_text(move) if move is not None else None
        if text is not None:
            moves.append({"version": version, "seat": int(evs[0]["seat"]), "hand_no": hand_of[version],
                          "move": text})  # fmt: skip
    return moves


def deals_from_replay(initial: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every deal: ``{"hand_no", "version", "dealer", "upcard", "hands", "stock"}``. ``stock`` (bottom to top)
    is known for the first deal (GetReplay's initial view holds it) and for any deal whose ``hand_started``
    event carries it; else it is None (the cards drawn from it are in the moves' events)."""
    deals: list[dict[str, Any]] = []
    for e in events:
        if e["kind"] == "hand_started":
            hand_no = int(e["hand_no"])
            stock = e.get("stock")
            if stock is None and hand_no == int(initial.get("hand_no", 0)) and not deals:
                stock = initial.get("stock")
            deals.append({"hand_no": hand_no, "version": int(e["version"]), "dealer": int(e["dealer"]),
                          "upcard": e.get("upcard"), "hands": [[] for _ in e.get("hand_sizes", ())],
                          "stock": None if stock is None else list(stock)})  # fmt: skip
        elif e["kind"] == "dealt" and deals:
            hands = deals[-1]["hands"]
            seat = int(e["seat"])
            while len(hands) <= seat:
                hands.append([])
            hands[seat] = list(e.get("cards", ()))
    if deals and initial.get("hands") and int(initial.get("hand_no", 0)) == deals[0]["hand_no"]:
        deals[0]["hands"] = [list(h) for h in initial["hands"]]  # the deal order, as dealt
    return deals


def record_from_replay(game_id: str, replay: Replay, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The game record of ``replay`` (every page of GetReplay joined); ``meta``: free-form labels kept with it
    (a tournament's game key, for instance)."""
    events = [dict(e) for e in replay.events]
    current = dict(replay.current)
    result = current.get("result")
    return {
        "format": FORMAT,
        "version": VERSION,
        "game_id": game_id,
        "meta": dict(meta or {}),
        "settings": settings_dict(replay.settings),
        "players": [s.name for s in replay.settings.seats],
        "deals": deals_from_replay(replay.initial, events),
        "moves": moves_from_events(events),
        "events": events,
        "result": {
            "over": current.get("phase") == "match_over",
            "phase": current.get("phase"),
            "hands_played": current.get("hands_played"),
            "scores": current.get("scores"),
            "totals": result.get("totals") if isinstance(result, Mapping) else None,
            "winners": result.get("winners") if isinstance(result, Mapping) else None,
            "detail": result,
        },
        "initial": dict(replay.initial),
        "final": current,
    }


def write_record(record: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``record`` to ``path`` whole or not at all (a temporary file renamed over it)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, default=_plain)
            f.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def save_record(client: RefereeClient, game_id: str, path: str | os.PathLike[str], *, token: str | None = None,
                meta: Mapping[str, Any] | None = None, page_size: int = 0) -> dict[str, Any]:  # fmt: skip
    """Fetch the whole game with GetReplay (every page, of ``page_size`` events, 0: the referee's default; any
    token of the game once the match is over, the organizer's at any time) and write its record to ``path``;
    returns the record."""
    replay = client.get_replay(game_id, token=token, max_events=page_size)
    record = record_from_replay(game_id, replay, meta)
    write_record(record, path)
    return record


def check_record(record: Any, where: str = "record") -> dict[str, Any]:
    """``record`` if it is a game record this version reads; else RecordError."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordError(f"{where} is not a game record (no \"format\": \"{FORMAT}\")")
    if record.get("version") != VERSION:
        raise RecordError(f"{where}: game record version {record.get('version')!r}, this version reads {VERSION}")
    for key in ("settings", "players", "deals", "moves", "events", "result"):
        if key not in record:
            raise RecordError(f"{where}: the game record has no {key!r}")
    return record


def load_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a game record file (RecordError if it is not one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: {exc}") from None
    return check_record(data, str(path))
