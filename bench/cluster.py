"""Cluster benchmark: moves per second through real referees on a six-node Redis Cluster (three masters, one
replica each) against the same on one standalone redis-server, in the same run, at 16 concurrent games.

Set-up: a private cluster (server/redis_cluster.py: six redis-server processes on free ports, `redis-cli --cluster
create`) and a private standalone redis-server, both with appendonly and `appendfsync everysec` (the same
durability on both sides), the standalone one on TCP like the cluster's nodes (`--standalone-unix`: on a Unix
socket, as the zero-setup `serve` runs it). `--servers` (default 2) `rummy-referee serve` processes on each, with
the same settings. The games are driven by bench/service.py's driver (imported, not copied: one coroutine per game
plays both seats, one SubmitMove per move, games that end replaced by new ones), game i on referee i mod N of its
side. Rounds interleave the two sides (which goes first alternating), each side `--seconds` per round; figures
are medians over the rounds, the ratio the median of the rounds' own cluster/standalone ratios.

    python bench/cluster.py [--seconds 2] [--rounds 5] [--levels 16] [--servers 2] [--quick]
                            [--cluster-url redis-cluster://H:P --redis-url redis://H:P]   # existing ones

Human-readable lines first; the last line is one JSON object: cluster_moves_per_s_16, standalone_moves_per_s_16,
cluster_vs_standalone_16 (the bar: >= 0.85), the p50/p99 latencies, and the CPU per move of the referees and of
Redis on each side (cluster_referee_cpu_us_per_move_16, standalone_referee_cpu_us_per_move_16, ...).
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
from pathlib import Path

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_cluster import start_cluster  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

service = _boot.load("service")
SIDES = ("cluster", "standalone")


async def measure(addresses: dict[str, list[str]], levels: list[int], seconds: float, rounds: int,
                  pids: dict[str, dict[str, list[int]]]) -> dict[str, float]:  # fmt: skip
    """Moves per second of each side (medians over ``rounds``), latency percentiles, CPU per move of each process
    group, and the median of the rounds' cluster/standalone ratios, at each level."""
    results: dict[str, float] = {}
    channels = {side: [grpc.aio.insecure_channel(a) for a in addresses[side]] for side in SIDES}
    stubs = {side: [referee_pb2_grpc.RefereeServiceStub(c) for c in channels[side]] for side in SIDES}
    try:

        def factory(side: str) -> object:
            def make(i: int) -> object:
                return service.GameDriver(stubs[side][i % len(stubs[side])], random.Random(i)).move

            return make

        for side in SIDES:  # warm-up: connections, code paths, scripts loaded on every master
            await service._drive(4 * len(stubs[side]), 0.5, factory(side))
        for n in levels:
            rates: dict[str, list[float]] = {side: [] for side in SIDES}
            latencies: dict[str, list[float]] = {side: [] for side in SIDES}
            cpu: dict[str, dict[str, float]] = {side: dict.fromkeys(pids[side], 0.0) for side in SIDES}
            for r in range(rounds):
                for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                    rate, lat, used = await service._run_kind(n, seconds, factory(side), pids[side])
                    rates[side].append(rate)
                    latencies[side] += lat
                    for k, v in used.items():
                        cpu[side][k] += v
            ratios = [c / s for c, s in zip(rates["cluster"], rates["standalone"], strict=True) if s]
            for side in SIDES:
                rate = results[f"{side}_moves_per_s_{n}"] = round(statistics.median(rates[side]), 1)
                ms = sorted(x * 1000 for x in latencies[side])
                p50 = results[f"{side}_p50_ms_{n}"] = round(statistics.median(ms), 3)
                p99 = results[f"{side}_p99_ms_{n}"] = round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3)
                moves = max(1, len(latencies[side]))
                for k, v in cpu[side].items():
                    results[f"{side}_{k}_cpu_us_per_move_{n}"] = round(v / moves * 1e6)
                cpu_text = " ".join(f"{k} {v / moves * 1e6:.0f}" for k, v in cpu[side].items())
                spread = f"{min(rates[side]):.0f}..{max(rates[side]):.0f}"
                print(f"{side:10} x{n:<3} {rate:8.1f} moves/s ({spread})  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
                      f"CPU us/move: {cpu_text}", flush=True)  # fmt: skip
            ratio = results[f"cluster_vs_standalone_{n}"] = round(statistics.median(ratios), 3)
            print(f"cluster/standalone x{n:<3} {ratio:.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})",
                  flush=True)  # fmt: skip
    finally:
        for side in SIDES:
            for channel in channels[side]:
                await channel.close(None)
    results["servers"] = len(addresses["cluster"])
    results["rounds"] = rounds
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round, level and side")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per level (medians are reported)")
    parser.add_argument("--levels", default="16", help="concurrent games")
    parser.add_argument("--servers", type=int, default=2, help="referee processes on each side")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 0.3 s rounds, 2 rounds, 1 referee a side")
    parser.add_argument("--cluster-url", default=None, help="an existing cluster (redis-cluster://host:port)")
    parser.add_argument("--redis-url", default=None, help="an existing standalone Redis")
    parser.add_argument(
        "--standalone-unix",
        action="store_true",
        help="the private standalone redis-server on a Unix socket (as `serve` runs it), not TCP",
    )
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds, args.servers = 0.3, 2, 1
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="rummy-bench-cluster-") as data:
        cluster = redis = None
        servers: dict[str, list[subprocess.Popen[str]]] = {side: [] for side in SIDES}
        try:
            if args.cluster_url is None:
                cluster = start_cluster(Path(data) / "cluster", appendfsync="everysec")
            if args.redis_url is None:
                redis = start_redis(Path(data) / "standalone", appendfsync="everysec",
                                    unix_socket=args.standalone_unix)  # fmt: skip
            urls = {"cluster": args.cluster_url or (cluster.url if cluster else ""),
                    "standalone": args.redis_url or (redis.url if redis else "")}  # fmt: skip
            addresses: dict[str, list[str]] = {side: [] for side in SIDES}
            for side in SIDES:
                for _ in range(max(1, args.servers)):
                    process, address = service._start_server(urls[side])
                    servers[side].append(process)
                    addresses[side].append(address)
                print(f"{side}: referees {', '.join(addresses[side])} (pids "
                      f"{', '.join(str(p.pid) for p in servers[side])}); redis {urls[side]}", flush=True)  # fmt: skip
            pids = {side: {"client": [os.getpid()], "referee": [p.pid for p in servers[side]]} for side in SIDES}
            if cluster is not None:
                pids["cluster"]["redis"] = cluster.pids
            if redis is not None:
                pids["standalone"]["redis"] = [redis.pid]
            print(f"{os.cpu_count()} cores; appendfsync everysec on both sides", flush=True)
            results = asyncio.run(measure(addresses, levels, args.seconds, max(1, args.rounds), pids))
        finally:
            for process in servers["cluster"] + servers["standalone"]:
                process.send_signal(signal.SIGTERM)
            for process in servers["cluster"] + servers["standalone"]:
                process.wait(30)
            if cluster is not None:
                cluster.stop()
            if redis is not None:
                redis.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
