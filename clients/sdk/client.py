"""``RefereeClient``: the blocking client of the referee's gRPC API.

Every call has a deadline (``timeout``, per send), carries the bearer token (the client's, or one given to the
call), and is sent again with backoff when it fails with UNAVAILABLE or DEADLINE_EXCEEDED, except CreateGame and
JoinGame, which are not idempotent (a resent JoinGame could take a second seat). A move is sent with a
``request_id`` (a fresh uuid4 unless given) and every resend carries the same one: the referee applies it once and
answers a resend with the original response. A move answered UNAVAILABLE with the reason ``COMMIT_OUTCOME_UNKNOWN``
(the referee could not tell whether its storage committed it) is always resolved by resending it with the same
``request_id``, even when the retry policy's attempts are spent (up to ``_core.OUTCOME_RESENDS`` more sends); if it
still cannot be resolved, the call fails with that reason, never with another one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import grpc

import engine
from clients.sdk import _core, convert
from clients.sdk.errors import RefereeError, from_rpc_error
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
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc

Req = TypeVar("Req")
Resp = TypeVar("Resp")

WatchItem = GameSnapshot | dict[str, Any]


class RefereeClient:
    """A blocking client of the referee at ``target`` ("host:port"), or of several referees sharing one Redis
    ("host:port,host:port" or a sequence of addresses: each call goes to the next one connected, gRPC's
    ``round_robin``; a move retried after UNAVAILABLE may go to another one, with the same request_id).
    ``token``: the default bearer token of the calls (each call may name another). ``timeout``: the default
    deadline of each send, in seconds.
    ``retry``: how transient failures are retried. TLS: ``tls=True`` checks the referee's certificate against
    the system's roots, ``ca_file`` against that CA (PEM; implies TLS); ``client_cert_file`` and
    ``client_key_file`` (PEM) answer a referee that asks for a client certificate (``--tls-client-ca``); or pass
    ready ``credentials``; plaintext by default. Close it (or use it as a context manager) when done."""

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
        self._channel = (
            grpc.secure_channel(address, credentials, options)
            if credentials
            else grpc.insecure_channel(address, options)
        )
        self._stub = referee_pb2_grpc.RefereeServiceStub(self._channel)
        self._rules: dict[str, Mapping[str, Any]] = {}

    # ------------------------------------------------------------------------------------------- plumbing

    def close(self) -> None:
        """Close the channel (calls in flight are cancelled)."""
        self._channel.close()

    def __enter__(self) -> RefereeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self,
        method: grpc.UnaryUnaryMultiCallable[Req, Resp],
        request: Req,
        token: str | None,
        timeout: float | None,
        retry: RetryPolicy | None = None,
        resolve_unknown: bool = False,
    ) -> tuple[Resp, int]:
        """Send ``request``, again on transient failures (see ``_core.Resends``; ``resolve_unknown`` for moves):
        the response and the number of sends."""
        resends = _core.Resends(retry or self.retry, resolve_unknown=resolve_unknown)
        md = _core.metadata(token if token is not None else self.token)
        deadline = timeout if timeout is not None else self.timeout
        while True:
            resends.sends += 1
            try:
                return method(request, timeout=deadline, metadata=md), resends.sends
            except grpc.RpcError as exc:
                pause = resends.after(from_rpc_error(exc))
            time.sleep(pause)

    def rules(self, game_id: str, *, token: str | None = None) -> Mapping[str, Any]:
        """The game's complete option set (fetched once per game with GetGame, then remembered)."""
        rules = self._rules.get(game_id)
        if rules is None:
            rules = self.get_game(game_id, token=token).settings.options
        return rules

    # ---------------------------------------------------------------------------------------------- calls

    def create_game(
        self,
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
    ) -> CreatedGame:
        """Create a game (seats as display names or ``SeatSpec``); preset deals and seeds need the organizer
        token. ``time_control``: ``PerMove(limit)``, ``Clock(initial, increment)`` or ``Bank(allowance, bank)``
        (seconds; None: none), kept by the referee; ``timeout_policy``: what it does when a decision is due
        (``TimeoutPolicy("forfeit_match")``, the default, or ``TimeoutPolicy("auto_move", n)``). Not retried (a
        resend could create a second game)."""
        request = _core.create_request(
            profile, seats, options, target_score, max_hands, allow_spectators, preset_deals, seed, time_control,
            timeout_policy,
        )
        response, _ = self._call(self._stub.CreateGame, request, token, timeout, NO_RETRY)
        game = _core.created(response)
        self._rules[game.game_id] = game.settings.options
        return game

    def join_game(self, game_id: str, display_name: str, *, seat: int | None = None,
                  timeout: float | None = None) -> JoinedSeat:  # fmt: skip
        """Take an open seat (the lowest when ``seat`` is None). Not retried (a resend could take two seats)."""
        request = _core.join_request(game_id, display_name, seat)
        response, _ = self._call(self._stub.JoinGame, request, None, timeout, NO_RETRY)
        return _core.joined(response)

    def get_game(self, game_id: str, *, token: str | None = None, timeout: float | None = None) -> GameInfo:
        """The caller's view (with its legal moves when it is their turn) and the game's settings."""
        response, _ = self._call(self._stub.GetGame, rpb.GetGameRequest(game_id=game_id), token, timeout)
        info = _core.game_info(response)
        self._rules[game_id] = info.settings.options
        return info

    def submit_move(
        self,
        game_id: str,
        move: engine.Move,
        *,
        request_id: str | None = None,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> MoveResult:
        """Play ``move`` as the token's seat. Every send carries the same ``request_id`` (a fresh uuid4 unless
        given), so a resend after a lost answer returns the original response and applies nothing. An answer
        ``COMMIT_OUTCOME_UNKNOWN`` is resolved by resending, beyond ``retry``'s attempts; a ``RefereeError`` with
        that reason means the move may or may not have been applied: resend it with ``request_id`` to learn."""
        rid = request_id or _core.new_request_id()
        request = _core.submit_request(game_id, move, rid, expected_version)
        response, attempts = self._call(self._stub.SubmitMove, request, token, timeout, retry, True)
        rules = self._rules.get(game_id) or self.rules(game_id, token=token)  # the View carries the rules
        return _core.move_result(response, rules, rid, attempts)

    def resign(
        self,
        game_id: str,
        *,
        request_id: str | None = None,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> MoveResult:
        """Resign the match as the token's seat (at any time). Idempotent: resends carry one ``request_id``, and a
        second resign answers the same outcome. The snapshot's ``data["result"]`` says who won and how."""
        rid = request_id or _core.new_request_id()
        request = _core.resign_request(game_id, rid, expected_version)
        response, attempts = self._call(self._stub.Resign, request, token, timeout, retry, resolve_unknown=True)
        rules = self._rules.get(game_id) or self.rules(game_id, token=token)
        return _core.resign_result(response, rules, rid, attempts)

    def validate_move(
        self,
        game_id: str,
        move: engine.Move,
        *,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
    ) -> int:
        """Check ``move`` as SubmitMove would, applying nothing: the version it was checked against (raises the
        RefereeError SubmitMove would)."""
        request = _core.validate_request(game_id, move, expected_version)
        response, _ = self._call(self._stub.ValidateMove, request, token, timeout)
        return response.version

    def get_replay(
        self,
        game_id: str,
        *,
        after_version: int | None = None,
        max_events: int = 0,
        all_pages: bool = True,
        token: str | None = None,
        timeout: float | None = None,
    ) -> Replay:
        """The whole game with every card (any token of the game once it is over; the organizer any time).
        ``all_pages``: follow the pages to the end; otherwise one page (see ``next_after_version``)."""
        pages = _core.ReplayPages()
        after = after_version
        while True:
            response, _ = self._call(
                self._stub.GetReplay, _core.replay_request(game_id, after, max_events), token, timeout
            )
            after = pages.add(response)
            if after is None or not all_pages:
                return pages.replay(after)

    def analyze_hand(
        self,
        cards: Iterable[str | int],
        *,
        profile: str = "",
        options: Mapping[str, convert.OptionValue] | None = None,
        timeout: float | None = None,
    ) -> Analysis:
        """Minimum deadwood, the optimal arrangements and (11 Gin cards) the knock discards of a hand."""
        response, _ = self._call(self._stub.AnalyzeHand, _core.analyze_request(cards, profile, options), None, timeout)
        return _core.analysis(response)

    def ping(self, *, timeout: float | None = None) -> float:
        """Round trip to the referee, in seconds."""
        start = time.perf_counter()
        self._call(self._stub.Ping, rpb.PingRequest(), None, timeout)
        return time.perf_counter() - start

    def watch(
        self,
        game_id: str,
        *,
        after_version: int | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        on_reconnect: Callable[[int | None], None] | None = None,
    ) -> Watch:
        """Follow a game: a snapshot first, then every event after the snapshot's version as the caller may see
        it, until the match ends. With ``after_version``: no snapshot, every event after that version;
        ``FROM_START`` (-1): every event of the game, the first deal's (version 0) included. A stream that breaks
        is resumed from the last version seen, without a gap or a duplicate; ``retry`` bounds the reconnections
        in a row that get nothing (default: the client's policy). ``on_reconnect(after_version)`` is called before
        each resumption. Iterate the returned ``Watch``; ``cancel()`` it from any thread."""
        return Watch(self, game_id, after_version, token, retry or self.retry,
                     timeout if timeout is not None else self.watch_timeout, on_reconnect)  # fmt: skip

    def _open_watch(
        self, request: rpb.WatchGameRequest, token: str | None, timeout: float
    ) -> grpc.CallIterator[rpb.WatchGameResponse]:
        md = _core.metadata(token if token is not None else self.token)
        return self._stub.WatchGame(request, timeout=timeout, metadata=md)


class Watch(Iterator[WatchItem]):
    """The resuming event stream of one game (see ``RefereeClient.watch``)."""

    def __init__(
        self,
        client: RefereeClient,
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
        self._client = client
        self._token = token
        self._retry = retry
        self._timeout = timeout
        self._on_reconnect = on_reconnect
        self._lock = threading.Lock()
        self._call: grpc.CallIterator[rpb.WatchGameResponse] | None = None
        self._cancelled = False
        self._items = self._run()

    def __iter__(self) -> Watch:
        return self

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()

    def __next__(self) -> WatchItem:
        return next(self._items)

    @property
    def version(self) -> int | None:
        """The last version delivered."""
        return self.cursor.version

    def cancel(self) -> None:
        """Stop: the iteration ends (from any thread)."""
        with self._lock:
            self._cancelled = True
            if self._call is not None:
                self._call.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leaves it untyped

    def _run(self) -> Iterator[WatchItem]:
        failures = 0
        while not self._cancelled and not self.cursor.ended:
            with self._lock:
                if self._cancelled:
                    return
                call = self._client._open_watch(self.cursor.request(self.game_id), self._token, self._timeout)
                self._call = call
            try:
                for update in call:
                    item = self.cursor.accept(update)
                    if item is None:
                        continue
                    failures = 0
                    if isinstance(item, dict):
                        yield item
                    else:
                        yield GameSnapshot.from_proto(item, self._client.rules(self.game_id, token=self._token))
                return  # the server ended the stream: the match is over
            except grpc.RpcError as exc:
                if self._cancelled:
                    return
                err = from_rpc_error(exc)
                if not _core.resumable(err):
                    raise err from None
                if err.code != grpc.StatusCode.DEADLINE_EXCEEDED:  # a stream's own deadline is no failure
                    failures += 1
                    if failures >= self._retry.attempts:
                        raise err from None
                    time.sleep(self._retry.backoff(failures - 1))
            finally:
                call.cancel()  # type: ignore[no-untyped-call]
            self.reconnects += 1
            if self._on_reconnect is not None:
                self._on_reconnect(self.cursor.version)


__all__ = ["RefereeClient", "RefereeError", "Watch"]
