"""An independent reference model of Gin Rummy (RULES.md sections 1 and 2), for differential tests.

Written from RULES.md alone, without the engine's internals: it shares only the public card encoding (a card is
``suit * 13 + rank``, rank 0 = ace .. 12 = king, suits S H D C; a set of cards is an int bitmask) and the move
types of ``engine.moves``. Deadwood is an exhaustive search: the lowest card of a hand is either deadwood or in
one of the melds that contain it, and that choice is tried every way (memoized per hand).

``GinModel`` follows one hand: the cards come from the engine's deal, every rule decision (which moves are legal,
knock limits, deadwood, layoffs, the hand's score) is the model's own. ``MatchModel`` keeps the match: points,
boxes, Hollywood's three games, the next dealer and the match's end with its bonuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from itertools import product
from typing import Any

from engine.moves import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    LayOff,
    MeldMove,
    Move,
    Pass,
)

RANKS = "A23456789TJQK"
SUITS = "SHDC"


def value(card: int) -> int:
    """RULES.md 1: ace 1, 2-10 face value, J Q K 10."""
    return min(card % 13 + 1, 10)


def cards(mask: int) -> list[int]:
    """The cards of a mask, ascending."""
    return [c for c in range(52) if mask >> c & 1]


def mask_value(mask: int) -> int:
    """Total value of the cards of a mask."""
    return sum(value(c) for c in cards(mask))


def text(mask: int) -> str:
    """Card text of a mask (for messages)."""
    return " ".join(RANKS[c % 13] + SUITS[c // 13] for c in cards(mask))


def is_set(mask: int) -> bool:
    """RULES.md 1: 3 or 4 cards of one rank."""
    cs = cards(mask)
    return 3 <= len(cs) <= 4 and len({c % 13 for c in cs}) == 1


def is_run(mask: int) -> bool:
    """RULES.md 1: 3 or more cards of one suit in consecutive rank, ace low, never round the corner."""
    cs = cards(mask)
    if len(cs) < 3 or len({c // 13 for c in cs}) != 1:
        return False
    ranks = [c % 13 for c in cs]
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


def is_meld(mask: int) -> bool:
    """A set or a run."""
    return is_set(mask) or is_run(mask)


def _all_melds() -> tuple[int, ...]:
    out: list[int] = []
    for rank in range(13):
        same = [s * 13 + rank for s in range(4)]
        for leave_out in range(5):  # 4 three-card sets and the four-card set
            out.append(sum(1 << c for i, c in enumerate(same) if i != leave_out))
    for suit in range(4):
        for lo in range(13):
            for hi in range(lo + 2, 13):
                out.append(sum(1 << (suit * 13 + r) for r in range(lo, hi + 1)))
    return tuple(out)


ALL_MELDS = _all_melds()
MELDS_WITH: tuple[tuple[int, ...], ...] = tuple(tuple(m for m in ALL_MELDS if m >> c & 1) for c in range(52))


@cache
def min_deadwood(hand: int) -> int:
    """RULES.md 2: the deadwood of the arrangement of melds that minimizes it (exhaustive)."""
    if not hand:
        return 0
    low = (hand & -hand).bit_length() - 1
    rest = hand & ~(1 << low)
    best = value(low) + min_deadwood(rest)
    for m in MELDS_WITH[low]:
        if m & hand == m:
            best = min(best, min_deadwood(hand & ~m))
    return best


def arrangements(hand: int, limit: int = 999) -> list[tuple[int, tuple[int, ...]]]:
    """Every arrangement of disjoint melds within ``hand`` (each once) as (deadwood, melds), deadwood <= limit."""
    out: list[tuple[int, tuple[int, ...]]] = []

    def walk(left: int, melds: tuple[int, ...], dead: int) -> None:
        if dead > limit or len(out) > 5000:
            return
        if not left:
            out.append((dead, melds))
            return
        low = (left & -left).bit_length() - 1
        walk(left & ~(1 << low), melds, dead + value(low))
        for m in MELDS_WITH[low]:
            if m & left == m:
                walk(left & ~m, (*melds, m), dead)

    walk(hand, (), 0)
    return out


def fits(meld: int, card: int) -> bool:
    """RULES.md 2: the card lays off on the meld: the fourth card of a 3-card set, or extends a run at an end."""
    if meld >> card & 1:
        return False
    if is_set(meld):
        return len(cards(meld)) == 3 and cards(meld)[0] % 13 == card % 13
    cs = cards(meld)
    if card // 13 != cs[0] // 13:
        return False
    r = card % 13
    return r == cs[0] % 13 - 1 or r == cs[-1] % 13 + 1


def layoff_choices(meld: int, hand: int) -> list[int]:
    """Every set of the hand's cards that can be laid off on one meld (each as a mask, the empty one included)."""
    if is_set(meld):
        fourth = [c for c in cards(hand) if fits(meld, c)]
        return [0, *(1 << c for c in fourth)]
    cs = cards(meld)
    suit, lo, hi = cs[0] // 13, cs[0] % 13, cs[-1] % 13
    below, above = [0], [0]
    r, m = lo - 1, 0
    while r >= 0 and hand >> (suit * 13 + r) & 1:
        m |= 1 << (suit * 13 + r)
        below.append(m)
        r -= 1
    r, m = hi + 1, 0
    while r <= 12 and hand >> (suit * 13 + r) & 1:
        m |= 1 << (suit * 13 + r)
        above.append(m)
        r += 1
    return [b | a for b in below for a in above]


def best_defence(hand: int, knocker_melds: list[int]) -> int:
    """RULES.md 2: the defender's minimum deadwood over layoffs and own melds together."""
    best = min_deadwood(hand)
    for combo in product(*(layoff_choices(m, hand) for m in knocker_melds)):
        used = 0
        for part in combo:
            if used & part:
                break
            used |= part
        else:
            best = min(best, min_deadwood(hand & ~used))
    return best


@dataclass
class Outcome:
    """How a hand ended: reason as the engine names it, the winner (None: nobody scored) and the points."""

    reason: str
    winner: int | None
    points: int
    knocker_deadwood: int | None = None
    defender_deadwood: int | None = None


@dataclass
class GinModel:
    """One hand of Gin, as RULES.md 2 plays it. Phases: take_or_pass, draw, discard, layoff, last_card, over."""

    rules: Any  # engine.Rules: only its option values are read
    dealer: int
    hands: list[int]
    stock: list[int]  # bottom to top
    discard: list[int]
    phase: str = "draw"
    to_act: int = 0
    taken: int = -1
    passes: int = 0
    turns: int = 0
    must_knock: bool = False
    limit: int = 10
    upcard: int = -1
    knocker: int = -1
    knock_dead: int = 0
    table: dict[int, int] = field(default_factory=dict)  # knocker's meld id -> its cards now
    defender_melds: list[int] = field(default_factory=list)
    outcome: Outcome | None = None
    known: list[int] = field(default_factory=lambda: [0, 0])  # cards everyone saw taken from the discard pile

    def hidden_from(self, viewer: int) -> int:
        """RULES.md 4: the cards ``viewer`` (a seat, or -1 for a spectator) may not see during the hand: the stock,
        and the other hands except cards taken from the discard pile (and, after a knock, the knocker's
        deadwood: their melds and deadwood are public)."""
        hidden = sum(1 << c for c in self.stock)
        for seat in (0, 1):
            if seat == viewer or (self.phase == "layoff" and seat == self.knocker):
                continue
            hidden |= self.hands[seat] & ~self.known[seat]
        return hidden

    def __post_init__(self) -> None:
        r = self.rules
        self.upcard = self.discard[-1]
        self.to_act = 1 - self.dealer
        self.phase = "take_or_pass" if r.first_upcard_rule == "take_or_pass" else "draw"
        if r.oklahoma:
            rank = self.upcard % 13
            if rank == 0:
                self.limit = 0 if r.oklahoma_ace == "gin_only" else 1
            else:
                self.limit = value(self.upcard)
        else:
            self.limit = r.knock_limit

    # ---------------------------------------------------------------------------------------------- judgements

    def can_discard(self, card: int) -> bool:
        """The card may be discarded now (held, and not the card just taken unless the option allows it)."""
        held = self.hands[self.to_act]
        return bool(held >> card & 1) and (card != self.taken or self.rules.discard_taken_card_allowed)

    def can_knock_discard(self, card: int) -> bool:
        """The card may be discarded with a knock (after taking the fiftieth card: not that card)."""
        return self.can_discard(card) and not (self.must_knock and card == self.taken)

    def knock_discards(self) -> list[int]:
        """The legal discards that leave 10 cards of minimum deadwood within the limit."""
        held = self.hands[self.to_act]
        return [c for c in cards(held) if self.can_knock_discard(c) and min_deadwood(held & ~(1 << c)) <= self.limit]

    def can_big_gin(self, held: int | None = None) -> bool:
        """RULES.md 2: big gin on (bonus > 0) and all 11 cards melded."""
        held = self.hands[self.to_act] if held is None else held
        return self.rules.big_gin_bonus > 0 and held.bit_count() == 11 and min_deadwood(held) == 0

    def last_card_useful(self) -> bool:
        """fiftieth_card: taking the last discard would let the seat knock or go big gin with it."""
        held = self.hands[self.to_act] | (1 << self.discard[-1])
        taken = self.discard[-1]
        if self.can_big_gin(held):
            return True
        # "knock with it": the knock keeps the card (docs/rules.md: a knock throwing it back is no knock with
        # it, even with discard_taken_card_allowed; RULES.md's words leave that open)
        return any(c != taken and min_deadwood(held & ~(1 << c)) <= self.limit for c in cards(held))

    def legal(self) -> set[Move]:
        """The complete set of legal moves (knocks and big gin with the referee's pick, ``Declare()`` best)."""
        p, held = self.phase, self.hands[self.to_act]
        if p == "take_or_pass":
            return {DrawDiscard(), Pass()}
        if p == "draw":
            out: set[Move] = {DrawStock()}
            if self.passes != 2 and self.discard:  # both passed: the stock only, this once
                out.add(DrawDiscard())
            return out
        if p == "last_card":
            return {Pass(), DrawDiscard()} if self.last_card_useful() else {Pass()}
        if p == "discard":
            out = set() if self.must_knock else {Discard(c) for c in cards(held) if self.can_discard(c)}
            out |= {Knock(c) for c in self.knock_discards()}
            if self.can_big_gin():
                out.add(BigGin())
            return out
        if p == "layoff":
            out = {Done(), Declare()}
            out |= {MeldMove(m) for m in ALL_MELDS if m & held == m}
            out |= {LayOff(c, i) for i, m in self.table.items() for c in cards(held) if fits(m, c)}
            return out
        return set()

    def judge(self, move: Move) -> bool:
        """Whether any move (also one with declared melds or layoffs) is legal now, by the model."""
        held = self.hands[self.to_act]
        match move:
            case Knock(discard=c, melds=melds) if melds is not None:
                if self.phase != "discard" or not self.can_knock_discard(c):
                    return False
                dead = self._declared_dead(held & ~(1 << c), melds)
                return dead is not None and dead <= self.limit
            case BigGin(melds=melds) if melds is not None:
                return self.phase == "discard" and self.can_big_gin() and self._declared_dead(held, melds) == 0
            case Declare(melds=melds, layoffs=layoffs) if melds is not None or layoffs is not None:
                return self.phase == "layoff" and self._declaration(melds or (), layoffs or ()) is not None
            case _:
                return move in self.legal()

    @staticmethod
    def _declared_dead(ten: int, melds: tuple[int, ...]) -> int | None:
        used = 0
        for m in melds:
            if not is_meld(m) or m & ten != m or m & used:
                return None
            used |= m
        return mask_value(ten & ~used)

    def _declaration(self, melds: tuple[int, ...], layoffs: tuple[tuple[int, int], ...]) -> int | None:
        """The defender's hand left after a one-move declaration, or None when it is not valid."""
        held = self.hands[self.to_act]
        for m in melds:
            if not is_meld(m) or m & held != m:
                return None
            held &= ~m
        # docs/rules.md: the layoffs of one declare may come "in any order that can be played": so each meld's
        # cards together must be one playable extension of it (RULES.md leaves the list's order open)
        groups: dict[int, int] = {}
        for c, i in layoffs:
            if i not in self.table or not held >> c & 1:
                return None
            held &= ~(1 << c)
            groups[i] = groups.get(i, 0) | 1 << c
        for i, group in groups.items():
            if group not in layoff_choices(self.table[i], group):
                return None
        return held

    # --------------------------------------------------------------------------------------------- the moves

    def apply(self, move: Move) -> None:
        """Apply a move the model judged legal."""
        seat = self.to_act
        match move:
            case Pass():
                if self.phase == "take_or_pass":
                    self.passes += 1
                    if self.passes == 1:
                        self.to_act = self.dealer
                    else:
                        self.to_act, self.phase = 1 - self.dealer, "draw"
                else:  # fiftieth_card: the hand is drawn
                    self._end(Outcome("stock_end", None, 0))
            case DrawStock():
                self.passes = 3 if self.passes == 2 else self.passes
                self.hands[seat] |= 1 << self.stock.pop()
                self.taken, self.phase = -1, "discard"
            case DrawDiscard():
                c = self.discard.pop()
                self.hands[seat] |= 1 << c
                self.known[seat] |= 1 << c
                if self.phase == "last_card":
                    self.must_knock = True
                self.taken, self.phase = c, "discard"
            case Discard(card=c):
                self.hands[seat] &= ~(1 << c)
                self.discard.append(c)
                self.turns += 1
                self._after_discard()
            case Knock(discard=c, melds=melds):
                self.hands[seat] &= ~(1 << c)
                self.discard.append(c)
                self.turns += 1
                assert melds is not None, "the test passes the engine's pick in"
                self._knock(melds)
            case BigGin():
                d = min_deadwood(self.hands[1 - seat])
                self._end(Outcome("big_gin", seat, self._double(self.rules.big_gin_bonus + d), 0, d))
            case MeldMove(cards=m):
                self.hands[seat] &= ~m
                self.defender_melds.append(m)
            case LayOff(card=c, meld_id=i):
                self.hands[seat] &= ~(1 << c)
                self.table[i] |= 1 << c
            case Done():
                held = self.hands[seat]
                self._score(min_deadwood(held) if self.rules.defender_deadwood == "best" else mask_value(held))
            case Declare(melds=melds, layoffs=layoffs):
                if melds is None and layoffs is None:
                    self._score(best_defence(self.hands[seat], list(self.table.values())))
                else:
                    left = self._declaration(melds or (), layoffs or ())
                    assert left is not None
                    self.hands[seat] = left
                    self._score(min_deadwood(left) if self.rules.defender_deadwood == "best" else mask_value(left))
            case _:
                raise AssertionError(f"unexpected move {move}")

    def _after_discard(self) -> None:
        self.taken, self.must_knock = -1, False
        if len(self.stock) == 2:
            if self.rules.stock_end_rule == "draw":
                self._end(Outcome("stock_end", None, 0))
                return
            self.to_act, self.phase = 1 - self.to_act, "last_card"
            return
        if self.turns >= self.rules.max_turns:
            self._end(Outcome("turn_cap", None, 0))
            return
        self.to_act, self.phase = 1 - self.to_act, "draw"

    def _knock(self, melds: tuple[int, ...]) -> None:
        seat = self.to_act
        k = self._declared_dead(self.hands[seat], melds)
        assert k is not None and k <= self.limit
        self.knocker, self.knock_dead, self.must_knock = seat, k, False
        if k == 0:
            d = min_deadwood(self.hands[1 - seat])
            self._end(Outcome("gin", seat, self._double(self.rules.gin_bonus + d), 0, d))
            return
        for x in melds:  # the knocker's melds go on the table
            self.hands[seat] &= ~x
        self.to_act, self.phase = 1 - seat, "layoff"

    def set_table(self, ids: dict[int, int]) -> None:
        """The knocker's melds on the table by id (the ids are the engine's names; the cards are checked)."""
        self.table = dict(ids)

    def _score(self, d: int) -> None:
        r, k = self.rules, self.knock_dead
        kd = dict(knocker_deadwood=k, defender_deadwood=d)
        if k < d:
            self._end(Outcome("knock", self.knocker, self._double(d - k), **kd))
        elif k > d or r.undercut_on_tie:
            self._end(Outcome("undercut", 1 - self.knocker, self._double(r.undercut_bonus + k - d), **kd))
        else:
            self._end(Outcome("tie", None, 0, **kd))

    def _double(self, points: int) -> int:
        r = self.rules
        return points * 2 if r.oklahoma and r.spades_double and self.upcard // 13 == 0 else points

    def _end(self, outcome: Outcome) -> None:
        self.outcome, self.phase = outcome, "over"


@dataclass
class MatchModel:
    """A Gin match: hand points, boxes, the dealer, Hollywood's three games, the end and its bonuses."""

    rules: Any
    dealer: int = 0
    points: list[int] = field(default_factory=lambda: [0, 0])
    boxes: list[int] = field(default_factory=lambda: [0, 0])
    games: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0], [0, 0]])
    game_boxes: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0], [0, 0]])
    game_wins: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0], [0, 0]])
    ended: list[bool] = field(default_factory=lambda: [False, False, False])
    over: bool = False
    entered: list[int] = field(default_factory=list)

    def record(self, outcome: Outcome) -> None:
        """A hand's outcome: scores, the next dealer (the winner; the same dealer after a hand nobody won)."""
        w = outcome.winner
        self.entered = []
        if w is None:
            return
        self.dealer = w
        self.points[w] += outcome.points
        self.boxes[w] += 1
        r = self.rules
        if not r.hollywood:
            self.over = self.points[w] >= r.target_score
            return
        was_ended = list(self.ended)
        had_win = [row[w] > 0 for row in self.game_wins]
        for g in range(3):
            if not was_ended[g] and (g == 0 or had_win[g - 1] or was_ended[g - 1]):
                self.entered.append(g)
        for g in self.entered:
            self.games[g][w] += outcome.points
            self.game_boxes[g][w] += 1
            self.game_wins[g][w] += 1
            if self.games[g][w] >= r.target_score:
                self.ended[g] = True
        self.points = [sum(g[s] for g in self.games) for s in range(2)]
        self.over = all(self.ended)

    def _breakdown(self, points: list[int], boxes: list[int]) -> dict[str, list[int]]:
        r = self.rules
        winner = max(range(2), key=lambda s: points[s])  # the seat that reached the target
        loser = 1 - winner
        bonus = r.shutout_game_bonus if points[loser] == 0 and r.shutout_game_bonus > 0 else r.game_bonus
        game_bonus = [bonus if s == winner else 0 for s in range(2)]
        box_bonus = [r.box_bonus * boxes[s] for s in range(2)]
        totals = [points[s] + box_bonus[s] + game_bonus[s] for s in range(2)]
        return {"points": points, "boxes": boxes, "box_bonus": box_bonus, "game_bonus": game_bonus,
                "totals": totals}  # fmt: skip

    def result(self) -> dict[str, Any]:
        """The match's totals and winners (and per-game breakdowns in Hollywood)."""
        if not self.rules.hollywood:
            b = self._breakdown(list(self.points), list(self.boxes))
            winner = max(range(2), key=lambda s: self.points[s])
            return {"totals": b["totals"], "winners": [winner], "detail": b}
        games = [self._breakdown(list(self.games[g]), list(self.game_boxes[g])) for g in range(3)]
        totals = [sum(g["totals"][s] for g in games) for s in range(2)]
        top = max(totals)
        return {"totals": totals, "winners": [s for s in range(2) if totals[s] == top], "games": games}
