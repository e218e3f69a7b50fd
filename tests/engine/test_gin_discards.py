"""Gin's discard moves from the per-suit table: the same list of the same move objects as picked card by card."""

from __future__ import annotations

import random

from engine import gin
from engine.cards import cards_of
from engine.moves import DISCARDS


def test_discards_from_the_table_are_the_moves_of_the_cards_in_order() -> None:
    rng = random.Random(11)
    masks = [0, 1, 1 << 51, (1 << 52) - 1] + [
        sum(1 << c for c in rng.sample(range(52), rng.randrange(53))) for _ in range(5000)
    ]
    for held in masks:
        listed = gin._discards(held)
        plain = [DISCARDS[c] for c in cards_of(held)]
        assert type(listed) is list and listed == plain
        assert all(a is b for a, b in zip(listed, plain, strict=True))
