"""Live streams at scale and under faults: 1,000 WatchGame streams over 200 games on one referee with a bounded
number of Redis connections; the Pub/Sub subscriber connection killed mid-game; the subscription dropped with the
last watcher; a slow watcher cut; a full connection pool reported as STORAGE_BUSY, not as storage unreachable.
Real referees, real redis-servers, real sockets."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.errors import TooMuch
from server.events import EventHub
from server.limits import Limits
from server.redis_launcher import RedisProcess, find_redis_server
from server.store import MAX_SEQ, STORAGE_TIMEOUT_S, StoredEvent
from tests import kit
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, expect_error, md, reason_of

pytestmark = pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"fanout_streams_failed", "fanout_p99_ms", "redis_connections"}
T = TypeVar("T")
Position = tuple[int, int]


def _wait(condition: Callable[[], bool], what: str, seconds: float = 60.0,
          detail: Callable[[], object] = lambda: "") -> None:  # fmt: skip
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what} {detail()}"
        time.sleep(0.02)


def _on_loop(server: ServerThread, work: Any, timeout: float = 60.0) -> Any:
    """Run a coroutine on the referee's own event loop and return its result."""
    assert server._loop is not None
    future: Future[Any] = asyncio.run_coroutine_threadsafe(work, server._loop)
    return future.result(timeout)


def _hub(server: ServerThread) -> EventHub:
    assert server.referee is not None
    return server.referee.hub


def _new_game(client: Client, seed: int, **fields: Any) -> Game:
    return client.create("gin", token=ORGANIZER, seed=bytes([seed]) * 16, match=rpb.MatchSettings(target_score=25),
                         allow_spectators=True, **fields)  # fmt: skip


def _move(client: Client, game: Game, rng: random.Random) -> bool:
    """One bot move, unless the match is over; whether it goes on after it."""
    view = client.view(game, game.tokens[0])
    if view.phase == pb.PHASE_MATCH_OVER:
        return False
    token = game.tokens[view.to_act]
    return client.move(game, token, bot_move(client.view(game, token), rng)).view.phase != pb.PHASE_MATCH_OVER


def _stored(client: Client, game: Game) -> list[Position]:
    return [(e.version, e.index) for page in client.replay(game) for e in page.events if e.version]


class _Reader:
    """One WatchGame stream read to its end in a thread: the snapshot's version, every event's position, the error."""

    def __init__(self, client: Client, game: Game, token: str) -> None:
        self.game = game
        self.call = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token))
        self.snapshot = next(self.call).snapshot.version
        self.got: list[Position] = []
        self.error: grpc.RpcError | None = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for message in self.call:
                self.got.append((message.event.version, message.event.index))
        except grpc.RpcError as exc:
            self.error = exc


# ------------------------------------------------------------------------------------------ 1,000 streams


def test_1000_streams_over_200_games_on_one_referee_get_every_event_once_with_few_redis_connections() -> None:
    """bench/fanout.py, briefly: one referee, 200 games played by bots, 5 streams each; every stream compared with
    the game's stored log; the referee's connections counted with CLIENT LIST on its private Redis. Also the smoke
    test of the benchmark: its last line holds every figure (the latency is printed, never asserted)."""
    command = [sys.executable, "bench/fanout.py", "--games", "200", "--watchers", "5", "--seconds", "3",
               "--rate", "60"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) >= KEYS, figures
    assert figures["streams"] == 1000 and figures["games"] == 200, figures
    assert figures["fanout_streams_failed"] == 0, done.stdout
    assert figures["moves"] > 0 and figures["deliveries"] >= 5 * figures["moves"], figures
    assert 0 < figures["redis_connections"] <= 10, figures
    assert figures["fanout_p99_ms"] >= 0


# ------------------------------------------------------------------------------------------ the subscriber


@pytest.fixture
def own_server(private_redis: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(private_redis.url) as server:
        yield server


def _pubsub_ids(admin: redis.Redis) -> set[int]:
    return {int(c["id"]) for c in admin.client_list(_type="pubsub")}


def test_the_subscriber_connection_killed_mid_game_loses_and_repeats_nothing(
    private_redis: RedisProcess, own_server: ServerThread
) -> None:
    client = Client(own_server.address)
    admin = redis.Redis.from_url(private_redis.url)
    try:
        games = [_new_game(client, 40 + i) for i in range(4)]
        readers = [_Reader(client, g, t) for g in games for t in (g.tokens[0], g.tokens[1], g.spectator)]
        _wait(lambda: len(admin.pubsub_channels("game:*")) == len(games), "the referee follows every game")
        rng = random.Random(40)
        playing = list(games)
        kills = 0
        for rounds in range(40):  # 40 moves of each game (fewer for one whose match ends), a cut every 5 rounds
            if rounds % 5 == 0 and playing:  # cut the subscriber, move at once (nobody is subscribed), wait for it
                before = _pubsub_ids(admin)
                assert before, "no subscriber connection to kill"
                assert admin.execute_command("CLIENT", "KILL", "TYPE", "pubsub") >= 1
                kills += 1
            playing = [g for g in playing if _move(client, g, rng)]
            if rounds % 5 == 0 and playing:  # (with no game left to watch, nothing is subscribed again)
                _wait(lambda: bool(_pubsub_ids(admin) - before), "the subscriber connects again")  # noqa: B023
        for reader in readers:
            stored = [p for p in _stored(client, reader.game) if p[0] > reader.snapshot]
            _wait(lambda: len(reader.got) >= len(stored) or reader.error is not None,  # noqa: B023
                  "every stream has every event")  # fmt: skip
            assert reader.error is None, reader.error
            assert reader.got == stored
        for reader in readers:
            reader.call.cancel()
        assert kills == 8 and _hub(own_server).subscriber_connects >= kills + 1
    finally:
        admin.close()
        client.close()


def test_the_last_watcher_leaving_unsubscribes(redis_server: RedisProcess, referee_server: ServerThread,
                                               client: Client) -> None:  # fmt: skip
    game = _new_game(client, 50)
    channel = f"game:{{{game.game_id}}}:ev"
    admin = redis.Redis.from_url(redis_server.url)
    try:
        first, second = (_Reader(client, game, game.tokens[seat]) for seat in (0, 1))
        _wait(lambda: admin.pubsub_numsub(channel)[0][1] == 1, "the game's channel is subscribed")
        first.call.cancel()
        _move(client, game, random.Random(50))
        _wait(lambda: len(second.got) >= 1, "the other watcher gets the move")
        assert admin.pubsub_numsub(channel)[0][1] == 1
        second.call.cancel()
        _wait(lambda: admin.pubsub_numsub(channel)[0][1] == 0, "the channel is unsubscribed")
        _wait(lambda: _hub(referee_server).cursor(game.game_id) is None, "the feed is forgotten")
    finally:
        admin.close()


@pytest.mark.parametrize(("limit", "value"), [("queue_limit", 3), ("watcher_bytes", 800), ("total_bytes", 800)])
def test_a_watcher_too_slow_is_cut_and_resumes_without_a_gap(
    monkeypatch: pytest.MonkeyPatch, referee_server: ServerThread, client: Client, limit: str, value: int
) -> None:
    """A follower that takes nothing while the game goes on is cut once it holds too many events, too many bytes,
    or the process's watchers together too many bytes (RESOURCE_EXHAUSTED WATCHER_TOO_SLOW); what it did get is
    the start of the log, and a watch resumed from there gets the rest."""
    hub = _hub(referee_server)
    monkeypatch.setattr(hub, "watch", dataclasses.replace(hub.watch, **{limit: value}))
    cut_and_resumed(referee_server, client, 51)


def cut_and_resumed(server: ServerThread, client: Client, seed: int) -> None:
    """A follower of a new game that takes nothing while 8 moves are made is cut (WATCHER_TOO_SLOW, with the
    limit the caller set low); what it got is the start of the log, and a watch resumed from its last event gets
    the rest (tests/server/test_fanout_cluster.py runs it on a Redis Cluster)."""
    game = _new_game(client, seed)
    hub = _hub(server)
    assert server._loop is not None
    follower = hub.follow(game.game_id, (0, MAX_SEQ))
    first = asyncio.run_coroutine_threadsafe(follower.__anext__(), server._loop)  # type: ignore[arg-type]
    _wait(lambda: hub.cursor(game.game_id) is not None, "the follower is registered")
    rng = random.Random(seed)
    for _ in range(8):
        _move(client, game, rng)
    # until the hub has read every move, or has cut the follower and forgotten the game (nobody else watches it)
    _wait(lambda: (hub.cursor(game.game_id) or (8, 0))[0] == 8, "the hub has read every move")
    got: list[StoredEvent] = [first.result(30)]
    with pytest.raises(TooMuch) as cut:
        while True:
            got.append(_on_loop(server, follower.__anext__()))
    assert cut.value.code == "WATCHER_TOO_SLOW"
    _on_loop(server, follower.aclose())
    stored = _stored(client, game)
    received = [(e.version, e.index) for e in got]
    assert received == stored[: len(received)] and len(received) < len(stored)
    last_version, last_index = received[-1]
    request = rpb.WatchGameRequest(game_id=game.game_id, after_version=last_version, after_index=last_index)
    resumed = client.stub.WatchGame(request, metadata=md(game.tokens[0]))
    rest = [(m.event.version, m.event.index) for _, m in zip(stored[len(received) :], resumed, strict=False)]
    resumed.cancel()
    assert received + rest == stored


# ------------------------------------------------------------------------------------------ the pool


def _small_pool_server(redis_url: str) -> kit.ServerThread:
    """The referee with a pool of one Redis connection that waits 0.3 s for it (serve's limits and storage
    timeout)."""
    return kit.ServerThread(kit.referee_settings(redis_url, organizer_token=ORGANIZER, limits=Limits(),
                                                 op_timeout_s=STORAGE_TIMEOUT_S, pool_max_connections=1,
                                                 pool_timeout_s=0.3))  # fmt: skip


def test_a_full_connection_pool_is_storage_busy_not_storage_unreachable(redis_server: RedisProcess) -> None:
    server = _small_pool_server(redis_server.url)
    client = Client(server.address)
    admin = redis.Redis.from_url(redis_server.url)
    key = f"fanout-test-hold-{random.random()}"
    try:
        game = _new_game(client, 52)
        assert server.referee is not None
        held = asyncio.run_coroutine_threadsafe(server.referee.store.client.blpop([key], 60), server._loop)  # type: ignore[arg-type]
        _wait(lambda: any(c.get("cmd") == "blpop" for c in admin.client_list()), "the only connection is busy")
        with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_BUSY") as caught:
            _new_game(client, 53)
        assert "busy" in caught[0].details()
        assert client.view(game, game.tokens[0]).version == 0  # the hot path has a connection of its own
        admin.lpush(key, "done")
        assert held.result(30) is not None
        assert _new_game(client, 54).game_id
    finally:
        admin.close()
        client.close()
        server.stop()


def test_redis_gone_ends_the_streams_with_storage_unavailable(private_redis: RedisProcess,
                                                              own_server: ServerThread) -> None:  # fmt: skip
    """The subscriber loses its connection and cannot make it again: every watcher is told (and resumes later)."""
    client = Client(own_server.address)
    try:
        game = _new_game(client, 55)
        reader = _Reader(client, game, game.tokens[0])
        _wait(lambda: _hub(own_server).cursor(game.game_id) is not None, "the watcher is registered")
        private_redis.kill()
        reader.thread.join(60)
        assert reader.error is not None and reader.error.code() == grpc.StatusCode.UNAVAILABLE
        assert reason_of(reader.error) == "STORAGE_UNAVAILABLE"
    finally:
        client.close()


def test_a_plain_python_runs_the_fanout_bench_in_the_project_venv() -> None:
    """The issue says `python bench/fanout.py`: an interpreter without the project's packages hands over to .venv."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    if not base.exists() or not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no base interpreter or no .venv here")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(base), "bench/fanout.py", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip
    assert done.returncode == 0 and "--watchers" in done.stdout, done.stderr
