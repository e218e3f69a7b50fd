"""Check that a finished game's deals were fair: recompute every deal, restock and stock draw from the revealed seed,
and check the seed against the commitment the referee published at creation (docs/fairness.md).

A game is checked from GetReplay (``verify_game``, live) or from a saved game record (``verify_record``: the JSON of
docs/records.md, whose ``settings`` keep ``seed_commitment``, ``seed`` (hex) and ``preset_deals``; see
``fairness_settings``). Both raise ``FairnessError`` naming the first mismatch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

import engine
from clients.sdk.values import Replay, Settings
from engine import FairnessError, Verified, verify_deals

__all__ = ["FairnessError", "Verified", "fairness_settings", "verify_events", "verify_game", "verify_record",
           "verify_replay"]  # fmt: skip


def _deal(d: Mapping[str, Any]) -> engine.Deal:
    return engine.Deal(
        dealer=int(d["dealer"]),
        hands=tuple(tuple(engine.parse_cards(h)) for h in d["hands"]),
        upcard=engine.parse_card(d["upcard"]),
        stock=tuple(engine.parse_cards(d["stock"])),
    )


def fairness_settings(settings: Settings) -> dict[str, Any]:
    """What a saved record keeps of the settings for ``verify_record``: the commitment, the seed (hex, "" before
    the match is over) and the preset deals."""
    return {
        "seed_commitment": settings.seed_commitment,
        "seed": settings.seed.hex() if settings.seed else "",
        "preset_deals": [dict(d) for d in settings.preset_deals],
    }


def verify_events(
    game_id: str,
    options: Mapping[str, Any],
    commitment: str,
    seed: bytes | None,
    presets: Sequence[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
) -> Verified:
    """Check one game given its pinned options, commitment, revealed seed and presets, and its events (every card)."""
    if not commitment:
        raise FairnessError("incomplete", "no seed commitment (a game created before commitments were published?)")
    if not seed:
        raise FairnessError("incomplete", "no seed: it is revealed only once the match is over")
    try:
        rules = engine.Rules.from_dict(dict(options))
        deals = tuple(_deal(d) for d in presets)
    except (engine.RuleError, KeyError, TypeError, ValueError) as exc:
        raise FairnessError("incomplete", f"unreadable settings: {exc}") from None
    try:
        return verify_deals(game_id, rules, seed, commitment, deals, events)
    except (engine.RuleError, KeyError, TypeError, ValueError) as exc:  # an event that is not what it should be
        raise FairnessError("malformed", f"an event could not be read: {exc}") from None


def verify_replay(game_id: str, replay: Replay) -> Verified:
    """Check a game from its GetReplay (all pages joined)."""
    s = replay.settings
    return verify_events(game_id, s.options, s.seed_commitment, s.seed,
                         s.preset_deals, replay.events)  # fmt: skip


def verify_game(client: Any, game_id: str, *, token: str | None = None) -> Verified:
    """Fetch the game's GetReplay with ``client`` (a ``RefereeClient``; any token of the game once the match is
    over) and check it."""
    return verify_replay(game_id, client.get_replay(game_id, token=token))


def verify_record(record: Mapping[str, Any] | str | Path) -> Verified:
    """Check a saved game record (a dict, or the path of its JSON file)."""
    if not isinstance(record, Mapping):
        try:
            record = json.loads(Path(record).read_text())
        except (OSError, ValueError) as exc:
            raise FairnessError("unreadable", f"{record}: {exc}") from None
        if not isinstance(record, Mapping):
            raise FairnessError("unreadable", "a game record is one JSON object")
    if record.get("format") != "rummy-referee/game-record":
        raise FairnessError("unreadable", "not a game record (its format is not rummy-referee/game-record)")
    # the fairness fields are kept in the record's settings (fairness_settings); a record may also hold them at
    # its top level
    settings = {**{k: record[k] for k in ("seed_commitment", "seed", "preset_deals") if k in record},
                **(record.get("settings") or {})}  # fmt: skip
    seed_hex = str(settings.get("seed") or "")
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        raise FairnessError("unreadable", "the record's seed is not hex") from None
    verified = verify_events(
        str(record.get("game_id", "")), settings.get("options") or {}, str(settings.get("seed_commitment") or ""),
        seed, settings.get("preset_deals") or (), record.get("events") or (),
    )  # fmt: skip
    _check_read_off(record, settings.get("options") or {}, seed, settings.get("preset_deals") or ())
    return verified


def _check_read_off(
    record: Mapping[str, Any], options: Mapping[str, Any], seed: bytes, presets: Sequence[Mapping[str, Any]]
) -> None:
    """The record's ``deals`` and ``moves`` (docs/records.md: read off its events, which verify_events checked) are
    what a reader of the JSON sees first: each deal must be the seed's (or the preset's) for the dealer its events
    name (dealer, upcard, every seat's cards as a set, the stock when the record has it), and the moves those its
    events say."""
    from clients.sdk.records import moves_from_events  # (records imports this module)

    events = record.get("events") or ()
    try:
        rules = engine.Rules.from_dict(dict(options))
        preset = tuple(_deal(d) for d in presets)
        dealers = {int(e["hand_no"]): int(e["dealer"]) for e in events if e.get("kind") == "hand_started"}
        deals = record.get("deals")
        if deals is not None and len(deals) != len(dealers):
            raise FairnessError("deal", f"the record has {len(deals)} deal(s), its events {len(dealers)}")
        for i, d in enumerate(deals or ()):
            number = int(d["hand_no"])
            where = f"the record's deals[{i}] (hand {number})"
            if number not in dealers:
                raise FairnessError("deal", f"{where}: no such hand in its events")
            dealer = dealers[number]
            deal = preset[number] if number < len(preset) else engine.seeded_deal(rules, dealer, seed, number)
            if int(d["dealer"]) != dealer or engine.parse_card(d["upcard"]) != deal.upcard:
                raise FairnessError("deal", f"{where}: its dealer or upcard is not the seed's")
            hands = [sorted(engine.parse_cards(h)) for h in d["hands"]]
            if hands != [sorted(h) for h in deal.hands]:
                raise FairnessError("deal", f"{where}: a seat's cards are not the seed's")
            if d.get("stock") is not None and tuple(engine.parse_cards(d["stock"])) != deal.stock:
                raise FairnessError("deal", f"{where}: its stock is not the seed's")
        moves = record.get("moves")
        if moves is not None:
            for i, (kept, said) in enumerate(zip_longest(moves, moves_from_events(events))):
                if kept != said:
                    what = f"{said['move']!r} by seat {said['seat']} at version {said['version']}" if said else "none"
                    raise FairnessError("moves", f"the record's moves[{i}] is not the move its events say: {what}")
    except (engine.RuleError, KeyError, TypeError, ValueError) as exc:
        raise FairnessError("malformed", f"the record's deals or moves could not be read: {exc}") from None
