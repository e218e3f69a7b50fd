"""Hand flow shared by both games: new game, dealing a hand, ending a hand, passing the turn, and the table moves
both games make (drawing, discarding, laying a card off onto a table meld)."""

from __future__ import annotations

from typing import Any

from engine.cards import CARD_TEXTS, CARD_VALUE, card_text, cards_of, mask_of, mask_text, mask_value, rank_of, suit_of
from engine.deal import Deal, seeded_deal, shuffled, validate_deal
from engine.errors import IllegalMoveError, InvalidDealError
from engine.events import EventKind
from engine.options import GIN, Rules
from engine.scoring import match_is_over, match_result, next_dealer, record_hand_win
from engine.state import DRAW, MATCH_OVER, TAKE_OR_PASS, Event, GameState, Phase, TableMeld, new_event

_TEXT = CARD_TEXTS.__getitem__  # card_text without a Python call per card
#: the event kinds of every turn and every deal as module constants (the same members): an enum's member read off
#: its class is a lookup through the enum's metaclass (about 0.1 us in Python 3.11), a module constant is not
_DREW, _DISCARDED = EventKind.DREW, EventKind.DISCARDED
_HAND_STARTED, _DEALT, _HAND_ENDED = EventKind.HAND_STARTED, EventKind.DEALT, EventKind.HAND_ENDED

#: hand end reasons
KNOCK, GIN_OUT, BIG_GIN, UNDERCUT, TIE = "knock", "gin", "big_gin", "undercut", "tie"

STOCK_END, TURN_CAP, WENT_OUT, NO_CARDS_LEFT, STALLED = "stock_end", "turn_cap", "went_out", "no_cards_left", "stalled"


def new_game(rules: Rules, seed: bytes, presets: tuple[Deal, ...] = ()) -> GameState:
    """A new match, its first hand dealt. Hand i uses ``presets[i]`` when given, else a deal from ``seed``."""
    return new_game_with_events(rules, seed, presets)[0]


def new_game_with_events(
    rules: Rules, seed: bytes, presets: tuple[Deal, ...] = ()
) -> tuple[GameState, tuple[Event, ...]]:
    """``new_game`` and the events of the first deal (``hand_started``, one secret ``dealt`` per seat)."""
    if not isinstance(seed, bytes) or len(seed) < 16:
        raise InvalidDealError("INVALID_SEED", "the seed must be at least 16 bytes")
    for d in presets:
        validate_deal(rules, d)
    s = GameState.__new__(GameState)
    n = rules.players
    s.rules, s.seed, s.presets = rules, seed, tuple(presets)
    s.hand_no = -1
    s.dealer = 0
    s.scores = s.boxes = (0,) * n
    s.games = s.game_boxes = ((0,) * n,) * 3
    s.games_ended = (False, False, False)
    s.hands_played = 0
    s.last_hand = None
    s.result = None
    events: list[Event] = []
    start_hand(s, events)
    return s, tuple(events)


def start_hand(s: GameState, events: list[Event]) -> None:
    """Deal the next hand into ``s`` (a private copy), appending the events."""
    r = s.rules
    s.hand_no += 1
    deal = s.presets[s.hand_no] if s.hand_no < len(s.presets) else seeded_deal(r, s.dealer, s.seed, s.hand_no)
    n = r.players
    s.dealer = deal.dealer
    s.hands = tuple(mask_of(h) for h in deal.hands)
    s.stock = deal.stock
    s.discard = (deal.upcard,)
    s.melds = ()
    s.taken = -1
    s.known = (0,) * n
    s.turns = 0
    s.passes = 0
    s.must_knock = False
    s.upcard = deal.upcard
    s.knocker = -1
    s.knock_deadwood = 0
    s.played = 0
    s.melds_this_turn = 0
    s.played_this_turn = False
    s.active_since_restock = False
    s.restocks = 0
    s.next_meld_id = 0
    s.to_act = (s.dealer + 1) % n
    if r.game == GIN:
        s.knock_limit = _knock_limit(r, deal.upcard)
        s.phase = TAKE_OR_PASS if r.first_upcard_rule == "take_or_pass" else DRAW
    else:
        s.knock_limit = 0
        s.phase = DRAW
    events.append(Event(_HAND_STARTED, s.dealer, {
        "hand_no": s.hand_no, "dealer": s.dealer, "upcard": card_text(deal.upcard), "stock_size": len(s.stock),
        "hand_sizes": [len(h) for h in deal.hands], "knock_limit": s.knock_limit, "to_act": s.to_act,
    }))
    for seat, h in enumerate(deal.hands):
        events.append(Event(_DEALT, seat, {"count": len(h)},
                            {"cards": list(map(_TEXT, sorted(h)))}, seat))  # by suit, then rank


def _knock_limit(r: Rules, upcard: int) -> int:
    if not r.oklahoma:
        return r.knock_limit
    if rank_of(upcard) == 0:
        return 0 if r.oklahoma_ace == "gin_only" else 1
    return CARD_VALUE[upcard]


def end_hand(s: GameState, events: list[Event], reason: str, winner: int | None, points: int,
             detail: dict[str, Any] | None = None) -> None:
    """Score the hand, reveal every hand, then deal the next one or end the match."""
    r = s.rules
    if winner is not None and r.game == GIN and r.oklahoma and r.spades_double and suit_of(s.upcard) == 0:
        points *= 2
    entered = record_hand_win(s, winner, points) if winner is not None else []
    s.hands_played += 1
    info = hand_info(s, reason, winner, points, entered)
    if detail:
        info.update(detail)
    s.last_hand = info
    events.append(Event(_HAND_ENDED, winner if winner is not None else -1, info))
    if match_is_over(s):
        s.result = match_result(s)
        s.phase = MATCH_OVER
        s.to_act = -1
        s.taken = -1
        events.append(Event(EventKind.MATCH_ENDED, -1, dict(s.result)))
        return
    s.dealer = next_dealer(s, winner)
    start_hand(s, events)


def hand_info(s: GameState, reason: str, winner: int | None, points: int, entered: list[int]) -> dict[str, Any]:
    """The ``hand_ended`` record of the hand in ``s``: why it ended, its score, and every hand face up."""
    r = s.rules
    info: dict[str, Any] = {
        "hand_no": s.hand_no, "reason": reason, "winner": winner, "points": points if winner is not None else 0,
        "hands": [list(map(_TEXT, cards_of(h))) for h in s.hands],
        "hand_values": [mask_value(h, r.ace_value) for h in s.hands],
        "melds": [m.to_dict() for m in s.melds],
        "scores": list(s.scores),
    }
    if r.hollywood:
        info["games_entered"] = entered
        info["games"] = [list(g) for g in s.games]
    return info


def next_turn(s: GameState, events: list[Event]) -> None:
    """After a discard: the next seat's turn begins (Rummy rebuilds the stock here when it is empty)."""
    r = s.rules
    if s.played_this_turn:
        s.played |= 1 << s.to_act
        s.played_this_turn = False
    s.melds_this_turn = 0
    s.to_act = (s.to_act + 1) % r.players
    s.taken = -1
    s.phase = DRAW
    if r.game == GIN or s.stock:
        return
    if len(s.discard) <= 1:
        end_hand(s, events, NO_CARDS_LEFT, None, 0)
        return
    if not s.active_since_restock:
        end_hand(s, events, STALLED, None, 0)
        return
    pile = list(s.discard[:-1])
    if r.restock == "shuffle":
        s.stock = tuple(shuffled(pile, s.seed, f"restock:{s.hand_no}:{s.restocks}"))
    else:  # turn_over: the pile turned face down, its bottom card becomes the top of the stock
        s.stock = tuple(reversed(pile))
    s.discard = s.discard[-1:]
    s.restocks += 1
    s.active_since_restock = False
    events.append(Event(EventKind.RESTOCKED, s.to_act, {"stock_size": len(s.stock), "mode": r.restock},
                        {"stock": [card_text(c) for c in s.stock]}, None))


def draw_stock(s: GameState, events: list[Event], next_phase: Phase) -> None:
    """The seat to act draws the top of the stock."""
    if not s.stock:
        raise IllegalMoveError("STOCK_EMPTY", "the stock is empty")
    card = s.stock[-1]
    s.stock = s.stock[:-1]
    seat = s.to_act
    s.hands = replace_at(s.hands, seat, s.hands[seat] | (1 << card))
    s.taken = -1
    s.phase = next_phase
    events.append(new_event(Event, (_DREW, seat, {"source": "stock", "stock_size": len(s.stock)},
                                    {"card": _TEXT(card)}, seat)))


def draw_discard(s: GameState, events: list[Event], next_phase: Phase) -> None:
    """The seat to act takes the top of the discard pile (everyone sees which card)."""
    if not s.discard:
        raise IllegalMoveError("DISCARD_EMPTY", "the discard pile is empty")
    card = s.discard[-1]
    s.discard = s.discard[:-1]
    seat = s.to_act
    s.hands = replace_at(s.hands, seat, s.hands[seat] | (1 << card))
    s.known = replace_at(s.known, seat, s.known[seat] | (1 << card))
    s.taken = card
    s.phase = next_phase
    events.append(new_event(Event, (_DREW, seat, {"source": "discard", "card": _TEXT(card)}, None, None)))


def check_in_hand(s: GameState, seat: int, cards: int) -> None:
    """Refuse cards the seat does not hold (CARD_NOT_IN_HAND)."""
    missing = cards & ~s.hands[seat]
    if missing:
        raise IllegalMoveError("CARD_NOT_IN_HAND", f"not in your hand: {mask_text(missing)}")


def check_discard(s: GameState, seat: int, card: int) -> None:
    """Refuse a discard of a card not held, or of the card just taken from the discard pile."""
    if not s.hands[seat] >> card & 1:
        check_in_hand(s, seat, 1 << card)  # raises CARD_NOT_IN_HAND
    if card == s.taken and not s.rules.discard_taken_card_allowed:
        raise IllegalMoveError(
            "DISCARD_TAKEN_CARD", f"{card_text(card)} was just taken from the discard pile; discard another card"
        )


def remove_from_hand(s: GameState, seat: int, cards: int) -> None:
    """Take cards (already checked to be held) out of a hand."""
    s.hands = replace_at(s.hands, seat, s.hands[seat] & ~cards)
    if s.known[seat] & cards:  # (most cards leave a hand unseen: the known cards stay as they are)
        s.known = replace_at(s.known, seat, s.known[seat] & ~cards)


def lay_off_card(s: GameState, seat: int, card: int, target: TableMeld, events: list[Event]) -> None:
    """Move a held card onto a table meld it extends (both checked by the caller: a Gin defender lays off onto
    the knocker's melds, a Rummy player onto any meld in its turn)."""
    new = TableMeld(target.id, target.owner, target.kind, target.cards | (1 << card), (*target.layoffs, (card, seat)))
    s.melds = tuple(new if m.id == target.id else m for m in s.melds)
    remove_from_hand(s, seat, 1 << card)
    events.append(Event(EventKind.LAID_OFF, seat, {"card": card_text(card), "meld_id": target.id}))


def put_discard(s: GameState, seat: int, card: int, events: list[Event]) -> None:
    """Move a held card to the top of the discard pile and count the turn."""
    bit = 1 << card  # remove_from_hand(s, seat, bit), without two calls: discards are half of all moves
    s.hands = replace_at(s.hands, seat, s.hands[seat] & ~bit)
    if s.known[seat] & bit:
        s.known = replace_at(s.known, seat, s.known[seat] & ~bit)
    s.discard = (*s.discard, card)
    s.turns += 1
    events.append(new_event(Event, (_DISCARDED, seat, {"card": _TEXT(card)}, None, None)))


def replace_at(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    """``t`` with item ``i`` replaced."""
    if len(t) == 2:  # Gin, and every move of it: one tuple made instead of three
        return (v, t[1]) if i == 0 else (t[0], v)
    return t[:i] + (v,) + t[i + 1 :]
