"""Service benchmark: moves per second and latency through the real referee and a real Redis, side by side with
an empty unary RPC (Ping) on the same servers, at 1, 16 and 64 concurrent games.

Set-up: a private redis-server (appendonly, `appendfsync everysec`, on a Unix socket: as the zero-setup `serve`
runs it) and `--servers` (default 2, one per core of a 2-core machine) `rummy-referee serve` processes, each with
the same settings on a port of its own, sharing that Redis (README "Scale out": any number of referees, one Redis).
This process drives them with a grpc.aio client, one channel per referee; game i (and echo loop i) uses referee i
mod N, so a game's moves go to one referee, as a load balancer with game affinity would send them. A game is driven
by one coroutine that plays both seats of a Gin game, every move a SubmitMove with expected_version (draw from the
stock, then a knock when the referee lists one, else a random discard; the defender declares best): the next move
is always decided from the previous response, so a move costs exactly one RPC. Games that end are replaced by new
ones (creation is not counted). The echo runs the same number of coroutines over the same channels, each calling
Ping in a loop.

This machine is shared and its speed drifts by 10-20% from one second to the next, so each level is measured
in `--rounds` rounds, each round both kinds back to back (alternating which goes first), and the figures are
medians over the rounds; the ratio is the median of the rounds' own moves/echo ratios.

    .venv/bin/python bench/service.py [--seconds 2] [--rounds 5] [--levels 1,16,64] [--servers 2] [--redis-url URL]
                                      [--observe]   # referees with --metrics-port 0 --log-format json

Human-readable lines first (rate with its range over the rounds, CPU per operation of the client, of all
referees together and of Redis); the last line is one JSON object: moves_per_s_1, moves_per_s_16,
moves_per_s_64, echo_per_s_1, echo_per_s_16, echo_per_s_64, move_p50_ms_16, move_p99_ms_16 (and the other
percentiles, move_vs_echo_N for each level N: move_vs_echo_16 is the ratio the bar is set on, >= 0.5; servers
and rounds).
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
from collections.abc import Awaitable, Callable
from pathlib import Path

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

from rummy_pb.rummy.v1 import game_pb2 as pb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

ORGANIZER = "bench-organizer"
DRAW = pb.Move(draw_stock=pb.Move.DrawStock())
DECLARE = pb.Move(declare=pb.Move.Declare(best=True))
PASS = pb.Move(pass_turn=pb.Move.PassTurn())
KNOCKS = ("knock", "big_gin")


class GameDriver:
    """Plays both seats of one Gin game from the responses alone."""

    def __init__(self, stub: referee_pb2_grpc.RefereeServiceAsyncStub, rng: random.Random) -> None:
        self.stub = stub
        self.rng = rng
        self.game_id = ""
        self.tokens: dict[int, grpc.aio.Metadata] = {}
        self.view = pb.GameView()
        self.unavailable = 0  # moves answered UNAVAILABLE (the game looked at again, then on)

    async def new_game(self) -> None:
        created = await self.stub.CreateGame(rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="P0"), pb.SeatSpec(display_name="P1")],
        ))  # fmt: skip
        self.game_id = created.game_id
        # each seat's call metadata built once (grpc.aio would build a Metadata from a tuple on every call)
        self.tokens = {t.seat: grpc.aio.Metadata(("authorization", f"Bearer {t.token}")) for t in created.seat_tokens}
        got = await self.stub.GetGame(rpb.GetGameRequest(game_id=self.game_id), metadata=self.tokens[0])
        self.view = got.view

    def next_move(self) -> tuple[int, pb.Move]:
        v = self.view
        seat = v.to_act
        if v.phase == pb.PHASE_DRAW:
            return seat, DRAW
        if v.phase == pb.PHASE_LAYOFF:
            return seat, DECLARE
        if v.phase in (pb.PHASE_TAKE_OR_PASS, pb.PHASE_LAST_CARD):
            return seat, PASS
        moves = v.legal_moves
        assert v.viewer_seat == seat and moves, "the mover's own response lists its next moves"
        knock = next((m for m in moves if m.WhichOneof("move") in KNOCKS), None)
        return seat, knock or moves[self.rng.randrange(len(moves))]

    async def move(self) -> float:
        """One SubmitMove; its latency in seconds."""
        if not self.game_id or self.view.phase == pb.PHASE_MATCH_OVER:
            await self.new_game()
        seat, move = self.next_move()
        request = rpb.SubmitMoveRequest(game_id=self.game_id, move=move, expected_version=self.view.version)
        start = time.perf_counter()
        try:
            response = await self.stub.SubmitMove(request, metadata=self.tokens[seat])
        except grpc.aio.AioRpcError as exc:
            # A swamped machine (storage over its timeout): the move may or may not have applied; its
            # expected_version keeps a resend from applying twice, so look at the game again and go on.
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            self.unavailable += 1
            await self._look_again()
            return time.perf_counter() - start
        elapsed = time.perf_counter() - start
        self.view = response.view
        return elapsed

    async def _look_again(self) -> None:
        for _ in range(50):
            try:
                got = await self.stub.GetGame(rpb.GetGameRequest(game_id=self.game_id), metadata=self.tokens[0])
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                await asyncio.sleep(0.05)
                continue
            seat = got.view.to_act if got.view.HasField("to_act") else 0
            if seat != 0 and seat in self.tokens:  # the mover's own view lists its legal moves
                got = await self.stub.GetGame(rpb.GetGameRequest(game_id=self.game_id), metadata=self.tokens[seat])
            self.view = got.view
            return
        raise RuntimeError("the referee stayed UNAVAILABLE for the game")


def echo_step(stub: referee_pb2_grpc.RefereeServiceAsyncStub) -> Callable[[], Awaitable[float]]:
    """One empty RPC (Ping) on ``stub``: the echo; its latency in seconds."""

    async def step() -> float:
        start = time.perf_counter()
        await stub.Ping(rpb.PingRequest())
        return time.perf_counter() - start

    return step


async def _drive(concurrency: int, seconds: float, step_factory: object) -> list[float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker(i: int) -> None:
        step = step_factory(i)  # type: ignore[operator]
        while time.perf_counter() < deadline:
            latencies.append(await step())

    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return latencies


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _run_kind(
    n: int, seconds: float, factory: object, pids: dict[str, list[int]]
) -> tuple[float, list[float], dict[str, float]]:
    """One measurement: operations per second, latencies (s) and CPU seconds of each process group."""
    cpu_before = {k: sum(map(_cpu_s, p)) for k, p in pids.items()}
    start = time.perf_counter()
    latencies = await _drive(n, seconds, factory)
    elapsed = time.perf_counter() - start
    cpu = {k: sum(map(_cpu_s, p)) - cpu_before[k] for k, p in pids.items()}
    return len(latencies) / elapsed, latencies, cpu


async def measure(
    addresses: list[str], levels: list[int], seconds: float, rounds: int, pids: dict[str, list[int]]
) -> dict[str, float]:
    """Moves and echoes per second (medians over ``rounds`` rounds), latency percentiles (over every call of
    every round), and the median over the rounds of each round's moves/echo ratio, at each concurrency level.
    A round measures both kinds back to back, echo first in even rounds and moves first in odd ones, so that
    the machine's speed drifting (it is shared) weighs on both alike."""
    results: dict[str, float] = {}
    channels = [grpc.aio.insecure_channel(address) for address in addresses]
    stubs = [referee_pb2_grpc.RefereeServiceStub(channel) for channel in channels]
    try:

        def echo_factory(i: int) -> object:
            return echo_step(stubs[i % len(stubs)])

        def move_factory(i: int) -> object:
            driver = GameDriver(stubs[i % len(stubs)], random.Random(i))
            return driver.move

        await _drive(4 * len(stubs), 0.5, echo_factory)  # warm-up: connections, code paths, Redis scripts
        await _drive(4 * len(stubs), 0.5, move_factory)
        kinds = (("echo", echo_factory), ("moves", move_factory))
        for n in levels:
            rates: dict[str, list[float]] = {"echo": [], "moves": []}
            latencies: dict[str, list[float]] = {"echo": [], "moves": []}
            cpu: dict[str, dict[str, float]] = {"echo": dict.fromkeys(pids, 0.0), "moves": dict.fromkeys(pids, 0.0)}
            for r in range(rounds):
                for name, factory in kinds if r % 2 == 0 else kinds[::-1]:
                    rate, lat, used = await _run_kind(n, seconds, factory, pids)
                    rates[name].append(rate)
                    latencies[name] += lat
                    for k, v in used.items():
                        cpu[name][k] += v
            ratios = [m / e for m, e in zip(rates["moves"], rates["echo"], strict=True) if e]
            for name in ("echo", "moves"):
                label = "move" if name == "moves" else "echo"
                rate = results[f"{name}_per_s_{n}"] = round(statistics.median(rates[name]), 1)
                ms = sorted(x * 1000 for x in latencies[name])
                p50 = results[f"{label}_p50_ms_{n}"] = round(statistics.median(ms), 3)
                p99 = results[f"{label}_p99_ms_{n}"] = round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3)
                calls = max(1, len(latencies[name]))
                cpu_text = " ".join(f"{k} {v / calls * 1e6:.0f}" for k, v in cpu[name].items())
                spread = f"{min(rates[name]):.0f}..{max(rates[name]):.0f}"
                print(
                    f"{name:5} x{n:<3} {rate:9.1f}/s ({spread})  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
                    f"CPU us/op: {cpu_text}",
                    flush=True,
                )
            ratio = results[f"move_vs_echo_{n}"] = round(statistics.median(ratios), 3)
            print(f"moves/echo x{n:<3} {ratio:.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})", flush=True)
    finally:
        for channel in channels:
            await channel.close(None)
    results["servers"] = len(addresses)
    results["rounds"] = rounds
    return results


def _start_server(redis_url: str, extra: tuple[str, ...] = (), http: bool = True) -> tuple[subprocess.Popen[str], str]:
    referee = _boot.start_referee(
        ["--port", "0", "--redis-url", redis_url, "--grace", "1",
         # the HTTP port on by default, as `serve` runs: no tax on gRPC
         *(["--http-port", "0"] if http else ["--no-http"]),
         # limits far above the bench's rates (it creates games without a token), but on: their cost is measured
         "--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000", *extra],
        env={**os.environ, "RUMMY_ORGANIZER_TOKEN": ORGANIZER},
    )  # fmt: skip
    assert referee.process is not None
    return referee.process, referee.address


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round, level and kind")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per level (medians are reported)")
    parser.add_argument("--levels", default="1,16,64", help="concurrent games (and echo loops)")
    parser.add_argument("--servers", type=int, default=2, help="referee processes (the echo uses the same ones)")
    parser.add_argument("--redis-url", default=None, help="an existing Redis (default: a private redis-server)")
    parser.add_argument("--observe", action="store_true",
                        help="referees with their metrics and JSON logs on (--metrics-port 0 --log-format json)")
    parser.add_argument("--no-http", action="store_true", help="referees without their HTTP port (to compare)")
    parser.add_argument("--no-limits", action="store_true",
                        help="referees without the rate limiter (to compare: by default it is on, far above the rates)")
    parser.add_argument("--no-bots", action="store_true", help="referees without their bot host (to compare)")
    args = parser.parse_args()
    extra: tuple[str, ...] = ("--metrics-port", "0", "--log-format", "json") if args.observe else ()
    # later flags win in argparse: these override the high limits _start_server passes
    extra += ("--requests-per-second", "0", "--games-per-minute", "0") if args.no_limits else ()
    extra += ("--no-bots",) if args.no_bots else ()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="rummy-bench-") as data:
        redis = None if args.redis_url else start_redis(data, appendfsync="everysec", unix_socket=True)
        url = args.redis_url or (redis.url if redis else "")
        servers: list[tuple[subprocess.Popen[str], str]] = []
        try:
            servers += [_start_server(url, extra, http=not args.no_http) for _ in range(max(1, args.servers))]
            listed = ", ".join(f"{address} (pid {process.pid})" for process, address in servers)
            print(f"referees {listed}; redis {url}; {os.cpu_count()} cores", flush=True)
            pids = {"client": [os.getpid()], "referee": [process.pid for process, _ in servers]}
            if redis is not None:
                pids["redis"] = [redis.pid]
            results = asyncio.run(
                measure([address for _, address in servers], levels, args.seconds, max(1, args.rounds), pids)
            )
        finally:
            for process, _ in servers:
                process.send_signal(signal.SIGTERM)
            for process, _ in servers:
                process.wait(30)
            if redis is not None:
                redis.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
