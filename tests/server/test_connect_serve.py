"""`rummy-referee serve` with its HTTP port: `--http-port 0` picks a free port and prints it on its own line after
the gRPC one, `--no-http` serves gRPC only, a taken HTTP port is one line and exit 1 with nothing left running;
and bench/web.py runs end to end (briefly) and prints its figures."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import httpx

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
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
        line = process.stdout.readline()
        assert line.startswith("rummy-referee listening on ")
        assert process.stdout.readline().startswith("stop it with")
        with grpc.insecure_channel(line.split()[-1]) as channel:  # serving (and its signal handlers are set)
            referee_pb2_grpc.RefereeServiceStub(channel).Ping(rpb.PingRequest(), timeout=60)
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


def test_the_client_tests_server_process_can_serve_http(redis_server: RedisProcess, tmp_path: Path) -> None:
    """tests/clients/clientkit.ServerProcess(http=True): its HTTP port is fixed too (kept across restarts)."""
    from tests.clients.clientkit import ServerProcess

    server = ServerProcess(redis_server.url, log_dir=tmp_path, http=True)
    try:
        for _ in range(2):  # started, killed, started again on the same ports
            server.start()
            reply = httpx.post(f"http://127.0.0.1:{server.http_port}/rummy.v1.RefereeService/Ping", content=b"{}",
                               headers={"content-type": "application/json"}, timeout=60)  # fmt: skip
            assert reply.status_code == 200
            server.kill()
    finally:
        server.stop()


def test_the_admission_check_runs_before_every_http_call(redis_server: RedisProcess) -> None:
    """create_http_app(admit=...): the spot where per-peer limits plug in; its refusal is the call's answer."""
    import asyncio

    from grpc_health.v1._async import HealthServicer

    from server.errors import TooMuch
    from server.http_server import HttpServer, create_http_app
    from server.service import Referee
    from server.store import GameStore, connect

    seen: list[tuple[str | None, str]] = []

    async def admit(peer: str | None, method: str, token: str | None) -> None:
        seen.append((peer, method))
        if method == "AnalyzeHand":
            raise TooMuch("RATE_LIMITED", "too many calls from this peer")

    async def main() -> tuple[httpx.Response, httpx.Response]:
        referee = Referee(GameStore(connect(redis_server.url)))
        server = HttpServer(create_http_app(referee, HealthServicer(), admit=admit), "127.0.0.1", 0, grace=1)
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as http:
                headers = {"content-type": "application/json"}
                ok = await http.post("/rummy.v1.RefereeService/Ping", content=b"{}", headers=headers)
                refused = await http.post("/rummy.v1.RefereeService/AnalyzeHand", content=b"{not even json",
                                          headers=headers)  # fmt: skip
                return ok, refused
        finally:
            await server.stop()
            await referee.store.close()

    ok, refused = asyncio.run(main())
    assert ok.status_code == 200
    assert refused.status_code == 429 and refused.json()["code"] == "resource_exhausted"  # refused before decoding
    assert [method for _, method in seen] == ["Ping", "AnalyzeHand"]
    assert all(peer is not None and peer.startswith("127.0.0.1:") for peer, _ in seen)


def test_serve_limits_the_http_port_with_the_grpc_ports_buckets(redis_server: RedisProcess) -> None:
    """One limiter for both ports: calls of an address by HTTP and by gRPC draw on the same bucket, and over it
    both are RESOURCE_EXHAUSTED RATE_LIMITED."""
    process = _serve(redis_server, "--http-port", "0", "--requests-per-second", "0.01", "--request-burst", "4")
    try:
        assert process.stdout is not None
        grpc_line, http_line = process.stdout.readline(), process.stdout.readline()
        grpc_port, http_port = int(grpc_line.rsplit(":", 1)[1]), int(http_line.rsplit(":", 1)[1])
        ping = f"http://127.0.0.1:{http_port}/rummy.v1.RefereeService/Ping"
        headers = {"content-type": "application/json"}
        assert [httpx.post(ping, content=b"{}", headers=headers, timeout=60).status_code for _ in range(2)] == [200] * 2
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            stub.Ping(rpb.PingRequest(), timeout=60)
            stub.Ping(rpb.PingRequest(), timeout=60)  # the burst of 4 is spent: 2 by HTTP, 2 by gRPC
            try:
                stub.Ping(rpb.PingRequest(), timeout=60)
                raise AssertionError("a fifth call within the burst was served by gRPC")
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        refused = httpx.post(ping, content=b"{}", headers=headers, timeout=60)
        assert refused.status_code == 429 and refused.json()["code"] == "resource_exhausted"
        from google.rpc import error_details_pb2  # type: ignore[import-untyped]

        details = {d["type"]: base64.b64decode(d["value"] + "=" * (-len(d["value"]) % 4))
                   for d in refused.json()["details"]}  # fmt: skip
        assert error_details_pb2.ErrorInfo.FromString(details["google.rpc.ErrorInfo"]).reason == "RATE_LIMITED"
        assert error_details_pb2.RetryInfo.FromString(details["google.rpc.RetryInfo"]).retry_delay.seconds > 0
    finally:
        assert _stop(process) == 0
