"""A strong Gin Rummy bot.

Policy, in the game's words:

- **Draw**: take the upcard / top discard when the hand after taking it and making the best discard has less
  deadwood than the hand is expected to have after a stock draw; otherwise draw from the stock (or pass).
- **Discard**: the card whose removal leaves the lowest *expected* deadwood after the next draw (exact deadwood of
  every draw from the unseen cards, so partial melds with live cards are worth keeping), plus a penalty for
  feeding the opponent: cards that meld with cards it took from the pile, cards with live meld partners it may
  hold; cards next to what it discarded or refused are safer.
- **Knock**: gin and big gin always; otherwise knock with deadwood up to a limit that falls as the hand goes on
  (the defender's hand improves, so the undercut risk grows), and lower when the opponent has been taking cards.
  The declared arrangement is the minimum-deadwood one that leaves the fewest points of likely layoffs.
- **Defend**: the best declaration (``Declare()``).
- **Last card** (``fiftieth_card``): take it only to go gin / big gin or knock with very low deadwood.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from clients.bots.analysis import FULL_DECK, cards, expected_deadwood
from clients.bots.memory import HandMemory
from clients.view import View
from engine import (
    CARD_VALUE,
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    Move,
    Pass,
    arrangements,
    best_arrangement,
    extends,
    meld_kind,
    meldable,
    min_deadwood,
)


@dataclass(frozen=True, slots=True)
class GinParams:
    """Tunable weights of the Gin policy."""

    danger_weight: float = 5.0  # deadwood points one sure "feeding" discard is worth avoiding
    refused_discount: float = 0.3  # a meld the opponent showed it does not build is this much less likely
    take_margin: float = 0.5  # a non-melding pile card must beat the stock draw by this much
    last_card_knock: int = 4  # fiftieth card: the highest deadwood worth knocking with
    # (turns of the hand so far, knock up to this deadwood); past the last entry: ``late_knock``
    knock_schedule: tuple[tuple[int, int], ...] = ((8, 99), (12, 6), (16, 4))
    late_knock: int = 2


@dataclass(slots=True)
class _Table:
    """What the bot knows at one decision, as masks."""

    hand: int
    opp: int
    opp_known: int  # cards known to be in the opponent's hand
    unseen: int  # stock or the opponent's unknown cards
    live: int  # cards the opponent may hold: unseen | opp_known
    p_unseen: float  # chance an unseen card is in the opponent's hand
    refused: int  # cards the opponent discarded or refused
    opp_taken: int  # cards the opponent ever took from the pile this hand


class GinBot:
    """The strong Gin bot (see the module docstring for its policy)."""

    name = "gin"

    def __init__(self, seed: int | None = None, params: GinParams | None = None) -> None:
        self.seed = seed
        self.params = params or GinParams()
        self.memory = HandMemory(2)

    def observe(self, event: Mapping[str, Any]) -> None:
        """Remember discards, refusals and pickups of the hand."""
        self.memory.observe(event)

    def choose(self, view: View, legal: Sequence[Move]) -> Move:
        """The move for this decision."""
        self.memory.sync(view)
        phase = view.phase
        if phase in ("draw", "take_or_pass"):
            return self._draw(view, legal)
        if phase == "discard":
            return self._discard(view, legal)
        if phase == "last_card":
            return self._last_card(view, legal)
        if phase == "layoff":  # the referee computes the best declaration: melds and layoffs together
            return Declare() if _first(legal, Declare) is not None else _first(legal, Done) or legal[0]
        return legal[0]

    # ------------------------------------------------------------------------------------------ knowledge

    def _table(self, view: View) -> _Table:
        hand = view.hand_mask()
        opp = 1 - view.seat
        opp_known = view.known_mask(opp)
        unseen = view.unseen_mask()
        opp_unknown = max(0, view.hand_sizes[opp] - opp_known.bit_count())
        n_unseen = unseen.bit_count()
        return _Table(
            hand=hand, opp=opp, opp_known=opp_known, unseen=unseen, live=unseen | opp_known,
            p_unseen=opp_unknown / n_unseen if n_unseen else 0.0,
            refused=self.memory.refused(opp), opp_taken=self.memory.taken[opp],
        )

    def danger(self, card: int, t: _Table) -> float:
        """Roughly the chance the opponent can meld ``card``: two-card meld partners it may hold, each partner
        certain when it took that card from the pile, less likely next to cards it refused."""

        def p(c: int) -> float:
            if t.opp_known >> c & 1:
                return 1.0
            return t.p_unseen if t.unseen >> c & 1 else 0.0

        rank, suit = card % 13, card // 13
        combos: list[tuple[int, int]] = []
        others = [s * 13 + rank for s in range(4) if s != suit]
        combos += [(others[0], others[1]), (others[0], others[2]), (others[1], others[2])]
        base = suit * 13
        for lo, hi in ((rank - 2, rank - 1), (rank - 1, rank + 1), (rank + 1, rank + 2)):
            if lo >= 0 and hi <= 12:
                combos.append((base + lo, base + hi))
        total = 0.0
        for a, b in combos:
            pa, pb = p(a), p(b)
            if not pa or not pb:
                continue
            prob = pa * pb
            pair = (1 << a) | (1 << b)
            for z in cards(t.refused & ~pair):
                if meld_kind(pair | (1 << z)) is not None:
                    prob *= self.params.refused_discount
                    break
            total += prob
        if t.refused >> card & 1:
            total *= self.params.refused_discount
        return min(1.0, total)

    def discard_cost(self, hand: int, card: int, t: _Table) -> float:
        """Expected deadwood after the next draw without ``card``, plus the danger of giving it away."""
        return expected_deadwood(hand & ~(1 << card), t.unseen) + self.params.danger_weight * self.danger(card, t)

    # ------------------------------------------------------------------------------------------ phases

    def _draw(self, view: View, legal: Sequence[Move]) -> Move:
        refuse: Move = _first(legal, DrawStock) or _first(legal, Pass) or legal[0]
        top = view.top_discard()
        if top is None or not _first(legal, DrawDiscard):
            return refuse
        t = self._table(view)
        hand = t.hand
        with_top = hand | (1 << top)
        allowed = with_top if view.rules.get("discard_taken_card_allowed") else hand
        taken_dead = min(min_deadwood(with_top & ~(1 << c)) for c in cards(allowed))
        stock_dead = expected_deadwood(hand, t.unseen)
        melds_top = bool(meldable(with_top) >> top & 1) and taken_dead < min_deadwood(hand)
        margin = 0.0 if melds_top else self.params.take_margin
        if taken_dead + margin < stock_dead:
            return _first(legal, DrawDiscard) or refuse
        return refuse

    def _discard(self, view: View, legal: Sequence[Move]) -> Move:
        big = _first(legal, BigGin)
        if big is not None:
            return big
        t = self._table(view)
        hand = t.hand
        knocks = [m for m in legal if isinstance(m, Knock)]
        discards = [m for m in legal if isinstance(m, Discard)]
        if knocks:
            dead = {m.discard: min_deadwood(hand & ~(1 << m.discard)) for m in knocks}
            low = min(dead.values())
            if low == 0 or not discards or low <= self.knock_threshold(view, t):
                return self._knock(hand, [m.discard for m in knocks if dead[m.discard] == low], t)
        if not discards:
            return legal[0]
        best = min(
            discards, key=lambda m: (round(self.discard_cost(hand, m.card, t), 6), -CARD_VALUE[m.card], m.card)
        )
        return best

    def knock_threshold(self, view: View, t: _Table) -> int:
        """The highest deadwood to knock with now."""
        # the engine's count of discards this hand; a view without it: about one stock card per turn
        turns = view.turns or max(0, 30 - view.stock_size)
        limit = self.params.late_knock
        for until, cap in self.params.knock_schedule:
            if turns < until:
                limit = cap
                break
        # an opponent collecting from the pile is building melds: its deadwood falls faster
        limit -= max(0, t.opp_taken.bit_count() - 1)
        return max(limit, 1)

    def _knock(self, hand: int, choices: list[int], t: _Table) -> Move:
        """Knock discarding one of ``choices`` (all reach the lowest deadwood), declaring the arrangement that
        offers the defender the fewest points of layoffs."""
        best: tuple[float, int, int, tuple[int, ...] | None] | None = None
        for card in choices:
            rest = hand & ~(1 << card)
            default = best_arrangement(rest)[1]
            for dead, melds in arrangements(rest):
                exposure = self._exposure(melds, t)
                key = (exposure, -CARD_VALUE[card], card)
                if best is None or key < best[:3]:
                    best = (*key, None if melds == default else melds)
                if dead == 0:
                    break  # gin: no layoffs, any arrangement
        assert best is not None
        return Knock(best[2], best[3])

    def _exposure(self, melds: tuple[int, ...], t: _Table) -> float:
        """Expected points the defender could lay off onto these melds."""
        total = 0.0
        for y in cards(t.live & FULL_DECK):
            for m in melds:
                if extends(m, y):
                    total += CARD_VALUE[y] * (1.0 if t.opp_known >> y & 1 else t.p_unseen)
                    break
        return total

    def _last_card(self, view: View, legal: Sequence[Move]) -> Move:
        take = _first(legal, DrawDiscard)
        top = view.top_discard()
        if take is None or top is None:
            return _first(legal, Pass) or legal[0]
        hand = view.hand_mask() | (1 << top)
        if min_deadwood(hand) == 0 and view.rules.get("big_gin_bonus", 0):
            return take
        allowed = hand if view.rules.get("discard_taken_card_allowed") else hand & ~(1 << top)
        low = min(min_deadwood(hand & ~(1 << c)) for c in cards(allowed))
        limit = view.knock_limit if view.knock_limit is not None else 10
        if low <= min(limit, self.params.last_card_knock):
            return take
        return _first(legal, Pass) or legal[0]


M = TypeVar("M")


def _first(legal: Sequence[Move], kind: type[M]) -> M | None:
    """The first legal move of that type, or None."""
    for m in legal:
        if isinstance(m, kind):
            return m
    return None
