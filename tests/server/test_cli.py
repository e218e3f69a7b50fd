"""`rummy-referee serve` with zero setup: it starts its own redis-server (appendonly, in the data directory),
serves health checking and reflection, drains on SIGTERM, stops its Redis, and finds its games again on restart."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import find_redis_server
from tests.server.refkit import Client, md, reason_of

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")


class Serve:
    """A `rummy-referee serve` process (python -m server.cli) with no Redis URL."""

    def __init__(self, data_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")}
        self.referee = RefereeProcess(["--port", "0", "--no-http", "--data-dir", str(data_dir), "--grace", "2"],
                                      env=env).start()  # fmt: skip
        assert self.referee.process is not None
        self.process = self.referee.process
        self.address = self.referee.address

    def stop(self) -> tuple[int, str]:
        """SIGTERM; the exit code and everything logged."""
        self.referee.signal(signal.SIGTERM)
        code = self.referee.wait(30)
        return code, self.referee.output()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def serve(data_dir: Path) -> Iterator[Serve]:
    process = Serve(data_dir)
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.process.kill()
            process.process.wait()


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status: int = stub.Check(health_pb2.HealthCheckRequest(service="rummy.v1.RefereeService")).status
        return status


def _health_command(address: str) -> int:
    command = [sys.executable, "-m", "server.cli", "health", "--address", address]
    return subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=30).returncode


def test_serve_starts_its_own_redis_and_stops_it(serve: Serve, data_dir: Path) -> None:
    deadline = time.monotonic() + 10
    while _health(serve.address) != health_pb2.HealthCheckResponse.SERVING:
        assert time.monotonic() < deadline, "never SERVING"
        time.sleep(0.1)
    assert _health_command(serve.address) == 0  # what the container health check runs
    with grpc.insecure_channel(serve.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        services = {s.name for reply in replies for s in reply.list_services_response.service}
    assert {"rummy.v1.RefereeService", "grpc.health.v1.Health"} <= services
    assert stat.S_IMODE((data_dir / "redis.sock").stat().st_mode) == 0o700  # its Redis: this user only, no TCP

    client = Client(serve.address)
    game = client.create("gin")
    watch = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
    assert next(watch).snapshot.version == 0

    code, log = serve.stop()
    assert code == 0, log
    with pytest.raises(grpc.RpcError) as ended:  # the watch ended on shutdown: the client resumes elsewhere
        next(watch)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE and reason_of(ended.value) == "SHUTTING_DOWN", log
    client.close()
    assert _health_command(serve.address) == 1
    pid = int(re.search(r"started redis-server pid (\d+)", log).group(1))  # type: ignore[union-attr]
    assert not Path(f"/proc/{pid}").exists(), "the private redis-server outlived the referee"
    assert (data_dir / "appendonlydir").is_dir()

    again = Serve(data_dir)  # the same data directory: the game is still there
    try:
        client = Client(again.address)
        deadline = time.monotonic() + 10
        while True:
            try:
                assert client.view(game, game.tokens[1]).viewer_seat == 1
                break
            except grpc.RpcError as exc:  # the new redis-server may still be loading its append-only file
                assert exc.code() == grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline
                time.sleep(0.1)
        client.close()
    finally:
        assert again.stop()[0] == 0


@pytest.mark.parametrize("option", ["--idle-ttl", "--finished-ttl", "--idem-ttl"])
@pytest.mark.parametrize(("value", "message"), [("-5", "cannot be negative"), ("10000000000000000", "at most")])
def test_an_impossible_time_to_keep_games_is_refused(option: str, value: str, message: str) -> None:
    """A negative EXPIRE would delete every game at its next move, and Redis refuses a huge one only after the
    script's writes: both refused before anything starts."""
    command = [sys.executable, "-m", "server.cli", "serve", option, value]
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2 and message in done.stderr


@pytest.mark.parametrize("option", ["--port", "--metrics-port"])
@pytest.mark.parametrize("value", ["70000", "65536", "-1"])
def test_a_port_out_of_range_is_refused_before_anything_starts(option: str, value: str) -> None:
    """gRPC takes port 70000 as 70000 - 65536 = 4464: the referee listened on a port nobody asked for."""
    command = [sys.executable, "-m", "server.cli", "serve", option, value]
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2 and "a port is 0..65535" in done.stderr, done.stdout + done.stderr


def _open_files_limits(pid: int) -> tuple[str, str]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return soft, hard
    raise AssertionError("no open files limit in /proc")


@pytest.mark.skipif(not Path("/usr/bin/prlimit").exists() or not Path("/proc/self/limits").exists(),
                    reason="needs prlimit and /proc")  # fmt: skip
def test_serve_raises_its_open_files_limit_to_the_hard_limit(data_dir: Path) -> None:
    """Every client connection holds a file descriptor: under a soft limit of 256 (systems ship 1024) the referee
    would refuse clients long before the system's own (hard) limit. `serve` raises its soft limit to the hard one."""
    hard = _open_files_limits(os.getpid())[1]
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")}
    args = ["--port", "0", "--no-http", "--data-dir", str(data_dir), "--grace", "1"]
    lowered = [f"--nofile=256:{hard}", sys.executable]  # prlimit runs the referee under a soft limit of 256
    referee = RefereeProcess(args, env=env, python="/usr/bin/prlimit", python_args=lowered)
    referee.start()
    try:
        assert referee.process is not None
        assert _open_files_limits(referee.process.pid) == (hard, hard)
    finally:
        referee.signal(signal.SIGTERM)
        assert referee.wait(30) == 0, referee.output()
