"""`rummy-referee serve` with its HTTP port: `--http-port 0` picks a free port and prints it on its own line after
the gRPC one, `--no-http` serves gRPC only, a taken HTTP port is one line and exit 1 with nothing left running;
and bench/web.py runs end to end (briefly) and prints its figures."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from server.redis_launcher import RedisProcess

ROOT = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")},
       "PYTHONPATH": str(ROOT)}  # fmt: skip


def _serve(redis: RedisProcess, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", "0", "--redis-url", redis.url, "--grace", "1", *args],
        cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip


def _stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def test_http_port_zero_is_printed_after_the_grpc_line_and_serves(redis_server: RedisProcess) -> None:
    process = _serve(redis_server, "--http-port", "0")
    try:
        assert process.stdout is not None
        grpc_line, http_line = process.stdout.readline(), process.stdout.readline()
        assert grpc_line.startswith("rummy-referee listening on 127.0.0.1:"), grpc_line
        assert http_line.startswith("rummy-referee http on 127.0.0.1:"), http_line
        port = int(http_line.rsplit(":", 1)[1])
        assert port != int(grpc_line.rsplit(":", 1)[1])
        reply = httpx.post(f"http://127.0.0.1:{port}/rummy.v1.RefereeService/Ping", content=b"{}",
                           headers={"content-type": "application/json"}, timeout=60)  # fmt: skip
        assert reply.status_code == 200 and reply.json() == {}
    finally:
        assert _stop(process) == 0


def test_no_http_serves_grpc_only(redis_server: RedisProcess) -> None:
    process = _serve(redis_server, "--no-http")
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("rummy-referee listening on ")
        assert process.stdout.readline().startswith("stop it with")
    finally:
        assert _stop(process) == 0


def test_a_taken_http_port_is_one_line_and_exit_1(redis_server: RedisProcess) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve", "--port", "0", "--http-port", str(port), "--redis-url",
             redis_server.url],
            cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().count("\n") == 0 and f"127.0.0.1:{port}" in done.stderr, done.stderr
    assert "listening" not in done.stdout


def test_the_web_bench_prints_its_figures() -> None:
    command = [sys.executable, "bench/web.py", "--seconds", "0.3", "--rounds", "2", "--servers", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    for key in ("connect_moves_per_s_16", "grpc_moves_per_s_16", "connect_vs_grpc_16"):
        assert figures[key] > 0, figures
    assert figures["servers"] == 1 and figures["rounds"] == 2
    assert any(line.startswith("connect/grpc x16") for line in lines)
