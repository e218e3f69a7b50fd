"""The bot interface and the registry of bots by name.

A bot is told every event its seat sees (``observe``) and, when its seat is to act, is asked for a move
(``choose``) with the view of its seat and the complete list of legal moves. It must return a legal move: one of
``legal``, or (Gin) a ``Knock`` / ``BigGin`` that declares its own melds for a discard ``legal`` allows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from clients.view import View
from engine import Move


@runtime_checkable
class Bot(Protocol):
    """A player: ``choose`` a move for the seat's view among the legal moves; ``observe`` each event."""

    name: str

    def choose(self, view: View, legal: Sequence[Move]) -> Move:
        """The move to make now (``view.to_act == view.seat``, ``legal`` not empty)."""
        ...

    def observe(self, event: Mapping[str, Any]) -> None:
        """One event as this seat saw it (``engine.event_for`` dicts: kind, seat and the public fields)."""
        ...


def _random(seed: int | None) -> Bot:
    from clients.bots.random_bot import RandomBot

    return RandomBot(seed)


def _gin(seed: int | None) -> Bot:
    from clients.bots.gin_bot import GinBot

    return GinBot(seed)


def _rummy(seed: int | None) -> Bot:
    from clients.bots.rummy_bot import RummyBot

    return RummyBot(seed)


def _strong(seed: int | None) -> Bot:
    return StrongBot(seed)


BOTS: dict[str, Callable[[int | None], Bot]] = {
    "random": _random,
    "gin": _gin,
    "rummy": _rummy,
    "strong": _strong,
}


def make_bot(name: str, seed: int | None = None) -> Bot:
    """A new bot by name: ``random``, ``gin``, ``rummy``, or ``strong`` (the Gin or Rummy bot, by the game)."""
    try:
        factory = BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r} (known: {', '.join(BOTS)})") from None
    return factory(seed)


class StrongBot:
    """The strong bot of whichever game is being played: the Gin bot or the Rummy bot."""

    name = "strong"

    def __init__(self, seed: int | None = None) -> None:
        self._gin = _gin(seed)
        self._rummy = _rummy(seed)

    def choose(self, view: View, legal: Sequence[Move]) -> Move:
        """Ask the bot of ``view.game``."""
        return (self._gin if view.game == "gin" else self._rummy).choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        """Both bots remember (it costs little, and the game is not known before the first view)."""
        self._gin.observe(event)
        self._rummy.observe(event)
