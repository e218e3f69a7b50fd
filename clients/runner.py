"""Play one seat of a game through the referee's public API, driven by WatchGame.

``play_seat`` (blocking) and ``play_seat_async`` (asyncio) follow the game's event stream; whenever the seat may
have the turn they fetch its view and legal moves, ask the bot, and submit the move with a fresh ``request_id``
(resent with the same id after a transport failure, so it is applied once). A dropped connection or a restarted
server is survived: calls are retried with backoff for up to ``reconnect_timeout`` seconds, the stream resumes
from the last event seen, and the turn is checked again. They return when the match is over, or with a forfeit
when the bot raises, answers after ``move_timeout`` seconds, or makes more than ``max_rejections`` moves the
referee refuses. An error of the bot once the match is over (``observe`` raising on match_ended) forfeits
nothing: the seat's result is the referee's, and the error is logged and kept in ``SeatResult.bot_errors``.

In a game with a time control the referee keeps the time: ``move_timeout`` is not applied, the bot sees its time
left in its view (``View.time_left()``, ``View.clocks``), and a bot still thinking when its decision is due
(``View.deadline_ms``, plus ``_LATE_GRACE``) is not waited for once the referee has applied its timeout policy:
the runner goes on from the game as it is then (the match lost on time, ``SeatResult.seat_end``, or the
referee's automatic move). A move refused because the game moved on meanwhile (the referee's timeout came first)
is not counted as a refusal; nor is one refused OUT_OF_TIME (the bot answered after its deadline, before the
referee applied its policy): the runner waits for the policy, then goes on (``SeatResult.late``).

Every event the seat sees reaches ``bot.observe`` once: every event after the version of the first view the
runner fetched, and when that is version 0 (the runner came before the first move) the first deal's events
(version 0: ``hand_started``, then one ``dealt`` per seat, the seat's own with its cards) as well, so that the bot
sees the first deal as it sees every later one. The events of the seat's own moves come from the SubmitMove
answer (before the bot is asked again); whatever the stream still had in flight from before comes first, so the
order is the game's unless the stream lags behind by more than the bot's thinking and a round trip.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, TypeVar, Unpack, cast

import grpc

import engine
from clients.bots.base import Bot
from clients.sdk import (
    COMMIT_OUTCOME_UNKNOWN,
    FROM_START,
    AsyncRefereeClient,
    GameSnapshot,
    RefereeClient,
    RefereeError,
    RetryPolicy,
    Watch,
    new_request_id,
)
from clients.sdk.ops import Op, Sleep, step

T = TypeVar("T")

_log = logging.getLogger(__name__)

#: Events after which the seat that acted still holds the turn.
_TURN_STAYS = frozenset({"drew", "melded", "laid_off"})
#: How the event stream reconnects: without giving up (the calls' own deadline decides when to give up).
_STREAM_RETRY = RetryPolicy(attempts=2**31, initial_backoff=0.05, max_backoff=1.0)
#: How often a runner waiting for events looks at its ``stop`` event.
_STOP_POLL = 0.1
#: How the forfeit reason of a bot that took longer than its move timeout begins.
TIMEOUT_FORFEIT = "the bot took more than"
#: How long, before asking the bot, the runner waits for the stream to deliver the events of the view's version.
_CATCH_UP = 1.0
#: In a game with a time control: how long after the deadline the runner first looks whether the referee applied
#: its timeout policy (it fires within a second), and how often again after that.
_LATE_GRACE = 1.0
_LATE_POLL = 0.5
#: After a move refused OUT_OF_TIME: how often the view is fetched until the referee's timeout has been applied (it
#: fires within a poll of its firers, 0.1 s by default).
_OUT_OF_TIME_POLL = 0.1


class _Reconnected:
    """Stream marker: the stream was resumed (the turn is checked again)."""


class _Ended:
    """Stream marker: the stream ended (the match is over), or failed for good (``error``)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class Forfeit(Exception):
    """The bot lost the match by its own fault (it raised, timed out, or kept making refused moves)."""


class _Overtaken(Exception):
    """The referee applied its timeout policy while the bot was still thinking: ``snap`` is the game now."""

    def __init__(self, snap: GameSnapshot) -> None:
        super().__init__(snap.version)
        self.snap = snap


@dataclass
class SeatResult:
    """How one seat's play ended. ``final`` is the last view (the match result is ``final.result``), ``moves``
    the moves applied, ``rejected`` the moves the referee refused (``rejections``: their reason codes)."""

    game_id: str
    seat: int | None
    final: GameSnapshot | None = None
    moves: int = 0
    rejected: int = 0
    rejections: list[str] = field(default_factory=list)
    forfeit: bool = False
    forfeit_reason: str | None = None
    stopped: bool = False
    reconnects: int = 0
    fetches: int = 0
    #: Views fetched because ``idle_check`` seconds passed without any event (the safety net): a matter of timing
    #: (a bot or a loaded machine silent that long), not of correctness.
    idle_fetches: int = 0
    #: Idle fetches that found the seat to act although the events up to that view never said the turn might have
    #: come: turns the event stream failed to announce (a bug if ever more than 0, whatever the timing).
    missed_turns: int = 0
    transport_errors: int = 0
    #: Decisions the bot was still thinking about when the referee applied its timeout policy (a time control).
    late: int = 0
    #: Errors the bot raised once the match was over (``observe`` of match_ended, or of an event after a view that
    #: showed the match over): logged and kept here, no forfeit, since the referee's result stands.
    bot_errors: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """The match is over."""
        return self.final is not None and self.final.over

    @property
    def match_result(self) -> Mapping[str, Any] | None:
        """The match result (totals, winners, ...) once finished."""
        return None if self.final is None else self.final.result

    @property
    def seat_end(self) -> str | None:
        """How the match ended for this seat once finished: ``finished`` (played to the end, or until another seat
        resigned), ``resigned``, ``lost_on_time`` or ``forfeited_by_organizer``."""
        result = self.match_result
        if result is None or self.seat is None:
            return None
        ends = result.get("seat_ends") or ()
        return str(ends[self.seat]) if self.seat < len(ends) else "finished"


class _Seat:
    """What both drivers share: the bookkeeping of events seen and the reactions to outcomes."""

    def __init__(self, game_id: str, bot: Bot, max_rejections: int) -> None:
        self.bot = bot
        self.max_rejections = max_rejections
        self.result = SeatResult(game_id, None)
        self.start = FROM_START  # events of this version and before came before the runner did
        self.seen: set[tuple[int, int]] = set()  # positions of the events observed since
        self.latest = -1  # the highest version observed
        self.stale = False  # an event or a reconnection since the last view: the turn must be checked
        self.idle = False  # stale only because idle_check passed without events
        self.to_act: int | None = None  # the seat to act, as the last view and the events since tell
        self.me: int | None = None
        self.players = 0
        self.ended = False  # the stream delivered match_ended, or ended

    def observe(self, event: dict[str, Any]) -> bool:
        """Show a new event to the bot (False: it was seen already)."""
        position = (int(event["version"]), int(event["index"]))
        if position[0] <= self.start or position in self.seen:
            return False
        self.seen.add(position)
        self.latest = max(self.latest, position[0])
        try:
            self.bot.observe(event)
        except Exception as exc:
            if event["kind"] != "match_ended" and not self.result.finished:
                raise Forfeit(f"bot.observe raised {exc!r}") from exc
            # the match is over: nothing is left to forfeit, and the seat's result is the referee's
            error = f"bot.observe raised {exc!r} on {event['kind']}, after the match was over"
            _log.warning("game %s seat %s: %s", self.result.game_id, self.me, error)
            self.result.bot_errors.append(error)
        if self._may_pass_turn(event):
            self.stale = True
        if event["kind"] == "match_ended":
            self.ended = True
        return True

    def _may_pass_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether after ``event`` this seat may hold the turn (then its view is fetched). Only plain cases are
        followed (a discard passes the turn to the next seat, a new hand names its first player, a draw or a
        meld keeps it); anything else says yes, and a wrong guess costs one GetGame."""
        kind, actor = event["kind"], event.get("seat")
        if kind in _TURN_STAYS and actor == self.to_act:
            return False
        if kind == "clock_stopped":  # a time control's clock events follow the move's: they change no turn,
            return False
        if kind == "clock_started" and isinstance(actor, int) and actor >= 0 and self.me is not None:
            self.to_act = actor  # ... but clock_started names the seat to act
            return actor == self.me
        if kind == "dealt":  # a deal is no move: its hand_started (just before) named the seat to act
            return False
        if self.me is None or not self.players:
            return True
        if kind == "discarded" and isinstance(actor, int) and actor >= 0:
            self.to_act = (actor + 1) % self.players
            return self.to_act == self.me
        if kind == "hand_started" and isinstance(event.get("to_act"), int):
            self.to_act = int(event["to_act"])
            return self.to_act == self.me
        return True

    def begin(self, snap: GameSnapshot) -> int:
        """The first view: the ``after_version`` to watch from. Before the first move that is the very start, for
        the first deal's events (version 0); later, the events up to the view's version came before the runner."""
        self.start = self.latest = snap.version if snap.version > 0 else FROM_START
        return self.start

    def take(self, item: object) -> None:
        """One item of the stream queue."""
        if isinstance(item, dict):
            self.observe(item)
        elif isinstance(item, _Reconnected):
            self.result.reconnects += 1
            self.stale = True
        elif isinstance(item, _Ended):
            self.stale = True
            self.ended = True
            if item.error is not None:
                raise item.error

    def idle_view(self, snap: GameSnapshot) -> bool:
        """Whether ``snap`` was fetched only because nothing came for a while, and gives this seat the turn: then
        the events up to its version must be read (``checked_idle``) to tell whether the stream announced it."""
        idle, self.idle = self.idle, False
        return idle and snap.my_turn

    def checked_idle(self) -> None:
        """After an idle view giving the turn, and the events up to its version: none announced the turn (nor a
        reconnection), so the stream missed it."""
        if not self.stale:
            self.result.missed_turns += 1

    def snapshot(self, snap: GameSnapshot) -> GameSnapshot:
        """Take a fresh view."""
        self.result.final = snap
        self.result.seat = self.me = snap.seat
        self.players = snap.view.players
        self.to_act = snap.to_act
        self.stale = False
        return snap

    def moved(self, snap: GameSnapshot) -> GameSnapshot:
        """Take the view a move of this seat's answered with. The stream may have brought the next moves of the
        others already (it can overtake the answer): then the view is out of date, and they may well have passed
        the turn back, which no later event will say again: it must be fetched anew at once."""
        behind = snap.version < self.latest
        self.snapshot(snap)
        self.stale = behind
        return snap

    def rejected(self, err: RefereeError) -> None:
        """The referee refused the bot's move."""
        self.result.rejected += 1
        self.result.rejections.append(err.reason or err.code.name)
        if self.result.rejected > self.max_rejections:
            raise Forfeit(f"move refused: {err.reason or err.code.name}: {err.message}")

    def forfeit(self, reason: str) -> SeatResult:
        self.result.forfeit = True
        self.result.forfeit_reason = reason
        return self.result


def _checked(move: object) -> engine.Move:
    if not isinstance(move, engine.Move):
        raise Forfeit(f"the bot returned {move!r}, not a move")
    return move


class _Deadline:
    """The window within which a server that went away must come back."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.since: float | None = None

    def failed(self, err: RefereeError) -> float:
        """A transient failure: how long to sleep before trying again (raises ``err`` once out of time)."""
        now = time.monotonic()
        self.since = self.since or now
        if now - self.since > self.seconds:
            raise err
        return min(1.0, 0.05 * 2.0 ** min(10, int((now - self.since) / 0.2)))

    def ok(self) -> None:
        self.since = None


# ------------------------------------------------------------------------------------------- the drive loop
#
# The loop of a seat is written once (``_Play.drive``), as a generator that yields effects (``ops.Sleep`` and
# those below) and is answered what each gave, or has the error it raised raised where it waits; ``play_seat``
# and ``play_seat_async`` are its two executors (a thread reading the stream into a ``queue.Queue``; a task
# reading it into an ``asyncio.Queue``).


@dataclass(frozen=True)
class _Do:
    """A call of the seat's client: ``call()`` (a coroutine with the asyncio client), answered with its value."""

    call: Callable[[], Any]


@dataclass(frozen=True)
class _Take:
    """The next item of the stream within ``timeout`` seconds (0: only one there already); ``_EMPTY`` if none."""

    timeout: float


@dataclass(frozen=True)
class _Follow:
    """Start watching the game after ``after_version``, into the stream (answered with None)."""

    after_version: int


@dataclass(frozen=True)
class _Think:
    """Start the bot's ``call()``: answered with its future (``inline``: it may be called at once, in the
    runner's own thread, by a blocking runner)."""

    call: Callable[[], object]
    inline: bool


@dataclass(frozen=True)
class _Await:
    """Wait up to ``timeout`` seconds (None: without a limit) for ``future``: answered with whether it is done."""

    future: Any
    timeout: float | None


#: What a ``_Take`` answers when nothing came.
_EMPTY = object()
#: Take only what the stream holds already.
_TAKE_NOW = _Take(0.0)


class SeatOptions(TypedDict, total=False):
    """The options of ``play_seat`` and ``play_seat_async`` (see ``play_seat``)."""

    move_timeout: float | None
    max_rejections: int
    reconnect_timeout: float
    idle_check: float


class _Flag(Protocol):
    """A ``stop`` event (threading's or asyncio's)."""

    def is_set(self) -> bool: ...


class _Play:
    """One seat's play: the drive loop and what it needs, whichever executor runs it."""

    def __init__(
        self,
        client: RefereeClient | AsyncRefereeClient,
        game_id: str,
        token: str,
        bot: Bot,
        stop: _Flag | None,
        *,
        move_timeout: float | None = 10.0,
        max_rejections: int = 0,
        reconnect_timeout: float = 60.0,
        idle_check: float = 5.0,
    ) -> None:
        self.client = client
        self.game_id = game_id
        self.token = token
        self.bot = bot
        self.move_timeout = move_timeout
        self.idle_check = idle_check
        self.stop = stop
        self.seat = _Seat(game_id, bot, max_rejections)
        self.deadline = _Deadline(reconnect_timeout)

    def persist(self, call: Callable[[], Any]) -> Op[Any]:
        """``call()``, again after transient failures until the referee is back (or ``reconnect_timeout``)."""
        while True:
            try:
                value = yield _Do(call)
            except RefereeError as err:
                if not err.transient:
                    raise
                self.seat.result.transport_errors += 1
                yield Sleep(self.deadline.failed(err))
                continue
            self.deadline.ok()
            return value

    def fetch(self) -> Op[GameSnapshot]:
        """The seat's view now."""
        self.seat.result.fetches += 1
        info = yield from self.persist(lambda: self.client.get_game(self.game_id, token=self.token))
        return self.seat.snapshot(info.snapshot)

    def drain(self) -> Op[None]:
        """Take what the stream holds already."""
        while (item := (yield _TAKE_NOW)) is not _EMPTY:
            self.seat.take(item)

    def take(self, timeout: float) -> Op[bool]:
        """Take the next item of the stream within ``timeout`` seconds, and whatever follows at once (False: none
        came)."""
        item = yield _Take(timeout)
        if item is _EMPTY:
            return False
        self.seat.take(item)
        yield from self.drain()
        return True

    def wait(self) -> Op[bool]:
        """Take what the stream brings next (and whatever follows at once); after ``idle_check`` seconds of
        nothing, mark the view stale anyway. False when ``stop`` was set meanwhile."""
        waited = 0.0
        while True:
            step = self.idle_check - waited if self.stop is None else min(_STOP_POLL, self.idle_check - waited)
            if (yield from self.take(max(step, 0.0))):
                return True
            waited += step
            if self.stop is not None and self.stop.is_set():
                return False
            if waited >= self.idle_check:
                self.seat.result.idle_fetches += 1
                self.seat.stale = self.seat.idle = True
                return True

    def catch_up(self, version: int | None, seconds: float = _CATCH_UP) -> Op[None]:
        """Let the bot observe the events up to ``version`` (None: to the end of the match) before it is asked
        (within ``seconds``)."""
        until = time.monotonic() + seconds
        while not self.seat.ended and (version is None or self.seat.latest < version):
            left = until - time.monotonic()
            if left <= 0:
                break
            item = yield _Take(left)
            if item is _EMPTY:
                break
            self.seat.take(item)
        yield from self.drain()

    def choose(self, snap: GameSnapshot, timeout: float | None) -> Op[engine.Move]:
        """The bot's move: within ``timeout`` seconds (None: no limit); in a game with a time control without a
        limit of the runner's own, but given up (``_Overtaken``) once a fresh view shows that the referee moved
        on."""
        timed = snap.view.deadline_ms is not None
        try:
            began = time.monotonic()
            future = yield _Think(functools.partial(self.bot.choose, snap.view, snap.legal),
                                  inline=timeout is None and not timed)  # fmt: skip
            if not timed:
                if not (yield _Await(future, timeout)):
                    future.cancel()  # the thread runs on, unheeded
                    raise concurrent.futures.TimeoutError
                return _in_time(_checked(future.result()), began, timeout)
            wait = _late_wait(snap)
            while not (yield _Await(future, wait)):
                now = yield from self.fetch()
                if _overtaken(snap, now):
                    future.cancel()
                    raise _Overtaken(now)
                wait = _LATE_POLL
            return _checked(future.result())
        except concurrent.futures.TimeoutError:
            raise Forfeit(f"{TIMEOUT_FORFEIT} {timeout}s to move") from None
        except (Forfeit, _Overtaken):
            raise
        except Exception as exc:
            raise Forfeit(f"bot.choose raised {exc!r}") from exc

    def drive(self) -> Op[SeatResult]:
        """Play until the match is over (or a forfeit, or ``stop``)."""
        seat, client, stop = self.seat, self.client, self.stop
        try:
            snap = yield from self.fetch()
            yield _Follow(seat.begin(snap))
            while True:
                if stop is not None and stop.is_set():
                    seat.result.stopped = True
                    return seat.result
                if snap.over:
                    yield from self.catch_up(None)  # the last events, for the bot's sake
                    return seat.result
                if not snap.my_turn:
                    if not seat.stale and not (yield from self.wait()):
                        continue  # stopped: said at the top of the loop
                    if seat.stale:
                        snap = yield from self.fetch()
                        if seat.idle_view(snap):
                            yield from self.catch_up(snap.version, max(self.idle_check, _CATCH_UP))
                            seat.checked_idle()
                    continue
                yield from self.catch_up(snap.version)
                try:
                    move = yield from self.choose(snap, None if snap.view.deadline_ms is not None else
                                                  self.move_timeout)  # fmt: skip
                except _Overtaken as late:  # the referee's timeout came first: go on from the game as it is
                    seat.result.late += 1
                    snap = late.snap
                    continue
                rid = new_request_id()
                try:
                    moved = yield from self.persist(functools.partial(
                        client.submit_move, self.game_id, move, request_id=rid, expected_version=snap.version,
                        token=self.token,
                    ))  # fmt: skip
                except RefereeError as err:
                    if not err.rejected_move and err.code != grpc.StatusCode.ABORTED:  # ABORTED: the game moved on
                        raise
                    before, snap = snap, (yield from self.fetch())
                    if err.reason == "OUT_OF_TIME":  # answered after the deadline: the referee's policy comes next
                        while not _overtaken(before, snap) and not (stop is not None and stop.is_set()):
                            yield Sleep(_OUT_OF_TIME_POLL)
                            snap = yield from self.fetch()
                        seat.result.late += 1
                        continue
                    # a refusal of a resend after an unknown outcome is reported COMMIT_OUTCOME_UNKNOWN (the SDK's
                    # word: the view just fetched says what came of it): not the bot's refused move
                    if (err.rejected_move and err.reason != COMMIT_OUTCOME_UNKNOWN
                            and not (before.view.deadline_ms is not None and _overtaken(before, snap))):
                        seat.rejected(err)  # refused for what it is, not because the referee's timeout came first
                    continue
                seat.result.moves += 1
                yield from self.drain()  # the rest of the version before (in flight while the bot thought) first
                for event in moved.events:
                    seat.observe(event)
                snap = seat.moved(moved.snapshot)
        except Forfeit as exc:
            return seat.forfeit(str(exc))


def _in_thread(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """``call()`` in a daemon thread of its own: a bot abandoned still thinking never holds up the next choice,
    nor the interpreter's exit."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)

    threading.Thread(target=run, daemon=True, name="bot").start()
    return future


def _late_wait(snap: GameSnapshot) -> float:
    """Seconds from now until the runner first looks whether the referee overtook the bot (a timed decision)."""
    due = snap.view.deadline_ms
    return (0.0 if due is None else max(0.0, due / 1000 - time.time())) + _LATE_GRACE


def _overtaken(snap: GameSnapshot, now: GameSnapshot) -> bool:
    """The game ``now`` has moved on from ``snap`` without this seat's move: the referee's timeout came first."""
    return now.version != snap.version or not now.my_turn


def _in_time(move: engine.Move, began: float, timeout: float | None) -> engine.Move:
    """``move``, unless the bot took longer than ``timeout`` to give it: its answer may be taken after the limit
    when the bot's thread finished before the wait for it began (a fast bot, a busy machine), and a move later
    than its limit is still a forfeit."""
    if timeout is not None and time.monotonic() - began > timeout:
        raise concurrent.futures.TimeoutError
    return move



def _done(call: Callable[[], object]) -> concurrent.futures.Future[object]:
    """``call()`` now, as a future done with its value (or its exception)."""
    future: concurrent.futures.Future[object] = concurrent.futures.Future()
    try:
        future.set_result(call())
    except Exception as exc:
        future.set_exception(exc)
    return future


# ------------------------------------------------------------------------------------------------- blocking


def play_seat(target: str | RefereeClient, game_id: str, token: str, bot: Bot, *, stop: threading.Event | None = None,
              **options: Unpack[SeatOptions]) -> SeatResult:  # fmt: skip
    """Play the seat of ``token`` with ``bot`` until the match is over (or a forfeit, or ``stop`` is set).
    ``target``: "host:port" (a client is opened and closed here) or a ``RefereeClient`` to share. ``options``
    (``SeatOptions``): ``move_timeout`` (10 s; None: no limit), ``max_rejections`` (0), ``reconnect_timeout``
    (60 s), ``idle_check`` (5 s: the view is also checked after that long without events, a safety net that
    should never be needed).
    Raises ``RefereeError`` when the referee stays unreachable for ``reconnect_timeout`` seconds, or refuses the
    token or the game (UNAUTHENTICATED, NOT_FOUND, ...)."""
    client = RefereeClient(target, token) if isinstance(target, str) else target
    try:
        return _Blocking(_Play(client, game_id, token, bot, stop, **options), client).run()
    finally:
        if isinstance(target, str):
            client.close()


class _Blocking:
    """The blocking executor of a seat's drive loop: the stream read by a thread into a queue."""

    def __init__(self, play: _Play, client: RefereeClient) -> None:
        self.play = play
        self.client = client
        self.stream: queue.Queue[object] = queue.Queue()
        self.watch: Watch | None = None
        self.reader: threading.Thread | None = None

    def run(self) -> SeatResult:
        op = self.play.drive()
        answer, error = None, None
        try:
            while True:
                done, effect = step(op, answer, error)
                if done:
                    return cast(SeatResult, effect)
                try:
                    answer, error = self.perform(effect), None
                except BaseException as exc:
                    answer, error = None, exc
        finally:
            if self.watch is not None:
                self.watch.cancel()
            if self.reader is not None:
                self.reader.join(5)

    def perform(self, effect: object) -> Any:
        if isinstance(effect, _Take):
            try:
                return self.stream.get(timeout=effect.timeout) if effect.timeout > 0 else self.stream.get_nowait()
            except queue.Empty:
                return _EMPTY
        if isinstance(effect, _Do):
            return effect.call()
        if isinstance(effect, _Await):
            return bool(concurrent.futures.wait([effect.future], effect.timeout).done)
        if isinstance(effect, _Think):
            return _done(effect.call) if effect.inline else _in_thread(effect.call)
        if isinstance(effect, Sleep):
            time.sleep(effect.seconds)
        elif isinstance(effect, _Follow):
            self.watch = self.client.watch(self.play.game_id, after_version=effect.after_version,
                                           token=self.play.token, retry=_STREAM_RETRY,
                                           on_reconnect=lambda _: self.stream.put(_Reconnected()))  # fmt: skip
            self.reader = threading.Thread(target=_read, args=(self.watch, self.stream), daemon=True,
                                           name=f"watch-{self.play.game_id[:6]}")  # fmt: skip
            self.reader.start()
        return None


def _read(watch: Iterable[object], stream: queue.Queue[object]) -> None:
    try:
        for item in watch:
            stream.put(item)
        stream.put(_Ended())
    except BaseException as exc:
        stream.put(_Ended(exc))


# ---------------------------------------------------------------------------------------------------- asyncio


async def play_seat_async(target: str | AsyncRefereeClient, game_id: str, token: str, bot: Bot, *,
                          stop: asyncio.Event | None = None, **options: Unpack[SeatOptions]) -> SeatResult:  # fmt: skip
    """``play_seat`` for asyncio: the bot is asked in a thread of its own."""
    client = AsyncRefereeClient(target, token) if isinstance(target, str) else target
    try:
        return await _Async(_Play(client, game_id, token, bot, stop, **options), client).run()
    finally:
        if isinstance(target, str):
            await client.close()


class _Async:
    """The asyncio executor of a seat's drive loop: the stream read by a task into a queue."""

    def __init__(self, play: _Play, client: AsyncRefereeClient) -> None:
        self.play = play
        self.client = client
        self.stream: asyncio.Queue[object] = asyncio.Queue()
        self.reader: asyncio.Task[None] | None = None

    async def run(self) -> SeatResult:
        op, answer, error = self.play.drive(), None, None
        try:
            while not (outcome := step(op, answer, error))[0]:
                answer, error = None, None
                try:
                    answer = await self.perform(outcome[1])
                except BaseException as exc:  # CancelledError too: the loop's own (re)raise ends the task
                    error = exc
            return cast(SeatResult, outcome[1])
        finally:
            if self.reader is not None:
                self.reader.cancel()
                await asyncio.gather(self.reader, return_exceptions=True)

    async def perform(self, effect: object) -> Any:
        if isinstance(effect, _Take):
            if effect.timeout <= 0:
                return self.stream.get_nowait() if not self.stream.empty() else _EMPTY
            try:
                return await asyncio.wait_for(self.stream.get(), effect.timeout)
            except TimeoutError:
                return _EMPTY
        if isinstance(effect, _Do):
            return await effect.call()
        if isinstance(effect, _Await):
            done, _ = await asyncio.wait({effect.future}, timeout=effect.timeout)
            return bool(done)
        if isinstance(effect, _Think):
            return asyncio.wrap_future(_in_thread(effect.call))
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
        elif isinstance(effect, _Follow):
            watch = self.client.watch(self.play.game_id, after_version=effect.after_version, token=self.play.token,
                                      retry=_STREAM_RETRY,
                                      on_reconnect=lambda _: self.stream.put_nowait(_Reconnected()))  # fmt: skip
            self.reader = asyncio.create_task(_read_async(watch, self.stream))
        return None


async def _read_async(watch: Any, stream: asyncio.Queue[object]) -> None:
    try:
        async for item in watch:
            stream.put_nowait(item)
        stream.put_nowait(_Ended())
    except asyncio.CancelledError:
        watch.cancel()
        raise
    except Exception as exc:
        stream.put_nowait(_Ended(exc))
