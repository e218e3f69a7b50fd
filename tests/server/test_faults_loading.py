"""A Redis restarted on its append-only file answers -LOADING until it has read it all: through a real `rummy-referee
serve` and a real redis-server made slow to load (``key-load-delay``, the events served every 1 KiB loaded), moves
get UNAVAILABLE STORAGE_UNAVAILABLE and change nothing, health is NOT_SERVING, and once loaded every acknowledged
move is there, the refused one's resend is applied once, and health is SERVING again (design.md's statuses:
"STORAGE_UNAVAILABLE (Redis unreachable, loading, refusing ...)"; README "Durability": "When Redis is unreachable,
moves get UNAVAILABLE and nothing is half-written; play resumes when it is back"). Every wait is on a condition."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.cli import main
from server.grpc_api import SERVICE_NAME, STORAGE_SERVICE
from server.redis_launcher import RedisProcess, start_redis
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    expect_error,
    md,
    move_from_text,
    retry_unavailable,
    wait_for,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
FILLER_KEYS = 4000
KEY_LOAD_DELAY_US = 1500  # about 6 s to load the filler (longer on a loaded machine)


@pytest.fixture
def slow_loading(tmp_path: Path) -> Iterator[RedisProcess]:
    process = start_redis(tmp_path / "redis", appendfsync="always", extra_args=[
        "--key-load-delay", str(KEY_LOAD_DELAY_US), "--loading-process-events-interval-bytes", "1024"])  # fmt: skip
    try:
        yield process
    finally:
        process.stop()


def _health(address: str) -> tuple[int | None, ...]:
    """The status of "" (what a load balancer checks), of the referee's service and of its storage."""
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        statuses: list[int | None] = []
        for service in ("", SERVICE_NAME, STORAGE_SERVICE):
            try:
                statuses.append(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)
            except grpc.RpcError:
                statuses.append(None)
    return tuple(statuses)


def _health_cli(address: str) -> int:
    """`rummy-referee health --address ADDRESS --service rummy.v1.RefereeService/storage`: its exit code."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return main(["health", "--address", address, "--service", STORAGE_SERVICE])


def _loading(direct: redis.Redis) -> bool:
    try:
        direct.ping()
    except redis.exceptions.BusyLoadingError:
        return True
    except redis.exceptions.ConnectionError:
        return False
    return False


def test_a_redis_loading_its_append_only_file_is_unavailable_then_play_resumes_with_nothing_lost(
    slow_loading: RedisProcess, tmp_path: Path
) -> None:
    server = ServerProcess(slow_loading.url, log_dir=tmp_path, args=["--no-bots"])
    server.start()
    client = Client(server.address)
    direct = redis.Redis.from_url(slow_loading.url)
    try:
        game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
        draw = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"), request_id="draw")
        first = client.stub.SubmitMove(draw, metadata=md(game.tokens[1]), timeout=30)
        assert first.version == 1
        pipe = direct.pipeline(transaction=False)
        for n in range(FILLER_KEYS):
            pipe.set(f"filler:{n}", n)
        pipe.execute()
        direct.bgrewriteaof()  # an RDB preamble: loaded key by key, each delayed
        wait_for(lambda: not any(int(direct.info("persistence")[k]) for k in ("aof_rewrite_in_progress",
                                                                             "aof_rewrite_scheduled")),
                 "the append-only file rewritten")  # fmt: skip

        slow_loading.kill()
        restarted: list[BaseException | None] = []

        def restart() -> None:
            try:
                slow_loading.restart(ready_timeout=120)
                restarted.append(None)
            except BaseException as exc:
                restarted.append(exc)

        thread = threading.Thread(target=restart, daemon=True)
        thread.start()
        wait_for(lambda: _loading(direct), "saw Redis loading", 60)
        knock = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("knock KC"), request_id="knock")
        with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.stub.SubmitMove(knock, metadata=md(game.tokens[1]), timeout=30)
        with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.view(game, game.tokens[1])
        with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.create("gin")
        wait_for(lambda: _health(server.address) == (NOT_SERVING,) * 3 or not _loading(direct),
                 "health NOT_SERVING while Redis loads", 60)  # fmt: skip
        cli_exit = _health_cli(server.address)
        assert _loading(direct), "Redis finished loading before the test saw it all: load more filler"
        assert cli_exit == 1

        thread.join(120)
        assert restarted == [None], restarted
        wait_for(lambda: _health(server.address) == (SERVING,) * 3, "health SERVING once Redis has loaded", 60)
        assert _health_cli(server.address) == 0
        assert direct.hget(f"game:{{{game.game_id}}}", "version") == b"1"  # the refused knock changed nothing
        resent_draw = retry_unavailable(lambda: client.stub.SubmitMove(draw, metadata=md(game.tokens[1]), timeout=30))
        assert resent_draw.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
        knocked = client.stub.SubmitMove(knock, metadata=md(game.tokens[1]), timeout=30)
        again = client.stub.SubmitMove(knock, metadata=md(game.tokens[1]), timeout=30)
        assert knocked.version == again.version == 2
        assert client.view(game, game.tokens[0]).version == 2
        assert direct.llen(f"game:{{{game.game_id}}}:log") == 3
    finally:
        client.close()
        direct.close()
        server.stop()

