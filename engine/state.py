"""Game state, table melds and events.

``GameState`` is treated as immutable: ``apply`` copies it (every field holds immutable values: ints, tuples,
frozen records) and changes only the copy. Sets of cards are bitmasks; piles are tuples listed bottom to top.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.cards import FULL_DECK, card_text, cards_of
from engine.deal import Deal
from engine.errors import InvariantError
from engine.options import Rules

if TYPE_CHECKING:
    from engine.events import EventDict
    from engine.views import MeldDict


class Phase(StrEnum):
    """The phase of a match: what the seat to act may do. Its values are the text that stored states, views and
    transcripts hold (a ``Phase`` equals its text)."""

    TAKE_OR_PASS = "take_or_pass"  # Gin take_or_pass: take the first upcard, or pass
    DRAW = "draw"
    DISCARD = "discard"  # Gin, after drawing: discard, knock or big gin
    PLAY = "play"  # Rummy, after drawing: meld, lay off, discard
    LAYOFF = "layoff"  # Gin defender after a knock
    LAST_CARD = "last_card"  # Gin fiftieth_card: take the last discard to knock, or pass
    MATCH_OVER = "match_over"


TAKE_OR_PASS, DRAW, DISCARD, PLAY = Phase.TAKE_OR_PASS, Phase.DRAW, Phase.DISCARD, Phase.PLAY
LAYOFF, LAST_CARD, MATCH_OVER = Phase.LAYOFF, Phase.LAST_CARD, Phase.MATCH_OVER
PHASES = tuple(Phase)
#: a phase's text (as stored) -> the Phase (a dict lookup: cheaper than calling Phase)
PHASE_OF: dict[str, Phase] = {p.value: p for p in Phase}

#: viewer ids besides seat numbers
SPECTATOR = -1
REFEREE = -2


class Role(StrEnum):
    """Who a view is for: a seat, a spectator, or the referee (replays). Values as on the wire's JSON."""

    SEAT = "seat"
    SPECTATOR = "spectator"
    REFEREE = "referee"


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table: stable id, who melded it, all its cards now (mask, laid-off cards included) and the
    layoffs made on it as ``(card, seat)`` (a subset of ``cards``, in the order they were laid off)."""

    id: int
    owner: int
    kind: str
    cards: int
    layoffs: tuple[tuple[int, int], ...] = ()  # (card, seat)

    def to_dict(self) -> MeldDict:
        """JSON-able form, cards as text."""
        return {
            "id": self.id,
            "owner": self.owner,
            "kind": self.kind,
            "cards": [card_text(c) for c in _meld_order(self.cards)],
            "layoffs": [{"card": card_text(c), "seat": s} for c, s in self.layoffs],
        }


def _meld_order(mask: int) -> list[int]:
    """Cards of a meld in table order (a Q-K-A run lists its ace last)."""
    cards = cards_of(mask)
    if len({c // 13 for c in cards}) == 1 and cards[0] % 13 == 0 and len(cards) > 1 and cards[1] % 13 != 1:
        return [*cards[1:], cards[0]]
    return list(cards)


class Event(NamedTuple):
    """Something that happened. ``public`` is seen by everyone; ``secret`` only by ``secret_for`` (a seat) and by
    the referee (``secret_for`` None: the referee alone)."""

    kind: str
    seat: int
    public: dict[str, Any]
    secret: dict[str, Any] | None = None
    secret_for: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Complete JSON-able form (referee)."""
        return {"kind": self.kind, "seat": self.seat, "public": self.public, "secret": self.secret,
                "secret_for": self.secret_for}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Event:
        """Inverse of ``to_dict``."""
        return Event(d["kind"], d["seat"], d["public"], d.get("secret"), d.get("secret_for"))


#: ``new_event(Event, (kind, seat, public, secret, secret_for))`` is ``Event(kind, seat, ...)`` without the Python
#: ``__new__`` of a NamedTuple (all five fields given): for the events of every turn (draws and discards).
new_event = tuple.__new__


def event_for(event: Event, viewer: int) -> EventDict:
    """What ``viewer`` (a seat, SPECTATOR or REFEREE) may see of an event."""
    d: dict[str, Any] = {"kind": event.kind, "seat": event.seat, **event.public}
    if event.secret is not None and (viewer == REFEREE or (viewer >= 0 and viewer == event.secret_for)):
        d.update(event.secret)
    return d  # type: ignore[return-value]  # an EventDict: the kind's fields (engine.events)


class GameState:
    """The complete state of one match (all hands, stock order, secret seed). Never mutate a returned state."""

    __slots__ = (
        "active_since_restock",
        "boxes",
        "dealer",
        "discard",
        "game_boxes",
        "games",
        "games_ended",
        "hand_no",
        "hands",
        "hands_played",
        "knock_deadwood",
        "knock_limit",
        "knocker",
        "known",
        "last_hand",
        "melds",
        "melds_this_turn",
        "must_knock",
        "next_meld_id",
        "passes",
        "phase",
        "played",
        "played_this_turn",
        "presets",
        "restocks",
        "result",
        "rules",
        "scores",
        "seed",
        "stock",
        "taken",
        "to_act",
        "turns",
        "upcard",
    )

    rules: Rules
    seed: bytes
    presets: tuple[Deal, ...]
    hand_no: int
    dealer: int
    phase: Phase
    to_act: int
    hands: tuple[int, ...]
    stock: tuple[int, ...]
    discard: tuple[int, ...]
    melds: tuple[TableMeld, ...]
    taken: int  # card taken from the discard pile this turn, -1 when none
    known: tuple[int, ...]  # per seat: cards in hand that everyone saw taken from the discard pile
    turns: int  # turns of this hand that ended with a discard
    passes: int  # take_or_pass: upcard passes so far (2: the first player must draw from the stock)
    must_knock: bool  # fiftieth_card: the last discard was taken, only a knock or big gin may follow
    upcard: int  # the first upcard of this deal
    knock_limit: int
    knocker: int
    knock_deadwood: int
    played: int  # Rummy: mask of seats that melded or laid off in an earlier turn of this hand
    melds_this_turn: int  # Rummy: new melds made by the seat to act this turn (for max_melds_per_turn)
    played_this_turn: bool  # Rummy: the seat to act melded or laid off this turn (it goes into ``played``)
    active_since_restock: bool
    restocks: int
    next_meld_id: int
    scores: tuple[int, ...]  # match hand points per seat (Hollywood: sum over the three games)
    boxes: tuple[int, ...]  # hands won per seat
    games: tuple[tuple[int, ...], ...]  # Hollywood: points per game per seat
    game_boxes: tuple[tuple[int, ...], ...]
    games_ended: tuple[bool, ...]
    hands_played: int
    last_hand: dict[str, Any] | None
    result: dict[str, Any] | None

    def copy(self) -> GameState:
        """A shallow copy (all fields are immutable values). Every move makes one, so it is one assignment per slot
        written out, not a loop over ``__slots__`` (tests/engine/test_state_copy.py checks that none is missed)."""
        new = GameState.__new__(GameState)
        new.active_since_restock = self.active_since_restock
        new.boxes = self.boxes
        new.dealer = self.dealer
        new.discard = self.discard
        new.game_boxes = self.game_boxes
        new.games = self.games
        new.games_ended = self.games_ended
        new.hand_no = self.hand_no
        new.hands = self.hands
        new.hands_played = self.hands_played
        new.knock_deadwood = self.knock_deadwood
        new.knock_limit = self.knock_limit
        new.knocker = self.knocker
        new.known = self.known
        new.last_hand = self.last_hand
        new.melds = self.melds
        new.melds_this_turn = self.melds_this_turn
        new.must_knock = self.must_knock
        new.next_meld_id = self.next_meld_id
        new.passes = self.passes
        new.phase = self.phase
        new.played = self.played
        new.played_this_turn = self.played_this_turn
        new.presets = self.presets
        new.restocks = self.restocks
        new.result = self.result
        new.rules = self.rules
        new.scores = self.scores
        new.seed = self.seed
        new.stock = self.stock
        new.taken = self.taken
        new.to_act = self.to_act
        new.turns = self.turns
        new.upcard = self.upcard
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GameState):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in GameState.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GameState(hand {self.hand_no}, phase {self.phase}, to_act {self.to_act}, scores {self.scores})"


_BIT: tuple[int, ...] = tuple(1 << c for c in range(52))


def _pile_sum(pile: tuple[int, ...]) -> int:
    """The sum of the one-bit masks of a pile's cards (its mask when no card repeats; a repeat carries)."""
    # the masks picked by one itemgetter, in C (a third faster than a comprehension)
    return sum(itemgetter(*pile)(_BIT)) if len(pile) > 1 else sum(_BIT[c] for c in pile)


# The last pile summed of each kind, and its sum: a move changes the stock or the discard pile, rarely both, so the
# other one is the same tuple as in the state checked before (a tuple never changes: the same object, the same sum;
# the memo holds the tuple, so its id cannot be reused). The changed one is most often the memo's pile less its top
# card (a draw) or plus one card (a discard): a comparison in C, one card's mask taken off or added, and not the whole
# pile summed again. One tuple each, replaced whole: safe between threads.
_stock_memo: tuple[tuple[int, ...], int] = ((), 0)
_discard_memo: tuple[tuple[int, ...], int] = ((), 0)


def _pile_sum_after(pile: tuple[int, ...], memo: tuple[tuple[int, ...], int]) -> int:
    """``_pile_sum(pile)``, from ``memo`` (an earlier pile and its sum) when ``pile`` is that pile less its top card
    or plus one card on top (the same sum, by arithmetic: the memo's sum less or plus that card's one-bit mask)."""
    old, total = memo
    n = len(pile)
    if n == len(old) - 1:
        if pile == old[:-1]:
            return total - _BIT[old[-1]]
    elif n == len(old) + 1 and pile[:-1] == old:
        return total + _BIT[pile[-1]]
    return _pile_sum(pile)


def check_cards(state: GameState) -> None:
    """The 52-card invariant: every card in exactly one place. Raises InvariantError (a bug) otherwise."""
    global _stock_memo, _discard_memo
    # A sum of distinct one-bit masks has as many bits as terms; any repeat carries and loses bits. (Both piles
    # in one sum: a card in both is a repeat.)
    stock, discard = state.stock, state.discard
    memo = _stock_memo
    if memo[0] is stock:
        seen = memo[1]
    else:
        seen = _pile_sum_after(stock, memo)
        _stock_memo = (stock, seen)
    memo = _discard_memo
    if memo[0] is discard:
        seen += memo[1]
    else:
        in_discard = _pile_sum_after(discard, memo)
        _discard_memo = (discard, in_discard)
        seen += in_discard
    total = seen.bit_count()
    ok = total == len(stock) + len(discard)
    for h in state.hands:
        seen |= h
        total += h.bit_count()
    for m in state.melds:
        seen |= m.cards
        total += m.cards.bit_count()
    if not ok or seen != FULL_DECK or total != 52:
        raise InvariantError(f"52-card invariant broken: {total} cards, {seen.bit_count()} distinct")
