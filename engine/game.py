"""The engine's entry points: ``legal_moves`` and ``apply``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import gin, rummy
from engine.cards import card_text
from engine.errors import IllegalMoveError, InvalidMoveError, excerpt
from engine.moves import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    LayOff,
    LoseOnTime,
    MeldMove,
    Move,
    Pass,
    Resign,
    named_twice,
)
from engine.options import GIN
from engine.resign import lose_on_time, resign
from engine.state import MATCH_OVER, Event, GameState, check_cards


def legal_moves(state: GameState) -> list[Move]:
    """The complete list of legal moves of the seat to act (empty once the match is over)."""
    if state.phase == MATCH_OVER:
        return []
    return gin.legal_moves(state) if state.rules.game == GIN else rummy.legal_moves(state)


def _card(c: object) -> None:
    if type(c) is not int or not 0 <= c < 52:
        raise InvalidMoveError("INVALID_CARD", f"not a card: {excerpt(c)}")


def _is_cards(m: object) -> bool:
    return type(m) is int and m > 0 and not m >> 52


def _cards(m: object) -> None:
    if not _is_cards(m):
        raise InvalidMoveError("INVALID_CARD", "not a set of cards")


# A malformed meld list or meld id is BAD_MOVE (INVALID_ARGUMENT): INVALID_MELD and UNKNOWN_MELD are the rules'
# refusals of well-formed melds and ids (IllegalMoveError, FAILED_PRECONDITION), so each code has one status.
def _melds(melds: object) -> None:
    if melds is None:
        return
    if not isinstance(melds, tuple):
        raise InvalidMoveError("BAD_MOVE", "melds must be a tuple of card masks")
    for m in melds:
        if not _is_cards(m):
            raise InvalidMoveError("BAD_MOVE", "a meld must be a non-empty set of cards")


def _check_lay_off(move: LayOff) -> None:
    _card(move.card)
    if type(move.meld_id) is not int:
        raise InvalidMoveError("BAD_MOVE", f"not a meld id: {move.meld_id!r}")


def _check_declare(move: Declare) -> None:
    _melds(move.melds)
    if move.layoffs is not None:
        if not isinstance(move.layoffs, tuple):
            raise InvalidMoveError("BAD_MOVE", "layoffs must be a tuple of (card, meld_id)")
        for item in move.layoffs:
            if not isinstance(item, tuple) or len(item) != 2:
                raise InvalidMoveError("BAD_MOVE", f"a layoff is (card, meld_id), got {excerpt(item)}")
            _check_lay_off(LayOff(item[0], item[1]))
    twice = named_twice(move)  # malformed whatever the state
    if twice is not None:
        raise InvalidMoveError("DUPLICATE_CARD", f"card {card_text(twice)} is named twice in the declaration")


def _check_discard(move: Discard) -> None:
    c = move.card  # _card(move.card), without a second call: discards are half of all moves
    if type(c) is not int or not 0 <= c < 52:
        raise InvalidMoveError("INVALID_CARD", f"not a card: {excerpt(c)}")


def _check_knock(move: Knock) -> None:
    _card(move.discard)
    _melds(move.melds)
    if named_twice(move) is not None:  # the discard kept in a meld too
        raise InvalidMoveError("DUPLICATE_CARD", f"card {card_text(move.discard)} is discarded and melded")


#: how to check each move type for malformed content (None: nothing to check)
_VALIDATORS: dict[type, Callable[[Any], None] | None] = {
    DrawStock: None, DrawDiscard: None, Pass: None, Done: None, Resign: None, LoseOnTime: None,
    Discard: _check_discard,
    Knock: _check_knock,
    BigGin: lambda m: _melds(m.melds),
    MeldMove: lambda m: _cards(m.cards),
    LayOff: _check_lay_off,
    Declare: _check_declare,
}


def apply(state: GameState, seat: int, move: Move) -> tuple[GameState, tuple[Event, ...]]:
    """Apply ``move`` by ``seat``: the new state and the events it caused (``Resign`` from any seat, in any phase
    but match_over; every other move from the seat to act only). Raises InvalidMoveError for malformed
    input and IllegalMoveError for a move the rules do not allow now; ``state`` itself never changes."""
    kind = type(move)
    try:
        validate = _VALIDATORS[kind]
    except KeyError:
        raise InvalidMoveError("UNKNOWN_MOVE", f"not a move: {excerpt(move)}") from None
    if validate is not None:
        validate(move)
    rules = state.rules
    if type(seat) is not int or not 0 <= seat < rules.players:
        raise InvalidMoveError("INVALID_SEAT", f"no seat {excerpt(seat)} in this game")
    if state.phase == MATCH_OVER:
        raise IllegalMoveError("GAME_OVER", "the match is over")
    if seat != state.to_act and kind is not Resign:  # a seat may resign at any time
        raise IllegalMoveError("NOT_YOUR_TURN", f"seat {state.to_act} is to act, not seat {seat}")
    s = state.copy()
    events: list[Event] = []
    if kind is Resign:
        resign(s, seat, events)
    elif kind is LoseOnTime:
        lose_on_time(s, seat, events)
    elif rules.game == GIN:
        gin.apply(s, seat, move, events)
    else:
        rummy.apply(s, seat, move, events)
    check_cards(s)
    return s, tuple(events)
