"""Melds and exact deadwood.

Every meld of the deck is precomputed as a bitmask, once for ace-low-only runs and once with ``Q-K-A`` allowed.
The deadwood solver is an exhaustive search (never greedy): the lowest card left is either deadwood or part of one
of the melds whose lowest card it is; results are memoized per hand mask.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from engine.cards import CARD_VALUE, cards_of, mask_value, top_value

SET = "set"
RUN = "run"


def _build(ace_high: bool) -> tuple[dict[int, str], tuple[tuple[int, ...], ...]]:
    kinds: dict[int, str] = {}
    for rank in range(13):
        suits = [s * 13 + rank for s in range(4)]
        full = sum(1 << c for c in suits)
        kinds[full] = SET
        for c in suits:
            kinds[full ^ (1 << c)] = SET
    for suit in range(4):
        base = suit * 13
        for start in range(13):
            for end in range(start + 2, 13):
                kinds[sum(1 << (base + r) for r in range(start, end + 1))] = RUN
        if ace_high:
            for start in range(1, 12):  # start..K plus the ace on top
                m = sum(1 << (base + r) for r in range(start, 13)) | (1 << base)
                kinds[m] = RUN
    by_low: list[list[int]] = [[] for _ in range(52)]
    for m in kinds:
        low = (m & -m).bit_length() - 1
        by_low[low].append(m)
    return kinds, tuple(tuple(sorted(lst)) for lst in by_low)


_KINDS_LOW, _BY_LOW_LOW = _build(False)
_KINDS_HIGH, _BY_LOW_HIGH = _build(True)


def meld_kind(mask: int, ace_high: bool = False) -> str | None:
    """``"set"``, ``"run"`` or None when the cards are not one valid meld."""
    return (_KINDS_HIGH if ace_high else _KINDS_LOW).get(mask)


def all_melds(ace_high: bool = False) -> list[int]:
    """Every meld of the deck, as masks."""
    return list(_KINDS_HIGH if ace_high else _KINDS_LOW)


# run starts may not be within two ranks of the king: runs never wrap from one suit into the next
_RUN_START_OK = sum(((1 << 11) - 1) << (13 * s) for s in range(4))
_RANK_SPREAD = 1 | (1 << 13) | (1 << 26) | (1 << 39)
_QKA = (1 << 11) | (1 << 12) | 1


def meldable(hand: int, ace_high: bool = False) -> int:
    """The cards of ``hand`` that belong to at least one meld made only of cards of ``hand``."""
    # runs: any card of a stretch of 3 or more consecutive ranks lies in some window of three
    starts = hand & (hand >> 1) & (hand >> 2) & _RUN_START_OK
    cover = starts | (starts << 1) | (starts << 2)
    # sets: ranks present in at least three suits
    a, b, c, d = hand & 0x1FFF, (hand >> 13) & 0x1FFF, (hand >> 26) & 0x1FFF, hand >> 39
    set_ranks = (a & b & c) | (a & b & d) | (a & c & d) | (b & c & d)
    cover |= set_ranks * _RANK_SPREAD
    if ace_high:
        for s in range(4):
            qka = _QKA << (13 * s)
            if hand & qka == qka:
                cover |= qka
    return cover & hand


def _by_low(ace_high: bool) -> tuple[tuple[int, ...], ...]:
    return _BY_LOW_HIGH if ace_high else _BY_LOW_LOW


@lru_cache(maxsize=1 << 18)
def _solve_low(mask: int) -> int:
    if not mask:
        return 0
    low = mask & -mask
    c = low.bit_length() - 1
    best = CARD_VALUE[c] + _solve_low(mask ^ low)
    for m in _BY_LOW_LOW[c]:
        if m & mask == m:
            v = _solve_low(mask ^ m)
            if v < best:
                best = v
                if not v:
                    break
    return best


@lru_cache(maxsize=1 << 16)
def _solve_any(mask: int, ace_high: bool, ace_value: int) -> int:
    if not mask:
        return 0
    low = mask & -mask
    c = low.bit_length() - 1
    best = (ace_value if c % 13 == 0 else CARD_VALUE[c]) + _solve_any(mask ^ low, ace_high, ace_value)
    for m in _by_low(ace_high)[c]:
        if m & mask == m:
            v = _solve_any(mask ^ m, ace_high, ace_value)
            if v < best:
                best = v
    return best


def min_deadwood(hand: int, ace_high: bool = False, ace_value: int = 1) -> int:
    """Exact minimum total value of the cards of ``hand`` left out of melds."""
    m = meldable(hand, ace_high)
    rest = mask_value(hand & ~m, ace_value)
    if not m:
        return rest
    if ace_high or ace_value != 1:
        return rest + _solve_any(m, ace_high, ace_value)
    return rest + _solve_low(m)


def min_deadwood11(hand: int) -> int:
    """Minimum over the 11 discards of the 10-card deadwood (Gin, ace low)."""
    m = meldable(hand)
    best = 1 << 30
    outside = hand & ~m
    out_value = mask_value(outside)
    if outside:
        top = top_value(outside)
        best = min_deadwood(hand) - top
        # discarding a meld card leaves every card outside melds as deadwood
        if out_value >= best:
            return best
    for c in cards_of(m):
        v = min_deadwood(hand & ~(1 << c))
        if v < best:
            best = v
    return best


def arrangements(hand: int, ace_high: bool = False, ace_value: int = 1) -> Iterator[tuple[int, tuple[int, ...]]]:
    """Every minimum-deadwood arrangement of ``hand``: ``(deadwood, melds)``, melds as masks.

    Touching runs of one suit appear both as one meld and split, since both may be declared.
    """
    target = min_deadwood(hand, ace_high, ace_value)
    by_low = _by_low(ace_high)
    results: list[tuple[int, tuple[int, ...]]] = []

    def value(c: int) -> int:
        return ace_value if c % 13 == 0 else CARD_VALUE[c]

    def rec(mask: int, dead: int, melds: tuple[int, ...]) -> None:
        if dead > target:
            return
        if not mask:
            results.append((dead, melds))
            return
        low = mask & -mask
        c = low.bit_length() - 1
        rec(mask ^ low, dead + value(c), melds)
        for m in by_low[c]:
            if m & mask == m:
                rec(mask ^ m, dead, (*melds, m))

    rec(hand, 0, ())
    best = min(d for d, _ in results)
    seen: set[frozenset[int]] = set()
    for d, melds in results:
        key = frozenset(melds)
        if d == best and key not in seen:
            seen.add(key)
            yield d, tuple(sorted(melds))


def best_arrangement(hand: int, ace_high: bool = False, ace_value: int = 1) -> tuple[int, tuple[int, ...]]:
    """One minimum-deadwood arrangement, preferring the fewest melds (longest runs kept whole)."""
    return min(arrangements(hand, ace_high, ace_value), key=lambda a: (len(a[1]), a[1]))



def extends(meld: int, card: int, ace_high: bool = False) -> bool:
    """True when ``card`` may be laid off on the table meld ``meld`` (4th of a set, or either end of a run)."""
    kind = meld_kind(meld, ace_high)
    if kind is None or meld >> card & 1:
        return False
    return meld_kind(meld | (1 << card), ace_high) == kind


@dataclass(frozen=True, slots=True)
class Declaration:
    """A Gin defender's declaration: own melds, layoffs ``(card, meld_id)`` in a valid order, and deadwood."""

    melds: tuple[int, ...]
    layoffs: tuple[tuple[int, int], ...]
    deadwood: int


def _layoff_options(meld: int, hand: int) -> list[tuple[tuple[int, ...], int]]:
    """The ways to lay cards of ``hand`` off on one knocker meld: (cards in a valid order, mask)."""
    kind = meld_kind(meld)
    if kind == SET:
        if meld.bit_count() == 4:
            return [((), 0)]
        rank = ((meld & -meld).bit_length() - 1) % 13
        fourth = [s * 13 + rank for s in range(4) if not meld >> (s * 13 + rank) & 1]
        opts: list[tuple[tuple[int, ...], int]] = [((), 0)]
        if fourth and hand >> fourth[0] & 1:
            opts.append(((fourth[0],), 1 << fourth[0]))
        return opts
    cards = cards_of(meld)
    lo, hi = cards[0], cards[-1]
    suit_base = (lo // 13) * 13
    below: list[int] = []
    c = lo - 1
    while c >= suit_base and hand >> c & 1:
        below.append(c)
        c -= 1
    above: list[int] = []
    c = hi + 1
    while c < suit_base + 13 and hand >> c & 1:
        above.append(c)
        c += 1
    out: list[tuple[tuple[int, ...], int]] = []
    for k in range(len(below) + 1):
        for j in range(len(above) + 1):
            seq = tuple(below[:k]) + tuple(above[:j])
            m = 0
            for x in seq:
                m |= 1 << x
            out.append((seq, m))
    return out


def best_declaration(hand: int, knocker_melds: tuple[tuple[int, int], ...]) -> Declaration:
    """The defender's minimum-deadwood declaration: own melds and layoffs on the knocker's melds, optimized
    together (a card may be kept out of the defender's own melds to be laid off, and runs take chained layoffs).

    ``knocker_melds`` is ``((meld_id, mask), ...)``.
    """
    options = [_layoff_options(m, hand) for _, m in knocker_melds]
    best: Declaration | None = None

    def rec(i: int, used: int, layoffs: tuple[tuple[int, int], ...]) -> None:
        nonlocal best
        if i == len(options):
            rest = hand & ~used
            dead = min_deadwood(rest)
            if best is None or dead < best.deadwood or (
                dead == best.deadwood and len(layoffs) > len(best.layoffs)
            ):
                _, melds = best_arrangement(rest)
                best = Declaration(melds, layoffs, dead)
            return
        meld_id = knocker_melds[i][0]
        for seq, m in options[i]:
            if m & used:
                continue
            rec(i + 1, used | m, layoffs + tuple((c, meld_id) for c in seq))

    rec(0, 0, ())
    assert best is not None
    return best
