"""The friendly values the SDK returns (frozen dataclasses; the raw protobuf message is kept where useful)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import engine
from clients.sdk import convert
from clients.view import SeatClock, View
from engine.events import EventDict
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries of calls that failed with UNAVAILABLE or DEADLINE_EXCEEDED: at most ``attempts`` sends in all,
    sleeping ``initial_backoff * multiplier**n`` (capped at ``max_backoff``, with full jitter) in between."""

    attempts: int = 5
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError(f"bad retry policy {self!r}")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 = the first retry)."""
        cap = min(self.max_backoff, self.initial_backoff * self.multiplier**retry)
        return (rng or _JITTER).uniform(cap / 2, cap)


NO_RETRY = RetryPolicy(attempts=1)
#: the backoff's jitter by default (its own generator: the program's global one is the program's)
_JITTER = random.Random()


#: The referee's bounds of every duration of a time control: 1 ms .. one day.
MAX_TIME_CONTROL_S = 86_400.0


def _seconds(value: object, name: str, zero: bool = False) -> float:
    """A duration of a time control in seconds, checked: a number (not a bool), from 1 ms (0 where ``zero``) to
    one day once rounded to whole milliseconds (the referee's unit)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{name} is a number of seconds, not {value!r}")
    ms = round(value * 1000)
    if value < 0 or ms > MAX_TIME_CONTROL_S * 1000 or (ms < 1 and not (zero and value == 0)):
        raise ValueError(f"{name} must be {'0' if zero else '0.001'} to {MAX_TIME_CONTROL_S:g} seconds, not {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class PerMove:
    """A time control: ``limit`` seconds for every decision (every move a seat must make), none carried over."""

    limit: float

    def __post_init__(self) -> None:
        _seconds(self.limit, "PerMove.limit")


@dataclass(frozen=True, slots=True)
class Clock:
    """A time control: a clock per seat (Fischer), ``initial`` seconds at the start of the match, ``increment``
    seconds added after each of its decisions; a decision is due when the seat's clock would reach zero."""

    initial: float
    increment: float = 0.0

    def __post_init__(self) -> None:
        _seconds(self.initial, "Clock.initial")
        _seconds(self.increment, "Clock.increment", zero=True)


@dataclass(frozen=True, slots=True)
class Bank:
    """A time control: ``allowance`` free seconds for each decision, and a bank of ``bank`` seconds per seat spent
    only beyond it (as Kaggle's bot referee does)."""

    allowance: float
    bank: float

    def __post_init__(self) -> None:
        _seconds(self.allowance, "Bank.allowance")
        _seconds(self.bank, "Bank.bank")


TimeControl = PerMove | Clock | Bank
TIMEOUT_POLICIES = ("forfeit_match", "auto_move")


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """What the referee does when a seat's decision is due: ``forfeit_match`` (the seat loses the match on time)
    or ``auto_move`` (the referee plays a fixed move for it; after ``max_auto_moves`` in a row, 0 = the referee's
    default of 3, its next timeout forfeits)."""

    kind: str = "forfeit_match"
    max_auto_moves: int = 0

    def __post_init__(self) -> None:
        if self.kind not in TIMEOUT_POLICIES:
            raise ValueError(f"a timeout policy is {' or '.join(TIMEOUT_POLICIES)}, not {self.kind!r}")
        if isinstance(self.max_auto_moves, bool) or not isinstance(self.max_auto_moves, int):
            raise TypeError(f"max_auto_moves is an int, not {self.max_auto_moves!r}")
        if not 0 <= self.max_auto_moves <= 1000 or (self.max_auto_moves and self.kind != "auto_move"):
            raise ValueError(f"max_auto_moves is 0..1000, and only for auto_move, not {self.max_auto_moves!r}")


def time_control_from_text(text: str) -> TimeControl:
    """A time control from its short text: ``10`` (seconds per move), ``60+1`` (a clock: initial + increment
    seconds), ``bank:2+60`` (an allowance per move + a bank). ValueError for anything else."""
    raw = text.strip()
    try:
        if raw.startswith("bank:"):
            allowance, plus, bank = raw[5:].partition("+")
            if not plus:
                raise ValueError("bank:ALLOWANCE+BANK")
            return Bank(float(allowance), float(bank))
        if "+" in raw:
            initial, _, increment = raw.partition("+")
            return Clock(float(initial), float(increment))
        return PerMove(float(raw))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad time control {text!r} (SECONDS per move, INITIAL+INCREMENT for a clock, "
                         f"bank:ALLOWANCE+BANK; seconds from 0.001 to {MAX_TIME_CONTROL_S:g}): {exc}") from None


def time_control_text(tc: TimeControl | None) -> str:
    """The short text of a time control (``time_control_from_text`` reads it back); ``none`` for None."""
    if tc is None:
        return "none"
    if isinstance(tc, PerMove):
        return f"{tc.limit:g}"
    if isinstance(tc, Clock):
        return f"{tc.initial:g}+{tc.increment:g}"
    return f"bank:{tc.allowance:g}+{tc.bank:g}"


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat as created: display name, ``"human"``/``"bot"`` label, whether it is left open for JoinGame, and the
    house bot that plays it (``bot="gin"``: "random", "gin", "rummy" or "strong"; "": none; no token is issued for
    it, the referee's bot host plays it)."""

    name: str = ""
    kind: str = "human"
    open: bool = False
    bot: str = ""


@dataclass(frozen=True, slots=True)
class Settings:
    """A game's settings: profile, every option pinned (``engine.Rules.to_dict`` shape), seats as created."""

    profile: str
    options: Mapping[str, convert.OptionValue]
    seats: tuple[SeatSpec, ...]
    spectators_allowed: bool
    organizer_deals: bool
    #: the referee's commitment to the secret seed, published at creation (docs/fairness.md)
    seed_commitment: str = ""
    #: the seed, revealed by GetReplay once the match is over (None before)
    seed: bytes | None = None
    #: the organizer's preset deals, revealed with the seed (dealer, hands, upcard, stock as card texts)
    preset_deals: tuple[Mapping[str, Any], ...] = ()
    #: the time control (None: none)
    time_control: TimeControl | None = None
    #: the timeout policy, pinned by the referee (None without a time control)
    timeout_policy: TimeoutPolicy | None = None

    @staticmethod
    def from_proto(s: pb.GameSettings) -> Settings:
        """From the GameSettings message."""
        return Settings(
            profile=s.profile,
            options=convert.options_from_proto(s.options),
            seats=tuple(
                SeatSpec(x.display_name, convert.SEAT_KIND_NAMES.get(x.kind, "human"), x.open, x.bot) for x in s.seats
            ),
            spectators_allowed=s.spectators_allowed,
            organizer_deals=s.organizer_deals,
            seed_commitment=s.seed_commitment,
            seed=s.seed or None,
            preset_deals=tuple(
                {
                    "dealer": d.dealer,
                    "hands": [list(h.cards) for h in d.hands],
                    "upcard": d.upcard,
                    "stock": list(d.stock),
                }
                for d in s.preset_deals
            ),
            time_control=convert.time_control_from_proto(s.time_control),
            timeout_policy=convert.timeout_policy_from_proto(s.timeout_policy) if s.HasField("time_control") and
            s.time_control.WhichOneof("kind") else None,
        )

    @property
    def game(self) -> str:
        """``"gin"`` or ``"rummy"``."""
        return str(self.options.get("game", "gin"))


@dataclass(frozen=True, slots=True)
class CreatedGame:
    """CreateGame's answer: the id, one token per seat not left open, the spectator token (or None)."""

    game_id: str
    tokens: Mapping[int, str]
    spectator_token: str | None
    settings: Settings
    version: int


@dataclass(frozen=True, slots=True)
class JoinedSeat:
    """JoinGame's answer: the seat taken and its token."""

    seat: int
    token: str


@dataclass(frozen=True, slots=True)
class GameSnapshot:
    """One viewer's view of a game at one version: ``view`` for bots, ``data`` as an engine-view dict (with
    game_id, version, role, seats), the legal moves as engine moves (empty unless it is the viewer's turn)."""

    game_id: str
    version: int
    role: str
    seat: int | None
    view: View
    data: Mapping[str, Any]
    legal: tuple[engine.Move, ...]
    proto: pb.GameView = field(repr=False)

    @staticmethod
    def from_proto(v: pb.GameView, rules: Mapping[str, Any] | None) -> GameSnapshot:
        """From a GameView and the game's options (see ``convert.view_from_proto``)."""
        data = convert.view_dict_from_proto(v)
        view = View.from_engine(data, rules if rules is not None else {"game": data["game"], "players": len(v.seats)})
        return GameSnapshot(
            game_id=v.game_id, version=v.version, role=data["role"],
            seat=v.viewer_seat if v.HasField("viewer_seat") else None,
            view=view, data=data, legal=convert.legal_from_proto(v), proto=v,
        )  # fmt: skip

    @property
    def phase(self) -> str:
        """The engine phase name."""
        return self.view.phase

    @property
    def to_act(self) -> int | None:
        """The seat to act, None once the match is over."""
        return None if self.view.to_act < 0 else self.view.to_act

    @property
    def clocks(self) -> tuple[SeatClock, ...]:
        """Every seat's clock (empty without a time control)."""
        return self.view.clocks

    @property
    def deadline_ms(self) -> int | None:
        """When the decision of the seat to act is due (ms since the epoch, the referee's clock), or None."""
        return self.view.deadline_ms

    @property
    def my_turn(self) -> bool:
        """The viewer is a seat and holds the turn."""
        return self.seat is not None and self.to_act == self.seat and self.phase != "match_over"

    @property
    def over(self) -> bool:
        """The match is over."""
        return self.phase == "match_over"

    @property
    def result(self) -> Mapping[str, Any] | None:
        """The match result (totals, winners, ...) once over."""
        result: Mapping[str, Any] | None = self.data.get("result")
        return result


@dataclass(frozen=True, slots=True)
class GameInfo:
    """GetGame's answer: the caller's snapshot and the game's settings."""

    snapshot: GameSnapshot
    settings: Settings

    @property
    def view(self) -> View:
        """The caller's view."""
        return self.snapshot.view

    @property
    def legal(self) -> tuple[engine.Move, ...]:
        """The caller's legal moves (empty unless it is their turn)."""
        return self.snapshot.legal

    @property
    def version(self) -> int:
        """The game's version."""
        return self.snapshot.version


@dataclass(frozen=True, slots=True)
class MoveResult:
    """SubmitMove's answer: the new version, the events as the mover sees them, the mover's new snapshot; and
    the request_id used and how many sends it took."""

    version: int
    events: tuple[EventDict, ...]
    snapshot: GameSnapshot
    request_id: str
    attempts: int
    proto: rpb.SubmitMoveResponse = field(repr=False)


@dataclass(frozen=True, slots=True)
class Replay:
    """GetReplay's answer (all pages joined unless asked for one): settings, the referee's views at creation and
    now (engine-view dicts with ``hands`` and ``stock``), every event with every card."""

    settings: Settings
    initial: Mapping[str, Any]
    events: tuple[EventDict, ...]
    current: Mapping[str, Any]
    next_after_version: int | None


@dataclass(frozen=True, slots=True)
class Arrangement:
    """One minimum-deadwood arrangement: melds and the cards left out, as texts."""

    melds: tuple[tuple[str, ...], ...]
    deadwood_cards: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Analysis:
    """AnalyzeHand's answer."""

    min_deadwood: int
    arrangements: tuple[Arrangement, ...]
    truncated: bool
    knock_discards: tuple[tuple[str, int], ...]

    @staticmethod
    def from_proto(r: rpb.AnalyzeHandResponse) -> Analysis:
        """From the AnalyzeHandResponse."""
        return Analysis(
            min_deadwood=r.min_deadwood,
            arrangements=tuple(
                Arrangement(convert.melds_text(a.melds), tuple(a.deadwood_cards)) for a in r.arrangements
            ),
            truncated=r.arrangements_truncated,
            knock_discards=tuple((k.card, k.deadwood) for k in r.knock_discards),
        )
