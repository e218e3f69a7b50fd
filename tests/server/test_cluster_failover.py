"""A master of the six-node Redis Cluster killed (SIGKILL) in the middle of play, through two real `rummy-referee
serve` processes: its replica is promoted, the referees follow the new slot map, play resumes. Measured and
printed: the acknowledged moves lost (answered OK, then missing from the game), without and with
``--wait-replicas 1`` (Redis WAIT: then none may be lost); the games of the healthy shards keep moving (their
longest pause), none of their moves is answered UNAVAILABLE, and their watch streams stay open; the streams of
the failed shard resume without loss; health names the failed shard NOT_SERVING while the referee itself stays
SERVING, and all is SERVING again after."""

from __future__ import annotations

import contextlib
import io
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.cli import main
from server.gamelog import decode_entry
from server.grpc_api import SERVICE_NAME, SHARD_SERVICE_PREFIX, STORAGE_SERVICE
from server.redis_cluster import ClusterNode, LocalCluster, start_cluster
from server.store import log_key
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import ORGANIZER, Client, Game, bot_move, md, reason_of
from tests.server.test_cluster import games_on_every_shard

pytestmark = pytest.mark.integration  # (its cluster is its own fixture's)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
GAMES_PER_SHARD = 3
#: The longest a healthy shard's game may wait between two moves while another shard fails over (a loaded
#: 2-core machine: most of it is scheduling; the failover itself takes the node timeout, 2 s, and more).
HEALTHY_STALL_BOUND_S = 4.0


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three masters, one replica each; ``cluster-require-full-coverage no`` (as docs/design.md asks of a
    production cluster): the healthy shards keep serving while one has no master."""
    made = start_cluster(tmp_path_factory.mktemp("failover"), appendfsync="always",
                         extra_args=["--cluster-require-full-coverage", "no",
                                     "--repl-diskless-sync-delay", "0"])  # a node back syncs at once  # fmt: skip
    try:
        yield made
    finally:
        made.stop()


@dataclass
class Player:
    """Plays one game (every seat) through both referees in turn, each move resent with its request_id while it
    fails UNAVAILABLE; counts acknowledged moves that the game no longer has (its version went below them)."""

    game: Game
    shard: int
    clients: list[Client]
    rng: random.Random
    acked = 0
    lost = 0
    acks: list[float] = field(default_factory=list)
    unavailable: list[tuple[float, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            client = self.clients[n % 2]
            try:
                view = client.view(self.game, self.game.tokens[0])
                if view.version < self.acked:  # acknowledged, then gone
                    self.lost += self.acked - view.version
                    self.acked = view.version
                if view.phase == pb.PHASE_MATCH_OVER:
                    return
                token = self.game.tokens[view.to_act]
                own = client.view(self.game, token)
                move = bot_move(own, self.rng)
            except grpc.RpcError as exc:
                self._failed(exc)
                continue
            request_id = f"m{n}"
            while not stop.is_set():
                try:
                    answer = client.move(self.game, token, move, expected_version=own.version, request_id=request_id)
                except grpc.RpcError as exc:
                    if self._failed(exc):
                        continue  # the same move again: applied at most once
                    break
                self.acked = answer.version
                self.acks.append(time.monotonic())
                break

    def _failed(self, exc: grpc.RpcError) -> bool:
        """Record the error; whether to resend."""
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            self.unavailable.append((time.monotonic(), f"{reason_of(exc)} {exc.details()}"))
            time.sleep(0.05)
            return True
        self.refused.append(f"{exc.code().name} {reason_of(exc)}")  # e.g. the version moved on: reload
        return False


@dataclass
class Watcher:
    """Follows one game on one referee, resuming after its last event whenever the stream ends."""

    game: Game
    shard: int
    client: Client
    got: list[tuple[int, int]] = field(default_factory=list)
    start: int | None = None
    errors: list[tuple[float, str]] = field(default_factory=list)
    call: object = None
    stopping = False

    def run(self) -> None:
        while not self.stopping:
            if self.start is None:
                request = rpb.WatchGameRequest(game_id=self.game.game_id)
            elif self.got:
                request = rpb.WatchGameRequest(game_id=self.game.game_id, after_version=self.got[-1][0],
                                               after_index=self.got[-1][1])  # fmt: skip
            else:
                request = rpb.WatchGameRequest(game_id=self.game.game_id, after_version=self.start)
            call = self.call = self.client.stub.WatchGame(request, metadata=md(self.game.spectator))
            try:
                for message in call:
                    if message.HasField("snapshot"):
                        self.start = message.snapshot.version
                    else:
                        self.got.append((message.event.version, message.event.index))
            except grpc.RpcError as exc:
                if self.stopping:
                    return
                self.errors.append((time.monotonic(), f"{exc.code().name} {reason_of(exc)}"))
                time.sleep(0.1)

    def stop(self) -> None:
        self.stopping = True
        cancel = getattr(self.call, "cancel", None)
        if cancel is not None:
            cancel()


@dataclass
class HealthLog:
    """The referee's health statuses every 50 ms: the referee's, the storage's, the failed shard's."""

    address: str
    shard: str
    seen: list[tuple[float, int, int, int]] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        with grpc.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not stop.is_set():
                statuses = []
                for name in (SERVICE_NAME, STORAGE_SERVICE, SHARD_SERVICE_PREFIX + self.shard):
                    try:
                        statuses.append(stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=2).status)
                    except grpc.RpcError:
                        statuses.append(-1)
                self.seen.append((time.monotonic(), *statuses))
                time.sleep(0.05)

    def first(self, after: float, index: int, status: int) -> float | None:
        return next((t - after for t, *s in self.seen if t >= after and s[index] == status), None)


def _shard_name(cluster: LocalCluster, master: ClusterNode) -> str:
    with cluster.nodes[0 if cluster.nodes[0].running() else 1].client() as conn:
        ranges = sorted((int(lo), int(hi)) for lo, hi, owner, *_ in conn.execute_command("CLUSTER", "SLOTS")
                        if int(owner[1]) == master.port)  # fmt: skip
    return ",".join(f"{lo}-{hi}" for lo, hi in ranges)


def _wait(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _stored(cluster: LocalCluster, game: Game, after: int) -> list[tuple[int, int]]:
    """The positions of the game's events after version ``after``, from its log in Redis (no replay before the
    match is over)."""
    admin = redis.RedisCluster.from_url(cluster.url.replace("redis-cluster://", "redis://"))
    try:
        entries = [decode_entry(raw) for raw in admin.lrange(log_key(game.game_id), after + 1, -1)]
    finally:
        admin.close()
    return [(entry.version, i) for entry in entries for i in range(1, len(entry.events) + 1)]


def _failover_round(cluster: LocalCluster, tmp_path: Path, wait_args: list[str], label: str) -> dict[str, float]:
    """Two referees, games on every shard played and watched, a master killed mid-play: the figures."""
    _wait(cluster.replicas_in_sync, "the replicas in sync")
    referees = [ServerProcess(cluster.url, log_dir=tmp_path, args=["--storage-timeout", "2", *wait_args])
                for _ in range(2)]  # fmt: skip
    for referee in referees:
        referee.start()
    clients = [Client(r.address) for r in referees]
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        long_match = rpb.MatchSettings(target_score=1000)
        games = games_on_every_shard(
            cluster,
            lambda: clients[0].create("gin", token=ORGANIZER, match=long_match, allow_spectators=True),
            GAMES_PER_SHARD,
        )
        victim = cluster.master_for_key(f"game:{{{games[0].game_id}}}")
        shard_of = {g.game_id: cluster.master_for_key(f"game:{{{g.game_id}}}").port for g in games}
        health = HealthLog(referees[0].address, _shard_name(cluster, victim))
        players = [Player(g, shard_of[g.game_id], clients, random.Random(i)) for i, g in enumerate(games)]
        watchers = [Watcher(g, shard_of[g.game_id], clients[(i + 1) % 2]) for i, g in enumerate(games)]
        threads = [threading.Thread(target=p.run, args=(stop,), daemon=True) for p in players]
        threads += [threading.Thread(target=w.run, daemon=True) for w in watchers]
        threads.append(threading.Thread(target=health.run, args=(stop,), daemon=True))
        for thread in threads:
            thread.start()
        _wait(lambda: all(len(p.acks) >= 5 for p in players), "every game moves")
        _wait(lambda: bool(health.seen) and health.seen[-1][1:] == (SERVING, SERVING, SERVING), "health SERVING")
        killed_at = time.monotonic()
        victim.kill()
        _wait(lambda: health.first(killed_at, 2, NOT_SERVING) is not None, "the shard NOT_SERVING", 30)
        told = io.StringIO()  # `rummy-referee health --service ...` while the shard is down
        with contextlib.redirect_stderr(told):
            cli_exit = main(["health", "--address", referees[0].address, "--service", STORAGE_SERVICE])
        cluster.wait_ok(60)
        promoted_at = time.monotonic()
        if wait_args:  # the promoted master has no replica: its games wait for one (WAIT), then go on
            time.sleep(1.0)
            victim.restart()
        _wait(lambda: health.seen[-1][1:] == (SERVING, SERVING, SERVING), "health SERVING again", 60)
        healthy_at = time.monotonic()
        _wait(lambda: all(p.acks and p.acks[-1] > healthy_at for p in players), "every game moves again")
        time.sleep(1.0)
        stop.set()
        for thread in threads[: len(players)]:
            thread.join(30)
        for watcher in watchers:
            stored = _stored(cluster, watcher.game, watcher.start or 0)
            _wait(lambda: watcher.got == stored or len(watcher.got) > len(stored),  # noqa: B023
                  f"every event reaches the watcher of {watcher.game.game_id}", 30)  # fmt: skip
            watcher.stop()
            assert watcher.got == stored, "a stream lost or repeated an event"
    finally:
        stop.set()
        for watcher in locals().get("watchers", []):
            watcher.stop()
        for thread in threads:  # before the referees stop (their health goes NOT_SERVING then)
            thread.join(10)
        for client in clients:
            client.close()
        for referee in referees:
            referee.stop()
    healthy = [p for p in players if p.shard != victim.port]
    failed = [p for p in players if p.shard == victim.port]

    def longest_pause(player: Player) -> float:
        times = [t for t in player.acks if killed_at - 2 <= t] or [killed_at]
        return max(b - a for a, b in zip([killed_at, *times], [*times, healthy_at], strict=False))

    figures = {
        "acked_moves": sum(p.acked for p in players),
        "acked_moves_lost": sum(p.lost for p in players),
        "failover_s": promoted_at - killed_at,
        "shard_not_serving_after_s": health.first(killed_at, 2, NOT_SERVING) or -1.0,
        "healthy_longest_pause_s": max(longest_pause(p) for p in healthy),
        "healthy_unavailable": sum(len(p.unavailable) for p in healthy),
        "failed_shard_unavailable": sum(len(p.unavailable) for p in failed),
        "healthy_stream_errors": sum(len(w.errors) for w in watchers if w.shard != victim.port),
        "failed_shard_stream_errors": sum(len(w.errors) for w in watchers if w.shard == victim.port),
    }
    print(f"\n{label}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in figures.items()))  # fmt: skip
    print(f"{label}: health --service {STORAGE_SERVICE}: exit {cli_exit}, {told.getvalue().strip()}")
    print(
        f"{label}: UNAVAILABLE on healthy shards (s after the kill): "
        f"{sorted(round(t - killed_at, 2) for p in healthy for t, _ in p.unavailable)}"
    )
    refused = {r for p in players for r in p.refused}
    assert not {r for r in refused if r.split()[0] in ("INTERNAL", "UNKNOWN")}, refused
    # health: the failed shard named, the referee itself never NOT_SERVING, all SERVING again
    assert cli_exit == 1 and health.shard in told.getvalue()
    assert {s[1] for s in health.seen} == {SERVING}, "the referee's own health left SERVING"
    assert health.first(killed_at, 1, NOT_SERVING) is not None
    # isolation: the healthy shards' games kept moving, their streams stayed open
    assert figures["healthy_longest_pause_s"] < HEALTHY_STALL_BOUND_S, figures
    assert figures["healthy_stream_errors"] == 0, [w.errors for w in watchers if w.shard != victim.port]
    # and none of their moves was refused for the other shard's failure (store.FailoverCluster closes nothing)
    assert figures["healthy_unavailable"] == 0, [u for p in healthy for u in p.unavailable]
    # once healthy, no stream ends again
    assert all(t < healthy_at + 1.0 for w in watchers for t, _ in w.errors), [w.errors for w in watchers]
    return figures


def test_a_master_killed_mid_play_without_and_with_wait_replicas(cluster: LocalCluster, tmp_path: Path) -> None:
    plain = _failover_round(cluster, tmp_path, [], "without --wait-replicas")
    victim = next(node for node in cluster.nodes if not node.running())
    victim.restart()  # back as a replica of the master that replaced it: three masters with a replica each again
    _wait(lambda: all(cluster.replica_of(m) is not None for m in cluster.masters()), "every master has a replica")
    cluster.wait_ok(60)
    waited = _failover_round(cluster, tmp_path, ["--wait-replicas", "1", "--wait-replicas-timeout", "1"],
                             "with --wait-replicas 1")  # fmt: skip
    assert waited["acked_moves_lost"] == 0
    assert plain["acked_moves"] > 0 and waited["acked_moves"] > 0
