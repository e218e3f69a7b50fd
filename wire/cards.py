"""Cards on the wire: RULES.md's texts (``"TD"``, ``"AS"``) <-> engine cards (``suit * 13 + rank``) and masks."""

from __future__ import annotations

from collections.abc import Iterable

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.errors import Malformed

#: The engine card of a card text (``"TD"``, also ``"10D"``, ``"td"``); else InvalidMoveError(INVALID_CARD).
card_from_proto = engine.card_int


def cards_from_proto(texts: Iterable[str]) -> int:
    """Card texts to a mask; a card named twice is malformed (DUPLICATE_CARD)."""
    mask = 0
    for text in texts:
        bit = 1 << card_from_proto(text)
        if mask & bit:
            raise Malformed("DUPLICATE_CARD", f"card {engine.card_text(bit.bit_length() - 1)} named twice")
        mask |= bit
    return mask


def cards_to_proto(mask: int) -> list[str]:
    """Card texts of a mask, in engine card order."""
    return list(engine.card_texts(mask))


def melds_from_proto(groups: Iterable[pb.Cards]) -> tuple[int, ...]:
    """Groups of cards (melds) as masks."""
    return tuple(cards_from_proto(g.cards) for g in groups)


def melds_to_proto(melds: Iterable[int]) -> list[pb.Cards]:
    """Melds (masks) as groups of card texts."""
    return [pb.Cards(cards=cards_to_proto(m)) for m in melds]
