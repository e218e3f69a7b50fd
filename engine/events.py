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
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from engine.views import ClockDict, MeldDict


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


class EventDict(TypedDict):
    """An event as one viewer may see it (``engine.event_for``): ``kind``, ``seat`` (-1: none) and the kind's
    fields (``PUBLIC_FIELDS``, and ``SECRET_FIELDS`` where the viewer may see them); the referee adds ``version``
    and ``index`` (the event's position in the game's log) and the clock events' ``clocks`` and ``deadline_ms``.
    One dict type for every kind, each field NotRequired: what a kind has is ``PUBLIC_FIELDS[kind]``. Hand and
    match results (hand_ended, match_ended) are the engine's result dicts (typed: ``engine.results``)."""

    kind: str
    seat: int
    version: NotRequired[int]
    index: NotRequired[int]
    # hand_started (and resigned: hand_no, phase)
    hand_no: NotRequired[int]
    dealer: NotRequired[int]
    upcard: NotRequired[str | None]
    stock_size: NotRequired[int]
    hand_sizes: NotRequired[list[int]]
    knock_limit: NotRequired[int | None]
    to_act: NotRequired[int]
    phase: NotRequired[str]
    # dealt, drew, passed, discarded, laid_off, restocked
    count: NotRequired[int]
    cards: NotRequired[list[str]]
    source: NotRequired[str]
    card: NotRequired[str]
    mode: NotRequired[str]
    stock: NotRequired[list[str]]
    # knocked, big_gin, melded, laid_off, declared
    discard: NotRequired[str]
    gin: NotRequired[bool]
    deadwood: NotRequired[int]
    melds: NotRequired[list[MeldDict]]
    deadwood_cards: NotRequired[list[str]]
    meld: NotRequired[MeldDict]
    meld_id: NotRequired[int]
    # hand_ended: the hand's result
    reason: NotRequired[str]
    winner: NotRequired[int | None]
    points: NotRequired[Any]
    hands: NotRequired[list[list[str]]]
    hand_values: NotRequired[list[int]]
    scores: NotRequired[list[int]]
    games_entered: NotRequired[Any]
    games: NotRequired[Any]  # hand_ended: each game's points; match_ended: each game's breakdown
    knocker: NotRequired[int]
    knocker_deadwood: NotRequired[int]
    defender_deadwood: NotRequired[int]
    going_rummy: NotRequired[bool]
    resigned: NotRequired[int | None]
    lost_on_time: NotRequired[int | None]
    # match_ended: the match's result
    totals: NotRequired[list[int]]
    winners: NotRequired[list[int]]
    detail: NotRequired[Any]
    ended: NotRequired[str]
    seat_ends: NotRequired[list[str]]
    # clock_stopped, clock_started, timed_out, auto_moved (the referee's)
    spent_ms: NotRequired[int]
    remaining_ms: NotRequired[int]
    at_ms: NotRequired[int]
    started_ms: NotRequired[int]
    deadline_ms: NotRequired[int]
    clocks: NotRequired[list[ClockDict]]
    policy: NotRequired[str]
    forfeit: NotRequired[bool]
    move: NotRequired[dict[str, Any]]
    auto_moves: NotRequired[int]
