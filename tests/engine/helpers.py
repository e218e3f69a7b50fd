"""Helpers for engine scenario tests: preset deals written as card text, and moves played from text.

``deal_from_text`` builds a complete 52-card ``Deal`` for any game and player count: the hands, the upcard and the
top of the stock are named, every other card goes into the stock below them (in ascending card order, so the
deal is reproducible). ``gin_deal`` and ``rummy_deal`` are the same with the game's hand size checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import engine as E
from engine import Deal, Event, GameState, Move, Rules

#: the seed of every scenario (deals beyond the presets come from it)
SEED = b"rule-clause-scenarios-seed-00001"


def cards(text: str) -> tuple[int, ...]:
    """Cards of space-separated card text (``"AS 2S 10D"``), in the order given; a repeated card is refused."""
    return tuple(E.parse_cards(text.split()))


def mask(text: str) -> int:
    """Mask of space-separated card text."""
    return E.mask_of(cards(text))


def texts(mask_or_cards: int | Iterable[int]) -> set[str]:
    """Card texts of a mask or of a collection of cards, as a set (for order-free comparisons)."""
    if isinstance(mask_or_cards, int):
        return {E.card_text(c) for c in E.cards_of(mask_or_cards)}
    return {E.card_text(c) for c in mask_or_cards}


def deal_from_text(
    dealer: int, hands: Sequence[str], upcard: str, stock_top_first: str = "", hand_size: int | None = None
) -> Deal:
    """A complete preset deal: ``hands[i]`` is seat i's hand, ``stock_top_first`` the first cards of the stock
    from the top down (the next card drawn first); the remaining cards fill the stock below them, in ascending
    card order. Raises ValueError when a card is named twice or a hand has the wrong size."""
    parsed = [cards(h) for h in hands]
    if hand_size is not None:
        for seat, h in enumerate(parsed):
            if len(h) != hand_size:
                raise ValueError(f"seat {seat} is given {len(h)} cards, expected {hand_size}")
    up = E.parse_card(upcard)
    top = cards(stock_top_first)
    named = [c for h in parsed for c in h] + [up, *top]
    if len(set(named)) != len(named):
        dup = sorted({E.card_text(c) for c in named if named.count(c) > 1})
        raise ValueError(f"cards named twice: {' '.join(dup)}")
    rest = [c for c in range(52) if c not in set(named)]
    # the stock is listed bottom to top: the named top cards last, the first named one on top
    stock = tuple(reversed([*top, *rest]))
    return Deal(dealer, tuple(parsed), up, stock)


def gin_deal(dealer: int = 0, hands: Sequence[str] = ("", ""), upcard: str = "KD", stock_top_first: str = "") -> Deal:
    """A Gin preset deal: two hands of 10 cards, the upcard, the named top of the stock, the rest below."""
    if len(hands) != 2:
        raise ValueError("Gin has two hands")
    return deal_from_text(dealer, hands, upcard, stock_top_first, hand_size=10)


def rummy_deal(dealer: int, hands: Sequence[str], upcard: str, stock_top_first: str = "") -> Deal:
    """A Rummy preset deal for ``len(hands)`` players (10, 7 or 6 cards each as RULES.md section 3 deals)."""
    n = len(hands)
    size = 10 if n == 2 else 7 if n <= 4 else 6
    return deal_from_text(dealer, hands, upcard, stock_top_first, hand_size=size)


def start(rules: Rules, *deals: Deal, seed: bytes = SEED) -> GameState:
    """A new match whose first hands are the given preset deals."""
    return E.new_game(rules, seed, presets=tuple(deals))


def as_move(move: str | Move) -> Move:
    """A move object from its text form (``"discard TD"``, ``"knock 5C [AS 2S 3S / 7H 7D 7C]"``) or as given."""
    return E.parse_move(move) if isinstance(move, str) else move


def play(state: GameState, *moves: str | Move) -> tuple[GameState, list[Event]]:
    """Apply the moves in order, each by the seat to act; the final state and all events."""
    events: list[Event] = []
    for m in moves:
        state, evs = E.apply(state, state.to_act, as_move(m))
        events.extend(evs)
    return state, events


def burn_turns(state: GameState, n: int) -> tuple[GameState, list[Event]]:
    """``n`` turns in which the seat to act draws the top of the stock and discards that same card."""
    events: list[Event] = []
    for _ in range(n):
        top = state.stock[-1]
        state, evs = play(state, E.DrawStock(), E.Discard(top))
        events.extend(evs)
    return state, events


def of_kind(events: Iterable[Event], kind: str) -> list[Event]:
    """The events of one kind, in order."""
    return [e for e in events if e.kind == kind]


def hand_ended(events: Iterable[Event]) -> dict[str, Any]:
    """The public record of the (single) hand that ended among ``events``."""
    ended = of_kind(events, "hand_ended")
    if len(ended) != 1:
        raise AssertionError(f"expected one hand_ended event, got {len(ended)}")
    return ended[0].public
