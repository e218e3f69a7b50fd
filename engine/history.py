"""A move read back off the events it made (what a saved record or a replay names as each version's move).

The events are the dicts ``event_for`` gives (cards as text), those of one version, in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.cards import mask_of, parse_card, parse_cards
from engine.moves import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    LayOff,
    MeldMove,
    Move,
    Pass,
    Resign,
)

#: The events a move makes (the others, ``hand_started``, ``dealt``, ``restocked``, ``hand_ended`` and
#: ``match_ended``, and the clock's, are the referee's own).
MOVE_EVENTS = frozenset({"drew", "passed", "discarded", "knocked", "big_gin", "melded", "laid_off", "declared",
                         "resigned"})


def _melds(melds: Iterable[Mapping[str, Any]]) -> tuple[int, ...]:
    return tuple(mask_of(parse_cards(m["cards"])) for m in melds)


def move_of_events(events: Sequence[Mapping[str, Any]]) -> Move | None:
    """The move that made ``events`` (the events of one version that a move makes, in order), or None. The
    referee's shortcuts (``knock TD`` without melds, ``declare best``) come back as the melds and layoffs the
    referee chose: the same move in effect."""
    if not events:
        return None
    kinds = [e["kind"] for e in events]
    first = events[0]
    if "resigned" in kinds:
        return Resign()
    if "knocked" in kinds:
        knock = events[kinds.index("knocked")]
        return Knock(parse_card(knock["discard"]), _melds(knock.get("melds", ())))
    if "big_gin" in kinds:
        return BigGin(_melds(events[kinds.index("big_gin")].get("melds", ())))
    if "declared" in kinds:
        melds = _melds(e["meld"] for e in events if e["kind"] == "melded")
        layoffs = tuple((parse_card(e["card"]), int(e["meld_id"])) for e in events if e["kind"] == "laid_off")
        return Declare(melds, layoffs) if melds or layoffs else Done()
    match first["kind"]:
        case "drew":
            return DrawStock() if first.get("source") == "stock" else DrawDiscard()
        case "passed":
            return Pass()
        case "discarded":
            return Discard(parse_card(first["card"]))
        case "melded":
            return MeldMove(_melds([first["meld"]])[0])
        case "laid_off":
            return LayOff(parse_card(first["card"]), int(first["meld_id"]))
    return None
