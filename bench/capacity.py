"""Capacity bench: what one move and one game cost a referee process and Redis, for docs/scaling.md's model.

Set-up: a private redis-server (appendonly, `appendfsync everysec`, on a Unix socket: as the zero-setup `serve`
runs it) and two `rummy-referee serve` processes over it; this process drives them with a grpc.aio client playing
``--games`` (16) Gin games at once, both seats, one SubmitMove per move (bench/service.py's GameDriver). Three
kinds, interleaved in ``--rounds`` rounds (each kind first in turn; medians): the games on the first referee
alone, as many loops calling the empty RPC (Ping) on it (the baseline), and the games split over both referees.
Measured:

- referee CPU per move: the referee processes' user+system CPU time (/proc/PID/stat) over the round / moves;
  beside it the same per Ping (the fixed cost of a call), and the client's own;
- Redis CPU per move: ``INFO cpu`` used_cpu_sys + used_cpu_user deltas over the round / moves;
- moves/s per referee core: 1 / referee CPU per move (a process is one asyncio loop: one core at most);
- Redis memory per game: ``INFO memory`` used_memory deltas per game after ``--memory-games`` (300) games are
  created, then after 20 moves in each (a hand under way);
- Redis connections per referee process: ``INFO clients`` connected_clients (this bench's own left out) once the
  referees are up, the most sampled under load, idle after it, and with ``--watches`` (50) WatchGame streams
  open on as many games (the watch feed's connections);
- the model's checks: the CPU per move (referees + Redis) with two referees against one (the model: the same),
  and the moves/s of two referees against one, measured against what the model predicts for this machine (the
  least of one core per referee, one core for Redis, and all cores shared by client, referees and Redis).

    .venv/bin/python bench/capacity.py [--seconds 2] [--rounds 3] [--games 16] [--memory-games 300] [--watches 50]
                                       [--cluster [--replicas 1]]

``--cluster``: the same on a local Redis Cluster (server/redis_cluster.py: 3 masters with ``--replicas`` each),
the Redis figures summed over every node (a replica's copy of the writes included).

Human-readable lines first; the last line is one JSON object: referee_cpu_us_per_move, referee_cpu_us_per_ping,
move_vs_ping_cpu (the ratio against the baseline), redis_cpu_us_per_move, client_cpu_us_per_move,
referee_cpu_us_per_move_two, redis_cpu_us_per_move_two, cpu_per_move_two_vs_one, moves_per_s_per_referee_core,
moves_per_s_measured, moves_per_s_two_referees, moves_per_s_predicted, two_vs_one_measured,
two_vs_one_predicted, model_vs_measured, redis_bytes_per_new_game, redis_bytes_per_game_20_moves,
redis_connections_started, redis_connections_loaded, redis_connections_idle, redis_connections_watching,
redis_connections_per_watch, load_average, cores, rounds, redis_nodes. No bar: the figures feed docs/scaling.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402
import redis  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

from bench.service import GameDriver, _cpu_s, _start_server  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_cluster import start_cluster  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402


class Nodes:
    """Every Redis node of the run (one standalone server, or each node of a cluster, replicas too): ``info``
    sums their numeric INFO fields. ``own``: the connections there before any referee (this bench's own, and a
    cluster's replication links), left out of the counts."""

    def __init__(self, clients: list[redis.Redis]) -> None:
        self.clients = clients
        self.own = 0
        self.own = _clients(self)

    def info(self, section: str) -> dict[str, float]:
        total: dict[str, float] = {}
        for client in self.clients:
            for key, value in client.info(section).items():
                if isinstance(value, int | float):
                    total[key] = total.get(key, 0) + value
        return total

    def close(self) -> None:
        for client in self.clients:
            client.close()


def _redis_cpu(db: Nodes) -> float:
    info = db.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _used_memory(db: Nodes) -> int:
    return int(db.info("memory")["used_memory"])


def _clients(db: Nodes) -> int:
    """Redis's connected clients, those there before the referees left out."""
    return int(db.info("clients")["connected_clients"]) - db.own


async def _round(n: int, seconds: float, step: Any, referee_pids: list[int], db: Nodes) -> dict[str, float]:
    """``n`` loops of ``step`` for ``seconds``: calls made, and the CPU seconds each process used meanwhile."""
    steps = [step(i) for i in range(n)]
    calls = 0
    deadline = time.perf_counter() + seconds
    referee0, redis0, client0 = sum(map(_cpu_s, referee_pids)), _redis_cpu(db), time.process_time()
    start = time.perf_counter()

    async def loop(one: Any) -> None:
        nonlocal calls
        while True:  # one call at least, however late the loop starts on a loaded machine
            await one()
            calls += 1
            if time.perf_counter() >= deadline:
                return

    await asyncio.gather(*(loop(one) for one in steps))
    elapsed = time.perf_counter() - start
    return {
        "calls": calls,
        "rate": calls / elapsed,
        "referee": sum(map(_cpu_s, referee_pids)) - referee0,
        "redis": _redis_cpu(db) - redis0,
        "client": time.process_time() - client0,
    }


def _movers(stubs: list[referee_pb2_grpc.RefereeServiceStub], seed: int) -> Any:
    """Game i played through ``stubs[i % len(stubs)]`` (a balancer with game affinity), its driver kept."""
    drivers: dict[int, GameDriver] = {}

    def mover(i: int) -> Any:
        driver = drivers.setdefault(i, GameDriver(stubs[i % len(stubs)], random.Random(seed + i)))
        return driver.move

    return mover


async def measure_cpu(
    stubs: list[referee_pb2_grpc.RefereeServiceStub], args: argparse.Namespace, pids: list[int], db: Nodes
) -> dict[str, float]:
    """CPU per move and per Ping on one referee, and moves/s on one referee and on two, in interleaved rounds
    (medians)."""
    one = _movers(stubs[:1], 0)
    two = _movers(stubs, 100)

    def pinger(i: int) -> Any:
        async def ping() -> None:
            await stubs[0].Ping(rpb.PingRequest())

        return ping

    await _round(args.games, 0.5, pinger, pids[:1], db)  # warm-up: connections, code paths, Redis scripts
    await _round(args.games, 0.5, one, pids[:1], db)
    await _round(args.games, 0.5, two, pids, db)
    kinds = [("moves", one, pids[:1]), ("pings", pinger, pids[:1]), ("moves2", two, pids)]
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in kinds}
    for r in range(args.rounds):
        for name, step, used in kinds[r % 3 :] + kinds[: r % 3]:  # each kind first in turn
            got[name].append(await _round(args.games, args.seconds, step, used, db))

    def per_call(name: str, key: str) -> float:
        return statistics.median(x[key] / x["calls"] * 1e6 for x in got[name] if x["calls"])

    results = {
        "referee_cpu_us_per_move": round(per_call("moves", "referee"), 1),
        "referee_cpu_us_per_ping": round(per_call("pings", "referee"), 1),
        "redis_cpu_us_per_move": round(per_call("moves", "redis"), 1),
        "client_cpu_us_per_move": round(per_call("moves", "client"), 1),
        "referee_cpu_us_per_move_two": round(per_call("moves2", "referee"), 1),
        "redis_cpu_us_per_move_two": round(per_call("moves2", "redis"), 1),
        "moves_per_s_measured": round(statistics.median(x["rate"] for x in got["moves"]), 1),
        "moves_per_s_two_referees": round(statistics.median(x["rate"] for x in got["moves2"]), 1),
        "pings_per_s_measured": round(statistics.median(x["rate"] for x in got["pings"]), 1),
    }
    results["move_vs_ping_cpu"] = round(
        statistics.median(
            (m["referee"] / m["calls"]) / (p["referee"] / p["calls"])
            for m, p in zip(got["moves"], got["pings"], strict=True)
            if m["calls"] and p["calls"] and p["referee"]
        ),
        3,
    )
    results["two_vs_one_measured"] = round(
        statistics.median(b["rate"] / a["rate"] for a, b in zip(got["moves"], got["moves2"], strict=True)), 3
    )
    for name, _, _ in kinds:
        rates = ", ".join(f"{x['rate']:.0f}" for x in got[name])
        print(f"{name:6} x{args.games}: {rates} /s over the rounds", flush=True)
    return results


async def measure_memory(stub: referee_pb2_grpc.RefereeServiceStub, games: int, db: Nodes) -> dict[str, float]:
    """Redis's used_memory per game: created, then 20 moves into its first hand."""
    drivers = [GameDriver(stub, random.Random(1000 + i)) for i in range(games)]
    before = _used_memory(db)
    for start in range(0, games, 50):
        await asyncio.gather(*(d.new_game() for d in drivers[start : start + 50]))
    created = _used_memory(db)
    for _ in range(20):
        await asyncio.gather(*(d.move() for d in drivers))
    played = _used_memory(db)
    return {
        "redis_bytes_per_new_game": round((created - before) / games),
        "redis_bytes_per_game_20_moves": round((played - before) / games),
    }


async def measure_connections(
    stub: referee_pb2_grpc.RefereeServiceStub, watches: int, db: Nodes, loaded: float, referees: int
) -> dict[str, float]:
    """connected_clients with ``watches`` WatchGame streams open (on as many games), against idle (after the
    load and after making those games: the connection pool as they left it) and ``loaded`` (the most sampled
    under load)."""
    drivers = [GameDriver(stub, random.Random(2000 + i)) for i in range(watches)]
    # the games made (concurrently: the pool may open connections for them) before the idle count, so that the
    # difference is the watching's alone
    await asyncio.gather(*(d.new_game() for d in drivers))
    idle = _clients(db)  # of all the referees: each holds its share; the watches below are on one of them
    calls = [stub.WatchGame(rpb.WatchGameRequest(game_id=d.game_id), metadata=d.tokens[0]) for d in drivers]
    try:
        for call in calls:  # the first item (the snapshot) says the stream is set up on the referee
            await call.read()
        for d in drivers:  # a move in each game: every feed has been read at least once
            await d.move()
        await asyncio.sleep(0.5)  # the feeds' blocking reads are issued by now (a count, not a synchronization)
        watching = _clients(db)
    finally:
        for call in calls:
            call.cancel()
    return {
        "redis_connections_idle": round(idle / referees, 1),
        "redis_connections_loaded": round(loaded, 1),
        "redis_connections_watching": round(idle / referees + watching - idle, 1),
        "redis_connections_per_watch": round((watching - idle) / max(1, watches), 3),
    }


def predicted_rate(referees: int, results: dict[str, float], cores: int) -> float:
    """The model's moves/s for ``referees`` referee processes on a machine of ``cores`` cores that also runs
    Redis and the client: the least of one core per referee, one core for Redis, and the cores shared by all."""
    referee = results["referee_cpu_us_per_move"] / 1e6
    redis_cpu = results["redis_cpu_us_per_move"] / 1e6
    client = results["client_cpu_us_per_move"] / 1e6
    shared = cores / (referee + redis_cpu + client)
    return min(referees / referee, 1 / redis_cpu if redis_cpu else float("inf"), shared)


def model_check(results: dict[str, float], cores: int) -> None:
    """The model's prediction, next to what was measured: the gain of a second referee on this machine (a ratio
    of two rates measured in the same rounds, so that the others' load on the machine weighs on both alike)."""
    results["moves_per_s_per_referee_core"] = round(1e6 / results["referee_cpu_us_per_move"], 1)
    results["moves_per_s_predicted"] = round(predicted_rate(1, results, cores), 1)
    results["two_vs_one_predicted"] = round(predicted_rate(2, results, cores) / predicted_rate(1, results, cores), 3)
    results["model_vs_measured"] = round(results["two_vs_one_measured"] / results["two_vs_one_predicted"], 3)
    one = results["referee_cpu_us_per_move"] + results["redis_cpu_us_per_move"]
    two = results["referee_cpu_us_per_move_two"] + results["redis_cpu_us_per_move_two"]
    results["cpu_per_move_two_vs_one"] = round(two / one, 3)  # the model: 1 (a move costs the same, scaled out)
    results["load_average"] = round(os.getloadavg()[0], 2)


async def run(args: argparse.Namespace, addresses: list[str], pids: list[int], db: Nodes) -> dict[str, float]:
    channels = [grpc.aio.insecure_channel(address) for address in addresses]
    stubs = [referee_pb2_grpc.RefereeServiceStub(channel) for channel in channels]
    stub = stubs[0]
    started = round(_clients(db) / len(addresses), 1)  # per referee, up, no call yet
    try:
        loaded_clients: list[int] = []

        async def sample() -> None:
            while True:
                loaded_clients.append(_clients(db))
                await asyncio.sleep(0.25)

        sampler = asyncio.create_task(sample())
        results = await measure_cpu(stubs, args, pids, db)
        results.update(await measure_memory(stub, args.memory_games, db))
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        loaded = max(loaded_clients, default=0) / len(addresses)
        results.update(await measure_connections(stub, args.watches, db, loaded, len(addresses)))
        results["redis_connections_started"] = started
    finally:
        for channel in channels:
            await channel.close(None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round and kind")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--games", type=int, default=16, help="concurrent games (and Ping loops)")
    parser.add_argument("--memory-games", type=int, default=300, help="games created for the memory figures")
    parser.add_argument("--watches", type=int, default=50, help="WatchGame streams for the connection count")
    parser.add_argument("--cluster", action="store_true", help="a local Redis Cluster of 3 masters (Redis CPU, "
                        "memory and connections summed over its nodes) in place of one redis-server")  # fmt: skip
    parser.add_argument("--replicas", type=int, default=1, help="replicas of each master with --cluster (default 1)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="rummy-capacity-") as data:
        if args.cluster:  # a real local cluster: 3 masters, --replicas each (server/redis_cluster.py)
            server: Any = start_cluster(Path(data) / "cluster", masters=3, replicas=args.replicas)
            db = Nodes([node.client() for node in server.nodes])
            where = f"cluster of {len(server.nodes)} nodes (pids {', '.join(map(str, server.pids))})"
        else:
            server = start_redis(data, appendfsync="everysec", unix_socket=True)
            db = Nodes([redis.Redis.from_url(server.url)])
            where = f"redis {server.url} (pid {server.pid})"
        referees: list[tuple[Any, str]] = []
        try:
            referees += [_start_server(server.url, ("--no-bots",), http=False) for _ in range(2)]
            listed = ", ".join(f"{address} (pid {process.pid})" for process, address in referees)
            print(f"referees {listed}; {where}; {cores} cores", flush=True)
            addresses, pids = [a for _, a in referees], [p.pid for p, _ in referees]
            results = asyncio.run(run(args, addresses, pids, db))
            db.close()
        finally:
            for process, _ in referees:
                process.send_signal(signal.SIGTERM)
            for process, _ in referees:
                process.wait(30)
            server.stop()
    model_check(results, cores)
    results["cores"] = cores
    results["rounds"] = args.rounds
    results["redis_nodes"] = len(db.clients)
    print(f"referee CPU per move {results['referee_cpu_us_per_move']:.0f} us (per Ping "
          f"{results['referee_cpu_us_per_ping']:.0f} us: x{results['move_vs_ping_cpu']:.2f}); Redis CPU per move "
          f"{results['redis_cpu_us_per_move']:.0f} us; client {results['client_cpu_us_per_move']:.0f} us")  # fmt: skip
    print(
        f"moves/s per referee core {results['moves_per_s_per_referee_core']:.0f}; one referee on this machine: "
        f"the model predicts {results['moves_per_s_predicted']:.0f}/s, "
        f"measured {results['moves_per_s_measured']:.0f}/s "
        f"(the machine is shared); two referees: x{results['two_vs_one_measured']:.2f} measured, "
        f"x{results['two_vs_one_predicted']:.2f} predicted (measured/predicted {results['model_vs_measured']:.2f})"
    )
    print(
        f"CPU per move (referees + Redis) with two referees: x{results['cpu_per_move_two_vs_one']:.2f} of one "
        f"(the model: x1.00); load average {results['load_average']:.1f} on {cores} cores"
    )
    print(f"Redis bytes per game: new {results['redis_bytes_per_new_game']:.0f}, after 20 moves "
          f"{results['redis_bytes_per_game_20_moves']:.0f}")  # fmt: skip
    print(
        f"Redis connections of one referee: at start {results['redis_connections_started']:.0f}, idle "
        f"{results['redis_connections_idle']:.0f}, loaded "
        f"{results['redis_connections_loaded']:.0f}, with {args.watches} watched games "
        f"{results['redis_connections_watching']:.0f} ({results['redis_connections_per_watch']:.2f} per watch)"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
