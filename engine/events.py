"""The kinds of events, and the fields each kind carries (docs/rules.md sections 4 and 10).

``EventKind`` is a ``StrEnum`` whose values are the strings events have always had, so stored states, logs and
golden transcripts are unchanged: an ``Event.kind`` compares, hashes and serializes as its string. The referee
(server/) adds the clock and timeout kinds and the two last events of a watch; the engine makes the others.

``PUBLIC_FIELDS`` and ``SECRET_FIELDS`` name each kind's fields besides ``kind`` and ``seat``, as
``engine.event_for`` gives them: the public ones (not all present in every event: ``drew`` from the discard pile
has no ``stock_size``), and the ones only the referee and ``Event.secret_for`` see. The proto's typed event
messages (proto/rummy/v1/game.proto, ``Event.payload``) have exactly these fields.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    """What happened (``Event.kind``)."""

    HAND_STARTED = "hand_started"
    DEALT = "dealt"
    DREW = "drew"
    PASSED = "passed"
    DISCARDED = "discarded"
    KNOCKED = "knocked"
    BIG_GIN = "big_gin"
    MELDED = "melded"
    LAID_OFF = "laid_off"
    DECLARED = "declared"
    RESTOCKED = "restocked"
    RESIGNED = "resigned"
    HAND_ENDED = "hand_ended"
    MATCH_ENDED = "match_ended"
    # with a time control (the referee's)
    CLOCK_STOPPED = "clock_stopped"
    CLOCK_STARTED = "clock_started"
    TIMED_OUT = "timed_out"
    AUTO_MOVED = "auto_moved"
    # last of a watch stream only, never in a log (the referee's)
    GAME_EXPIRED = "game_expired"
    GAME_ABANDONED = "game_abandoned"


_HAND_RESULT = frozenset((
    "hand_no", "reason", "winner", "points", "hands", "hand_values", "melds", "scores", "games_entered", "games",
    "knocker", "knocker_deadwood", "defender_deadwood", "going_rummy", "resigned", "lost_on_time",
))  # fmt: skip
_MATCH_RESULT = frozenset(("totals", "winners", "detail", "games", "ended", "seat_ends", "resigned", "lost_on_time"))

#: each kind's public fields (those of ``engine.results`` for hand_ended and match_ended)
PUBLIC_FIELDS: dict[EventKind, frozenset[str]] = {
    EventKind.HAND_STARTED: frozenset(
        ("hand_no", "dealer", "upcard", "stock_size", "hand_sizes", "knock_limit", "to_act")
    ),
    EventKind.DEALT: frozenset(("count",)),
    EventKind.DREW: frozenset(("source", "stock_size", "card")),  # "card": public when drawn from the discard pile
    EventKind.PASSED: frozenset(("card",)),
    EventKind.DISCARDED: frozenset(("card",)),
    EventKind.KNOCKED: frozenset(("discard", "gin", "deadwood", "melds", "deadwood_cards")),
    EventKind.BIG_GIN: frozenset(("deadwood", "melds")),
    EventKind.MELDED: frozenset(("meld", "meld_id")),
    EventKind.LAID_OFF: frozenset(("card", "meld_id")),
    EventKind.DECLARED: frozenset(("deadwood",)),
    EventKind.RESTOCKED: frozenset(("stock_size", "mode")),
    EventKind.RESIGNED: frozenset(("seat", "hand_no", "phase")),
    EventKind.HAND_ENDED: _HAND_RESULT,
    EventKind.MATCH_ENDED: _MATCH_RESULT,
    EventKind.CLOCK_STOPPED: frozenset(("spent_ms", "remaining_ms", "at_ms", "clocks")),
    EventKind.CLOCK_STARTED: frozenset(("started_ms", "deadline_ms", "remaining_ms", "clocks")),
    EventKind.TIMED_OUT: frozenset(("seat", "policy", "deadline_ms", "forfeit")),
    EventKind.AUTO_MOVED: frozenset(("seat", "move", "auto_moves")),
    EventKind.GAME_EXPIRED: frozenset(),
    EventKind.GAME_ABANDONED: frozenset(),
}

#: each kind's secret fields: seen by the referee and, when the event names one, its ``secret_for`` seat
SECRET_FIELDS: dict[EventKind, frozenset[str]] = {
    EventKind.DEALT: frozenset(("cards",)),  # the seat dealt to
    EventKind.DREW: frozenset(("card",)),  # from the stock: the drawer
    EventKind.RESTOCKED: frozenset(("stock",)),  # the referee alone
}
