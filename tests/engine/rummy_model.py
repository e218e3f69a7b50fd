"""An independent reference model of Rummy, written from RULES.md sections 1, 3 and 4 alone (not from engine/).

It plays a whole match on plain Python sets and lists: the deal, each turn's draw, melds, lay-offs and discard,
going out (and going rummy), the stock rebuilt when it runs out (shuffled or turned over), the stall guard, the
turn cap, the match's end by ``target_score`` or ``max_hands``, and the deal passing to the next seat. It speaks
the engine's public vocabulary only: ``Rules`` for the options, ``Deal`` for a preset deal, the move types, the
card numbering (``suit * 13 + rank``, rank 0 the ace) and the reason codes of docs/rules.md section 9.

What the model cannot know by itself is where randomness lands: a seeded deal's deck order and a shuffled
restock's order. The caller supplies both (``deck`` and ``shuffle``); the model deals that deck itself, one card at
a time from the seat after the dealer, and checks that a shuffled stock holds exactly the cards it should.

Readings the model takes where RULES.md is open (each one is reported, not silently chosen):
- ``max_melds_per_turn`` counts new melds, not lay-offs (the option's name; section 3's text leaves it open);
- ``layoff_requires_own_meld`` (named in section 3, never defined there): the seat has a meld of its own on the
  table, one made earlier in the same turn included;
- a meld or lay-off leaving only the card taken from the discard pile is refused even with
  ``discard_taken_card_allowed`` (section 3 states the refusal without an exception);
- a discard that empties the hand goes out even when it is the ``max_turns``-th discard (the hand is won by that
  discard before the cap, "made after that discard", is checked);
- a preset deal's dealer deals that hand (section 1 says so for the first hand).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from engine import Deal, Discard, DrawDiscard, DrawStock, LayOff, MeldMove, Move, Rules

#: section 3's profile table (and the options both profiles share, and section 1's defaults)
PROFILE_TABLE: dict[str, dict[str, Any]] = {
    "rummy": {"players": 2, "ace_value_high_low": 15, "going_rummy_multiplier": 2, "target_score": 150},
    "rummy-g4a": {"players": 3, "ace_value_high_low": 11, "going_rummy_multiplier": 1, "target_score": 100},
}
SHARED_OPTIONS: dict[str, Any] = {
    "ace_high_low": False, "must_discard_to_go_out": False, "max_melds_per_turn": 0,
    "layoff_requires_own_meld": False, "restock": "shuffle", "discard_taken_card_allowed": False,
    "max_turns": 1000,
}  # fmt: skip

#: a seeded hand's deck, top card first, for hand number ``hand_no`` (0 = the match's first hand)
DeckFn = Callable[[int], Sequence[int]]
#: a shuffled restock: given the cards of the new stock, their order (bottom to top)
ShuffleFn = Callable[[list[int]], Sequence[int]]


def rank(card: int) -> int:
    """0 = ace .. 12 = king."""
    return card % 13


def suit(card: int) -> int:
    """0..3 = S H D C."""
    return card // 13


def card_value(card: int, rules: Rules) -> int:
    """Section 1: ace 1, 2-10 face value, J Q K 10; section 3: an ace is worth ``ace_value_high_low`` with
    ``ace_high_low``."""
    r = rank(card)
    if r == 0:
        return rules.ace_value_high_low if rules.ace_high_low else 1
    return min(r + 1, 10)


def is_set(cards: Iterable[int]) -> bool:
    """Section 1: 3 or 4 cards of one rank."""
    cs = list(cards)
    return len(cs) in (3, 4) and len({rank(c) for c in cs}) == 1


def is_run(cards: Iterable[int], ace_high_low: bool) -> bool:
    """Section 1: 3 or more cards of one suit in consecutive rank, ace low (and, with ``ace_high_low``, also high),
    never round the corner."""
    cs = list(cards)
    if len(cs) < 3 or len({suit(c) for c in cs}) != 1:
        return False
    readings = [[rank(c) for c in cs]]
    if ace_high_low:
        readings.append([13 if rank(c) == 0 else rank(c) for c in cs])
    for ranks in readings:
        ranks.sort()
        if all(b == a + 1 for a, b in pairwise(ranks)):
            return True
    return False


def is_meld(cards: Iterable[int], ace_high_low: bool) -> bool:
    """A set or a run."""
    cs = list(cards)
    return is_set(cs) or is_run(cs, ace_high_low)


def melds_in(hand: Iterable[int], ace_high_low: bool) -> list[tuple[int, ...]]:
    """Every set and run that can be made of cards of ``hand``: the 3- and 4-card choices of one rank, and every
    unbroken stretch of 3 or more ranks of one suit (with ``ace_high_low`` the ace also above the king)."""
    held = set(hand)
    out: list[tuple[int, ...]] = []
    for r in range(13):
        same = [c for c in sorted(held) if rank(c) == r]
        out += [combo for k in (3, 4) for combo in combinations(same, k)]
    for s in range(4):
        ranks = range(14) if ace_high_low else range(13)  # 13: the ace as the card above the king
        for lo in ranks:
            for hi in range(lo + 2, len(ranks)):
                stretch = tuple(13 * s + r % 13 for r in range(lo, hi + 1))
                if not set(stretch) <= held:
                    break
                if len(set(stretch)) == len(stretch):  # A..K..A would hold the ace twice
                    out.append(stretch)
    assert all(is_meld(m, ace_high_low) for m in out)
    return out


def mask(cards: Iterable[int]) -> int:
    """The bitmask of some cards."""
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def cards_in(m: int) -> list[int]:
    """The cards of a bitmask, ascending."""
    return [c for c in range(52) if m >> c & 1]


@dataclass
class ModelMeld:
    """A meld on the table: its id (the order melds were made in this hand), who made it, its cards now, and
    whether it began as a set (a set stays a set, a run a run: melds are never rearranged)."""

    id: int
    owner: int
    cards: set[int]
    is_set: bool


@dataclass
class HandEnd:
    """How a hand ended, as the model sees it."""

    reason: str  # went_out, turn_cap, stalled, no_cards_left
    winner: int | None
    points: int
    going_rummy: bool
    hand_values: list[int]
    hands: list[set[int]]  # section 4: "At the end of a hand all hands are revealed"


@dataclass
class Outcome:
    """What one move did besides changing the table."""

    restocked: bool = False
    hand_end: HandEnd | None = None
    match_over: bool = False


@dataclass
class RummyModel:
    """A Rummy match, from the deal of its first hand to its end."""

    rules: Rules
    presets: tuple[Deal, ...]
    deck: DeckFn
    shuffle: ShuffleFn
    n: int = 0
    scores: list[int] = field(default_factory=list)
    hands_played: int = 0
    hand_no: int = 0
    dealer: int = 0
    phase: str = "draw"  # draw, play, match_over
    to_act: int = 0
    hands: list[set[int]] = field(default_factory=list)
    stock: list[int] = field(default_factory=list)  # bottom to top
    discard: list[int] = field(default_factory=list)  # bottom to top
    melds: list[ModelMeld] = field(default_factory=list)
    taken: int | None = None
    turns: int = 0
    played_earlier: set[int] = field(default_factory=set)
    played_this_turn: bool = False
    melds_this_turn: int = 0
    active_since_rebuild: bool = False
    known: list[set[int]] = field(default_factory=list)  # per seat: cards in hand everyone saw taken from the pile
    winners: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.n = self.rules.players
        self.scores = [0] * self.n
        # section 1: "Unless a preset deal names another, seat 0 deals the first hand of a match"
        self.dealer = self.presets[0].dealer if self.presets else 0
        self._start_hand()

    # ------------------------------------------------------------------------------------------- deal

    def hand_size(self) -> int:
        """Section 3: 2 players 10 cards each, 3-4 players 7, 5-6 players 6."""
        return 10 if self.n == 2 else 7 if self.n <= 4 else 6

    def _start_hand(self) -> None:
        if self.hand_no < len(self.presets):
            d = self.presets[self.hand_no]
            self.dealer = d.dealer
            self.hands = [set(h) for h in d.hands]
            self.discard = [d.upcard]
            self.stock = list(d.stock)
        else:
            order = list(self.deck(self.hand_no))
            # section 1: "cards are dealt one at a time, starting with the seat after the dealer. Then one card is
            # turned face up ... the rest is the face-down stock"
            self.hands = [set() for _ in range(self.n)]
            k = self.hand_size()
            for i in range(self.n * k):
                self.hands[(self.dealer + 1 + i) % self.n].add(order[i])
            self.discard = [order[self.n * k]]
            self.stock = list(reversed(order[self.n * k + 1 :]))  # the deck's next card on top
        self.melds = []
        self.known = [set() for _ in range(self.n)]
        self.to_act = (self.dealer + 1) % self.n  # "The dealer's next seat acts first in every hand"
        self.phase = "draw"
        self.taken = None
        self.turns = 0
        self.played_earlier = set()
        self.played_this_turn = False
        self.melds_this_turn = 0
        self.active_since_rebuild = False

    # ------------------------------------------------------------------------------------------- legality

    def _meld(self, meld_id: int) -> ModelMeld | None:
        for m in self.melds:
            if m.id == meld_id:
                return m
        return None

    def fits(self, m: ModelMeld, card: int) -> bool:
        """Section 3 lay-off: the 4th card of a set, or a card extending a run at either end."""
        grown = m.cards | {card}
        return is_set(grown) if m.is_set else is_run(grown, self.rules.ace_high_low)

    def _leaving(self, rest: set[int]) -> list[str]:
        """Why a meld or lay-off leaving ``rest`` in the hand is refused (section 3, going out)."""
        why = []
        if not rest and self.rules.must_discard_to_go_out:
            why.append("MUST_DISCARD_TO_GO_OUT")
        if self.taken is not None and rest == {self.taken}:
            why.append("WOULD_STRAND_TAKEN_CARD")
        return why

    def violations(self, seat: int, move: Move) -> list[str]:
        """The reason codes that refuse ``move`` by ``seat`` now (empty: the move is legal)."""
        if self.phase == "match_over":
            return ["GAME_OVER"]
        why: list[str] = []
        if seat != self.to_act:
            why.append("NOT_YOUR_TURN")
        hand = self.hands[self.to_act]
        if isinstance(move, DrawStock | DrawDiscard):
            if self.phase != "draw":
                return [*why, "WRONG_PHASE"]
            if isinstance(move, DrawStock) and not self.stock:
                why.append("STOCK_EMPTY")
            if isinstance(move, DrawDiscard) and not self.discard:
                why.append("DISCARD_EMPTY")
            return why
        if self.phase != "play":
            return [*why, "WRONG_PHASE"]
        if isinstance(move, Discard):
            if move.card not in hand:
                why.append("CARD_NOT_IN_HAND")
            elif move.card == self.taken and not self.rules.discard_taken_card_allowed:
                why.append("DISCARD_TAKEN_CARD")
            return why
        if isinstance(move, MeldMove):
            cs = set(cards_in(move.cards))
            if not cs <= hand:
                return [*why, "CARD_NOT_IN_HAND"]
            if not is_meld(cs, self.rules.ace_high_low):
                why.append("INVALID_MELD")
            if self.rules.max_melds_per_turn and self.melds_this_turn >= self.rules.max_melds_per_turn:
                why.append("MELD_LIMIT_REACHED")
            return why + self._leaving(hand - cs)
        if isinstance(move, LayOff):
            if move.card not in hand:
                return [*why, "CARD_NOT_IN_HAND"]
            target = self._meld(move.meld_id)
            if target is None:
                return [*why, "UNKNOWN_MELD"]
            if not self.fits(target, move.card):
                why.append("CANNOT_LAY_OFF")
            if self.rules.layoff_requires_own_meld and not any(m.owner == self.to_act for m in self.melds):
                why.append("LAYOFF_REQUIRES_OWN_MELD")
            return why + self._leaving(hand - {move.card})
        return [*why, "UNKNOWN_MOVE"]

    def legal(self) -> set[Move]:
        """Every legal move of the seat to act (none once the match is over)."""
        if self.phase == "match_over":
            return set()
        seat = self.to_act
        if self.phase == "draw":
            draws: set[Move] = set()
            if self.stock:
                draws.add(DrawStock())
            if self.discard:
                draws.add(DrawDiscard())
            return draws
        hand = sorted(self.hands[seat])
        candidates: list[Move] = [Discard(c) for c in hand]
        candidates += [MeldMove(mask(m)) for m in melds_in(hand, self.rules.ace_high_low)]
        candidates += [LayOff(c, m.id) for m in self.melds for c in hand]
        return {mv for mv in candidates if not self.violations(seat, mv)}

    # ------------------------------------------------------------------------------------------- play

    def apply(self, seat: int, move: Move) -> Outcome:
        """Play a legal move (ValueError for an illegal one) and say what it did."""
        why = self.violations(seat, move)
        if why:
            raise ValueError(f"illegal in the model: {why}")
        out = Outcome()
        hand = self.hands[seat]
        if isinstance(move, DrawStock):
            hand.add(self.stock.pop())
            self.phase = "play"
        elif isinstance(move, DrawDiscard):
            self.taken = self.discard.pop()
            hand.add(self.taken)
            self.known[seat].add(self.taken)  # section 4: "any card taken from the discard pile (everyone saw it)"
            self.phase = "play"
        elif isinstance(move, MeldMove):
            cs = set(cards_in(move.cards))
            hand -= cs
            self.known[seat] -= cs
            self.melds.append(ModelMeld(len(self.melds), seat, cs, is_set(cs)))
            self.melds_this_turn += 1
            self._played()
            if not hand:
                self._end_hand("went_out", seat, out)
        elif isinstance(move, LayOff):
            hand.discard(move.card)
            self.known[seat].discard(move.card)
            target = self._meld(move.meld_id)
            assert target is not None
            target.cards.add(move.card)
            self._played()
            if not hand:
                self._end_hand("went_out", seat, out)
        elif isinstance(move, Discard):
            hand.discard(move.card)
            self.known[seat].discard(move.card)
            self.discard.append(move.card)
            self.turns += 1
            if not hand:
                self._end_hand("went_out", seat, out)
            elif self.turns >= self.rules.max_turns:
                self._end_hand("turn_cap", None, out)
            else:
                self._next_turn(out)
        return out

    def _played(self) -> None:
        self.played_this_turn = True
        self.active_since_rebuild = True

    def _next_turn(self, out: Outcome) -> None:
        if self.played_this_turn:
            self.played_earlier.add(self.to_act)
        self.played_this_turn = False
        self.melds_this_turn = 0
        self.taken = None
        self.to_act = (self.to_act + 1) % self.n
        self.phase = "draw"
        if self.stock:
            return
        # section 3 "Stock runs out", when the next turn begins
        if len(self.discard) <= 1:
            self._end_hand("no_cards_left", None, out)
            return
        if not self.active_since_rebuild:
            self._end_hand("stalled", None, out)
            return
        pile, top = self.discard[:-1], self.discard[-1]
        if self.rules.restock == "turn_over":
            self.stock = list(reversed(pile))  # "its bottom card becomes the top of the stock"
        else:
            order = list(self.shuffle(list(pile)))
            if sorted(order) != sorted(pile):
                raise AssertionError("a shuffled restock must hold exactly the discard pile less its top card")
            self.stock = order
        self.discard = [top]
        self.active_since_rebuild = False
        out.restocked = True

    def _end_hand(self, reason: str, winner: int | None, out: Outcome) -> None:
        values = [sum(card_value(c, self.rules) for c in h) for h in self.hands]
        points, rummy = 0, False
        if winner is not None:
            rummy = winner not in self.played_earlier
            points = sum(v for i, v in enumerate(values) if i != winner)
            if rummy:
                points *= self.rules.going_rummy_multiplier
            self.scores[winner] += points
        out.hand_end = HandEnd(reason, winner, points, rummy, values, [set(h) for h in self.hands])
        self.hands_played += 1
        top = max(self.scores)
        if top >= self.rules.target_score or 0 < self.rules.max_hands <= self.hands_played:
            self.winners = [i for i in range(self.n) if self.scores[i] == top]
            self.phase = "match_over"
            out.match_over = True
            return
        self.hand_no += 1
        self.dealer = (self.dealer + 1) % self.n  # "The deal passes to the next seat after each hand"
        self._start_hand()

    # ------------------------------------------------------------------------------------------- comparison

    def table(self) -> dict[str, Any]:
        """The model's table in comparable form (masks for hands and melds, piles bottom to top)."""
        return {
            "phase": self.phase,
            "to_act": self.to_act,
            "dealer": self.dealer,
            "hand_no": self.hand_no,
            "hands": tuple(mask(h) for h in self.hands),
            "stock": tuple(self.stock),
            "discard": tuple(self.discard),
            "melds": [(m.id, m.owner, mask(m.cards)) for m in self.melds],
            "taken": -1 if self.taken is None else self.taken,
            "known": tuple(mask(k) for k in self.known),
            "turns": self.turns,
            "scores": tuple(self.scores),
            "hands_played": self.hands_played,
        }
