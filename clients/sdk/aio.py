"""``AsyncRefereeClient``: the asyncio client (grpc.aio), with the same calls, deadlines, retries and resuming
watch as ``RefereeClient``. Create it inside the event loop that uses it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import grpc
import grpc.aio

import engine
from clients.sdk import _core, convert
from clients.sdk.errors import from_rpc_error
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


class AsyncRefereeClient:
    """An asyncio client of one referee; see ``RefereeClient`` for the parameters. ``await client.close()``
    (or ``async with``) when done."""

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
            grpc.aio.secure_channel(address, credentials, options)
            if credentials else grpc.aio.insecure_channel(address, options)
        )  # fmt: skip
        self._stub = referee_pb2_grpc.RefereeServiceStub(self._channel)
        self._rules: dict[str, Mapping[str, Any]] = {}

    async def close(self) -> None:
        """Close the channel (calls in flight are cancelled)."""
        await self._channel.close(None)

    async def __aenter__(self) -> AsyncRefereeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(
        self,
        method: grpc.aio.UnaryUnaryMultiCallable[Req, Resp],
        request: Req,
        token: str | None,
        timeout: float | None,
        retry: RetryPolicy | None = None,
        resolve_unknown: bool = False,
    ) -> tuple[Resp, int]:
        resends = _core.Resends(retry or self.retry, resolve_unknown=resolve_unknown)
        md = _core.metadata(token if token is not None else self.token)
        deadline = timeout if timeout is not None else self.timeout
        while True:
            resends.sends += 1
            try:
                return await method(request, timeout=deadline, metadata=md), resends.sends
            except grpc.RpcError as exc:
                pause = resends.after(from_rpc_error(exc))
            await asyncio.sleep(pause)

    async def rules(self, game_id: str, *, token: str | None = None) -> Mapping[str, Any]:
        """The game's complete option set (fetched once per game, then remembered)."""
        rules = self._rules.get(game_id)
        if rules is None:
            rules = (await self.get_game(game_id, token=token)).settings.options
        return rules

    async def create_game(
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
        """See ``RefereeClient.create_game`` (not retried)."""
        request = _core.create_request(
            profile, seats, options, target_score, max_hands, allow_spectators, preset_deals, seed, time_control,
            timeout_policy,
        )
        response, _ = await self._call(self._stub.CreateGame, request, token, timeout, NO_RETRY)
        game = _core.created(response)
        self._rules[game.game_id] = game.settings.options
        return game

    async def join_game(self, game_id: str, display_name: str, *, seat: int | None = None,
                        timeout: float | None = None) -> JoinedSeat:  # fmt: skip
        """See ``RefereeClient.join_game`` (not retried)."""
        request = _core.join_request(game_id, display_name, seat)
        response, _ = await self._call(self._stub.JoinGame, request, None, timeout, NO_RETRY)
        return _core.joined(response)

    async def get_game(self, game_id: str, *, token: str | None = None, timeout: float | None = None) -> GameInfo:
        """See ``RefereeClient.get_game``."""
        response, _ = await self._call(self._stub.GetGame, rpb.GetGameRequest(game_id=game_id), token, timeout)
        info = _core.game_info(response)
        self._rules[game_id] = info.settings.options
        return info

    async def submit_move(
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
        """See ``RefereeClient.submit_move`` (every resend carries the same request_id)."""
        rid = request_id or _core.new_request_id()
        request = _core.submit_request(game_id, move, rid, expected_version)
        response, attempts = await self._call(self._stub.SubmitMove, request, token, timeout, retry, True)
        rules = self._rules.get(game_id) or await self.rules(game_id, token=token)
        return _core.move_result(response, rules, rid, attempts)

    async def resign(
        self,
        game_id: str,
        *,
        request_id: str | None = None,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> MoveResult:
        """See ``RefereeClient.resign``."""
        rid = request_id or _core.new_request_id()
        request = _core.resign_request(game_id, rid, expected_version)
        response, attempts = await self._call(self._stub.Resign, request, token, timeout, retry, resolve_unknown=True)
        rules = self._rules.get(game_id) or await self.rules(game_id, token=token)
        return _core.resign_result(response, rules, rid, attempts)

    async def validate_move(
        self,
        game_id: str,
        move: engine.Move,
        *,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
    ) -> int:
        """See ``RefereeClient.validate_move``."""
        request = _core.validate_request(game_id, move, expected_version)
        response, _ = await self._call(self._stub.ValidateMove, request, token, timeout)
        return response.version

    async def get_replay(
        self,
        game_id: str,
        *,
        after_version: int | None = None,
        max_events: int = 0,
        all_pages: bool = True,
        token: str | None = None,
        timeout: float | None = None,
    ) -> Replay:
        """See ``RefereeClient.get_replay``."""
        pages = _core.ReplayPages()
        after = after_version
        while True:
            response, _ = await self._call(
                self._stub.GetReplay, _core.replay_request(game_id, after, max_events), token, timeout
            )
            after = pages.add(response)
            if after is None or not all_pages:
                return pages.replay(after)

    async def analyze_hand(
        self,
        cards: Iterable[str | int],
        *,
        profile: str = "",
        options: Mapping[str, convert.OptionValue] | None = None,
        timeout: float | None = None,
    ) -> Analysis:
        """See ``RefereeClient.analyze_hand``."""
        request = _core.analyze_request(cards, profile, options)
        response, _ = await self._call(self._stub.AnalyzeHand, request, None, timeout)
        return _core.analysis(response)

    async def ping(self, *, timeout: float | None = None) -> float:
        """Round trip to the referee, in seconds."""
        start = time.perf_counter()
        await self._call(self._stub.Ping, rpb.PingRequest(), None, timeout)
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
    ) -> AsyncWatch:
        """See ``RefereeClient.watch``; iterate with ``async for``."""
        return AsyncWatch(self, game_id, after_version, token, retry or self.retry,
                          timeout if timeout is not None else self.watch_timeout, on_reconnect)  # fmt: skip

    def _open_watch(
        self, request: rpb.WatchGameRequest, token: str | None, timeout: float
    ) -> grpc.aio.UnaryStreamCall[rpb.WatchGameRequest, rpb.WatchGameResponse]:
        md = _core.metadata(token if token is not None else self.token)
        return self._stub.WatchGame(request, timeout=timeout, metadata=md)


class AsyncWatch(AsyncIterator[WatchItem]):
    """The resuming event stream of one game (see ``AsyncRefereeClient.watch``)."""

    def __init__(
        self,
        client: AsyncRefereeClient,
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
        self._call: grpc.aio.UnaryStreamCall[rpb.WatchGameRequest, rpb.WatchGameResponse] | None = None
        self._cancelled = False
        self._items = self._run()

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def __anext__(self) -> WatchItem:
        return await self._items.__anext__()

    @property
    def version(self) -> int | None:
        """The last version delivered."""
        return self.cursor.version

    def cancel(self) -> None:
        """Stop: the iteration ends."""
        self._cancelled = True
        if self._call is not None:
            self._call.cancel()

    async def aclose(self) -> None:
        """Stop and release the stream."""
        self.cancel()
        await self._items.aclose()

    async def _run(self) -> AsyncGenerator[WatchItem, None]:
        failures = 0
        while not self._cancelled and not self.cursor.ended:
            call = self._client._open_watch(self.cursor.request(self.game_id), self._token, self._timeout)
            self._call = call
            try:
                async for update in call:
                    item = self.cursor.accept(update)
                    if item is None:
                        continue
                    failures = 0
                    if isinstance(item, dict):
                        yield item
                    else:
                        yield GameSnapshot.from_proto(item, await self._client.rules(self.game_id, token=self._token))
                return
            except (grpc.RpcError, asyncio.CancelledError) as exc:
                if self._cancelled:
                    return
                if not isinstance(exc, grpc.RpcError):
                    raise
                err = from_rpc_error(exc)
                if not _core.resumable(err):
                    raise err from None
                if err.code != grpc.StatusCode.DEADLINE_EXCEEDED:
                    failures += 1
                    if failures >= self._retry.attempts:
                        raise err from None
                    await asyncio.sleep(self._retry.backoff(failures - 1))
            finally:
                call.cancel()
            self.reconnects += 1
            if self._on_reconnect is not None:
                self._on_reconnect(self.cursor.version)
