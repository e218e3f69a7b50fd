"""Hand analysis shared by the bots, on engine masks: meld completers, layoffs onto table melds, Gin's expected
deadwood after the next draw, and Rummy's "cards left out of melds" solver.
"""

from __future__ import annotations

from functools import lru_cache

from engine import CARD_VALUE, all_melds, extends, meldable, min_deadwood, min_deadwood11

FULL_DECK = (1 << 52) - 1
_ROW = 0x1FFF
_ROW14 = 0x3FFF


def cards(mask: int) -> list[int]:
    """Cards of a mask in ascending order."""
    out: list[int] = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def rank_rows(mask: int) -> list[int]:
    """The four 13-bit suit rows of a mask (bit r of row s: the card of rank r and suit s)."""
    return [(mask >> (13 * s)) & _ROW for s in range(4)]


def completers(hand: int, ace_high: bool = False) -> int:
    """Cards outside ``hand`` that would make a meld with two or more cards of ``hand`` (a third card of a pair,
    a card next to or between two run cards, or the extension of a longer meld)."""
    rows = rank_rows(hand)
    a, b, c, d = rows
    pairs = (a & b) | (a & c) | (a & d) | (b & c) | (b & d) | (c & d)  # ranks held at least twice
    out = 0
    for s, row in enumerate(rows):
        r = row | ((row & 1) << 13) if ace_high else row
        near = ((r << 1) & (r << 2)) | ((r << 1) & (r >> 1)) | ((r >> 1) & (r >> 2))
        near &= _ROW14 if ace_high else _ROW
        if ace_high:
            near = (near | (near >> 13)) & _ROW
        out |= ((near | pairs) & ~row & _ROW) << (13 * s)
    return out


def partners(card: int, live: int, ace_high: bool = False) -> int:
    """How many two-card combinations of ``live`` cards would make a meld with ``card``."""
    rank, suit = card % 13, card // 13
    same_rank = [s * 13 + rank for s in range(4) if s != suit and live >> (s * 13 + rank) & 1]
    n = len(same_rank) * (len(same_rank) - 1) // 2
    row = (live >> (13 * suit)) & _ROW
    if ace_high:
        row |= (row & 1) << 13
    has = [bool(row >> r & 1) if 0 <= r <= (13 if ace_high else 12) else False for r in range(rank - 2, rank + 3)]
    if rank == 0 and ace_high:  # the ace also sits above the king
        hi = [bool(row >> r & 1) for r in (11, 12)]
        n += hi[0] and hi[1]
    n += (has[0] and has[1]) + (has[1] and has[3]) + (has[3] and has[4])
    return n


def layoff_targets(table: list[int], ace_high: bool = False) -> int:
    """Cards that may be laid off onto one of the table melds (masks) right now."""
    out = 0
    for meld in table:
        low = (meld & -meld).bit_length() - 1
        rank, suit = low % 13, low // 13
        same_rank = sum(1 << (s * 13 + rank) for s in range(4))
        candidates = (same_rank | (_ROW << (13 * suit))) & ~meld
        for c in cards(candidates):
            if extends(meld, c, ace_high):
                out |= 1 << c
    return out


def layable(hand: int, table: list[int], ace_high: bool = False) -> int:
    """Cards of ``hand`` that can be laid off onto the table melds, counting chains (9H then TH onto 6-7-8H)."""
    melds = list(table)
    out = 0
    changed = True
    while changed:
        changed = False
        for c in cards(hand & ~out):
            for i, m in enumerate(melds):
                if extends(m, c, ace_high):
                    melds[i] = m | (1 << c)
                    out |= 1 << c
                    changed = True
                    break
    return out


# ------------------------------------------------------------------------------------------------- Gin


def expected_deadwood(rest: int, unseen: int) -> float:
    """Gin: the expected deadwood of the 10-card hand ``rest`` after drawing one card uniformly from ``unseen``
    and discarding the best card (which may be the one drawn)."""
    n = unseen.bit_count()
    dead = min_deadwood(rest)
    if not n:
        return float(dead)
    drop = min_deadwood11(rest)  # best 9-card deadwood: what a drawn card that melds nowhere adds to
    useful = completers(rest) & unseen
    total = 0
    for x in cards(useful):
        total += min_deadwood11(rest | (1 << x))
    other = unseen & ~useful
    if other:
        for suit in range(4):
            row = (other >> (13 * suit)) & _ROW
            while row:
                low = row & -row
                r = low.bit_length() - 1
                total += min(dead, drop + CARD_VALUE[r])
                row ^= low
    return total / n


# ------------------------------------------------------------------------------------------------- Rummy

_BY_LOW: dict[bool, tuple[tuple[int, ...], ...]] = {}


def _melds_by_low(ace_high: bool) -> tuple[tuple[int, ...], ...]:
    got = _BY_LOW.get(ace_high)
    if got is None:
        lists: list[list[int]] = [[] for _ in range(52)]
        for m in all_melds(ace_high):
            lists[(m & -m).bit_length() - 1].append(m)
        got = tuple(tuple(x) for x in lists)
        _BY_LOW[ace_high] = got
    return got


#: weight of one unmelded card against its value: fewest cards left first, then the lowest value
CARD_WEIGHT = 256


def card_value(card: int, ace_value: int = 1) -> int:
    """Points of one card left in hand."""
    return ace_value if card % 13 == 0 else CARD_VALUE[card]


@lru_cache(maxsize=1 << 17)
def _left_cost(mask: int, ace_high: bool, ace_value: int, free: int) -> int:
    if not mask:
        return 0
    low = mask & -mask
    c = low.bit_length() - 1
    own = 0 if free >> c & 1 else CARD_WEIGHT + card_value(c, ace_value)
    best = own + _left_cost(mask ^ low, ace_high, ace_value, free)
    for m in _melds_by_low(ace_high)[c]:
        if m & mask == m:
            v = _left_cost(mask ^ m, ace_high, ace_value, free)
            if v < best:
                best = v
    return best


def left_cost(hand: int, ace_high: bool = False, ace_value: int = 1, free: int = 0) -> int:
    """Rummy: ``cards * CARD_WEIGHT + value`` of the cards of ``hand`` left out of melds, minimized over the
    arrangements; cards in ``free`` (e.g. layable ones) cost nothing when left out."""
    m = meldable(hand, ace_high)
    outside = hand & ~m & ~free
    cost = sum(CARD_WEIGHT + card_value(c, ace_value) for c in cards(outside))
    return cost + _left_cost(hand & m, ace_high, ace_value, free & m)


def best_melds(hand: int, ace_high: bool = False, ace_value: int = 1, free: int = 0) -> tuple[int, ...]:
    """One arrangement reaching ``left_cost``: its melds (masks), longest first."""
    melds: list[int] = []
    mask = hand & meldable(hand, ace_high)
    free &= mask
    target = _left_cost(mask, ace_high, ace_value, free)
    while mask:
        low = mask & -mask
        c = low.bit_length() - 1
        own = 0 if free >> c & 1 else CARD_WEIGHT + card_value(c, ace_value)
        if own + _left_cost(mask ^ low, ace_high, ace_value, free) == target:
            target -= own
            mask ^= low
            continue
        for m in _melds_by_low(ace_high)[c]:
            if m & mask == m and _left_cost(mask ^ m, ace_high, ace_value, free) == target:
                melds.append(m)
                mask ^= m
                break
        else:  # pragma: no cover - the memo says one of the branches reaches the target
            raise AssertionError("best_melds: no branch reaches the minimum")
    return tuple(sorted(melds, key=lambda m: -m.bit_count()))


def rummy_cost(hand: int, targets: int, ace_high: bool, ace_value: int) -> int:
    """``left_cost`` of a Rummy hand whose cards in ``targets`` (layable onto the table) cost nothing."""
    return left_cost(hand, ace_high, ace_value, hand & targets)


def expected_rummy_cost(rest: int, unseen: int, targets: int, ace_high: bool, ace_value: int) -> float:
    """Rummy: the expected ``rummy_cost`` of ``rest`` after drawing one card uniformly from ``unseen`` and
    discarding the best card (which may be the one drawn)."""
    n = unseen.bit_count()
    base = rummy_cost(rest, targets, ace_high, ace_value)
    if not n:
        return float(base)
    held = cards(rest)
    drop = min((rummy_cost(rest & ~(1 << c), targets, ace_high, ace_value) for c in held), default=base)
    useful = (completers(rest, ace_high) | targets) & unseen
    total = 0
    for x in cards(useful):
        with_x = rest | (1 << x)
        best = base
        for c in held:
            v = rummy_cost(with_x & ~(1 << c), targets, ace_high, ace_value)
            if v < best:
                best = v
        total += best
    for x in cards(unseen & ~useful):
        total += min(base, drop + CARD_WEIGHT + card_value(x, ace_value))
    return total / n
