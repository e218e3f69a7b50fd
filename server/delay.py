"""Spectator delay: what a spectator token may see of a game, and when.

One rule for every channel (``Referee.get_game``, ``Referee.watch``; GetReplay is refused to every token but
the organizer's until the match is over): a spectator of a game with a delay sees the game only up to its
*released version*,

    released = min(version - moves, last hand end)   (each term only when that delay is set; at least 0),

where ``version`` is the game's current version and *last hand end* the newest version whose events include
``hand_ended`` (0 before the first hand ends). Once the match is over everything is released. A version is
released whole (all its events) or not at all.

The view at the released version is rebuilt from the game log (the engine is deterministic): the initial state
of the game's config, then each logged move up to that version. ``DelayedStates`` keeps, per game, the last
state it rebuilt, so each call applies only the moves since (at most the delay's length).
"""

from __future__ import annotations

import collections
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import orjson

import engine
from server.cache import initial_state
from server.errors import BadRequest
from server.expiry import GameGone
from server.gamelog import LogEntry
from server.ports import StoredEvent
from server.settings import DEFAULTS

MAX_DELAY_MOVES = 1000
DELAYED_GAMES = DEFAULTS.caches.delayed_games  # (server.settings)


class DelayDict(TypedDict):
    """``SpectatorDelay.to_dict``: the delay as a game's meta keeps it and its settings show it."""

    moves: int
    until_hand_end: bool


@dataclass(frozen=True, slots=True)
class SpectatorDelay:
    """How far behind the live game its spectators are: ``moves`` versions, and/or ``until_hand_end``."""

    moves: int = 0
    until_hand_end: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.moves <= MAX_DELAY_MOVES:
            raise BadRequest("INVALID_OPTION", f"spectator_delay.moves is 0..{MAX_DELAY_MOVES}, not {self.moves}")

    @property
    def active(self) -> bool:
        """Whether spectators are held back at all."""
        return self.moves > 0 or self.until_hand_end

    def to_dict(self) -> DelayDict:
        """What the game's meta keeps (and GameSettings shows)."""
        return {"moves": self.moves, "until_hand_end": self.until_hand_end}

    @classmethod
    def of_meta(cls, meta: Mapping[str, Any]) -> SpectatorDelay:
        """The delay of a game's parsed meta (none for games created without one)."""
        d = meta.get("delay")
        return NO_DELAY if not d else cls(int(d.get("moves", 0)), bool(d.get("until_hand_end", False)))

    def released(self, version: int, last_hand_end: int, match_over: bool) -> int:
        """The newest version a spectator may see of a game at ``version``."""
        if match_over or not self.active:
            return version
        released = version
        if self.moves:
            released = min(released, max(0, version - self.moves))
        if self.until_hand_end:
            released = min(released, last_hand_end)
        return released


NO_DELAY = SpectatorDelay()


def _ends_hand(entry: LogEntry) -> bool:
    return any(e.get("kind") == "hand_ended" for e in entry.events)


def clock_of(entry: LogEntry, clock: dict[str, Any]) -> dict[str, Any]:
    """The view's clock fields (``clocks``, ``deadline_ms``) after ``entry``, from its clock events (the clock tail
    of a game with a time control), else ``clock`` (the fields after the entry before it)."""
    for e in reversed(entry.events):
        public = e.get("public") or {}
        if e.get("kind") in ("clock_started", "clock_stopped") and "clocks" in public:
            fields: dict[str, Any] = {"clocks": public["clocks"]}
            if e["kind"] == "clock_started":
                fields["deadline_ms"] = public["deadline_ms"]
            return fields
    return clock


@dataclass(slots=True)
class _Rebuilt:
    version: int  # the state below is the game at this version
    state: engine.GameState
    scanned: int  # the log was read up to this version
    last_hand_end: int
    clock: dict[str, Any] | None = None  # the view's clock fields at ``version`` (None: version 0 not read yet)


ReadLog = Callable[[str, int, int], Awaitable[list[LogEntry]]]


class DelayedStates:
    """The spectators' released version of games, with the state at that version (rebuilt from the log)."""

    def __init__(self, read_log: ReadLog, games: int = DELAYED_GAMES) -> None:
        self._read_log = read_log
        self._games = games
        self._rebuilt: collections.OrderedDict[str, _Rebuilt] = collections.OrderedDict()

    async def released(
        self, game_id: str, config: bytes, delay: SpectatorDelay, version: int
    ) -> tuple[int, int, engine.GameState | None, dict[str, Any]]:
        """(released version, last hand end, the state at the released version, the view's clock fields at it:
        ``clocks`` and ``deadline_ms``, empty without a time control) of a game at ``version`` that is not over
        (None for the state when nothing is held back: the caller has the current state and clock)."""
        known = self._rebuilt.get(game_id)
        if known is None or known.scanned > version:  # first look (or an older load than the last one)
            known = _Rebuilt(0, initial_state(config), 0, 0)
        first = known.version + 1 if known.clock is not None else 0  # version 0 (the deal) has the first clock
        entries = await self._read_log(game_id, first, version) if version >= first else []
        last_hand_end = known.last_hand_end
        for entry in entries:
            if entry.version > known.scanned and _ends_hand(entry):
                last_hand_end = max(last_hand_end, entry.version)
        target = delay.released(version, last_hand_end, match_over=False)
        if target >= version:
            self._remember(game_id, known)
            return version, last_hand_end, None, {}
        state, clock = known.state, known.clock or {}
        for entry in entries:
            if entry.version > target:
                break
            if entry.version > known.version:
                state, _ = engine.apply(state, entry.seat, engine.move_from_dict(entry.move or {}))
            clock = clock_of(entry, clock)
        rebuilt = _Rebuilt(target, state, max(known.scanned, version), last_hand_end, clock)
        self._remember(game_id, rebuilt)
        return target, last_hand_end, state, clock

    def _remember(self, game_id: str, rebuilt: _Rebuilt) -> None:
        self._rebuilt[game_id] = rebuilt
        self._rebuilt.move_to_end(game_id)
        while len(self._rebuilt) > self._games:
            self._rebuilt.popitem(last=False)


async def hold_back(
    events: AsyncIterator[StoredEvent], delay: SpectatorDelay, version: int, last_hand_end: int
) -> AsyncGenerator[StoredEvent, None]:
    """The events of ``events`` (a live feed after the released version of a game then at ``version``), each
    only once its version is released: in order, none lost, all of them once the match ends."""
    held: collections.deque[StoredEvent] = collections.deque()
    match_over = False
    try:
        async for event in events:
            held.append(event)
            version = max(version, event.version)
            kind = orjson.loads(event.payload).get("kind")
            if kind == "hand_ended":
                last_hand_end = max(last_hand_end, event.version)
            elif kind == "match_ended":
                match_over = True
            released = delay.released(version, last_hand_end, match_over)
            while held and held[0].version <= released:
                yield held.popleft()
    except GameGone:  # the game can never be played again: nothing left to hold back
        while held:
            yield held.popleft()
        raise
