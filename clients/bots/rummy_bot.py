"""A strong Rummy bot (2 to 6 players).

The hand is valued by its cards left out of melds (fewest cards first, then fewest points), cards that can be
laid off onto the table counting as placed. Policy, in the game's words:

- **Draw**: take the top discard when the hand after taking it (and the best discard) is worth more than the hand
  is expected to be worth after a stock draw: in practice when it completes or extends a meld or lays off.
- **Go out** whenever melds, layoffs and at most one discard empty the hand this turn (going rummy when nothing
  was put down earlier).
- **Meld and lay off** everything the best arrangement melds, and every card that fits the table, unless holding
  for rummy: with a going-rummy multiplier, before the first meld of the hand, while no opponent is near going
  out, the hand stays closed.
- **Discard** the card whose removal leaves the best expected hand after the next draw (high, isolated cards
  with dead partners go first; cards with live partners stay), with a penalty for cards the next player can use:
  ones that lay off onto the table, or meld with cards it took from the pile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clients.bots.analysis import (
    CARD_WEIGHT,
    best_melds,
    card_value,
    cards,
    expected_rummy_cost,
    layable,
    layoff_targets,
    rummy_cost,
)
from clients.bots.memory import HandMemory
from clients.view import View
from engine import Discard, DrawDiscard, DrawStock, LayOff, MeldMove, Move, extends, meld_kind, meldable


@dataclass(frozen=True, slots=True)
class RummyParams:
    """Tunable weights of the Rummy policy."""

    danger_weight: float = 0.35 * CARD_WEIGHT  # a card the next player surely uses, in hand-cost units
    danger_weight_close: float = 2.0 * CARD_WEIGHT  # ... when the next player holds 2 cards or fewer
    refused_discount: float = 0.3
    hold_min_opponent_cards: int = 4  # hold for rummy only while every opponent holds at least this many


@dataclass(slots=True)
class _Turn:
    """What the bot knows at one decision, as masks."""

    hand: int
    table: list[int]
    targets: int  # cards that lay off onto the table now (0 when this seat may not lay off)
    unseen: int
    ace_high: bool
    ace_value: int
    taken: int  # the card taken from the pile this turn, -1
    taken_locked: bool  # that card may not be discarded this turn


class RummyBot:
    """The strong Rummy bot (see the module docstring for its policy)."""

    name = "rummy"

    def __init__(self, seed: int | None = None, params: RummyParams | None = None) -> None:
        self.seed = seed
        self.params = params or RummyParams()
        self.memory = HandMemory(2)
        self._closed_hand = (-1, True)  # (hand_no, nothing put down before this turn)

    def observe(self, event: Mapping[str, Any]) -> None:
        """Remember discards, refusals and pickups of the hand."""
        self.memory.observe(event)

    def choose(self, view: View, legal: Sequence[Move]) -> Move:
        """The move for this decision."""
        self.memory.sync(view)
        if view.phase == "draw":
            self._closed_hand = (view.hand_no, not self.memory.played[view.seat])
            return self._draw(view, legal)
        if view.phase == "play":
            return self._play(view, legal)
        return legal[0]

    # ------------------------------------------------------------------------------------------ knowledge

    def _turn(self, view: View) -> _Turn:
        r = view.rules
        ace_high = bool(r.get("ace_high_low", False))
        ace_value = int(r.get("ace_value_high_low", 15)) if ace_high else 1
        table = [m.mask() for m in view.melds]
        may_lay_off = not r.get("layoff_requires_own_meld") or any(m.owner == view.seat for m in view.melds)
        taken = view.taken()
        return _Turn(
            hand=view.hand_mask(), table=table,
            targets=layoff_targets(table, ace_high) if may_lay_off else 0,
            unseen=view.unseen_mask(), ace_high=ace_high, ace_value=ace_value,
            taken=-1 if taken is None else taken,
            taken_locked=taken is not None and not r.get("discard_taken_card_allowed", False),
        )

    def _cost(self, hand: int, t: _Turn) -> int:
        return rummy_cost(hand, t.targets, t.ace_high, t.ace_value)

    # ------------------------------------------------------------------------------------------ draw

    def _draw(self, view: View, legal: Sequence[Move]) -> Move:
        stock: Move = next((m for m in legal if isinstance(m, DrawStock)), legal[0])
        top = view.top_discard()
        if top is None or DrawDiscard() not in legal:
            return stock
        t = self._turn(view)
        with_top = t.hand | (1 << top)
        if not (meldable(with_top, t.ace_high) >> top & 1 or t.targets >> top & 1):
            return stock  # a card that neither melds nor lays off is never worth showing
        allowed = with_top if view.rules.get("discard_taken_card_allowed") else t.hand
        take = min(self._cost(with_top & ~(1 << c), t) for c in cards(allowed))
        if take < expected_rummy_cost(t.hand, t.unseen, t.targets, t.ace_high, t.ace_value):
            return DrawDiscard()
        return stock

    # ------------------------------------------------------------------------------------------ play

    def _play(self, view: View, legal: Sequence[Move]) -> Move:
        t = self._turn(view)
        legal_set = set(legal)
        lay = layable(t.hand, t.table, t.ace_high) if t.targets else 0
        melds = best_melds(t.hand, t.ace_high, t.ace_value, lay)
        placed = lay
        for m in melds:
            placed |= m
        left = t.hand & ~placed
        out = self._going_out(view, t, melds, lay, left)
        if out is not None:
            melds, lay, left = out
        if out is not None or not self._hold(view, t, left):
            step = self._put_down(legal_set, legal, melds, lay)
            if step is not None:
                return step
            if out is not None and left and t.hand == left and Discard(cards(left)[0]) in legal_set:
                return Discard(cards(left)[0])  # the last card: going out
        return self._discard(view, legal, t)

    def _going_out(
        self, view: View, t: _Turn, melds: tuple[int, ...], lay: int, left: int
    ) -> tuple[tuple[int, ...], int, int] | None:
        """The plan (melds, layoffs, the one card to discard) that empties the hand this turn, or None."""
        n_left = left.bit_count()
        if n_left == 1:
            if t.taken_locked and left == 1 << t.taken:
                return None
            return melds, lay, left
        if n_left or (not melds and not lay):
            return None
        if not view.rules.get("must_discard_to_go_out"):
            return melds, lay, 0
        # the last card must be discarded: keep back a layoff card or the spare card of a long meld
        for c in cards(lay):
            if not (t.taken_locked and c == t.taken):
                return melds, lay & ~(1 << c), 1 << c
        for i, m in enumerate(melds):
            if m.bit_count() < 4:
                continue
            for c in cards(m):
                if (t.taken_locked and c == t.taken) or meld_kind(m & ~(1 << c), t.ace_high) is None:
                    continue
                rest = (*melds[:i], m & ~(1 << c), *melds[i + 1 :])
                return rest, lay, 1 << c
        return None

    def _hold(self, view: View, t: _Turn, left: int) -> bool:
        """Keep the hand closed for going rummy (RULES.md: the multiplier rewards going out in one turn)."""
        r = view.rules
        if int(r.get("going_rummy_multiplier", 1)) <= 1 or int(r.get("max_melds_per_turn", 0)):
            return False
        hand_no, closed = self._closed_hand
        if hand_no != view.hand_no or not closed or self.memory.played[view.seat]:
            return False
        others = [n for i, n in enumerate(view.hand_sizes) if i != view.seat]
        if min(others) < self.params.hold_min_opponent_cards:
            return False
        if view.stock_size <= view.players:
            return False  # someone must meld before the stock is rebuilt, or the hand stalls
        return left.bit_count() <= 3 or min(others) >= 6

    def _put_down(
        self, legal_set: set[Move], legal: Sequence[Move], melds: tuple[int, ...], lay: int
    ) -> Move | None:
        """The next meld or layoff of the plan that is legal now."""
        for m in melds:
            if MeldMove(m) in legal_set:
                return MeldMove(m)
        if lay:
            for move in legal:
                if isinstance(move, LayOff) and lay >> move.card & 1:
                    return move
        return None

    def _discard(self, view: View, legal: Sequence[Move], t: _Turn) -> Move:
        discards = [m for m in legal if isinstance(m, Discard)]
        if not discards:
            return legal[0]

        def key(m: Discard) -> tuple[float, int, int]:
            rest = t.hand & ~(1 << m.card)
            value = expected_rummy_cost(rest, t.unseen, t.targets, t.ace_high, t.ace_value)
            value += self.danger(view, m.card, t)
            return (round(value, 6), -card_value(m.card, t.ace_value), m.card)

        return min(discards, key=key)

    def danger(self, view: View, card: int, t: _Turn) -> float:
        """What giving ``card`` to the next player costs us, in hand-cost units."""
        nxt = (view.seat + 1) % view.players
        p = self.params
        weight = p.danger_weight_close if view.hand_sizes[nxt] <= 2 else p.danger_weight
        may_lay_off = not view.rules.get("layoff_requires_own_meld") or any(m.owner == nxt for m in view.melds)
        if may_lay_off and any(extends(m, card, t.ace_high) for m in t.table):
            return weight
        known = view.known_mask(nxt)
        unknown = max(0, view.hand_sizes[nxt] - known.bit_count())
        n_unseen = t.unseen.bit_count()
        q = unknown / n_unseen if n_unseen else 0.0
        refused = self.memory.refused(nxt)

        def prob(c: int) -> float:
            if known >> c & 1:
                return 1.0
            return q if t.unseen >> c & 1 else 0.0

        rank, suit = card % 13, card // 13
        others = [s * 13 + rank for s in range(4) if s != suit]
        combos = [(others[0], others[1]), (others[0], others[2]), (others[1], others[2])]
        ranks = list(range(14)) if t.ace_high else list(range(13))
        positions = [0, 13] if t.ace_high and rank == 0 else [rank]
        for at in positions:
            for lo, hi in ((at - 2, at - 1), (at - 1, at + 1), (at + 1, at + 2)):
                if lo in ranks and hi in ranks:
                    combos.append((suit * 13 + lo % 13, suit * 13 + hi % 13))
        total = 0.0
        for a, b in combos:
            pr = prob(a) * prob(b)
            if not pr:
                continue
            pair = (1 << a) | (1 << b)
            if any(meld_kind(pair | (1 << z), t.ace_high) for z in cards(refused & ~pair)):
                pr *= p.refused_discount
            total += pr
        return weight * min(1.0, total)
