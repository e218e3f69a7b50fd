"""A move answered UNAVAILABLE ``COMMIT_OUTCOME_UNKNOWN`` is resolved by the SDK: it is sent again with the same
``request_id`` (even with the retry policy spent) and the call returns the move's one and only answer; every move
of the SDK and of the seat runner carries a request_id; a move in flight while Redis freezes is applied once.

``OutcomeProxy`` stands between the client and a real referee (over the real Redis) and passes every call through,
byte for byte, except that it can answer chosen SubmitMove calls with that status, as a referee does when its
storage took a commit without confirming it: after the referee applied the move (``lose_next``: the answer is
lost) or without passing it on (``unknown_next``: nothing was applied)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from clients.bots import make_bot
from clients.runner import play_seat
from clients.sdk import (
    COMMIT_OUTCOME_UNKNOWN,
    NO_RETRY,
    OUTCOME_RESENDS,
    AsyncRefereeClient,
    RefereeClient,
    RefereeError,
    RetryPolicy,
)
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ServerProcess, ServerThread

SUBMIT = "/rummy.v1.RefereeService/SubmitMove"
FAST = RetryPolicy(attempts=5, initial_backoff=0.01, max_backoff=0.05)


def _status(code: int, grpc_code: grpc.StatusCode, reason: str, message: str) -> grpc.Status:
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="rummy-referee"))
    status: grpc.Status = rpc_status.to_status(status_pb2.Status(code=code, message=message, details=[info]))
    assert status.code == grpc_code
    return status


UNKNOWN = _status(code_pb2.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, COMMIT_OUTCOME_UNKNOWN,
                  "the move may or may not have been committed; resend it with the same request_id")  # fmt: skip
STORAGE = _status(code_pb2.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE", "storage unreachable")


class OutcomeProxy(grpc.GenericRpcHandler):
    """A byte-for-byte gRPC proxy in front of a referee that answers chosen SubmitMove calls UNAVAILABLE."""

    def __init__(self, upstream: str) -> None:
        self._channel = grpc.insecure_channel(upstream)
        self._lock = threading.Lock()
        # What to do with the next SubmitMove calls, one word each (then: pass them on): "lose" (passed on, the
        # referee's answer replaced by COMMIT_OUTCOME_UNKNOWN), "unknown" (answered COMMIT_OUTCOME_UNKNOWN, not
        # passed on), "storage_down" (answered STORAGE_UNAVAILABLE, not passed on).
        self.plan: list[str] = []
        self.lost: list[bytes] = []  # the answers replaced
        self.submits: list[rpb.SubmitMoveRequest] = []  # every SubmitMove seen
        self._server = grpc.server(concurrent.futures.ThreadPoolExecutor(16))
        self._server.add_generic_rpc_handlers((self,))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.stop(None)
        self._channel.close()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = details.method
        if method.endswith("/WatchGame"):
            return grpc.unary_stream_rpc_method_handler(lambda request, context: self._stream(method, request, context))
        return grpc.unary_unary_rpc_method_handler(lambda request, context: self._unary(method, request, context))

    def _pick(self) -> str:
        with self._lock:
            return self.plan.pop(0) if self.plan else "pass"

    def _unary(self, method: str, request: bytes, context: grpc.ServicerContext) -> bytes:
        mode = "pass"
        if method == SUBMIT:
            self.submits.append(rpb.SubmitMoveRequest.FromString(request))
            mode = self._pick()
            if mode == "unknown":
                context.abort_with_status(UNKNOWN)
            if mode == "storage_down":
                context.abort_with_status(STORAGE)
        try:
            response: bytes = self._channel.unary_unary(method)(
                request, metadata=_forwarded(context), timeout=context.time_remaining()
            )
        except grpc.RpcError as exc:
            context.abort_with_status(_passed_on(exc))
        if mode == "lose":
            self.lost.append(response)
            context.abort_with_status(UNKNOWN)
        return response

    def _stream(self, method: str, request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        call = self._channel.unary_stream(method)(request, metadata=_forwarded(context),
                                                  timeout=context.time_remaining())  # fmt: skip
        context.add_callback(call.cancel)
        try:
            yield from call
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                context.abort_with_status(_passed_on(exc))


class _Status(grpc.Status):
    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: Any) -> None:
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata


def _passed_on(exc: grpc.RpcError) -> grpc.Status:
    call: Any = exc
    return _Status(call.code(), call.details() or "", call.trailing_metadata() or ())


def _forwarded(context: grpc.ServicerContext) -> list[tuple[str, str | bytes]]:
    return [(k, v) for k, v in context.invocation_metadata() if k == "authorization"]


@pytest.fixture
def proxy(referee: ServerThread) -> Iterator[OutcomeProxy]:
    p = OutcomeProxy(referee.address)
    try:
        yield p
    finally:
        p.close()


def _mover(client: RefereeClient) -> tuple[str, str]:
    game = client.create_game("gin", ["Ann", "Bob"])
    snap = client.get_game(game.game_id, token=game.tokens[0]).snapshot
    return game.game_id, game.tokens[snap.to_act]


def test_an_applied_move_answered_outcome_unknown_is_resolved_even_with_no_retries_left(
    client: RefereeClient, proxy: OutcomeProxy
) -> None:
    game_id, token = _mover(client)
    with RefereeClient(proxy.address, token, retry=NO_RETRY) as sdk:
        before = sdk.get_game(game_id)
        proxy.plan = ["lose"]
        result = sdk.submit_move(game_id, before.legal[0])
    assert result.attempts == 2  # the lost answer, then the resend
    assert result.request_id  # the SDK made one up: every move carries one
    assert result.proto == rpb.SubmitMoveResponse.FromString(proxy.lost[0])  # the move's one answer
    assert [s.request_id for s in proxy.submits] == [result.request_id] * 2
    assert client.get_game(game_id, token=token).version == before.version + 1 == result.version


def test_a_move_not_applied_but_answered_outcome_unknown_is_applied_by_the_resend(
    client: RefereeClient, proxy: OutcomeProxy
) -> None:
    game_id, token = _mover(client)
    with RefereeClient(proxy.address, token, retry=NO_RETRY) as sdk:
        before = sdk.get_game(game_id)
        proxy.plan = ["unknown"] * 2
        result = sdk.submit_move(game_id, before.legal[0], request_id="resolve-me")
    assert result.attempts == 3
    assert {s.request_id for s in proxy.submits} == {"resolve-me"}
    assert client.get_game(game_id, token=token).version == before.version + 1 == result.version


def test_an_outcome_that_stays_unknown_fails_with_that_reason_and_a_later_resend_resolves_it(
    client: RefereeClient, proxy: OutcomeProxy
) -> None:
    game_id, token = _mover(client)
    with RefereeClient(proxy.address, token, retry=FAST) as sdk:
        before = sdk.get_game(game_id)
        move = before.legal[0]
        proxy.plan = ["lose"] + ["unknown"] * OUTCOME_RESENDS  # applied at once, then unknown at every resend
        with pytest.raises(RefereeError) as caught:
            sdk.submit_move(game_id, move, request_id="stays-unknown")
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
        assert caught.value.reason == COMMIT_OUTCOME_UNKNOWN
        assert len(proxy.submits) == OUTCOME_RESENDS + 1  # bounded: the retry policy's 5 did not matter
        # after an unknown outcome, a plain failure of the last resend still says the outcome is unknown
        proxy.plan = ["unknown"] + ["storage_down"] * FAST.attempts
        with pytest.raises(RefereeError) as still:
            sdk.submit_move(game_id, move, request_id="stays-unknown")
        assert still.value.reason == COMMIT_OUTCOME_UNKNOWN
        assert "STORAGE_UNAVAILABLE" in still.value.message
        again = sdk.submit_move(game_id, move, request_id="stays-unknown")
    assert again.proto == rpb.SubmitMoveResponse.FromString(proxy.lost[0])
    assert client.get_game(game_id, token=token).version == before.version + 1


def test_plain_unavailable_still_follows_the_retry_policy(client: RefereeClient, proxy: OutcomeProxy) -> None:
    game_id, token = _mover(client)
    with RefereeClient(proxy.address, token, retry=RetryPolicy(attempts=2, initial_backoff=0.01)) as sdk:
        before = sdk.get_game(game_id)
        proxy.plan = ["storage_down"] * 2
        with pytest.raises(RefereeError) as caught:
            sdk.submit_move(game_id, before.legal[0])
    assert caught.value.reason == "STORAGE_UNAVAILABLE"
    assert len(proxy.submits) == 2
    assert client.get_game(game_id, token=token).version == before.version


def test_the_async_client_resolves_an_unknown_outcome_too(client: RefereeClient, proxy: OutcomeProxy) -> None:
    game_id, token = _mover(client)

    async def body() -> None:
        async with AsyncRefereeClient(proxy.address, token, retry=NO_RETRY) as sdk:
            before = await sdk.get_game(game_id)
            proxy.plan = ["lose"]
            result = await sdk.submit_move(game_id, before.legal[0])
            assert result.attempts == 2
            assert result.proto == rpb.SubmitMoveResponse.FromString(proxy.lost[0])
            assert (await sdk.get_game(game_id)).version == before.version + 1

    asyncio.run(body())


def test_every_move_of_the_seat_runner_carries_its_own_request_id(client: RefereeClient, proxy: OutcomeProxy) -> None:
    game = client.create_game("gin", ["a", "b"], max_hands=1)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        seats = [pool.submit(play_seat, proxy.address, game.game_id, game.tokens[s], make_bot("random", s))
                 for s in (0, 1)]  # fmt: skip
        results = [f.result(timeout=120) for f in seats]
    assert all(r.finished for r in results)
    ids = [s.request_id for s in proxy.submits]
    assert len(ids) == sum(r.moves for r in results) > 0
    assert all(ids) and len(set(ids)) == len(ids)


def test_a_move_in_flight_while_redis_freezes_is_applied_once(private_redis: RedisProcess, tmp_path: Path) -> None:
    """The real fault: Redis stopped (SIGSTOP) while moves are sent. The referee answers UNAVAILABLE (within its 1 s
    storage timeout; COMMIT_OUTCOME_UNKNOWN where it cannot tell whether the commit happened), the SDK resends with
    the same request_id, and once Redis is back (SIGCONT) each move is applied exactly once."""
    server = ServerProcess(private_redis.url, log_dir=tmp_path)
    server.start()
    try:
        with RefereeClient(server.address, retry=RetryPolicy(attempts=30, initial_backoff=0.1, max_backoff=0.5),
                           timeout=5.0) as sdk:  # fmt: skip
            game = sdk.create_game("gin", ["Ann", "Bob"])
            moved = 0
            for round_no in range(3):
                snap = sdk.get_game(game.game_id, token=game.tokens[0]).snapshot
                token = game.tokens[snap.to_act]
                mover = sdk.get_game(game.game_id, token=token).snapshot
                os.kill(private_redis.pid, signal.SIGSTOP)
                try:
                    with concurrent.futures.ThreadPoolExecutor(1) as pool:
                        pending = pool.submit(sdk.submit_move, game.game_id, mover.legal[0], token=token)
                        time.sleep(0.3 + 0.7 * round_no)  # frozen before, during or after the storage timeout
                        os.kill(private_redis.pid, signal.SIGCONT)
                        result = pending.result(timeout=120)
                finally:
                    os.kill(private_redis.pid, signal.SIGCONT)
                moved += 1
                print(f"\nfrozen {0.3 + 0.7 * round_no:.1f}s: the move took {result.attempts} sends")
                assert result.version == mover.version + 1
                assert sdk.get_game(game.game_id, token=token).version == mover.version + 1  # applied once
            replay = sdk.get_game(game.game_id, token=game.tokens[0]).snapshot
            assert replay.version == moved
    finally:
        server.stop()


class _Late:
    """A bot whose first answer comes after its 300 ms: its move reaches the referee past the deadline."""

    name = "late"

    def __init__(self) -> None:
        self.asked = 0

    def observe(self, event: object) -> None:
        pass

    def choose(self, view: Any, legal: Any) -> Any:
        self.asked += 1
        if self.asked == 1:
            time.sleep(0.8)
        return legal[0]


def test_a_late_move_answered_outcome_unknown_then_out_of_time_is_no_refused_move(
    private_redis: RedisProcess,
) -> None:
    """A move answered COMMIT_OUTCOME_UNKNOWN whose resend the referee refuses OUT_OF_TIME fails with the reason
    COMMIT_OUTCOME_UNKNOWN (the SDK's word for it): the runner must not count that as the bot's refused move (a
    forfeit with max_rejections 0, as in a tournament), but go on from the game: here the referee's timeout. The
    referee that refuses fires no timeouts; one that does starts once the bot was asked again."""
    from clients.sdk import PerMove
    from tests import kit

    quiet = kit.ServerThread(kit.referee_settings(private_redis.url, organizer_token=kit.ORGANIZER))
    proxy = OutcomeProxy(quiet.address)
    firing: kit.ServerThread | None = None
    try:
        with RefereeClient(quiet.address) as client:
            game = client.create_game("gin", ["Late", "Other"], time_control=PerMove(0.3))
            seat = client.get_game(game.game_id, token=game.tokens[0]).snapshot.to_act
            assert seat is not None
        proxy.plan = ["unknown"]
        bot = _Late()
        with concurrent.futures.ThreadPoolExecutor(1) as pool, RefereeClient(proxy.address, retry=FAST) as sdk:
            future = pool.submit(play_seat, sdk, game.game_id, game.tokens[seat], bot, max_rejections=0)
            deadline = time.monotonic() + 30
            while bot.asked < 2 and not future.done() and time.monotonic() < deadline:
                time.sleep(0.01)
            firing = ServerThread(private_redis.url)  # one that fires timeouts, over the same Redis
            result = future.result(timeout=60)
        assert not result.forfeit, result.forfeit_reason
        assert result.rejected == 0 and result.seat_end == "lost_on_time"
    finally:
        proxy.close()
        for server in (firing, quiet):
            if server is not None:
                server.stop()
