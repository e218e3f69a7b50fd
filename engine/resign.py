"""Resigning: a seat gives up the match, at any time (not only on its turn).

The hand in progress ends as every hand ends, with every hand face up (``hand_ended``, reason "resigned", no score;
it is not counted in ``hands_played``), and the match ends (``match_ended``) with the others as winners
(``scoring.resigned_result``). Events: ``resigned`` (public), ``hand_ended``, ``match_ended``.
"""

from __future__ import annotations

from engine.events import EventKind
from engine.flow import hand_info
from engine.scoring import RESIGNED, TIME, resigned_result
from engine.state import MATCH_OVER, Event, GameState


def resign(s: GameState, seat: int, events: list[Event]) -> None:
    """``seat`` resigns the match in ``s`` (a private copy, not over yet), appending the events."""
    events.append(Event(EventKind.RESIGNED, seat, {"seat": seat, "hand_no": s.hand_no, "phase": s.phase}))
    _end_match(s, seat, events, on_time=False)


def lose_on_time(s: GameState, seat: int, events: list[Event]) -> None:
    """``seat`` (the seat to act) loses the match on time (a time control's forfeit): scored as a resign, the
    result says ``ended`` "time" and the seat "lost_on_time". Events: ``hand_ended`` (reason "time"),
    ``match_ended``; the referee's ``timed_out`` event comes before them (engine.timeouts)."""
    _end_match(s, seat, events, on_time=True)


def _end_match(s: GameState, seat: int, events: list[Event], *, on_time: bool) -> None:
    info = hand_info(s, TIME if on_time else RESIGNED, None, 0, [])
    info["lost_on_time" if on_time else "resigned"] = seat
    s.last_hand = info
    events.append(Event(EventKind.HAND_ENDED, -1, info))
    s.result = resigned_result(s, seat, on_time=on_time)
    s.phase = MATCH_OVER
    s.to_act = -1
    s.taken = -1
    events.append(Event(EventKind.MATCH_ENDED, -1, dict(s.result)))
