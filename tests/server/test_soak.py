"""Memory stays flat: a real `rummy-referee serve` process plays many games and refuses many bad requests, and
its resident memory (VmRSS) after a warm-up and at the end differ by at most RSS_GROWTH_MIB.

The referee runs with small cache bounds (a few hundred entries, a few MiB), so that the warm-up fills every
cache up to its bound: what could still grow after it would be memory that nothing bounds. The bounds of the
defaults are the same code with larger numbers (README: "Memory")."""

from __future__ import annotations

import concurrent.futures
import itertools
import random
import time
from pathlib import Path

import grpc

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import Client, Game, bot_move, md

RSS_GROWTH_MIB = 15.0
THREADS = 6
WARMUP_S = 25.0
MEASURED_S = 40.0
TABLES = [("gin", ("a", "b")), ("oklahoma-gin", ("a", "b")), ("rummy", ("a", "b", "c")), ("rummy", tuple("abcdef"))]
SMALL_CACHES = ["--state-cache-games", "200", "--state-cache-mib", "2", "--memo-entries", "256", "--memo-mib", "0.5"]


def rss_mib(pid: int) -> float:
    """The process's resident set size (VmRSS) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _play(client: Client, rng: random.Random, n: int) -> int:
    """One short match (one hand) with a request_id on every move; the number of calls made."""
    profile, names = rng.choice(TABLES)
    game = client.create(profile, names, match=rpb.MatchSettings(max_hands=1))
    calls = 1
    view = client.view(game, game.tokens[0])
    calls += 1
    for i in itertools.count():
        if view.phase == pb.PHASE_MATCH_OVER or i > 400:
            break
        seat = view.to_act
        if view.viewer_seat != seat:
            view = client.view(game, game.tokens[seat])
            calls += 1
        response = client.move(game, game.tokens[seat], bot_move(view, rng), request_id=f"r{n}-{i}")
        calls += 1
        view = response.view
    return calls + _bad_requests(client, game, rng)


def _bad_requests(client: Client, game: Game, rng: random.Random) -> int:
    """Requests the referee refuses (each a distinct error); the number sent."""
    stub, token = client.stub, game.tokens[0]
    junk = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -") for _ in range(rng.randint(1, 300)))
    calls = [
        lambda: stub.GetGame(rpb.GetGameRequest(game_id=junk[:64]), metadata=md(token)),
        lambda: stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md("st_" + junk)),
        lambda: stub.GetGame(rpb.GetGameRequest(game_id="g_" + junk.replace(" ", "_")[:60]), metadata=md(token)),
        lambda: stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id, move=pb.Move(
            discard=pb.Move.Discard(card=junk[:8])), request_id=junk[:100]), metadata=md(token)),
        lambda: stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id, move=pb.Move(
            draw_stock=pb.Move.DrawStock()), request_id=f"late-{junk[:20]}"), metadata=md(token)),
        lambda: stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=pb.Move(
            pass_turn=pb.Move.PassTurn())), metadata=md(token)),
        lambda: stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=junk * 30)),
        lambda: stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards="AS 2S 3S 4S KH KD KC 7D 8D 9D TD", profile=junk[:10])),
        lambda: stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id, max_events=rng.randint(0, 5000)),
                               metadata=md(token)),
        lambda: stub.CreateGame(rpb.CreateGameRequest(profile="gin", seed=junk.encode()[:40]), metadata=md(junk)),
        lambda: stub.JoinGame(rpb.JoinGameRequest(game_id=game.game_id, display_name=junk[:80])),
    ]  # fmt: skip
    for call in calls:
        try:
            call()
        except grpc.RpcError as exc:
            assert exc.code() not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE), exc
    watch = stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token), timeout=10)
    next(watch)  # the snapshot; then the stream is dropped
    watch.cancel()
    return len(calls) + 1


def _run_for(address: str, seconds: float, seed: int) -> tuple[int, int]:
    """Play and send bad requests from THREADS threads for ``seconds``: (matches, calls)."""
    stop = time.monotonic() + seconds

    def worker(n: int) -> tuple[int, int]:
        rng = random.Random(seed * 100 + n)
        client = Client(address)
        matches = calls = 0
        try:
            while time.monotonic() < stop:
                calls += _play(client, rng, seed * 1_000_000 + n * 10_000 + matches)
                matches += 1
        finally:
            client.close()
        return matches, calls

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(worker, range(THREADS)))
    return sum(m for m, _ in done), sum(c for _, c in done)


def test_referee_memory_stays_flat_over_many_games_and_bad_requests(redis_server: RedisProcess, tmp_path: Path) -> None:
    server = ServerProcess(redis_server.url, log_dir=tmp_path, args=SMALL_CACHES)
    server.start()
    try:
        assert server.process is not None
        pid = server.process.pid
        start = rss_mib(pid)
        warm_matches, warm_calls = _run_for(server.address, WARMUP_S, 1)
        warm = rss_mib(pid)
        matches, calls = _run_for(server.address, MEASURED_S, 2)
        end = rss_mib(pid)
        assert server.process.poll() is None and server.process.pid == pid
    finally:
        server.stop()
    print(f"\nreferee RSS: {start:.1f} MiB at start, {warm:.1f} MiB after a warm-up of {warm_matches} matches "
          f"({warm_calls} calls), {end:.1f} MiB after {matches} more matches ({calls} calls): "
          f"{end - warm:+.1f} MiB (bound +{RSS_GROWTH_MIB:g})")  # fmt: skip
    assert matches > 0 and calls > 1000
    assert end - warm <= RSS_GROWTH_MIB
