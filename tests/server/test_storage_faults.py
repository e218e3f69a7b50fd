"""A frozen Redis (SIGSTOP): health says so within 2 s and recovers within 2 s of SIGCONT, and no call waits
past its own deadline or the storage timeout (1 s by default), through a real `rummy-referee serve` and a real
redis-server; and the store's waits follow the caller's deadline (``server.deadlines``)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server import deadlines
from server.cli import _parser
from server.deadlines import DeadlineTooShort
from server.grpc_api import SERVICE_NAME
from server.redis_launcher import RedisProcess
from server.store import GameStore, StoreUnavailable, connect
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import md

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
#: The promise is 2 s; a loaded test machine (2 cores, many workers) may add seconds of scheduling delay.
SLACK_S = 4.0


@contextmanager
def frozen(redis: RedisProcess) -> Iterator[Callable[[], None]]:
    """Redis stopped (SIGSTOP) inside the block; yields a thaw() to resume it early. Always resumed on exit."""
    thawed = threading.Event()

    def thaw() -> None:
        if not thawed.is_set():
            thawed.set()
            os.kill(redis.pid, signal.SIGCONT)

    os.kill(redis.pid, signal.SIGSTOP)
    try:
        yield thaw
    finally:
        thaw()


def _wait_for_status(stub: health_pb2_grpc.HealthStub, wanted: int, timeout: float = 30.0) -> float:
    """Seconds until health reports ``wanted`` (polled every 20 ms); fails after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            got = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5.0).status
        except grpc.RpcError:
            got = None
        if got == wanted:
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"health did not become {wanted} within {timeout}s")


@pytest.fixture
def served(private_redis: RedisProcess, tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(private_redis.url, log_dir=tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_health_is_not_serving_while_redis_is_frozen_and_serving_once_it_is_back(
    private_redis: RedisProcess, served: ServerProcess
) -> None:
    with grpc.insecure_channel(served.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        _wait_for_status(health, SERVING)
        with frozen(private_redis) as thaw:
            down = _wait_for_status(health, NOT_SERVING)
            thaw()
            up = _wait_for_status(health, SERVING)
    print(f"\nhealth: NOT_SERVING {down:.2f}s after SIGSTOP, SERVING {up:.2f}s after SIGCONT (promised: 2 s each)")
    assert down < 2.0 + SLACK_S
    assert up < 2.0 + SLACK_S


def test_calls_while_redis_is_frozen_end_by_their_deadline_or_the_storage_timeout(
    private_redis: RedisProcess, served: ServerProcess
) -> None:
    with grpc.insecure_channel(served.address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        seats = [{"display_name": "a"}, {"display_name": "b"}]
        game = stub.CreateGame(rpb.CreateGameRequest(profile="gin", seats=seats), timeout=30)
        token = game.seat_tokens[0].token
        request = rpb.GetGameRequest(game_id=game.game_id)
        assert stub.GetGame(request, metadata=md(token), timeout=30).view.version == 0
        timings: dict[str, float] = {}
        with frozen(private_redis):
            start = time.monotonic()  # a caller's deadline of 0.5 s: over in about 0.5 s
            with pytest.raises(grpc.RpcError) as short:
                stub.GetGame(request, metadata=md(token), timeout=0.5)
            timings["deadline 0.5 s"] = time.monotonic() - start
            # the referee gives up with the caller (UNAVAILABLE), or the caller's own timer ends it first
            assert short.value.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
            for name, call in [
                ("GetGame", lambda: stub.GetGame(request, metadata=md(token))),
                (
                    "ValidateMove",
                    lambda: stub.ValidateMove(
                        rpb.ValidateMoveRequest(game_id=game.game_id, move={"draw_stock": {}}), metadata=md(token)
                    ),
                ),
                ("CreateGame", lambda: stub.CreateGame(rpb.CreateGameRequest(profile="gin", seats=seats))),
            ]:  # no deadline of the caller's: the storage timeout (1 s by default) ends them
                start = time.monotonic()
                with pytest.raises(grpc.RpcError) as failed:
                    call()
                timings[name] = time.monotonic() - start
                assert failed.value.code() == grpc.StatusCode.UNAVAILABLE, (name, failed.value.details())
        assert stub.GetGame(request, metadata=md(token), timeout=30).view.version == 0  # and back to normal
    print("\nwhile Redis was frozen: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))
    assert timings["deadline 0.5 s"] < 0.5 + SLACK_S
    for name in ("GetGame", "ValidateMove", "CreateGame"):
        assert timings[name] < 1.0 + SLACK_S, name  # was 5 s before the storage timeout was 1 s


def test_the_storage_timeout_is_a_serve_option() -> None:
    assert _parser().parse_args(["serve"]).storage_timeout == 1.0
    assert _parser().parse_args(["serve", "--storage-timeout", "0.25"]).storage_timeout == 0.25
    for bad in ("0", "-1", "x", "4000"):
        with pytest.raises(SystemExit):
            _parser().parse_args(["serve", "--storage-timeout", bad])


def test_store_waits_end_by_the_callers_deadline_and_too_short_a_deadline_starts_nothing(
    private_redis: RedisProcess,
) -> None:
    async def body() -> None:
        store = GameStore(connect(private_redis.url), op_timeout_s=2.0)
        try:
            assert await store.load("nosuchgame") is None  # the pipelined connection is open
            hot = store._hot
            assert hot is not None
            connection = hot._conn
            loop = asyncio.get_running_loop()
            with frozen(private_redis) as thaw:
                deadlines.set_remaining(0.001)  # too little left: refused before any Redis command
                for call in (store.load("g1"), store.exists("g1"), store.events_after("g1", 0)):
                    start = loop.time()
                    with pytest.raises(DeadlineTooShort):
                        await call
                    assert loop.time() - start < 0.5
                deadlines.set_remaining(None)
                patient = asyncio.ensure_future(store.load("nosuchgame"))  # no deadline: waits up to 2 s
                await asyncio.sleep(0.05)
                for name, make in (("hot path", lambda: store.load("g1")), ("redis-py", lambda: store.exists("g1"))):
                    deadlines.set_remaining(0.3)
                    start = loop.time()
                    with pytest.raises(StoreUnavailable):
                        await make()
                    waited = loop.time() - start
                    assert 0.25 <= waited < 0.3 + SLACK_S / 2, (name, waited)
                deadlines.set_remaining(None)
                thaw()
                assert await patient is None  # the impatient callers did not fail the patient one ...
            assert hot._conn is connection  # ... nor cut the connection: Redis was slow, not hung
            assert await store.load("nosuchgame") is None
        finally:
            await store.close()

    asyncio.run(body())


def test_budget_is_the_storage_timeout_or_the_time_left() -> None:
    async def body() -> None:
        assert deadlines.budget(1.0) == 1.0  # no deadline
        deadlines.set_remaining(10.0)
        assert deadlines.budget(1.0) == 1.0
        deadlines.set_remaining(0.5)
        assert 0.4 < deadlines.budget(1.0) <= 0.5
        deadlines.set_remaining(0.0)
        with pytest.raises(DeadlineTooShort):
            deadlines.budget(1.0)
        deadlines.cleared()
        assert deadlines.budget(1.0) == 1.0

    asyncio.run(body())
