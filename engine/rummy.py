"""Rummy (RULES.md section 3): draw, meld and lay off, discard; going out and going rummy."""

from __future__ import annotations

from engine.cards import card_text, cards_of, mask_text, mask_value
from engine.errors import IllegalMoveError
from engine.events import EventKind
from engine.flow import (
    TURN_CAP,
    WENT_OUT,
    check_discard,
    check_in_hand,
    draw_discard,
    draw_stock,
    end_hand,
    lay_off_card,
    next_turn,
    put_discard,
    remove_from_hand,
)
from engine.melds import all_melds, extends, meld_kind, meldable
from engine.moves import DISCARDS, DRAW_DISCARD, DRAW_STOCK, Discard, DrawDiscard, DrawStock, LayOff, MeldMove, Move
from engine.state import DRAW, PLAY, Event, GameState, TableMeld


def legal_moves(s: GameState) -> list[Move]:
    """Every legal move of the seat to act: draws, or every legal meld, layoff and discard."""
    if s.phase == DRAW:
        return [DRAW_STOCK, DRAW_DISCARD] if s.discard else [DRAW_STOCK]
    if s.phase != PLAY:
        return []
    seat = s.to_act
    hand = s.hands[seat]
    r = s.rules
    forbidden = -1 if r.discard_taken_card_allowed else s.taken
    moves: list[Move] = [DISCARDS[c] for c in cards_of(hand) if c != forbidden]
    if not r.max_melds_per_turn or s.melds_this_turn < r.max_melds_per_turn:
        m = meldable(hand, r.ace_high_low)
        for x in all_melds(r.ace_high_low):
            if x & m == x and _leaves_ok(s, hand & ~x):
                moves.append(MeldMove(x))
    if not r.layoff_requires_own_meld or any(tm.owner == seat for tm in s.melds):
        for tm in s.melds:
            for c in cards_of(hand):
                if extends(tm.cards, c, r.ace_high_low) and _leaves_ok(s, hand & ~(1 << c)):
                    moves.append(LayOff(c, tm.id))
    return moves


def _leaves_ok(s: GameState, rest: int) -> bool:
    try:
        _check_leaves(s, rest)
    except IllegalMoveError:
        return False
    return True


def _check_leaves(s: GameState, rest: int) -> None:
    """A meld or lay-off may not empty the hand under must_discard_to_go_out, nor leave only the card just taken
    from the discard pile (the player could then neither discard nor go out). RULES.md 3 makes no exception, so
    that refusal holds with ``discard_taken_card_allowed`` too."""
    r = s.rules
    if not rest and r.must_discard_to_go_out:
        raise IllegalMoveError("MUST_DISCARD_TO_GO_OUT", "the last card must be discarded to go out")
    if s.taken >= 0 and rest == 1 << s.taken:
        raise IllegalMoveError(
            "WOULD_STRAND_TAKEN_CARD",
            f"that would leave only {card_text(s.taken)}, just taken from the discard pile",
        )


def apply(s: GameState, seat: int, move: Move, events: list[Event]) -> None:
    """Apply a Rummy move to ``s`` (a private copy)."""
    if s.phase == DRAW:
        if isinstance(move, DrawStock):
            draw_stock(s, events, PLAY)
        elif isinstance(move, DrawDiscard):
            draw_discard(s, events, PLAY)
        else:
            raise IllegalMoveError("WRONG_PHASE", f"{move.kind}: draw a card first")
        return
    if isinstance(move, MeldMove):
        _meld(s, seat, move.cards, events)
    elif isinstance(move, LayOff):
        _lay_off(s, seat, move.card, move.meld_id, events)
    elif isinstance(move, Discard):
        check_discard(s, seat, move.card)
        put_discard(s, seat, move.card, events)
        if not s.hands[seat]:
            _go_out(s, seat, events)
        elif s.turns >= s.rules.max_turns:
            end_hand(s, events, TURN_CAP, None, 0)
        else:
            next_turn(s, events)
    else:
        raise IllegalMoveError("WRONG_PHASE", f"{move.kind} is not a move of the {s.phase} phase")


def _meld(s: GameState, seat: int, cards: int, events: list[Event]) -> None:
    r = s.rules
    check_in_hand(s, seat, cards)
    kind = meld_kind(cards, r.ace_high_low)
    if kind is None:
        raise IllegalMoveError("INVALID_MELD", f"not a set or run: {mask_text(cards)}")
    if r.max_melds_per_turn and s.melds_this_turn >= r.max_melds_per_turn:
        raise IllegalMoveError("MELD_LIMIT_REACHED", f"at most {r.max_melds_per_turn} new melds per turn")
    _check_leaves(s, s.hands[seat] & ~cards)
    s.melds = (*s.melds, TableMeld(s.next_meld_id, seat, kind, cards))
    s.next_meld_id += 1
    remove_from_hand(s, seat, cards)
    s.melds_this_turn += 1
    s.played_this_turn = True
    s.active_since_restock = True
    events.append(Event(EventKind.MELDED, seat, {"meld": s.melds[-1].to_dict(), "meld_id": s.melds[-1].id}))
    if not s.hands[seat]:
        _go_out(s, seat, events)


def _lay_off(s: GameState, seat: int, card: int, meld_id: int, events: list[Event]) -> None:
    r = s.rules
    check_in_hand(s, seat, 1 << card)
    target = next((m for m in s.melds if m.id == meld_id), None)
    if target is None:
        raise IllegalMoveError("UNKNOWN_MELD", f"no meld {meld_id} on the table")
    if r.layoff_requires_own_meld and not any(m.owner == seat for m in s.melds):
        raise IllegalMoveError("LAYOFF_REQUIRES_OWN_MELD", "you must have a meld of your own on the table to lay off")
    if not extends(target.cards, card, r.ace_high_low):
        raise IllegalMoveError("CANNOT_LAY_OFF", f"{card_text(card)} does not fit meld {meld_id}")
    _check_leaves(s, s.hands[seat] & ~(1 << card))
    lay_off_card(s, seat, card, target, events)
    s.played_this_turn = True
    s.active_since_restock = True
    if not s.hands[seat]:
        _go_out(s, seat, events)


def _go_out(s: GameState, seat: int, events: list[Event]) -> None:
    r = s.rules
    points = sum(mask_value(h, r.ace_value) for i, h in enumerate(s.hands) if i != seat)
    rummy = not (s.played >> seat & 1)
    if rummy:
        points *= r.going_rummy_multiplier
    end_hand(s, events, WENT_OUT, seat, points, {"going_rummy": rummy})



