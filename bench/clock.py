"""Time controls benchmark: how late the referee fires timeouts, and what a clock costs a move.

Set-up as bench/service.py's: a private redis-server (appendonly, everysec, Unix socket) and `--servers` (default 2)
`rummy-referee serve` processes sharing it, each running its timeout firer (server/clocks.py).

1. Lateness: `--games` (default 1,000) Gin games are created with short deadlines (`--limit-ms`, default 300 ms
   per move; half forfeit_match, half auto_move with max_auto_moves 1, so each of those sees two timeouts, one an
   automatic draw and discard), over 32 concurrent creators spread over the referees, and nobody ever moves: every
   game ends on time. Then (once they should all be over) every game's replay is read: for each ``timed_out``
   event, its lateness is the commit's time (the ``at_ms`` of the same version's ``clock_stopped``) minus the
   deadline, both in Redis's clock.
2. Cost: moves per second at 16 concurrent games (bench/service.py's driver: both seats of a Gin game, one
   SubmitMove per move) with a clock (a 60 s limit per move, so that no timeout fires) and without, in
   `--rounds` interleaved rounds (alternating which goes first); the ratio is the median of the rounds' ratios.

    .venv/bin/python bench/clock.py [--games 1000] [--limit-ms 300] [--seconds 2] [--rounds 5] [--servers 2]
                                    [--quick]   # 100 games, 2 rounds of 0.3 s: a smoke run

Human-readable lines first; the last line is one JSON object: timeout_late_p99_ms (the bar: < 1000),
timeout_late_p50_ms, timeout_late_max_ms, timeouts, games, unfinished, retries (calls answered UNAVAILABLE and
retried: a loaded machine), clock_move_ratio (the bar: >= 0.9), moves_per_s_clock, moves_per_s_plain,
referee_cpu_us_per_move_clock and _plain (the referees' CPU per move: steadier than rates on a shared machine),
servers, rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_BENCH_DIR = Path(__file__).resolve().parent
_ROOT = _BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH_DIR]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

try:
    import grpc
except ModuleNotFoundError:  # a plain `python bench/clock.py`: run again in the project's .venv (make venv)
    _VENV = _ROOT / ".venv"
    if (_VENV / "bin" / "python").exists() and Path(sys.prefix).resolve() != _VENV.resolve():
        os.execv(_VENV / "bin" / "python", [str(_VENV / "bin" / "python"), *sys.argv])
    raise SystemExit("bench/clock.py needs the project installed: run `make venv` first") from None

from rummy_pb.rummy.v1 import game_pb2 as pb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_service", _BENCH_DIR / "service.py")
assert _spec is not None and _spec.loader is not None
service = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(service)

ORGANIZER = service.ORGANIZER
TC = pb.TimeControl
ORG = grpc.aio.Metadata(("authorization", f"Bearer {ORGANIZER}"))
SEATS = [pb.SeatSpec(display_name="P0"), pb.SeatSpec(display_name="P1")]


RETRIES = [0]  # calls answered UNAVAILABLE ("retry later": a storage operation over 1 s on a loaded machine)


async def _call(method: Any, request: Any, **kw: Any) -> Any:
    """A call, retried (up to 5 times, 0.2 s apart) when the referee says UNAVAILABLE; the retries are counted."""
    for attempt in range(6):
        try:
            return await method(request, **kw)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE or attempt == 5:
                raise
            RETRIES[0] += 1
            await asyncio.sleep(0.2)
    raise AssertionError("unreachable")


def _policy(i: int) -> pb.TimeoutPolicy:
    if i % 2:
        return pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=1)
    return pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH)


async def lateness(stubs: list[Any], games: int, limit_ms: int) -> dict[str, float]:
    """Create ``games`` idle games with a limit per move, wait until every one has ended on time, and measure how
    late each timeout fired."""
    queue = list(range(games))
    ids: list[str] = []

    async def creator(c: int) -> None:
        stub = stubs[c % len(stubs)]
        while queue:
            i = queue.pop()
            created = await _call(stub.CreateGame, rpb.CreateGameRequest(
                profile="gin", seats=SEATS, time_control=TC(per_move=TC.PerMove(limit_ms=limit_ms)),
                timeout_policy=_policy(i),
            ))  # fmt: skip
            ids.append(created.game_id)

    start = time.perf_counter()
    await asyncio.gather(*(creator(c) for c in range(32)))
    created_s = time.perf_counter() - start
    print(f"created {len(ids)} games in {created_s:.2f} s ({len(ids) / created_s:.0f}/s)", flush=True)
    # every game ends within a few of its deadlines (auto_move games: three timeouts): read the replays after
    # that, so that reading them does not load the referees while they fire
    await asyncio.sleep(4 * limit_ms / 1000 + 1.0)
    late: list[float] = []
    unfinished = 0

    async def reader(c: int, chunk: list[str]) -> None:
        nonlocal unfinished
        stub = stubs[c % len(stubs)]
        for game_id in chunk:
            for _ in range(600):  # a failure bound: every game ends within a few of its deadlines
                replay = await _call(stub.GetReplay, rpb.GetReplayRequest(game_id=game_id), metadata=ORG)
                if replay.current.phase == pb.PHASE_MATCH_OVER:
                    break
                await asyncio.sleep(0.05)
            else:
                unfinished += 1
                continue
            events = list(replay.events)
            for e in events:
                if e.kind == "timed_out":
                    stop = next(x for x in events if x.version == e.version and x.kind == "clock_stopped")
                    late.append(stop.data["at_ms"] - e.data["deadline_ms"])

    chunks = [ids[i::16] for i in range(16)]
    await asyncio.gather(*(reader(c, chunk) for c, chunk in enumerate(chunks)))
    late.sort()
    p99 = late[min(len(late) - 1, int(len(late) * 0.99))] if late else float("inf")
    p50 = statistics.median(late) if late else float("inf")
    print(f"timeouts {len(late)} (games {len(ids)}, unfinished {unfinished}): late p50 {p50:.1f} ms, p99 {p99:.1f} ms,"
          f" max {late[-1] if late else float('inf'):.1f} ms", flush=True)  # fmt: skip
    return {"timeout_late_p99_ms": round(p99, 1), "timeout_late_p50_ms": round(p50, 1),
            "timeout_late_max_ms": round(late[-1], 1) if late else float("inf"), "timeouts": len(late),
            "games": len(ids), "unfinished": unfinished, "retries": RETRIES[0]}  # fmt: skip


class ClockDriver(service.GameDriver):  # type: ignore[misc,name-defined]
    """bench/service.py's driver, its games with a 60 s limit per move."""

    async def new_game(self) -> None:
        created = await self.stub.CreateGame(rpb.CreateGameRequest(
            profile="gin", seats=SEATS, time_control=TC(per_move=TC.PerMove(limit_ms=60_000)),
        ))  # fmt: skip
        self.game_id = created.game_id
        self.tokens = {t.seat: grpc.aio.Metadata(("authorization", f"Bearer {t.token}")) for t in created.seat_tokens}
        got = await self.stub.GetGame(rpb.GetGameRequest(game_id=self.game_id), metadata=self.tokens[0])
        self.view = got.view


async def move_cost(stubs: list[Any], seconds: float, rounds: int, pids: list[int], n: int = 16) -> dict[str, float]:
    """Moves per second with and without a clock, interleaved rounds, medians."""

    def factory(cls: Any) -> Any:
        def make(i: int) -> Any:
            return cls(stubs[i % len(stubs)], random.Random(i)).move

        return make

    kinds = (("plain", factory(service.GameDriver)), ("clock", factory(ClockDriver)))
    await service._drive(4 * len(stubs), 0.5, kinds[0][1])  # warm-up
    await service._drive(4 * len(stubs), 0.5, kinds[1][1])
    rates: dict[str, list[float]] = {"plain": [], "clock": []}
    cpu: dict[str, list[float]] = {"plain": [], "clock": []}  # referee CPU us per move, each round
    for r in range(rounds):
        for name, make in kinds if r % 2 == 0 else kinds[::-1]:
            before = sum(map(service._cpu_s, pids))
            start = time.perf_counter()
            latencies = await service._drive(n, seconds, make)
            rates[name].append(len(latencies) / (time.perf_counter() - start))
            cpu[name].append((sum(map(service._cpu_s, pids)) - before) / max(1, len(latencies)) * 1e6)
    ratios = [c / p for c, p in zip(rates["clock"], rates["plain"], strict=True) if p]
    ratio = statistics.median(ratios)
    for name in ("plain", "clock"):
        spread = f"{min(rates[name]):.0f}..{max(rates[name]):.0f}"
        print(f"moves x{n} {name:5} {statistics.median(rates[name]):8.1f}/s ({spread}), referee CPU "
              f"{statistics.median(cpu[name]):.0f} us/move", flush=True)  # fmt: skip
    print(f"clock/plain x{n} {ratio:.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})", flush=True)
    return {"clock_move_ratio": round(ratio, 3), "moves_per_s_clock": round(statistics.median(rates["clock"]), 1),
            "moves_per_s_plain": round(statistics.median(rates["plain"]), 1),
            "referee_cpu_us_per_move_clock": round(statistics.median(cpu["clock"])),
            "referee_cpu_us_per_move_plain": round(statistics.median(cpu["plain"]))}  # fmt: skip


async def run(addresses: list[str], args: argparse.Namespace, pids: list[int]) -> dict[str, float]:
    channels = [grpc.aio.insecure_channel(a) for a in addresses]
    stubs = [referee_pb2_grpc.RefereeServiceStub(c) for c in channels]
    try:
        results = await lateness(stubs, args.games, args.limit_ms)
        results.update(await move_cost(stubs, args.seconds, max(1, args.rounds), pids))
    finally:
        for channel in channels:
            await channel.close(None)
    results["servers"] = len(addresses)
    results["rounds"] = args.rounds
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=1000, help="idle games that end on time")
    parser.add_argument("--limit-ms", type=int, default=300, help="their limit per move")
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round and kind (cost)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (cost; medians are reported)")
    parser.add_argument("--servers", type=int, default=2, help="referee processes")
    parser.add_argument("--quick", action="store_true", help="at most 100 games, 2 rounds of 0.3 s (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.games, args.rounds, args.seconds = min(args.games, 100), 2, 0.3
    with tempfile.TemporaryDirectory(prefix="rummy-bench-clock-") as data:
        redis = start_redis(data, appendfsync="everysec", unix_socket=True)
        servers: list[Any] = []
        try:
            servers += [service._start_server(redis.url, (), http=False) for _ in range(max(1, args.servers))]
            listed = ", ".join(f"{address} (pid {process.pid})" for process, address in servers)
            print(f"referees {listed}; redis {redis.url}; {os.cpu_count()} cores", flush=True)
            pids = [process.pid for process, _ in servers]
            results = asyncio.run(run([address for _, address in servers], args, pids))
        finally:
            for process, _ in servers:
                process.send_signal(signal.SIGTERM)
            for process, _ in servers:
                process.wait(30)
            redis.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
