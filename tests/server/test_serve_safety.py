"""`rummy-referee serve` started twice, on a taken port, on storage that breaks, on Redis of every persistence
setting: real `serve` processes (python -m server.cli), their own real redis-servers, real gRPC calls."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.referee_proc import RefereeProcess
from server.redis_launcher import RedisProcess, find_redis_server, lock_data_dir, start_redis
from tests.server.refkit import Client, move_from_text, wait_for

ROOT = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")},
       "PYTHONPATH": str(ROOT)}  # fmt: skip

pytestmark = pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "server.cli", "serve", "--grace", "1", "--no-http", *args]


class Serve:
    """A running `serve`; its log (stderr) goes to a file, read with log()."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.log_path = tmp / f"serve-{time.monotonic_ns()}.log"
        self.referee = RefereeProcess(_command("--port", "0", *args)[4:], env=ENV, log=self.log_path).start()
        assert self.referee.process is not None
        self.process = self.referee.process
        self.second_line = self.referee.ready_line  # the line after the address: how to stop it
        self.address = self.referee.address
        self.port = self.referee.port

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        self.referee.signal(signal.SIGTERM)
        return self.referee.wait(30)

    def kill(self) -> None:
        self.referee.kill()


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Serve]]:
    """The `serve` processes a test starts, all ended after it."""
    processes: list[Serve] = []
    yield processes
    for process in processes:
        process.kill()


def _refused(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a `serve` that must not start: its exit and output."""
    done = subprocess.run(_command(*args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one clear line
    return done


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="rummy.v1.RefereeService"), timeout=10
        )
    return int(reply.status)


def _health_command(address: str) -> int:
    command = [sys.executable, "-m", "server.cli", "health", "--address", address]
    return subprocess.run(command, cwd=ROOT, env=ENV, timeout=60).returncode


def _play_a_move(address: str) -> int:
    """Create a game and draw from the stock as seat 1: the version after the move."""
    client = Client(address)
    try:
        game = client.create("gin")
        return int(client.move(game, game.tokens[1], move_from_text("draw stock")).version)
    finally:
        client.close()


def _redis_servers_in(data: Path) -> list[int]:
    """The pids of the redis-servers whose working directory is ``data``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "cwd") == str(data.resolve()) and b"redis" in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_a_second_serve_on_the_same_data_dir_is_refused_and_the_first_is_untouched(
    tmp_path: Path, started: list[Serve]
) -> None:
    data = tmp_path / "data"
    first = Serve(tmp_path, "--data-dir", str(data))
    started.append(first)
    wait_for(lambda: _health(first.address) == health_pb2.HealthCheckResponse.SERVING, "SERVING")
    holder = json.loads((data / "referee.lock").read_text())
    assert holder["pid"] == first.process.pid and holder["port"] == first.port
    redis_pids = _redis_servers_in(data)
    assert redis_pids == [holder["redis_pid"]]

    done = _refused("--port", "0", "--data-dir", str(data))
    assert f"pid {first.process.pid}, port {first.port}" in done.stderr and str(data.resolve()) in done.stderr
    # what a second `make run` does: the same data directory and the same port, which the first holds; the one
    # line names the first referee, not only the taken port
    done = _refused("--port", str(first.port), "--data-dir", str(data))
    assert f"pid {first.process.pid}, port {first.port}" in done.stderr and str(data.resolve()) in done.stderr

    assert _redis_servers_in(data) == redis_pids  # no second redis-server was started on its files
    assert (data / "redis.sock").is_socket()
    assert _play_a_move(first.address) == 1  # the first still plays
    assert _health_command(first.address) == 0
    assert first.stop() == 0
    assert not _redis_servers_in(data)
    lock_data_dir(data).release()  # free again once the first has stopped


def test_a_taken_grpc_port_is_one_line_and_nothing_is_left_running(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        data = tmp_path / "data"
        done = _refused("--port", str(port), "--data-dir", str(data))
        assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "in use" in done.stderr
        assert not _redis_servers_in(data)
        lock_data_dir(data).release()  # and its lock is not held


def test_startup_says_how_to_stop_and_normal_lines_are_info(tmp_path: Path, started: list[Serve]) -> None:
    serve = Serve(tmp_path, "--data-dir", str(tmp_path / "data"))
    started.append(serve)
    assert "Ctrl-C" in serve.second_line and "SIGTERM" in serve.second_line
    assert str(serve.process.pid) in serve.second_line
    wait_for(lambda: "storage reachable: SERVING" in serve.log(), "SERVING logged")
    assert serve.stop() == 0
    log = serve.log()
    assert re.search(r" INFO rummy_referee: storage reachable: SERVING", log), log
    assert re.search(r" INFO rummy_referee: storage durability: appendonly yes, appendfsync everysec", log), log
    assert " WARNING " not in log and " ERROR " not in log, log


def test_health_is_not_serving_once_the_private_redis_is_gone(tmp_path: Path, started: list[Serve]) -> None:
    data = tmp_path / "data"
    serve = Serve(tmp_path, "--data-dir", str(data))
    started.append(serve)
    wait_for(lambda: _health_command(serve.address) == 0, "healthy")
    redis_pid = json.loads((data / "referee.lock").read_text())["redis_pid"]
    os.kill(redis_pid, signal.SIGKILL)  # its storage breaks
    wait_for(lambda: _health_command(serve.address) == 1, "unhealthy once its Redis is gone")
    assert _health(serve.address) == health_pb2.HealthCheckResponse.NOT_SERVING
    assert "WARNING rummy_referee: storage unresponsive: NOT_SERVING" in serve.log()


@pytest.fixture
def everysec_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    process = start_redis(tmp_path / "everysec", appendfsync="everysec")
    try:
        yield process
    finally:
        process.stop()


def test_durability_strict_refuses_a_redis_without_fsync_always(everysec_redis: RedisProcess) -> None:
    done = _refused("--port", "0", "--redis-url", everysec_redis.url, "--durability", "strict")
    assert "--durability strict" in done.stderr and "appendfsync everysec" in done.stderr


def test_durability_strict_starts_its_private_redis_with_fsync_always(tmp_path: Path, started: list[Serve]) -> None:
    data = tmp_path / "data"
    serve = Serve(tmp_path, "--data-dir", str(data), "--durability", "strict")
    started.append(serve)
    client = redis.Redis(unix_socket_path=str(data / "redis.sock"))
    assert client.config_get("appendfsync")["appendfsync"] == "always"
    assert _play_a_move(serve.address) == 1
    assert serve.stop() == 0
    assert "an OS crash loses no acknowledged move" in serve.log()


def test_durability_warn_says_when_redis_keeps_nothing(tmp_path: Path, started: list[Serve]) -> None:
    bare = start_redis(tmp_path / "bare", extra_args=["--appendonly", "no", "--save", ""])
    try:
        serve = Serve(tmp_path, "--redis-url", bare.url)
        started.append(serve)
        assert _play_a_move(serve.address) == 1  # it runs (default --durability warn) ...
        assert serve.stop() == 0
        warnings = [line for line in serve.log().splitlines() if " WARNING " in line]
        assert any("NO PERSISTENCE" in line for line in warnings), serve.log()  # ... and says so
    finally:
        bare.stop()


def test_an_unusable_data_dir_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    done = _refused("--port", "0", "--data-dir", str(tmp_path / "a-file" / "data"))
    assert "cannot use the data directory" in done.stderr


def test_a_referee_killed_outright_leaves_nothing_in_the_way_of_the_next(tmp_path: Path, started: list[Serve]) -> None:
    """SIGKILL: the OS releases the lock, the kernel stops its Redis (parent-death signal); the next `serve` on the
    data directory waits for that Redis, removes the private socket directory left behind, and starts."""
    data = tmp_path / ("d" * 100)  # too deep for a socket in it: the socket goes to a private directory
    first = Serve(tmp_path, "--data-dir", str(data))
    started.append(first)
    holder = json.loads((data / "referee.lock").read_text())
    socket_dir = Path(holder["socket_dir"])
    assert socket_dir.is_dir() and _play_a_move(first.address) == 1
    first.kill()
    assert socket_dir.is_dir()  # nobody removed it
    second = Serve(tmp_path, "--data-dir", str(data))
    started.append(second)
    assert not socket_dir.exists()
    assert _play_a_move(second.address) == 1
    assert second.stop() == 0
    assert not Path(json.loads((data / "referee.lock").read_text())["socket_dir"]).exists()
    assert not _redis_servers_in(data)
