"""Floor benchmark: how high moves/echo (bench/service.py's `move_vs_echo_16`) could go if a move cost nothing but
what no referee of this design can avoid: the call's gRPC, its bearer token, one round trip to Redis and a
response as big as a real move's.

Set-up as bench/service.py's (a private redis-server on a Unix socket, `appendfsync everysec`; `--servers` referee
processes, the driver and its measuring loop imported from it, not copied), but each referee runs with one change,
made here and only in this process tree: a SubmitMove whose request_id is "floor" skips the move. It takes the
token from the call's metadata as every move does, sends one PING over the store's pipelined connection to Redis
(the one commits take) and answers a SubmitMoveResponse recorded from a real move of a real game: no game is
read, no rule judged, nothing written. Every other call runs the referee's own code. Three kinds of call go to the
same processes in each round (their order rotating): the echo (Ping), real moves, and floor moves; the client of
a floor move parses its response and picks the next move from it as the real driver does.

    python bench/floor.py [--seconds 2] [--rounds 5] [--level 16] [--servers 2]

Human-readable lines first (rate with its range over the rounds; CPU per operation of the client, of the
referees and of Redis); the last line is one JSON object: echo_per_s_N, moves_per_s_N, floor_per_s_N,
move_vs_echo_N, floor_vs_echo_N (medians over the rounds of each round's own ratio), move_vs_floor_N, servers,
rounds. `floor_vs_echo_N` is the most that any speed-up of the referee's own work on a move (engine, views,
codec, commit script) can bring `move_vs_echo_N` to on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
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

import _boot  # first of the project's imports: the repository root on sys.path

FLOOR_ID = "floor"  # the request_id that makes a SubmitMove a floor move
RESPONSE_ENV = "RUMMY_BENCH_FLOOR_RESPONSE"  # the file holding the recorded response's bytes


def _patch_referee() -> None:
    """In a referee process: SubmitMove answers a request_id "floor" with the recorded response (module doc)."""
    from rummy_pb.rummy.v1 import referee_pb2 as rpb
    from server import deadlines, grpc_api

    real = grpc_api.RefereeServicer.SubmitMove
    recorded: list[rpb.SubmitMoveResponse] = []

    async def submit_move(self: Any, request: rpb.SubmitMoveRequest, context: Any) -> rpb.SubmitMoveResponse:
        if request.request_id != FLOOR_ID:
            return await real(self, request, context)
        deadlines.set_from(context)
        grpc_api._bearer(context, required=True)  # the token read as a move reads it (not looked up)
        await self.referee.store._hot_call("PING")  # one round trip on the connection commits take
        if not recorded:
            recorded.append(rpb.SubmitMoveResponse.FromString(Path(os.environ[RESPONSE_ENV]).read_bytes()))
        return recorded[0]

    grpc_api.RefereeServicer.SubmitMove = submit_move  # type: ignore[method-assign]


if __name__ == "__main__" and sys.argv[1:2] == ["--referee"]:
    # `python bench/floor.py --referee -m server.cli serve ARGS` (clients.referee_proc's command line, with this
    # file in place of the interpreter's options): a referee with the floor patch
    _patch_referee()
    from server.cli import main as referee_main

    raise SystemExit(referee_main(sys.argv[4:]))

_boot.need_project()

import grpc  # noqa: E402

from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

service = _boot.load("service")


class FloorDriver(service.GameDriver):  # type: ignore[misc,name-defined]
    """The real driver's client work on a recorded game: each response parsed, the next move picked from it, and
    sent as a floor move (the referee answers the recorded response again)."""

    def __init__(self, stub: Any, rng: random.Random, game_id: str, tokens: dict[int, Any], view: Any) -> None:
        super().__init__(stub, rng)
        self.game_id, self.tokens, self.view = game_id, tokens, view

    async def move(self) -> float:
        seat, move = self.next_move()
        request = rpb.SubmitMoveRequest(game_id=self.game_id, move=move, expected_version=self.view.version,
                                        request_id=FLOOR_ID)  # fmt: skip
        start = time.perf_counter()
        response = await self.stub.SubmitMove(request, metadata=self.tokens[seat])
        elapsed = time.perf_counter() - start
        self.view = response.view
        return elapsed


async def _record(stub: Any, path: Path) -> tuple[str, dict[int, Any], Any]:
    """Play a real game to a discard that leaves the next seat to draw; write that move's response to ``path``;
    the game, its seats' call metadata and the view before that move (the mover's, listing its legal moves)."""
    driver = service.GameDriver(stub, random.Random(7))
    await driver.new_game()
    for _ in range(200):
        before = driver.view
        seat, move = driver.next_move()
        request = rpb.SubmitMoveRequest(game_id=driver.game_id, move=move, expected_version=before.version)
        response = await stub.SubmitMove(request, metadata=driver.tokens[seat])
        driver.view = response.view
        if move.WhichOneof("move") == "discard" and before.version > 8:
            path.write_bytes(response.SerializeToString(deterministic=True))
            return driver.game_id, driver.tokens, before
    raise RuntimeError("no discard to record within 200 moves")


async def measure(addresses: list[str], level: int, seconds: float, rounds: int, pids: dict[str, list[int]],
                  recorded: Path) -> dict[str, float]:  # fmt: skip
    channels = [grpc.aio.insecure_channel(address) for address in addresses]
    stubs = [referee_pb2_grpc.RefereeServiceStub(channel) for channel in channels]
    results: dict[str, float] = {}
    try:
        games = [await _record(stub, recorded) for stub in stubs]  # one recorded game per referee

        def echo_factory(i: int) -> object:
            return service.echo_step(stubs[i % len(stubs)])

        def move_factory(i: int) -> object:
            return service.GameDriver(stubs[i % len(stubs)], random.Random(i)).move

        def floor_factory(i: int) -> object:
            game_id, tokens, view = games[i % len(stubs)]
            return FloorDriver(stubs[i % len(stubs)], random.Random(i), game_id, tokens, view).move

        kinds = [("echo", echo_factory), ("moves", move_factory), ("floor", floor_factory)]
        for _, factory in kinds:  # warm-up: connections, code paths, Redis scripts
            await service._drive(4 * len(stubs), 0.5, factory)
        rates: dict[str, list[float]] = {name: [] for name, _ in kinds}
        calls: dict[str, int] = dict.fromkeys(rates, 0)
        cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(pids, 0.0) for name in rates}
        for r in range(rounds):
            for name, factory in kinds[r % 3 :] + kinds[: r % 3]:
                rate, latencies, used = await service._run_kind(level, seconds, factory, pids)
                rates[name].append(rate)
                calls[name] += len(latencies)
                for k, v in used.items():
                    cpu[name][k] += v
        for name in rates:
            rate = results[f"{name}_per_s_{level}"] = round(statistics.median(rates[name]), 1)
            cpu_text = " ".join(f"{k} {v / max(1, calls[name]) * 1e6:.0f}" for k, v in cpu[name].items())
            spread = f"{min(rates[name]):.0f}..{max(rates[name]):.0f}"
            print(f"{name:5} x{level:<3} {rate:9.1f}/s ({spread})  CPU us/op: {cpu_text}", flush=True)
        for over, under in (("moves", "echo"), ("floor", "echo"), ("moves", "floor")):
            ratios = [a / b for a, b in zip(rates[over], rates[under], strict=True) if b]
            key = f"{'move' if over == 'moves' else over}_vs_{under}_{level}"
            results[key] = round(statistics.median(ratios), 3)
            print(f"{over}/{under} x{level:<3} {results[key]:.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})")
    finally:
        for channel in channels:
            await channel.close(None)
    results["servers"] = len(addresses)
    results["rounds"] = rounds
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per round and kind")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (medians are reported)")
    parser.add_argument("--level", type=int, default=16, help="concurrent games (and echo loops)")
    parser.add_argument("--servers", type=int, default=2, help="referee processes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rummy-floor-") as data:
        recorded = Path(data) / "response.bin"
        redis = start_redis(data, appendfsync="everysec", unix_socket=True)
        referees = []
        try:
            env = {**os.environ, "RUMMY_ORGANIZER_TOKEN": service.ORGANIZER, RESPONSE_ENV: str(recorded)}
            for _ in range(max(1, args.servers)):
                referees.append(_boot.start_referee(
                    ["--port", "0", "--redis-url", redis.url, "--grace", "1", "--http-port", "0",
                     "--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000"],
                    env=env, python_args=[str(Path(__file__).resolve()), "--referee"],
                ))  # fmt: skip
            processes = [referee.process for referee in referees if referee.process is not None]
            listed = ", ".join(
                f"{referee.address} (pid {p.pid})" for referee, p in zip(referees, processes, strict=True)
            )
            print(f"referees {listed} (floor patch on); redis {redis.url}; {os.cpu_count()} cores", flush=True)
            pids = {"client": [os.getpid()], "referee": [p.pid for p in processes], "redis": [redis.pid]}
            results = asyncio.run(measure([referee.address for referee in referees], args.level, args.seconds,
                                          max(1, args.rounds), pids, recorded))  # fmt: skip
        finally:
            for referee in referees:
                if referee.process is not None:
                    referee.process.send_signal(signal.SIGTERM)
            for referee in referees:
                if referee.process is not None:
                    referee.process.wait(30)
            redis.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
