"""Web benchmark: moves per second by Connect JSON over the HTTP port against the same by native gRPC, in the
same run, on the same referees, at 16 concurrent games (``--levels``).

Set-up as bench/service.py: a private redis-server (appendonly, `appendfsync everysec`, Unix socket) and
`--servers` (default 2) `rummy-referee serve` processes sharing it, each with its gRPC port and its HTTP port
(`--http-port 0`). A game is driven by one coroutine playing both seats of a Gin game, every move one SubmitMove
with expected_version, the next move decided from the previous response (bench/service.py's GameDriver); game i
uses referee i mod N. The gRPC games go through grpc.aio (one channel per referee); the Connect games through
connectrpc's generated client (rummy_pb/rummy/v1/referee_connect.py, its HTTP/1.1 client pyqwest, one per
referee) with the JSON codec, no compression: `POST /rummy.v1.RefereeService/SubmitMove`,
`content-type: application/json`, as a browser or curl sends it.

The machine is shared and drifts, so each level is measured in `--rounds` rounds, each round both kinds back to
back (alternating which goes first); rates are medians over the rounds, and the ratio is the median of the rounds'
own Connect/gRPC ratios. The bar: Connect JSON at least 0.5x native gRPC at 16 games.

    python bench/web.py [--seconds 2] [--rounds 5] [--levels 16] [--servers 2] [--redis-url URL]

Human-readable lines first; the last line is one JSON object: connect_moves_per_s_16, grpc_moves_per_s_16,
connect_vs_grpc_16 (the same for every level), connect_p50_ms_16, grpc_p50_ms_16, servers, rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import tempfile
import time

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402
import pyqwest  # noqa: E402
from connectrpc.protocol import ProtocolType  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

from rummy_pb.rummy.v1 import game_pb2 as pb  # noqa: E402
from rummy_pb.rummy.v1 import referee_connect, referee_pb2_grpc  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from server.connect_api import JsonCodec  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

service = _boot.load("service")


class ConnectGameDriver(service.GameDriver):  # type: ignore[misc]
    """bench/service.py's GameDriver, its calls made by Connect JSON."""

    def __init__(self, client: referee_connect.RefereeServiceClient, rng: random.Random) -> None:
        super().__init__(None, rng)
        self.client = client
        self.headers: dict[int, dict[str, str]] = {}

    async def new_game(self) -> None:
        created = await self.client.create_game(rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="P0"), pb.SeatSpec(display_name="P1")],
        ))  # fmt: skip
        self.game_id = created.game_id
        self.headers = {t.seat: {"authorization": f"Bearer {t.token}"} for t in created.seat_tokens}
        got = await self.client.get_game(rpb.GetGameRequest(game_id=self.game_id), headers=self.headers[0])
        self.view = got.view

    async def move(self) -> float:
        if not self.game_id or self.view.phase == pb.PHASE_MATCH_OVER:
            await self.new_game()
        seat, move = self.next_move()
        request = rpb.SubmitMoveRequest(game_id=self.game_id, move=move, expected_version=self.view.version)
        start = time.perf_counter()
        response = await self.client.submit_move(request, headers=self.headers[seat])
        elapsed = time.perf_counter() - start
        self.view = response.view
        return elapsed


async def measure(servers: list[tuple[str, str]], levels: list[int], seconds: float, rounds: int,
                  pids: dict[str, list[int]]) -> dict[str, float]:  # fmt: skip
    """Connect and gRPC moves per second (medians over ``rounds``) and the median per-round ratio, per level."""
    results: dict[str, float] = {}
    channels = [grpc.aio.insecure_channel(grpc_address) for grpc_address, _ in servers]
    stubs = [referee_pb2_grpc.RefereeServiceStub(channel) for channel in channels]
    # no compression, no tracing hooks (pyqwest's OpenTelemetry instrumentation is on by default): a lean client
    http_clients = [pyqwest.Client(pyqwest.HTTPTransport(enable_otel=False)) for _ in servers]
    clients = [
        referee_connect.RefereeServiceClient(http_url, codec=JsonCodec(), protocol=ProtocolType.CONNECT,
                                             accept_compression=(), send_compression=None, http_client=http)
        for (_, http_url), http in zip(servers, http_clients, strict=True)
    ]  # fmt: skip
    try:

        def grpc_factory(i: int) -> object:
            return service.GameDriver(stubs[i % len(stubs)], random.Random(i)).move

        def connect_factory(i: int) -> object:
            return ConnectGameDriver(clients[i % len(clients)], random.Random(i)).move

        await service._drive(4 * len(servers), 0.5, grpc_factory)  # warm-up: connections, code paths, scripts
        await service._drive(4 * len(servers), 0.5, connect_factory)
        kinds = (("grpc", grpc_factory), ("connect", connect_factory))
        for n in levels:
            rates: dict[str, list[float]] = {"grpc": [], "connect": []}
            latencies: dict[str, list[float]] = {"grpc": [], "connect": []}
            cpu: dict[str, dict[str, float]] = {k: dict.fromkeys(pids, 0.0) for k in rates}
            for r in range(rounds):
                for name, factory in kinds if r % 2 == 0 else kinds[::-1]:
                    rate, lat, used = await service._run_kind(n, seconds, factory, pids)
                    rates[name].append(rate)
                    latencies[name] += lat
                    for k, v in used.items():
                        cpu[name][k] += v
            ratios = [c / g for c, g in zip(rates["connect"], rates["grpc"], strict=True) if g]
            for name in ("grpc", "connect"):
                rate = results[f"{name}_moves_per_s_{n}"] = round(statistics.median(rates[name]), 1)
                ms = sorted(x * 1000 for x in latencies[name])
                p50 = results[f"{name}_p50_ms_{n}"] = round(statistics.median(ms), 3)
                p99 = results[f"{name}_p99_ms_{n}"] = round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3)
                calls = max(1, len(latencies[name]))
                cpu_text = " ".join(f"{k} {v / calls * 1e6:.0f}" for k, v in cpu[name].items())
                spread = f"{min(rates[name]):.0f}..{max(rates[name]):.0f}"
                print(f"{name:7} x{n:<3} {rate:9.1f} moves/s ({spread})  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
                      f"CPU us/move: {cpu_text}", flush=True)  # fmt: skip
            ratio = results[f"connect_vs_grpc_{n}"] = round(statistics.median(ratios), 3)
            print(f"connect/grpc x{n:<3} {ratio:.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})", flush=True)
    finally:
        for channel in channels:
            await channel.close(None)
        for client in clients:
            await client.close()
    results["servers"] = len(servers)
    results["rounds"] = rounds
    return results


def _start_server(redis_url: str) -> tuple[subprocess.Popen[str], str, str]:
    """A referee with both ports on free ports: (process, gRPC address, HTTP base URL)."""
    referee = _boot.start_referee(
        ["--port", "0", "--http-port", "0", "--redis-url", redis_url, "--grace", "1",
         # limits far above the bench's rates (it creates games without a token), but on: their cost is measured
         "--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000"],
    )  # fmt: skip
    assert referee.process is not None and referee.http_address is not None
    return referee.process, referee.address, f"http://{referee.http_address}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round, level and kind")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per level (medians are reported)")
    parser.add_argument("--levels", default="16", help="concurrent games")
    parser.add_argument("--servers", type=int, default=2, help="referee processes")
    parser.add_argument("--redis-url", default=None, help="an existing Redis (default: a private redis-server)")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="rummy-bench-web-") as data:
        redis = None if args.redis_url else start_redis(data, appendfsync="everysec", unix_socket=True)
        url = args.redis_url or (redis.url if redis else "")
        servers: list[tuple[subprocess.Popen[str], str, str]] = []
        try:
            servers += [_start_server(url) for _ in range(max(1, args.servers))]
            listed = ", ".join(f"{grpc_at} + {http_at} (pid {p.pid})" for p, grpc_at, http_at in servers)
            print(f"referees {listed}; redis {url}; {os.cpu_count()} cores", flush=True)
            pids = {"client": [os.getpid()], "referee": [p.pid for p, _, _ in servers]}
            if redis is not None:
                pids["redis"] = [redis.pid]
            addresses = [(grpc_at, http_at) for _, grpc_at, http_at in servers]
            results = asyncio.run(measure(addresses, levels, args.seconds, max(1, args.rounds), pids))
        finally:
            for process, _, _ in servers:
                process.send_signal(signal.SIGTERM)
            for process, _, _ in servers:
                process.wait(30)
            if redis is not None:
                redis.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
