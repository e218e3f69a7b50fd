"""Plain request types of the application service (built from protobuf by ``server.codec``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import engine
from server.delay import NO_DELAY, SpectatorDelay


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
    overrides: dict[str, Any]
    seats: tuple[SeatSpec, ...]
    allow_spectators: bool = False
    presets: tuple[engine.Deal, ...] = field(default=())
    seed: bytes | None = None
    spectator_delay: SpectatorDelay = NO_DELAY
    time_control: Any = None  # server.clocks.TimeControl, None: no time control


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a token says the caller is: a seat of the game, or its spectator."""

    role: str  # "seat" or "spectator"
    seat: int = -1

    @property
    def viewer(self) -> int:
        """The engine viewer id: the seat, or engine.SPECTATOR."""
        return self.seat if self.role == "seat" else engine.SPECTATOR
