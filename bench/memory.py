"""Memory benchmark: the bytes Redis holds per game, through the real referee and a real Redis.

Set-up: a private redis-server (as the zero-setup `serve` runs it: appendonly, on a Unix socket) and one
`rummy-referee serve` over it. A plain gRPC client then
- creates ``--games`` (100) Gin games: ``bytes_new_game``;
- plays ``--moves`` (20) moves in each, every one with a request_id as the SDK sends it (a uuid4 hex):
  ``bytes_per_move_early`` (a hand's first moves: draws and discards);
- plays ``--matches`` (100) Gin matches to 100 points, both seats (draw from the stock, knock when it may, else
  the discard that leaves the least deadwood; the defender declares best), every move with a request_id:
  ``bytes_finished_match`` (the game's keys right after its last move, idempotency records included) and
  ``bytes_per_move`` (what a finished match holds beyond a new game, per move).

Games are dealt from seeds (the organizer's right), so that both layouts play the very same matches.

Bytes are ``MEMORY USAGE <key> SAMPLES 0`` summed over each game's keys (every key of a game shares its hash tag:
``game:{<id>}*``), averaged over the games; the ``INFO memory`` delta of each phase per game is printed beside it
(it includes the allocator's own overhead and noise). With ``--baseline REV`` (default: the commit before the
compact layout) the same run is made first against the referee of that commit (``git archive`` into a temporary
directory), for the figures of the earlier layout.

    python bench/memory.py [--games 100] [--moves 20] [--matches 100] [--baseline REV | --no-baseline]

Human-readable lines first; the last line is one JSON object: bytes_new_game, bytes_per_move,
bytes_finished_match (and bytes_per_move_early, info_* deltas, moves_per_match, and baseline_* for the baseline
run). Bars (issue 8, item 12): a new game <= 2048 bytes, <= 120 bytes per move, a finished match <= a tenth of the
earlier layout's. Exit status 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402
import redis  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

import engine  # noqa: E402
from rummy_pb.rummy.v1 import game_pb2 as pb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

ORGANIZER = "memory-bench-organizer"
BASELINE_REV = "8aa986d"  # the last commit of the earlier layout (event stream, whole answers in the hash)
BAR_NEW_GAME = 2048
BAR_PER_MOVE = 120
BAR_MATCH_FRACTION = 0.1
DRAW = pb.Move(draw_stock=pb.Move.DrawStock())
DECLARE = pb.Move(declare=pb.Move.Declare(best=True))
PASS = pb.Move(pass_turn=pb.Move.PassTurn())
KNOCKS = ("knock", "big_gin")


class Player:
    """Both seats of one Gin game, every move with a request_id."""

    def __init__(self, stub: referee_pb2_grpc.RefereeServiceStub, rng: random.Random, seed: int) -> None:
        self.stub, self.rng = stub, rng
        # seeded deals (the organizer's right): both layouts measured play the very same matches
        created = stub.CreateGame(rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="Ada"), pb.SeatSpec(display_name="Bob")],
            seed=b"memory-bench-%08d" % seed,
        ), metadata=(("authorization", f"Bearer {ORGANIZER}"),))  # fmt: skip
        self.game_id = created.game_id
        self.metadata = {t.seat: (("authorization", f"Bearer {t.token}"),) for t in created.seat_tokens}
        self.view = self._view(0)
        self.moves = 0

    def _view(self, seat: int) -> pb.GameView:
        got = self.stub.GetGame(rpb.GetGameRequest(game_id=self.game_id), metadata=self.metadata[seat])
        view: pb.GameView = got.view
        return view

    def _discard(self, v: pb.GameView) -> pb.Move:
        """The discard that leaves the least deadwood (ties: at random), so that matches end as real ones do."""
        hand = engine.mask_of(engine.parse_cards(v.hand))
        discards = [m for m in v.legal_moves if m.WhichOneof("move") == "discard"]
        if not discards:
            return v.legal_moves[self.rng.randrange(len(v.legal_moves))]
        scored = [(engine.min_deadwood(hand & ~(1 << engine.parse_card(m.discard.card))), self.rng.random(), i)
                  for i, m in enumerate(discards)]  # fmt: skip
        return discards[min(scored)[2]]

    def over(self) -> bool:
        return self.view.phase == pb.PHASE_MATCH_OVER

    def move(self) -> None:
        seat = self.view.to_act
        if self.view.viewer_seat != seat:
            self.view = self._view(seat)
        v = self.view
        if v.phase == pb.PHASE_DRAW:
            move = DRAW
        elif v.phase == pb.PHASE_LAYOFF:
            move = DECLARE
        elif v.phase in (pb.PHASE_TAKE_OR_PASS, pb.PHASE_LAST_CARD):
            move = PASS
        else:
            knock = next((m for m in v.legal_moves if m.WhichOneof("move") in KNOCKS), None)
            move = knock or self._discard(v)
        request = rpb.SubmitMoveRequest(game_id=self.game_id, move=move, request_id=uuid.uuid4().hex)
        self.view = self.stub.SubmitMove(request, metadata=self.metadata[seat]).view
        self.moves += 1


def _bytes_of(r: redis.Redis, game_id: str) -> int:
    keys = list(r.scan_iter(match=f"game:{{{game_id}}}*", count=100))
    return sum(int(r.memory_usage(k, samples=0) or 0) for k in keys)


def _used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def _average(values: list[int]) -> float:
    return round(sum(values) / max(1, len(values)), 1)


def measure(address: str, r: redis.Redis, games: int, moves: int, matches: int, label: str) -> dict[str, Any]:
    """The three phases against one referee."""
    channel = grpc.insecure_channel(address)
    stub = referee_pb2_grpc.RefereeServiceStub(channel)
    rng = random.Random(8)
    figures: dict[str, Any] = {}
    try:
        before = _used(r)
        players = [Player(stub, rng, i) for i in range(games)]
        figures["info_new_game"] = round((_used(r) - before) / games, 1)
        new_sizes = [_bytes_of(r, p.game_id) for p in players]
        figures["bytes_new_game"] = _average(new_sizes)

        before = _used(r)
        for p in players:
            for _ in range(moves):
                if not p.over():
                    p.move()
        played = sum(p.moves for p in players)
        figures["info_per_move_early"] = round((_used(r) - before) / max(1, played), 1)
        grown = sum(_bytes_of(r, p.game_id) for p in players) - sum(new_sizes)
        figures["bytes_per_move_early"] = round(grown / max(1, played), 1)

        def play_match(seed: int) -> tuple[int, int, int]:
            p = Player(stub, random.Random(seed), 10**6 + seed)
            start = _bytes_of(r, p.game_id)
            while not p.over():
                p.move()
            return start, _bytes_of(r, p.game_id), p.moves

        before = _used(r)
        with ThreadPoolExecutor(8) as pool:
            done = list(pool.map(play_match, range(matches)))
        figures["info_finished_match"] = round((_used(r) - before) / max(1, matches), 1)
        figures["bytes_finished_match"] = _average([end for _, end, _ in done])
        total_moves = sum(n for _, _, n in done)
        figures["moves_per_match"] = round(total_moves / max(1, matches), 1)
        figures["bytes_per_move"] = round(sum(end - start for start, end, _ in done) / max(1, total_moves), 1)
    finally:
        channel.close()
    print(
        f"{label}: new game {figures['bytes_new_game']:.0f} B (INFO {figures['info_new_game']:.0f}); "
        f"per move {figures['bytes_per_move']:.1f} B over whole matches, {figures['bytes_per_move_early']:.1f} B "
        f"over a hand's first {moves} (INFO {figures['info_per_move_early']:.0f}); finished match "
        f"{figures['bytes_finished_match']:.0f} B after {figures['moves_per_match']:.0f} moves "
        f"(INFO {figures['info_finished_match']:.0f})",
        flush=True,
    )
    return figures


def breakdown(r: redis.Redis, game_id: str) -> None:
    """Where the bytes of one game go: each key, its encoding, and the hash's fields."""
    for key in sorted(r.scan_iter(match=f"game:{{{game_id}}}*", count=100)):
        kind = r.type(key).decode()
        size = int(r.memory_usage(key, samples=0) or 0)
        print(f"  {key.decode():44} {kind:6} {r.object('encoding', key).decode():10} {size:7} B", flush=True)
        if kind == "hash":
            for field, value in sorted(r.hgetall(key).items()):
                print(f"    field {field.decode():18} {len(value):6} B", flush=True)
        elif kind == "list":
            lengths = [len(x) for x in r.lrange(key, 0, -1)]
            print(f"    {len(lengths)} entries, {sum(lengths)} B, {sum(lengths) / len(lengths):.1f} B each", flush=True)
        elif kind == "string":
            print(f"    {r.strlen(key)} B of records", flush=True)


def _start_server(root: Path, redis_url: str) -> tuple[subprocess.Popen[str], str]:
    # this tree's referee: no HTTP port, limits far above the bench's rates (it creates games without a token);
    # the baseline's (an earlier commit) knows none of these flags
    extra = ["--no-http", "--games-per-minute", "1000000", "--requests-per-second", "1000000",
             "--request-burst", "1000000"] if root.resolve() == _ROOT.resolve() else []  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the code of ``root``, none other
    referee = _boot.start_referee(
        ["--port", "0", *extra, "--redis-url", redis_url, "--grace", "1"],
        env={**env, "RUMMY_ORGANIZER_TOKEN": ORGANIZER}, root=root, all_ports=False,  # the baseline's prints less
    )  # fmt: skip
    assert referee.process is not None
    return referee.process, referee.address


def run(root: Path, data: Path, args: argparse.Namespace, label: str) -> dict[str, Any]:
    """One referee of the code in ``root`` over a fresh private Redis."""
    server = start_redis(data, unix_socket=True)
    process = None
    try:
        process, address = _start_server(root, server.url)
        r = redis.Redis.from_url(server.url)
        figures = measure(address, r, args.games, args.moves, args.matches, label)
        finished = next(iter(r.scan_iter(match="game:{*", count=1000)), b"").decode()
        game_id = finished[finished.index("{") + 1 : finished.index("}")] if finished else ""
        if game_id:
            print(f"  one game's keys ({label}):", flush=True)
            breakdown(r, game_id)
        r.close()
        return figures
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=100, help="new games (and games of the early-moves phase)")
    parser.add_argument("--moves", type=int, default=20, help="moves played in each of those games")
    parser.add_argument("--matches", type=int, default=100, help="Gin matches played to 100 points")
    parser.add_argument("--baseline", default=BASELINE_REV, help="the commit of the earlier layout to compare")
    parser.add_argument("--no-baseline", action="store_true", help="measure this code only")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rummy-mem-") as tmp:
        if not args.no_baseline:
            old = Path(tmp) / "baseline"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(_ROOT), "archive", args.baseline], capture_output=True)
            if archive.returncode == 0:
                subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
                base = run(old, Path(tmp) / "redis-baseline", args, f"baseline {args.baseline}")
                results.update({f"baseline_{k}": v for k, v in base.items()})
            else:
                print(f"baseline {args.baseline}: not measured ({archive.stderr.decode().strip()})", flush=True)
        results.update(run(_ROOT, Path(tmp) / "redis", args, "this layout"))
    bars = {
        "new_game": results["bytes_new_game"] <= BAR_NEW_GAME,
        "per_move": results["bytes_per_move"] <= BAR_PER_MOVE,
    }
    if "baseline_bytes_finished_match" in results:
        ratio = results["bytes_finished_match"] / results["baseline_bytes_finished_match"]
        results["finished_match_vs_baseline"] = round(ratio, 4)
        bars["finished_match"] = ratio <= BAR_MATCH_FRACTION
    print("bars: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in bars.items()), flush=True)
    print(json.dumps(results))
    if not all(bars.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
