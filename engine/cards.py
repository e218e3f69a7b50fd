"""Cards as small integers and sets of cards as bitmasks.

A card is ``suit * 13 + rank`` with rank 0 = ace .. 12 = king and suits in the order S H D C, so
``card_text(0) == "AS"`` and ``card_text(51) == "KC"``. A set of cards is an int with bit ``card`` set.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.errors import InvalidMoveError, excerpt

RANKS = "A23456789TJQK"
SUITS = "SHDC"
DECK_SIZE = 52
FULL_DECK = (1 << DECK_SIZE) - 1

#: Deadwood / hand value of each card (ace 1, faces 10), indexed by card.
CARD_VALUE: tuple[int, ...] = tuple(min(r + 1, 10) for _ in SUITS for r in range(13))


def rank_of(card: int) -> int:
    """Rank index of a card: 0 = ace .. 12 = king."""
    return card % 13


def suit_of(card: int) -> int:
    """Suit index of a card: 0 = spades, 1 = hearts, 2 = diamonds, 3 = clubs."""
    return card // 13



CARD_TEXTS: tuple[str, ...] = tuple(RANKS[c % 13] + SUITS[c // 13] for c in range(DECK_SIZE))


def card_text(card: int) -> str:
    """Text form of a card, e.g. ``"TD"``."""
    return CARD_TEXTS[card]


def parse_card(text: str) -> int:
    """Parse ``"TD"``, ``"10D"`` or ``"td"``; raises InvalidMoveError(INVALID_CARD) otherwise."""
    if not isinstance(text, str):
        raise InvalidMoveError("INVALID_CARD", f"not a card: {excerpt(text)} (expected text such as 'TD')")
    # ASCII only: upper() makes S of the long s (and SS of the sharp s), which are no card text
    t = text.strip().upper() if text.isascii() else ""
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
        raise InvalidMoveError("INVALID_CARD", f"not a card: {excerpt(text)} (expected e.g. 'TD', '10D', 'AS')")
    return SUITS.index(t[1]) * 13 + RANKS.index(t[0])


def parse_cards(texts: Iterable[str]) -> list[int]:
    """Parse several cards; a repeated card is refused (DUPLICATE_CARD)."""
    out: list[int] = []
    for t in texts:
        c = parse_card(t)
        if c in out:
            raise InvalidMoveError("DUPLICATE_CARD", f"card {card_text(c)} given twice")
        out.append(c)
    return out



def mask_of(cards: Iterable[int]) -> int:
    """Mask of a collection of cards."""
    m = 0
    for c in cards:
        m |= 1 << c
    return m


_ROW_CARDS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple(suit * 13 + r for r in range(13) if row >> r & 1) for row in range(1 << 13)) for suit in range(4)
)


def cards_of(mask: int) -> tuple[int, ...]:
    """Cards of a mask in ascending card order."""
    rc = _ROW_CARDS
    return (
        rc[0][mask & 0x1FFF] + rc[1][(mask >> 13) & 0x1FFF] + rc[2][(mask >> 26) & 0x1FFF] + rc[3][mask >> 39]
    )




_ROW_VALUE: tuple[int, ...] = tuple(
    sum(min(r + 1, 10) for r in range(13) if row >> r & 1) for row in range(1 << 13)
)


_ROW_TOP: tuple[int, ...] = tuple(
    max((min(r + 1, 10) for r in range(13) if row >> r & 1), default=0) for row in range(1 << 13)
)


def top_value(mask: int) -> int:
    """The highest card value in a mask (0 when empty)."""
    rt = _ROW_TOP
    return max(rt[mask & 0x1FFF], rt[(mask >> 13) & 0x1FFF], rt[(mask >> 26) & 0x1FFF], rt[mask >> 39])


def mask_value(mask: int, ace_value: int = 1) -> int:
    """Total card value of a mask (deadwood / points left in hand)."""
    if ace_value == 1:
        rv = _ROW_VALUE
        return rv[mask & 0x1FFF] + rv[(mask >> 13) & 0x1FFF] + rv[(mask >> 26) & 0x1FFF] + rv[mask >> 39]
    total = 0
    while mask:
        low = mask & -mask
        c = low.bit_length() - 1
        total += ace_value if c % 13 == 0 else CARD_VALUE[c]
        mask ^= low
    return total



def mask_text(mask: int) -> str:
    """Space separated card texts of a mask, in display order."""
    return " ".join(card_text(c) for c in cards_of(mask))
