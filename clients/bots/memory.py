"""What a bot remembers of one hand beyond its view: who discarded, passed or declined which card.

Fed with ``observe(event)`` (``engine.event_for`` dicts); a bot that never receives events still plays, from its
views alone, just with less to go on. Everything is reset when a hand starts (an event, or a new ``hand_no`` seen
in a view).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clients.view import View, card_int


class HandMemory:
    """Per seat masks of one hand: cards discarded, cards refused (passed, or left on the pile by drawing from
    the stock), and cards ever taken from the discard pile."""

    __slots__ = ("declined", "discarded", "hand_no", "pile", "played", "taken")

    def __init__(self, players: int = 2) -> None:
        self.hand_no = -1
        self.reset(players)

    def reset(self, players: int, hand_no: int = -1, pile: list[int] | None = None) -> None:
        """Forget everything (a new hand)."""
        self.hand_no = hand_no
        self.discarded = [0] * players
        self.declined = [0] * players
        self.taken = [0] * players
        self.played = [False] * players
        self.pile: list[int] = list(pile or [])

    def sync(self, view: View) -> None:
        """Align with a view: reset on a new hand, and take the discard pile from it (the authority)."""
        if view.hand_no != self.hand_no or len(self.discarded) != len(view.hand_sizes):
            self.reset(len(view.hand_sizes), view.hand_no)
        self.pile = [card_int(t) for t in view.discard_pile]
        for m in view.melds:
            self.played[m.owner] = True
            for _, seat in m.layoffs:
                self.played[seat] = True

    def observe(self, event: Mapping[str, Any]) -> None:
        """Update from one event as the seat saw it."""
        kind = event.get("kind")
        seat = event.get("seat", -1)
        if kind == "hand_started":
            self.reset(len(event.get("hand_sizes", ())) or len(self.discarded), int(event.get("hand_no", -1)),
                       [card_int(event["upcard"])] if event.get("upcard") else [])
            return
        if not isinstance(seat, int) or not 0 <= seat < len(self.discarded):
            return
        if kind == "drew":
            if event.get("source") == "discard":
                card = card_int(event["card"])
                self.taken[seat] |= 1 << card
                if self.pile and self.pile[-1] == card:
                    self.pile.pop()
            elif self.pile:
                self.declined[seat] |= 1 << self.pile[-1]
        elif kind == "passed" and event.get("card"):
            self.declined[seat] |= 1 << card_int(event["card"])
        elif kind == "discarded":
            card = card_int(event["card"])
            self.discarded[seat] |= 1 << card
            self.pile.append(card)
        elif kind == "knocked" and event.get("discard"):
            card = card_int(event["discard"])
            self.discarded[seat] |= 1 << card
            self.pile.append(card)
        elif kind in ("melded", "laid_off"):
            self.played[seat] = True
        elif kind == "restocked":
            self.pile = self.pile[-1:]

    def refused(self, seat: int) -> int:
        """Cards ``seat`` showed it did not want: discarded, passed or left on the pile."""
        return self.discarded[seat] | self.declined[seat]
