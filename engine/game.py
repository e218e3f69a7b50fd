"""The engine's entry points: ``legal_moves`` and ``apply``."""

from __future__ import annotations

from engine import gin, rummy
from engine.errors import IllegalMoveError, InvalidMoveError
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
from engine.options import GIN
from engine.state import MATCH_OVER, Event, GameState, check_cards

_MOVE_TYPES = (DrawStock, DrawDiscard, Pass, Discard, Knock, BigGin, MeldMove, LayOff, Declare, Done)


def legal_moves(state: GameState) -> list[Move]:
    """The complete list of legal moves of the seat to act (empty once the match is over)."""
    if state.phase == MATCH_OVER:
        return []
    return gin.legal_moves(state) if state.rules.game == GIN else rummy.legal_moves(state)


def _check_cards_in_range(move: Move) -> None:
    for name in ("card", "discard"):
        c = getattr(move, name, None)
        if c is not None and (type(c) is not int or not 0 <= c < 52):
            raise InvalidMoveError("INVALID_CARD", f"not a card: {c!r}")
    for name in ("cards",):
        m = getattr(move, name, None)
        if m is not None and (type(m) is not int or m <= 0 or m >> 52):
            raise InvalidMoveError("INVALID_CARD", "not a set of cards")
    melds = getattr(move, "melds", None)
    if melds is not None:
        for m in melds:
            if type(m) is not int or m <= 0 or m >> 52:
                raise InvalidMoveError("INVALID_MELD", "a declared meld is empty or not a set of cards")


def apply(state: GameState, seat: int, move: Move) -> tuple[GameState, tuple[Event, ...]]:
    """Apply ``move`` by ``seat``: the new state and the events it caused. Raises InvalidMoveError for malformed
    input and IllegalMoveError for a move the rules do not allow now; ``state`` itself never changes."""
    if not isinstance(move, _MOVE_TYPES):
        raise InvalidMoveError("UNKNOWN_MOVE", f"not a move: {move!r}")
    _check_cards_in_range(move)
    if type(seat) is not int or not 0 <= seat < state.rules.players:
        raise InvalidMoveError("INVALID_SEAT", f"no seat {seat!r} in this game")
    if state.phase == MATCH_OVER:
        raise IllegalMoveError("GAME_OVER", "the match is over")
    if seat != state.to_act:
        raise IllegalMoveError("NOT_YOUR_TURN", f"seat {state.to_act} is to act, not seat {seat}")
    s = state.copy()
    events: list[Event] = []
    if state.rules.game == GIN:
        gin.apply(s, seat, move, events)
    else:
        rummy.apply(s, seat, move, events)
    check_cards(s)
    return s, tuple(events)
