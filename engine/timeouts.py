"""What the referee plays for a seat whose decision is due (a time control's timeout policy): pure.

The server only decides that a deadline has passed (server/clocks.py); this module says what follows, from the
state alone (and, for a discard, the card the seat drew from the stock by the move just before, if it did):

- ``forfeit_match``, or ``auto_move`` once the seat already had ``max_auto_moves`` automatic moves in a row: the
  seat loses the match on time (``LoseOnTime``: scored as a resign, docs/rules.md section 10).
- ``auto_move`` otherwise, by phase: take-or-pass and Gin's fiftieth card: pass; a draw: draw from the stock (its
  discard follows at once, as the same timeout's second step); a discard left to make (Gin after drawing, Rummy's
  play phase): the card drawn from the stock by the move just before when it may be discarded, else the legal
  discard of the highest point value (ties: the highest card in the order AS..KS, AH.., AD.., AC..: suit, then
  rank, as engine.cards numbers them); a Gin hand that must knock (no plain discard): the first legal move; the
  Gin defender after a knock: the best declaration (``declare best``).
"""

from __future__ import annotations

from engine.cards import mask_value
from engine.game import legal_moves
from engine.moves import DECLARE_BEST, DRAW_STOCK, PASS, Discard, DrawStock, LoseOnTime, Move
from engine.state import DISCARD, DRAW, LAST_CARD, LAYOFF, PLAY, TAKE_OR_PASS, GameState

FORFEIT_MATCH, AUTO_MOVE = "forfeit_match", "auto_move"
POLICIES = (FORFEIT_MATCH, AUTO_MOVE)
#: automatic moves in a row a seat gets under ``auto_move`` when the policy does not say (max_auto_moves 0)
DEFAULT_MAX_AUTO_MOVES = 3
LOSE_ON_TIME = LoseOnTime()


def timeout_move(s: GameState, policy: str, auto_moves: int, max_auto_moves: int, drawn: int = -1) -> Move:
    """The move the referee plays for ``s.to_act`` whose decision is due: ``LoseOnTime`` (forfeit) or the automatic
    move. ``auto_moves``: the seat's automatic moves in a row so far; ``drawn``: the card the seat drew from the
    stock by the move just before (-1: none, or unknown)."""
    if policy != AUTO_MOVE or auto_moves >= max_auto_moves:
        return LOSE_ON_TIME
    return auto_move(s, drawn)


def auto_move(s: GameState, drawn: int = -1) -> Move:
    """The fixed automatic move of the seat to act in ``s`` (module docstring), always a legal one."""
    legal = legal_moves(s)
    if not legal:
        raise ValueError("no move to make: the match is over")
    phase = s.phase
    if phase in (TAKE_OR_PASS, LAST_CARD) and PASS in legal:
        return PASS
    if phase == DRAW and DRAW_STOCK in legal:
        return DRAW_STOCK
    if phase == LAYOFF and DECLARE_BEST in legal:
        return DECLARE_BEST
    if phase in (DISCARD, PLAY):
        discards = [m for m in legal if type(m) is Discard]
        if not discards:
            return legal[0]
        if drawn >= 0 and Discard(drawn) in discards:
            return Discard(drawn)
        ace = s.rules.ace_value
        return max(discards, key=lambda m: (mask_value(1 << m.card, ace), m.card))
    return legal[0]


def continues(before: GameState, after: GameState, move: Move) -> bool:
    """Whether the automatic ``move`` played in ``before`` leaves the same seat a decision that belongs to the same
    timeout (a draw's discard): the referee plays it at once, as the timeout's second step."""
    return type(move) is DrawStock and after.to_act == before.to_act and after.phase in (DISCARD, PLAY)
