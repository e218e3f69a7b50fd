"""A Redis that answers but refuses to serve: out of memory (``maxmemory`` reached, ``noeviction``: writes are
refused with OOM) and busy (a script running past ``busy-reply-threshold``: every command is refused with BUSY).
Through a real `rummy-referee serve` and a real redis-server: the calls fail UNAVAILABLE STORAGE_UNAVAILABLE (never
INTERNAL: it is no bug of the referee's, and a retry later succeeds), a refused move changes nothing and its resend
is applied once; health is NOT_SERVING while Redis is busy and SERVING again after."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, start_redis
from server.storage_errors import StoreUnavailable
from server.store import GameStore, connect, game_key, log_key
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import Client, Game, expect_error, health_status, md, move_from_text, wait_for

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
DRAW = move_from_text("draw stock")


@pytest.fixture
def served(private_redis: RedisProcess, tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(private_redis.url, log_dir=tmp_path, args=["--no-bots"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _writes_refused_reads_served(client: Client, direct: redis.Redis, game: Game,
                                 request: rpb.SubmitMoveRequest) -> None:  # fmt: skip
    """The move and a creation are refused STORAGE_UNAVAILABLE, the game is read as it was, nothing is written."""
    with expect_error(UNAVAILABLE, "STORAGE_UNAVAILABLE"):
        client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
    with expect_error(UNAVAILABLE, "STORAGE_UNAVAILABLE"):
        client.create("gin")
    assert client.view(game, game.tokens[1]).version == 0  # reads still work
    assert direct.hget(game_key(game.game_id), "version") == b"0"
    assert direct.llen(log_key(game.game_id)) == 1


def _resend_applied_once(client: Client, direct: redis.Redis, game: Game, request: rpb.SubmitMoveRequest) -> None:
    """The refused move, sent again twice with its request_id: applied once, the same answer both times."""
    resent = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
    again = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
    assert resent.version == again.version == 1
    assert direct.llen(log_key(game.game_id)) == 2


def test_a_redis_out_of_memory_refuses_writes_unavailable_and_a_refused_move_changes_nothing(
    private_redis: RedisProcess, served: ServerProcess
) -> None:
    client = Client(served.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        game = client.create("gin")
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-1")
        direct.config_set("maxmemory-policy", "noeviction")
        direct.config_set("maxmemory", "1")  # every write refused: OOM
        try:
            _writes_refused_reads_served(client, direct, game, request)
        finally:
            direct.config_set("maxmemory", "0")
        _resend_applied_once(client, direct, game, request)
    finally:
        client.close()
        direct.close()


@pytest.fixture
def reconfigurable(tmp_path: Path) -> Iterator[RedisProcess]:
    """A Redis of the test's own whose ``dir`` CONFIG SET may change (a protected config)."""
    process = start_redis(tmp_path / "redis", appendfsync="always", extra_args=["--enable-protected-configs", "yes"])
    try:
        yield process
    finally:
        process.stop()


def _bgsave_status(direct: redis.Redis, status: str) -> bool:
    info = direct.info("persistence")
    return not int(info["rdb_bgsave_in_progress"]) and info["rdb_last_bgsave_status"] == status


def test_a_redis_that_cannot_persist_refuses_writes_unavailable_is_not_serving_and_a_refused_move_changes_nothing(
    reconfigurable: RedisProcess, tmp_path: Path
) -> None:
    """Redis's snapshot fails (its directory is gone), and with ``stop-writes-on-bgsave-error`` (the default) it
    refuses every write (and PING) with MISCONF until a snapshot succeeds again: moves and creations are
    UNAVAILABLE STORAGE_UNAVAILABLE and change nothing, reads go on, health is NOT_SERVING; once it can persist
    again, health is SERVING and the refused move's resend is applied once."""
    server = ServerProcess(reconfigurable.url, log_dir=tmp_path, args=["--no-bots"])
    server.start()
    client = Client(server.address)
    direct = redis.Redis.from_url(reconfigurable.url)
    gone = tmp_path / "gone"
    try:
        game = client.create("gin")
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-1")
        wait_for(lambda: health_status(server.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING")
        gone.mkdir()
        direct.config_set("save", "3600 1")
        direct.config_set("dir", str(gone))
        gone.rmdir()
        direct.bgsave()
        wait_for(lambda: _bgsave_status(direct, "err"), "saw the snapshot fail")
        try:
            _writes_refused_reads_served(client, direct, game, request)
            wait_for(lambda: health_status(server.address) == health_pb2.HealthCheckResponse.NOT_SERVING,
                     "NOT_SERVING while Redis cannot persist")  # fmt: skip
        finally:
            direct.config_set("dir", str(reconfigurable.data_dir))
            direct.bgsave()
        wait_for(lambda: _bgsave_status(direct, "ok"), "saw a snapshot succeed again")
        wait_for(lambda: health_status(server.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING again")
        _resend_applied_once(client, direct, game, request)
    finally:
        client.close()
        direct.close()
        server.stop()


def _busy(url: str, done: threading.Event) -> None:
    """Keep Redis busy with a script that loops until SCRIPT KILL."""
    with redis.Redis.from_url(url) as r:
        try:
            r.eval("while true do end", 0)
        except redis.RedisError:
            pass  # killed
        finally:
            done.set()


def test_a_redis_busy_with_a_long_script_is_not_serving_and_unavailable_then_serving_again(
    private_redis: RedisProcess, served: ServerProcess
) -> None:
    client = Client(served.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING")
        game = client.create("gin")
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-1")
        direct.config_set("busy-reply-threshold", "100")  # BUSY replies after 100 ms of a script
        killed = threading.Event()
        threading.Thread(target=_busy, args=(private_redis.url, killed), daemon=True).start()
        try:
            wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.NOT_SERVING, "NOT_SERVING")
            with expect_error(UNAVAILABLE):
                client.view(game, game.tokens[1])
            with expect_error(UNAVAILABLE, "STORAGE_UNAVAILABLE"):  # refused unrun: not applied, never will be
                client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
        finally:
            _kill_script(direct, killed)
        wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING again")
        assert direct.hget(game_key(game.game_id), "version") == b"0"  # the refused move changed nothing
        resent = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
        again = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
        assert resent.version == again.version == 1
    finally:
        client.close()
        direct.close()


def test_every_store_operation_refused_by_a_busy_redis_is_store_unavailable(private_redis: RedisProcess) -> None:
    """At the store: pipelined reads too (redis-py puts "Command # 1 (...) of pipeline caused error:" before the
    reply), e.g. the expiry check of watched games, whose task goes on only past a StoreUnavailable."""
    direct = redis.Redis.from_url(private_redis.url)
    direct.config_set("busy-reply-threshold", "100")

    async def body() -> None:
        store = GameStore(connect(private_redis.url), op_timeout_s=5.0)
        try:
            assert await store.load("g") is None
            killed = threading.Event()
            threading.Thread(target=_busy, args=(private_redis.url, killed), daemon=True).start()
            try:
                await asyncio.to_thread(wait_for, lambda: _refused_busy(direct), "BUSY")
                for call in (lambda: store.load("g"), lambda: store.exists("g"), lambda: store.ping(),
                             lambda: store.events_after("g", 0), lambda: store.time_left_ms(["g", "h"])):  # fmt: skip
                    with pytest.raises(StoreUnavailable):
                        await call()
            finally:
                await asyncio.to_thread(_kill_script, direct, killed)
            assert await store.time_left_ms(["g"]) == [None]
        finally:
            await store.close()

    try:
        asyncio.run(body())
    finally:
        direct.close()


def _refused_busy(r: redis.Redis) -> bool:
    try:
        r.exists("g")
    except redis.ResponseError as exc:
        return str(exc).startswith("BUSY ")
    return False


def _kill_script(direct: redis.Redis, killed: threading.Event) -> None:
    while not killed.is_set():
        with contextlib.suppress(redis.ResponseError):  # NOTBUSY: not started yet, or just ended
            direct.script_kill()
        killed.wait(0.05)


def test_health_follows_a_redis_whose_answers_the_store_does_not_know_and_goes_on_following_it(
    private_redis: RedisProcess, served: ServerProcess
) -> None:
    """A health ping refused with a reply that is no outage (here NOPERM: Redis's ACL denies TIME, which the ping
    and every commit need) is NOT_SERVING, and the health task goes on: SERVING once Redis answers again."""
    direct = redis.Redis.from_url(private_redis.url)
    try:
        wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING")
        direct.execute_command("ACL", "SETUSER", "default", "-time")
        try:
            wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.NOT_SERVING, "NOT_SERVING")
        finally:
            direct.execute_command("ACL", "SETUSER", "default", "+time")
        wait_for(lambda: health_status(served.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING again")
    finally:
        direct.close()


def test_the_background_loops_name_a_redis_that_stopped_answering_in_their_warnings(
    served: ServerProcess, private_redis: RedisProcess, tmp_path: Path
) -> None:
    # A timeout's text is empty (TimeoutError()): the warning then said "timeout firer: " and nothing more.
    log = next(tmp_path.glob("referee-*.log"))
    private_redis.process.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: "timeout firer:" in log.read_text(), "the timeout firer's warning", 30)
    finally:
        private_redis.process.send_signal(signal.SIGCONT)
    warnings = [line for line in log.read_text().splitlines() if " WARNING " in line]
    assert warnings and not [line for line in warnings if line.rstrip().endswith(":")], warnings
