"""The 52-card check's pile sums: taken from the last pile checked when a pile is that one less or plus a card on
top, and the same as summed afresh; a card repeated in such a pile (or in a pile and a hand) is still caught."""

from __future__ import annotations

import random

import pytest

import engine as E
from engine import state as S


def _plain_sum(pile: tuple[int, ...]) -> int:
    return sum(1 << c for c in pile)


def test_pile_sums_from_the_memo_equal_the_plain_sums_on_random_piles() -> None:
    rng = random.Random(52)
    for _ in range(3000):
        old = tuple(rng.choice(range(52)) for _ in range(rng.randrange(0, 8)))  # repeats allowed: any tuple
        memo = (old, _plain_sum(old))
        for pile in (old[:-1], (*old, rng.randrange(52)), old, tuple(rng.sample(range(52), len(old)))):
            assert S._pile_sum_after(pile, memo) == _plain_sum(pile)


def test_check_cards_agrees_with_a_plain_check_along_random_games() -> None:
    for game_no in range(20):
        rules = E.rules_from_profile("gin" if game_no % 2 else "rummy", **({} if game_no % 2 else {"players": 3}))
        s = E.new_game(rules, game_no.to_bytes(16, "big"))
        rng = random.Random(game_no)
        for _ in range(300):
            legal = E.legal_moves(s)
            if not legal:
                break
            s, _ = E.apply(s, s.to_act, rng.choice(legal))  # apply runs check_cards
            places = [*s.stock, *s.discard, *(c for h in s.hands for c in E.cards_of(h))]
            places += [c for m in s.melds for c in E.cards_of(m.cards)]
            assert sorted(places) == list(range(52))


@pytest.mark.parametrize("where", ["discard", "stock"])
def test_a_card_put_on_a_checked_pile_while_still_held_is_caught(where: str) -> None:
    s = E.new_game(E.rules_from_profile("gin"), bytes(16))
    E.check_cards(s)  # the memo now holds this state's piles
    held = E.cards_of(s.hands[0])[0]
    odd = s.copy()
    if where == "discard":
        odd.discard = (*s.discard, held)
    else:
        odd.stock = (*s.stock, held)
    with pytest.raises(E.InvariantError):
        E.check_cards(odd)
    odd = s.copy()  # a pile's top card taken off but put nowhere
    if where == "discard":
        odd.discard = s.discard[:-1]
    else:
        odd.stock = s.stock[:-1]
    with pytest.raises(E.InvariantError):
        E.check_cards(odd)
