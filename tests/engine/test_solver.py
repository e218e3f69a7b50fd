"""The deadwood solver against a brute force: exact minimum deadwood, meldable cards, 11-card knock discards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import engine as E
from engine.gin import knock_discards
from engine.melds import all_melds, meldable


def brute_min_deadwood(hand: int, ace_high: bool = False, ace_value: int = 1) -> int:
    """Try every set of disjoint melds drawn from the hand."""
    melds = [m for m in all_melds(ace_high) if m & hand == m]
    best = E.mask_value(hand, ace_value)

    def rec(i: int, used: int) -> None:
        nonlocal best
        best = min(best, E.mask_value(hand & ~used, ace_value))
        for j in range(i, len(melds)):
            if not melds[j] & used:
                rec(j + 1, used | melds[j])

    rec(0, 0)
    return best


def hands(size: int) -> st.SearchStrategy[int]:
    """Random hands biased towards melds (cards from a few ranks and suits)."""
    near = st.lists(st.integers(0, 51), min_size=size, max_size=size, unique=True)
    dense = st.lists(
        st.builds(lambda r, s: s * 13 + r, st.integers(0, 6), st.integers(0, 2)),
        min_size=size, max_size=size, unique=True,
    )
    return st.one_of(near, dense).map(E.mask_of)


@settings(max_examples=400, deadline=None)
@given(hand=hands(10), ace_high=st.booleans())
def test_min_deadwood_is_exact(hand: int, ace_high: bool) -> None:
    """RULES.md 2, Deadwood: the minimum over every arrangement, never greedy."""
    assert E.min_deadwood(hand, ace_high) == brute_min_deadwood(hand, ace_high)
    if ace_high:
        assert E.min_deadwood(hand, True, 15) == brute_min_deadwood(hand, True, 15)


@settings(max_examples=300, deadline=None)
@given(hand=hands(11), ace_high=st.booleans())
def test_meldable_is_the_union_of_melds_in_hand(hand: int, ace_high: bool) -> None:
    union = 0
    for m in all_melds(ace_high):
        if m & hand == m:
            union |= m
    assert meldable(hand, ace_high) == union


@settings(max_examples=300, deadline=None)
@given(hand=hands(11), limit=st.integers(0, 15))
def test_knock_discards_and_min_deadwood11_match_brute_force(hand: int, limit: int) -> None:
    """RULES.md 2: with 11 cards, can knock = some discard leaves deadwood <= the limit."""
    per_discard = {c: brute_min_deadwood(hand & ~(1 << c)) for c in E.cards_of(hand)}
    assert knock_discards(hand, limit) == [c for c, d in per_discard.items() if d <= limit]
    assert E.min_deadwood11(hand) == min(per_discard.values())


@settings(max_examples=200, deadline=None)
@given(hand=hands(11))
def test_every_minimum_arrangement_reaches_the_minimum(hand: int) -> None:
    best = E.min_deadwood(hand)
    arrangements = list(E.arrangements(hand))
    assert arrangements
    for dead, melds in arrangements:
        covered = 0
        for m in melds:
            assert E.meld_kind(m) is not None and not m & covered
            covered |= m
        assert dead == best == E.mask_value(hand & ~covered)
