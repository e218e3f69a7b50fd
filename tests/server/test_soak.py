"""Memory stays flat: a real `rummy-referee serve` process plays many games and refuses many bad requests, and
its resident memory (VmRSS) after a warm-up and at the end differ by at most RSS_GROWTH_MIB.

The referee runs with small cache bounds (a few hundred entries, a few MiB), so that the warm-up fills every
cache up to its bound: what could still grow after it would be memory that nothing bounds. The bounds of the
defaults are the same code with larger numbers (README: "Memory").

Its clients do what README tells every client: an answer UNAVAILABLE for a storage reason (Redis did not answer
within the storage timeout, e.g. an fsync stalled on a busy disk; the referee then cannot know whether a move was
committed) is sent again, a move with the same request_id. They count such resends and the test prints them with
the referee's warnings; any other failure fails the test. (A CI run once failed here on one such answer.)"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import Client, Game, bot_move, md, reason_of

T = TypeVar("T")

RSS_GROWTH_MIB = 15.0
THREADS = 6
WARMUP_S = 25.0
MEASURED_S = 40.0
TABLES = [("gin", ("a", "b")), ("oklahoma-gin", ("a", "b")), ("rummy", ("a", "b", "c")), ("rummy", tuple("abcdef"))]
#: The reasons of an UNAVAILABLE that say "the storage did not answer in time": worth a resend (README).
STORAGE_REASONS = frozenset({"STORAGE_UNAVAILABLE", "STORAGE_BUSY", "COMMIT_OUTCOME_UNKNOWN"})
RESENDS = 8  # at most, with pauses of 0.05 s doubling (about 13 s in all)
SMALL_CACHES = ["--state-cache-games", "50", "--state-cache-mib", "2", "--memo-entries", "64", "--memo-mib", "0.5"]
#: The warm-up plays this many matches at least (each its own game, more than any cache above holds: all full), and
#: WARMUP_S at least.
WARMUP_MATCHES = 100


def rss_mib(pid: int) -> float:
    """The process's resident set size (VmRSS) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _sent(call: Callable[[], T], resends: list[str]) -> T:
    """``call()``, sent again (at most RESENDS times, after a growing pause) while it is answered UNAVAILABLE for
    a storage reason, as README tells clients to; each resend's reason is added to ``resends``."""
    for attempt in itertools.count():
        try:
            return call()
        except grpc.RpcError as exc:
            reason = reason_of(exc)
            if exc.code() != grpc.StatusCode.UNAVAILABLE or reason not in STORAGE_REASONS or attempt == RESENDS:
                raise
            resends.append(str(reason))
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def _play(client: Client, rng: random.Random, n: int, resends: list[str]) -> int:
    """One short match (one hand) with a request_id on every move (each resend of a move carries the same one);
    the number of calls made."""
    profile, names = rng.choice(TABLES)
    game = client.create(profile, names, match=rpb.MatchSettings(max_hands=1))
    calls = 1
    view = _sent(functools.partial(client.view, game, game.tokens[0]), resends)
    calls += 1
    for i in itertools.count():
        if view.phase == pb.PHASE_MATCH_OVER or i > 400:
            break
        seat = view.to_act
        if view.viewer_seat != seat:
            view = _sent(functools.partial(client.view, game, game.tokens[seat]), resends)
            calls += 1
        send = functools.partial(client.move, game, game.tokens[seat], bot_move(view, rng), request_id=f"r{n}-{i}")
        response = _sent(send, resends)
        calls += 1
        view = response.view
    return calls + _bad_requests(client, game, rng, resends)


def _bad_requests(client: Client, game: Game, rng: random.Random, resends: list[str]) -> int:
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
            assert exc.code() != grpc.StatusCode.UNKNOWN, exc
            if exc.code() == grpc.StatusCode.UNAVAILABLE:  # only "the storage did not answer in time"
                assert reason_of(exc) in STORAGE_REASONS, exc
                resends.append(f"{reason_of(exc)} (a bad request's answer)")
    watch = stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token), timeout=10)
    next(watch)  # the snapshot; then the stream is dropped
    watch.cancel()
    return len(calls) + 1


def _run_for(address: str, seconds: float, seed: int, resends: list[str], at_least: int = 0) -> tuple[int, int]:
    """Play and send bad requests from THREADS threads for ``seconds``, and until ``at_least`` matches are
    played in all: (matches, calls)."""
    stop = time.monotonic() + seconds
    started = itertools.count()  # matches begun, by all threads (next() is atomic under the GIL)

    def worker(n: int) -> tuple[int, int]:
        rng = random.Random(seed * 100 + n)
        client = Client(address)
        matches = calls = 0
        try:
            while next(started) < at_least or time.monotonic() < stop:
                calls += _play(client, rng, seed * 1_000_000 + n * 10_000 + matches, resends)
                matches += 1
        finally:
            client.close()
        return matches, calls

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(worker, range(THREADS)))
    return sum(m for m, _ in done), sum(c for _, c in done)


def _warnings(log_dir: Path) -> str:
    """The referee's log lines above INFO (a storage timeout names its cause there)."""
    lines = [line for log in sorted(log_dir.glob("referee-*.log")) for line in log.read_text().splitlines()]
    return "\n".join(line for line in lines if " WARNING " in line or " ERROR " in line)


def test_referee_memory_stays_flat_over_many_games_and_bad_requests(
    private_redis: RedisProcess, tmp_path: Path
) -> None:
    server = ServerProcess(private_redis.url, log_dir=tmp_path, args=SMALL_CACHES)
    server.start()
    resends: list[str] = []
    try:
        assert server.process is not None
        pid = server.process.pid
        start = rss_mib(pid)
        warm_matches, warm_calls = _run_for(server.address, WARMUP_S, 1, resends, at_least=WARMUP_MATCHES)
        assert warm_matches >= WARMUP_MATCHES
        warm = rss_mib(pid)
        matches, calls = _run_for(server.address, MEASURED_S, 2, resends)
        end = rss_mib(pid)
        assert server.process.poll() is None and server.process.pid == pid
    except BaseException:
        print(f"the referee's warnings:\n{_warnings(tmp_path)}")
        raise
    finally:
        server.stop()
    if resends:
        print(f"{len(resends)} answers UNAVAILABLE for a storage reason ({sorted(set(resends))}); the referee's "
              f"warnings:\n{_warnings(tmp_path)}")  # fmt: skip
    print(f"\nreferee RSS: {start:.1f} MiB at start, {warm:.1f} MiB after a warm-up of {warm_matches} matches "
          f"({warm_calls} calls), {end:.1f} MiB after {matches} more matches ({calls} calls): "
          f"{end - warm:+.1f} MiB (bound +{RSS_GROWTH_MIB:g})")  # fmt: skip
    assert matches > 0 and calls > 1000
    assert end - warm <= RSS_GROWTH_MIB
