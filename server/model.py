"""Plain request and outcome types of the application service: requests are built from protobuf by
``server.codec``, outcomes (what ``server.service.Referee`` answers) are read by its ``*_response_to_proto``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypeAlias, TypedDict

import engine
from engine.deal import DealDict
from engine.events import EventDict
from server.clocks import TimeControl, TimeControlDict
from server.delay import NO_DELAY, DelayDict, SpectatorDelay
from wire.values import OptionValue
from wire.views import GameViewDict, SeatDict


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """One seat at creation: display name, label ("human" / "bot"), whether it is left open for JoinGame, and
    the house bot that plays it ("": none)."""

    name: str
    kind: str = "human"
    open: bool = False
    bot: str = ""


@dataclass(frozen=True, slots=True)
class GameSpec:
    """Everything CreateGame asks for. ``presets`` and ``seed`` are organizer-only."""

    profile: str
    overrides: dict[str, OptionValue]
    seats: tuple[SeatSpec, ...]
    allow_spectators: bool = False
    presets: tuple[engine.Deal, ...] = field(default=())
    seed: bytes | None = None
    spectator_delay: SpectatorDelay = NO_DELAY
    time_control: TimeControl | None = None  # None: no time control


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a token says the caller is: a seat of the game, or its spectator."""

    role: engine.Role  # SEAT or SPECTATOR
    seat: int = -1

    @property
    def viewer(self) -> int:
        """The engine viewer id: the seat, or engine.SPECTATOR."""
        return self.seat if self.role == engine.Role.SEAT else engine.SPECTATOR


# ------------------------------------------------------------------------------------------------ outcomes
# Views, events and settings are TypedDicts (plain dicts at run time, checked by mypy key by key): views are
# ``engine.view`` dicts plus the service's fields (game_id, version, role, seats, legal_moves, clocks:
# ``wire.views.GameViewDict``); events are ``engine.event_for`` dicts plus version and index
# (``engine.events.EventDict``); settings as ``Referee._settings`` builds them (``SettingsDict``).


class SettingsDict(TypedDict):
    """A game's settings (GameSettings): its profile and complete options, its seats (with their house bots'
    names, where it has some), whether spectators are allowed, whether the organizer dealt, the seed
    commitment; with a spectator delay or a time control, those; revealed by GetReplay once the match is over:
    the seed (hex) and the preset deals."""

    profile: str
    options: dict[str, OptionValue]  # engine.Rules.to_dict: every option's value
    seats: Sequence[SeatDict]
    spectators: bool
    organizer_deals: bool
    seed_commitment: str
    spectator_delay: NotRequired[DelayDict]
    time_control: NotRequired[TimeControlDict]
    seed: NotRequired[str]
    preset_deals: NotRequired[list[DealDict]]


#: a viewer's view of a game, as the service builds it
ViewData: TypeAlias = GameViewDict
#: an event as one viewer may see it, with its version and index
EventData: TypeAlias = EventDict
#: a game's settings (profile, options, seats, seed commitment, ...)
SettingsData: TypeAlias = SettingsDict


@dataclass(frozen=True, slots=True)
class CreatedGame:
    """CreateGame's outcome: the new game's id, the tokens of its seats (seat -> token; not of open seats nor of
    house bots' seats), the spectator token ("" when spectators are not allowed), its settings and version."""

    game_id: str
    tokens: Mapping[int, str]
    spectator_token: str
    settings: SettingsData
    version: int


@dataclass(frozen=True, slots=True)
class GameSnapshot:
    """GetGame's outcome: the caller's view and the game's settings."""

    view: ViewData
    settings: SettingsData


@dataclass(frozen=True, slots=True)
class MoveOutcome:
    """A committed move's outcome: the version it made, its events as the mover sees them, and the mover's view
    (None only for a timeout fired by the referee itself, which nobody is answered)."""

    version: int
    events: Sequence[EventData]
    view: ViewData | None


@dataclass(frozen=True, slots=True)
class WatchUpdate:
    """One item of a watch: the caller's view (first, unless the watch resumes) or else one event."""

    snapshot: ViewData | None = None
    event: EventData | None = None


#: Resign's outcome: a resignation is committed (and answered) like a move
ResignOutcome: TypeAlias = MoveOutcome


@dataclass(frozen=True, slots=True)
class ReplayPage:
    """GetReplay's outcome: the settings (with the seed and preset deals), the referee's views of version 0 and of
    the current version, one page of events (whole versions), and where the next page begins (None: no more)."""

    settings: SettingsData
    initial: ViewData
    events: Sequence[EventData]
    current: ViewData
    next_after_version: int | None
