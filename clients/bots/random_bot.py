"""The random bot: a uniformly random legal move (the baseline every other bot must beat)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from clients.view import View
from engine import Move


class RandomBot:
    """Uniform over the legal moves, from its own seeded ``random.Random`` (bots may use it: they are players,
    not the dealer)."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, view: View, legal: Sequence[Move]) -> Move:
        """Any legal move, uniformly."""
        return legal[self._rng.randrange(len(legal))]

    def observe(self, event: Mapping[str, Any]) -> None:
        """Nothing to remember."""
