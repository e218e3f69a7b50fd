"""Hand analysis (what the AnalyzeHand RPC answers): a hand's minimum deadwood under a game's rules, its optimal
arrangements, and for 11 Gin cards the discards that allow a knock. Cards are masks, as everywhere in the engine."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InvalidMoveError
from engine.gin import knock_discards
from engine.melds import arrangements, min_deadwood
from engine.options import GIN, RUMMY, Rules

#: the most cards a hand can hold (a Gin hand after its draw)
MAX_HAND = 11


@dataclass(frozen=True, slots=True)
class Arrangement:
    """One minimum-deadwood arrangement: its melds and the cards left out of them (the deadwood), as masks."""

    melds: tuple[int, ...]
    deadwood_cards: int


@dataclass(frozen=True, slots=True)
class KnockDiscard:
    """A discard of an 11-card Gin hand that leaves deadwood within the knock limit, and that deadwood."""

    card: int
    deadwood: int


@dataclass(frozen=True, slots=True)
class HandAnalysis:
    """``analyze_hand``'s answer. ``truncated``: there are more optimal arrangements than ``arrangements`` holds."""

    min_deadwood: int
    arrangements: tuple[Arrangement, ...]
    truncated: bool
    knock_discards: tuple[KnockDiscard, ...]


def check_hand_size(cards: int) -> None:
    """Refuse a hand of no card or of more than MAX_HAND cards (InvalidMoveError INVALID_HAND_SIZE)."""
    n = cards.bit_count()
    if not 1 <= n <= MAX_HAND:
        raise InvalidMoveError("INVALID_HAND_SIZE", f"a hand to analyze has 1..{MAX_HAND} cards, not {n}")


def analyze_hand(cards: int, rules: Rules, max_arrangements: int = 100) -> HandAnalysis:
    """The minimum deadwood of ``cards`` (1..11 cards) under ``rules`` (Rummy's ace_high_low: an ace high or low,
    worth ace_value_high_low when left over), at most ``max_arrangements`` of its optimal arrangements, and for
    11 Gin cards every discard leaving deadwood within the rules' knock_limit, in card order."""
    check_hand_size(cards)
    ace_high = rules.game == RUMMY and rules.ace_high_low
    found: list[Arrangement] = []
    truncated = False
    for i, (_, melds) in enumerate(arrangements(cards, ace_high, rules.ace_value)):
        if i == max_arrangements:
            truncated = True
            break
        covered = 0
        for meld in melds:
            covered |= meld
        found.append(Arrangement(melds, cards & ~covered))
    knocks: tuple[KnockDiscard, ...] = ()
    if rules.game == GIN and cards.bit_count() == MAX_HAND:
        knocks = tuple(
            KnockDiscard(c, min_deadwood(cards & ~(1 << c))) for c in knock_discards(cards, rules.knock_limit)
        )
    return HandAnalysis(min_deadwood(cards, ace_high, rules.ace_value), tuple(found), truncated, knocks)
