"""The referee's calls written once, without I/O: each call is a generator that yields *effects* (send this
request, sleep this long, open / read / close a watch stream, deliver a watch item) and is sent back what each
effect gave, until it returns the call's value. ``RefereeClient`` (blocking) and ``AsyncRefereeClient``
(asyncio) are two small executors of the same operations: they perform the effects and nothing else, so that
request building, answer parsing, the retry and idempotency decisions (``_core.Resends``), the rules cache and
the watch's resume positions (``_core.WatchCursor``) and reconnections are the same code for both.

A failed send is answered with its ``RefereeError`` (as a value, not raised), so that the operation decides
whether to send again; a stream read is answered with a message, ``END`` (the stream ended, or the watch was
cancelled) or a ``RefereeError``."""

from __future__ import annotations

import functools
import inspect
import time
import types
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

import grpc
from google.protobuf.message import Message

import engine
from clients.sdk import _core, convert
from clients.sdk.errors import RefereeError
from clients.sdk.values import (
    NO_RETRY,
    Analysis,
    CreatedGame,
    GameInfo,
    GameSnapshot,
    JoinedSeat,
    MoveResult,
    Replay,
    RetryPolicy,
    TimeControl,
    TimeoutPolicy,
)
from engine.events import EventDict
from rummy_pb.rummy.v1 import referee_pb2 as rpb

R = TypeVar("R")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])
Resp = TypeVar("Resp", bound=Message)

WatchItem = GameSnapshot | EventDict
W = TypeVar("W", bound="WatchLoop")


# ------------------------------------------------------------------------------------------------- effects


@dataclass(frozen=True)
class Send:
    """One unary call: ``method`` is the stub's attribute ("SubmitMove"). Answered with the response, or the
    ``RefereeError`` it failed with."""

    method: str
    request: Message
    metadata: _core.Metadata
    timeout: float


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` (answered with None)."""

    seconds: float


@dataclass(frozen=True)
class Open:
    """Open a WatchGame stream (answered with the stream, or None when the watch was cancelled meanwhile)."""

    request: rpb.WatchGameRequest
    metadata: _core.Metadata
    timeout: float


@dataclass(frozen=True)
class Read:
    """The next message of ``stream``: a WatchGameResponse, ``END``, or the ``RefereeError`` it failed with."""

    stream: Any


@dataclass(frozen=True)
class Close:
    """Cancel ``stream`` (answered with None)."""

    stream: Any


@dataclass(frozen=True)
class Deliver:
    """Hand ``item`` to whoever iterates the watch (answered with None)."""

    item: WatchItem


Effect = Send | Sleep | Open | Read | Close | Deliver
#: An operation: effects out, their answers in, the call's value at the end.
Op = Generator[Any, Any, R]
#: What a stream read answers at the end of the stream (or once the watch was cancelled).
END = object()


def step(op: Op[R], answer: Any, error: BaseException | None = None) -> tuple[bool, Any]:
    """Resume ``op`` with ``answer`` (or ``error`` raised where it waits): (False, its next effect), or (True, its
    value) once it returned."""
    try:
        return False, (op.send(answer) if error is None else op.throw(error))
    except StopIteration as done:
        return True, done.value


def call(
    self: Session[Any],
    method: str,
    request: Message,
    answer: type[Resp],
    token: str | None,
    timeout: float | None,
    retry: RetryPolicy | None = None,
    resolve_unknown: bool = False,
) -> Op[tuple[Resp, int]]:
    """Send ``request``, again on transient failures (see ``_core.Resends``; ``resolve_unknown`` for moves): the
    response and the number of sends."""
    resends = _core.Resends(retry or self.retry, resolve_unknown=resolve_unknown)
    send = Send(method, request, _core.metadata(token if token is not None else self.token),
                timeout if timeout is not None else self.timeout)  # fmt: skip
    while True:
        resends.sends += 1
        response = yield send
        if isinstance(response, answer):
            return response, resends.sends
        yield Sleep(resends.after(cast(RefereeError, response)))


# ------------------------------------------------------------------------------------- operations as methods


class Operation(Generic[P, R]):
    """A call of ``Session``, written once as the operation ``op``: on a ``Blocking`` client a method that
    returns the value, on an ``Asynchronous`` one a coroutine method (each with ``op``'s name, docstring and
    parameters)."""

    def __init__(self, op: Callable[Concatenate[Session[Any], P], Op[R]]) -> None:
        def blocking(self: Blocking[Any], /, *args: Any, **kwargs: Any) -> Any:
            return self._run(op(self, *args, **kwargs))

        async def asynchronous(self: Asynchronous[Any], /, *args: Any, **kwargs: Any) -> Any:
            return await self._run(op(self, *args, **kwargs))

        self.op = op
        self.blocking = _signed(blocking, op, "{}")
        self.asynchronous = _signed(asynchronous, op, "Awaitable[{}]")

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Callable[..., Any]: ...
    @overload
    def __get__(self, obj: Blocking[Any], owner: type[Any]) -> Callable[P, R]: ...
    @overload
    def __get__(self, obj: Asynchronous[Any], owner: type[Any]) -> Callable[P, Awaitable[R]]: ...

    def __get__(self, obj: object, owner: type[Any]) -> Callable[..., Any]:
        method = self.asynchronous if issubclass(owner, Asynchronous) else self.blocking
        return method if obj is None else types.MethodType(method, obj)


def _signed(method: F, op: Callable[..., Any], returns: str) -> F:
    """``method`` with the name, docstring and parameters of ``op``, its return annotation ``Op[X]`` shown as
    ``returns`` with X in it."""
    functools.update_wrapper(method, op)
    signature = inspect.signature(op)
    shown = str(signature.return_annotation).removeprefix("Op[").removesuffix("]")
    first, *rest = signature.parameters.values()
    signature = signature.replace(parameters=[first.replace(annotation=inspect.Parameter.empty), *rest],
                                  return_annotation=returns.format(shown))  # fmt: skip
    setattr(method, "__signature__", signature)  # noqa: B010
    return method


# --------------------------------------------------------------------------------------------------- calls


def rules(self: Session[Any], game_id: str, *, token: str | None = None) -> Op[Mapping[str, Any]]:
    """The game's complete option set (fetched once per game with GetGame, then remembered)."""
    found = self._rules.get(game_id)
    if found is None:
        found = (yield from get_game(self, game_id, token=token)).settings.options
    return found


def create_game(
    self: Session[Any],
    profile: str = "gin",
    seats: Sequence[_core.Seat] = ("North", "South"),
    *,
    options: Mapping[str, convert.OptionValue] | None = None,
    target_score: int | None = None,
    max_hands: int | None = None,
    allow_spectators: bool = False,
    preset_deals: Iterable[engine.Deal] = (),
    seed: bytes | None = None,
    time_control: TimeControl | None = None,
    timeout_policy: TimeoutPolicy | None = None,
    token: str | None = None,
    timeout: float | None = None,
) -> Op[CreatedGame]:
    """Create a game (seats as display names or ``SeatSpec``); preset deals and seeds need the organizer
    token. ``time_control``: ``PerMove(limit)``, ``Clock(initial, increment)`` or ``Bank(allowance, bank)``
    (seconds; None: none), kept by the referee; ``timeout_policy``: what it does when a decision is due
    (``TimeoutPolicy("forfeit_match")``, the default, or ``TimeoutPolicy("auto_move", n)``). Not retried (a
    resend could create a second game)."""
    request = _core.create_request(
        profile, seats, options, target_score, max_hands, allow_spectators, preset_deals, seed, time_control,
        timeout_policy,
    )
    response, _ = yield from call(self, "CreateGame", request, rpb.CreateGameResponse, token, timeout, NO_RETRY)
    game = _core.created(response)
    self._rules[game.game_id] = game.settings.options
    return game


def join_game(
    self: Session[Any], game_id: str, display_name: str, *, seat: int | None = None, timeout: float | None = None
) -> Op[JoinedSeat]:
    """Take an open seat (the lowest when ``seat`` is None). Not retried (a resend could take two seats)."""
    request = _core.join_request(game_id, display_name, seat)
    response, _ = yield from call(self, "JoinGame", request, rpb.JoinGameResponse, None, timeout, NO_RETRY)
    return _core.joined(response)


def get_game(
    self: Session[Any], game_id: str, *, token: str | None = None, timeout: float | None = None
) -> Op[GameInfo]:
    """The caller's view (with its legal moves when it is their turn) and the game's settings."""
    request = rpb.GetGameRequest(game_id=game_id)
    response, _ = yield from call(self, "GetGame", request, rpb.GetGameResponse, token, timeout)
    info = _core.game_info(response)
    self._rules[game_id] = info.settings.options
    return info


def submit_move(
    self: Session[Any],
    game_id: str,
    move: engine.Move,
    *,
    request_id: str | None = None,
    expected_version: int | None = None,
    token: str | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
) -> Op[MoveResult]:
    """Play ``move`` as the token's seat. Every send carries the same ``request_id`` (a fresh uuid4 unless
    given), so a resend after a lost answer returns the original response and applies nothing. An answer
    ``COMMIT_OUTCOME_UNKNOWN`` is resolved by resending, beyond ``retry``'s attempts; a ``RefereeError`` with
    that reason means the move may or may not have been applied: resend it with ``request_id`` to learn."""
    rid = request_id or _core.new_request_id()
    request = _core.submit_request(game_id, move, rid, expected_version)
    response, attempts = yield from call(self, "SubmitMove", request, rpb.SubmitMoveResponse, token, timeout, retry,
                                         resolve_unknown=True)  # fmt: skip
    game_rules = self._rules.get(game_id) or (yield from rules(self, game_id, token=token))  # the View has them
    return _core.move_result(response, game_rules, rid, attempts)


def resign(
    self: Session[Any],
    game_id: str,
    *,
    request_id: str | None = None,
    expected_version: int | None = None,
    token: str | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
) -> Op[MoveResult]:
    """Resign the match as the token's seat (at any time). Idempotent: resends carry one ``request_id``, and a
    second resign answers the same outcome. The snapshot's ``data["result"]`` says who won and how."""
    rid = request_id or _core.new_request_id()
    request = _core.resign_request(game_id, rid, expected_version)
    response, attempts = yield from call(self, "Resign", request, rpb.ResignResponse, token, timeout, retry,
                                         resolve_unknown=True)  # fmt: skip
    game_rules = self._rules.get(game_id) or (yield from rules(self, game_id, token=token))
    return _core.resign_result(response, game_rules, rid, attempts)


def validate_move(
    self: Session[Any],
    game_id: str,
    move: engine.Move,
    *,
    expected_version: int | None = None,
    token: str | None = None,
    timeout: float | None = None,
) -> Op[int]:
    """Check ``move`` as SubmitMove would, applying nothing: the version it was checked against (raises the
    RefereeError SubmitMove would)."""
    request = _core.validate_request(game_id, move, expected_version)
    response, _ = yield from call(self, "ValidateMove", request, rpb.ValidateMoveResponse, token, timeout)
    return response.version


def get_replay(
    self: Session[Any],
    game_id: str,
    *,
    after_version: int | None = None,
    max_events: int = 0,
    all_pages: bool = True,
    token: str | None = None,
    timeout: float | None = None,
) -> Op[Replay]:
    """The whole game with every card (any token of the game once it is over; the organizer any time).
    ``all_pages``: follow the pages to the end; otherwise one page (see ``next_after_version``)."""
    pages = _core.ReplayPages()
    after = after_version
    while True:
        request = _core.replay_request(game_id, after, max_events)
        response, _ = yield from call(self, "GetReplay", request, rpb.GetReplayResponse, token, timeout)
        after = pages.add(response)
        if after is None or not all_pages:
            return pages.replay(after)


def analyze_hand(
    self: Session[Any],
    cards: Iterable[str | int],
    *,
    profile: str = "",
    options: Mapping[str, convert.OptionValue] | None = None,
    timeout: float | None = None,
) -> Op[Analysis]:
    """Minimum deadwood, the optimal arrangements and (11 Gin cards) the knock discards of a hand."""
    request = _core.analyze_request(cards, profile, options)
    response, _ = yield from call(self, "AnalyzeHand", request, rpb.AnalyzeHandResponse, None, timeout)
    return _core.analysis(response)


def ping(self: Session[Any], *, timeout: float | None = None) -> Op[float]:
    """Round trip to the referee, in seconds."""
    start = time.perf_counter()
    yield from call(self, "Ping", rpb.PingRequest(), rpb.PingResponse, None, timeout)
    return time.perf_counter() - start


# ------------------------------------------------------------------------------------------------- session


class Session(Generic[W]):
    """What a client is, whichever executor drives it: the channel's target and options, the defaults of its
    calls, the rules of the games it has seen; ``_open_channel`` makes the executor's channel, ``_watch_type``
    is its kind of watch."""

    _watch_type: ClassVar[type[WatchLoop]]

    def __init__(
        self,
        target: str | Sequence[str],
        token: str | None = None,
        *,
        timeout: float = _core.DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = (),
        watch_timeout: float = _core.DEFAULT_WATCH_TIMEOUT,
        tls: bool = False,
        ca_file: str | Path | None = None,
        client_cert_file: str | Path | None = None,
        client_key_file: str | Path | None = None,
    ) -> None:
        address, balancing = _core.channel_target(target)
        options = [*_core.CHANNEL_OPTIONS, *balancing, *channel_options]
        credentials = _core.channel_credentials(credentials, tls, ca_file, client_cert_file, client_key_file)
        self.target = target if isinstance(target, str) else ",".join(target)
        self.token = token
        self.timeout = timeout
        self.watch_timeout = watch_timeout
        self.retry = retry or RetryPolicy()
        self._channel = self._open_channel(address, credentials, options)
        self._rules: dict[str, Mapping[str, Any]] = {}

    def _open_channel(
        self, address: str, credentials: grpc.ChannelCredentials | None, options: list[tuple[str, Any]]
    ) -> Any:
        raise NotImplementedError

    def watch(
        self,
        game_id: str,
        *,
        after_version: int | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        on_reconnect: Callable[[int | None], None] | None = None,
    ) -> W:
        """Follow a game: a snapshot first, then every event after the snapshot's version as the caller may see
        it, until the match ends. With ``after_version``: no snapshot, every event after that version;
        ``FROM_START`` (-1): every event of the game, the first deal's (version 0) included. A stream that breaks
        is resumed from the last version seen, without a gap or a duplicate; ``retry`` bounds the reconnections
        in a row that get nothing from a referee that does not answer (default: the client's policy).
        ``on_reconnect(after_version)`` is called before each resumption. Iterate the returned ``Watch`` (``async
        for`` an ``AsyncWatch``); ``cancel()`` it (a ``Watch`` from any thread)."""
        watch = self._watch_type(self, game_id, after_version, token, retry or self.retry,
                                 timeout if timeout is not None else self.watch_timeout, on_reconnect)  # fmt: skip
        return cast(W, watch)

    rules = Operation(rules)
    create_game = Operation(create_game)
    join_game = Operation(join_game)
    get_game = Operation(get_game)
    submit_move = Operation(submit_move)
    resign = Operation(resign)
    validate_move = Operation(validate_move)
    get_replay = Operation(get_replay)
    analyze_hand = Operation(analyze_hand)
    ping = Operation(ping)


class Blocking(Session[W]):
    """An executor that drives an operation to its value, blocking."""

    def _run(self, op: Op[R]) -> R:
        raise NotImplementedError


class Asynchronous(Session[W]):
    """An executor that drives an operation to its value, as a coroutine."""

    async def _run(self, op: Op[R]) -> R:
        raise NotImplementedError


# --------------------------------------------------------------------------------------------------- watch


class WatchLoop:
    """The resuming event stream of one game, whichever executor reads it (see ``RefereeClient.watch``): a
    snapshot first (without ``after_version``), then every event after the cursor's position; a stream that
    breaks is opened again from there, ``retry`` bounding the reconnections in a row that get nothing (a
    stream's own deadline passing is no failure, nor a stream of a quiet game cut without a reason while the
    referee answers a Ping: a connection it ended at its maximum age, ``serve --max-connection-age``)."""

    def __init__(
        self,
        client: Session[Any],
        game_id: str,
        after_version: int | None,
        token: str | None,
        retry: RetryPolicy,
        timeout: float,
        on_reconnect: Callable[[int | None], None] | None,
    ) -> None:
        self.game_id = game_id
        self.cursor = _core.WatchCursor(after_version)
        self.reconnects = 0
        self._session = client
        self._token = token
        self._retry = retry
        self._timeout = timeout
        self._on_reconnect = on_reconnect
        self._cancelled = False
        self._call: Any = None  # the stream open now
        self._op = self._loop()
        self._answer: Any = None  # what the last effect gave
        self._start()

    def _start(self) -> None:
        """The executor's own state (after the loop's)."""

    @property
    def version(self) -> int | None:
        """The last version delivered."""
        return self.cursor.version

    def _advance(self) -> Effect | None:
        """The loop's next effect, given the last one's answer (None at the end)."""
        answer, self._answer = self._answer, None
        done, effect = step(self._op, answer)
        return None if done else cast(Effect, effect)

    def _drop(self) -> None:
        """Cancel the stream open now, if any."""
        if self._call is not None:
            self._call.cancel()

    def _loop(self) -> Op[None]:
        failures = 0
        while not self._cancelled and not self.cursor.ended:
            metadata = _core.metadata(self._token if self._token is not None else self._session.token)
            stream = yield Open(self.cursor.request(self.game_id), metadata, self._timeout)
            if stream is None:
                return
            err, delivered = yield from self._follow(stream)
            yield Close(stream)
            if err is None or self._cancelled:
                return  # the server ended the stream (the match is over), or the watch was cancelled
            if delivered:
                failures = 0
            if not _core.resumable(err):
                raise err
            if err.code != grpc.StatusCode.DEADLINE_EXCEEDED:  # a stream's own deadline is no failure
                failures += 1
                if not delivered and not err.reason and (yield from self._answers()):
                    failures = 1  # cut while the game was quiet (a connection aged out): the referee is there
                if failures >= self._retry.attempts:
                    raise err
                yield Sleep(self._retry.backoff(failures - 1))
            self.reconnects += 1
            if self._on_reconnect is not None:
                self._on_reconnect(self.cursor.version)

    def _answers(self) -> Op[bool]:
        """Whether the referee answers a Ping now (one send): a stream it cut without a word (no reason) before
        anything was new reached it all the same."""
        try:
            yield from call(self._session, "Ping", rpb.PingRequest(), rpb.PingResponse, None, None, NO_RETRY)
        except RefereeError:
            return False
        return True

    def _follow(self, stream: Any) -> Op[tuple[RefereeError | None, bool]]:
        """Deliver what ``stream`` brings that is new: (None at its end, or the error it broke with; whether
        anything was delivered)."""
        delivered = False
        read = Read(stream)
        while True:
            update = yield read
            if update is END:
                return None, delivered
            if isinstance(update, RefereeError):
                return update, delivered
            item = self.cursor.accept(update)
            if item is None:
                continue
            delivered = True
            if isinstance(item, dict):
                yield Deliver(item)
            else:
                game_rules = yield from rules(self._session, self.game_id, token=self._token)
                yield Deliver(GameSnapshot.from_proto(item, game_rules))


__all__ = ["END", "Asynchronous", "Blocking", "Close", "Deliver", "Effect", "Op", "Open", "Operation", "Read", "Send",
           "Session", "Sleep", "WatchLoop", "step"]  # fmt: skip
