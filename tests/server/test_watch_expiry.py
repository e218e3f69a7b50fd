"""Watched games that expire end their streams (server/expiry.py): a last event, ``game_abandoned`` (no move was
ever made) or ``game_expired`` (idle after its last move), then a clean end (OK), over gRPC and over the HTTP
port (Connect JSON), for every watcher at once; a watch of a game already gone keeps GAME_NOT_FOUND.

Referees share the suite's Redis: ``lasting`` keeps games as serve does by default, ``short`` has a short
``--idle-ttl``, ``looking`` looks at its watched games every half second. An expired game: created and first moved
by ``lasting`` (so nothing can expire before the test is ready), watched through ``short``, whose move then gives
it ``short``'s idle time. An abandoned game: created by ``lasting``, watched through ``looking``, then given the
short unplayed time in Redis itself (EXPIRE, as the creation script does): a game created with a 3 s unplayed
time was sometimes gone before its watches opened on a loaded machine (a CI-like run found no snapshot at all)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess
from server.settings import DEFAULTS, Settings
from server.store import game_key, log_key
from tests import kit
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, expect_error, md
from tests.server.webkit import connect_watch_frames

IDLE_S = 2
UNPLAYED_S = 3
BOUND_S = 15.0  # failure bound: the stream must end this long after the expiry at the latest


@pytest.fixture(scope="module")
def lasting(redis_server: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(redis_server.url) as server:
        yield server


@pytest.fixture(scope="module")
def short(redis_server: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(redis_server.url, http=True, store_options={"idle_ttl_s": IDLE_S}) as server:
        yield server


def _looking_settings(redis_url: str, *, http: bool = False) -> Settings:
    """A referee that looks at each watched game at least every 0.5 s (serve: 60 s), so that an expiry given to a
    game's keys after its first look (here, by the test) is seen."""
    base = kit.referee_settings(redis_url, organizer_token=ORGANIZER, http=http)
    return dataclasses.replace(base, watch=dataclasses.replace(DEFAULTS.watch, expiry_max_look_s=0.5))


@pytest.fixture(scope="module")
def looking(redis_server: RedisProcess) -> Iterator[kit.ServerThread]:
    with kit.ServerThread(_looking_settings(redis_server.url, http=True)) as server:
        yield server


def _expire(admin: redis.Redis, game: Game) -> None:
    """Give the game's keys the unplayed time, as the creation script does (EXPIRE of the hash and the log)."""
    for key in (game_key(game.game_id), log_key(game.game_id)):
        assert admin.expire(key, UNPLAYED_S)


class Watch:
    """One watch stream read in a thread: what it got (kinds) and how it ended."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.status = ""
        self.ended_at = 0.0
        self.started = threading.Event()
        self.thread: threading.Thread | None = None

    def join(self) -> None:
        assert self.thread is not None
        self.thread.join(UNPLAYED_S + BOUND_S)
        assert not self.thread.is_alive(), f"the stream did not end (got {self.kinds})"


def grpc_watch(client: Client, game: Game, token: str) -> Watch:
    watch = Watch()

    def read() -> None:
        try:
            for message in client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token)):
                watch.kinds.append("snapshot" if message.HasField("snapshot") else message.event.kind)
                watch.started.set()
            watch.status = "OK"
        except grpc.RpcError as exc:
            watch.status = exc.code().name
        watch.ended_at = time.monotonic()
        watch.started.set()

    watch.thread = threading.Thread(target=read, daemon=True)
    watch.thread.start()
    return watch


def http_watch(http_url: str, game: Game, token: str) -> Watch:
    """WatchGame over Connect JSON; the end-of-stream message is {} when the stream ended OK."""
    watch = Watch()

    def read() -> None:
        for flags, payload in connect_watch_frames(http_url, game.game_id, token, timeout=60.0):
            message = json.loads(payload)
            if flags & 0x02:
                watch.status = "OK" if "error" not in message else message["error"]["code"]
            else:
                watch.kinds.append("snapshot" if "snapshot" in message else message["event"]["kind"])
                watch.started.set()
        watch.ended_at = time.monotonic()
        watch.started.set()

    watch.thread = threading.Thread(target=read, daemon=True)
    watch.thread.start()
    return watch


def test_an_unplayed_game_is_abandoned_and_its_watchers_streams_end(
    lasting: ServerThread, looking: kit.ServerThread, redis_server: RedisProcess
) -> None:
    first, client = Client(lasting.address), Client(looking.address)
    admin = redis.Redis.from_url(redis_server.url)
    try:
        game = first.create("gin", allow_spectators=True)  # no move: kept --unplayed-ttl (lasting's: an hour)
        watches = [grpc_watch(client, game, game.spectator), http_watch(looking.http_url, game, game.tokens[0])]
        for watch in watches:
            assert watch.started.wait(30) and watch.kinds == ["snapshot"], (watch.kinds, watch.status)
        expired = time.monotonic()  # before the EXPIRE: the keys go UNPLAYED_S after it at the earliest
        _expire(admin, game)
        for watch in watches:
            watch.join()
            assert watch.kinds == ["snapshot", "game_abandoned"], watch.kinds
            assert watch.status == "OK"
            assert UNPLAYED_S <= watch.ended_at - expired <= UNPLAYED_S + BOUND_S
        with expect_error(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND"):  # gone: a new watch keeps its error
            next(iter(client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.spectator))))
    finally:
        admin.close()
        first.close()
        client.close()


def test_an_idle_game_expires_and_its_watchers_streams_end(lasting: ServerThread, short: ServerThread) -> None:
    first, second = Client(lasting.address), Client(short.address)
    try:
        game = first.create("gin", token=ORGANIZER, allow_spectators=True)  # kept as serve keeps games
        rng = random.Random(12)
        seat = first.view(game, game.tokens[0]).to_act
        first.move(game, game.tokens[seat], bot_move(first.view(game, game.tokens[seat]), rng))  # version 1
        watches = [grpc_watch(second, game, game.spectator), http_watch(short.http_url, game, game.tokens[1]),
                   grpc_watch(second, game, game.tokens[0])]  # fmt: skip
        for watch in watches:
            assert watch.started.wait(30)
        seat = second.view(game, game.tokens[0]).to_act
        own = second.view(game, game.tokens[seat])
        moved = time.monotonic()  # before the move: its commit, and the idle time, start after this
        second.move(game, game.tokens[seat], bot_move(own, rng))  # idle: IDLE_S
        for watch in watches:
            watch.join()
            assert watch.kinds[0] == "snapshot" and watch.kinds[-1] == "game_expired", watch.kinds
            assert "game_expired" not in watch.kinds[:-1]
            assert watch.status == "OK"
            assert IDLE_S <= watch.ended_at - moved <= IDLE_S + BOUND_S
    finally:
        first.close()
        second.close()


def test_watched_games_on_every_node_of_a_redis_cluster_expire(redis_cluster: LocalCluster) -> None:
    """The look is one pipeline per node: games spread over the three masters are all found gone. (Created to last
an hour, given the unplayed time once watched: 9 games created with 3 s to live were not all watched in time on
a loaded machine.)"""
    server = kit.ServerThread(_looking_settings(redis_cluster.url))
    client = Client(server.address)
    try:
        games = [client.create("gin", allow_spectators=True) for _ in range(9)]
        masters = {g.game_id: redis_cluster.master_for_key(game_key(g.game_id)) for g in games}
        watches = [grpc_watch(client, game, game.spectator) for game in games]
        for watch in watches:
            assert watch.started.wait(30) and watch.kinds == ["snapshot"], (watch.kinds, watch.status)
        for game in games:
            with masters[game.game_id].client() as node:
                _expire(node, game)
        for watch in watches:
            watch.join()
            assert watch.kinds == ["snapshot", "game_abandoned"] and watch.status == "OK", watch.kinds
        assert len({m.port for m in masters.values()}) >= 2, "the games all fell on one node"
    finally:
        client.close()
        server.stop()


def test_the_expiry_check_outlives_an_answer_the_store_does_not_know(private_redis: RedisProcess) -> None:
    """A look that fails with an error the store does not know (here Redis's ACL denying PTTL: NOPERM, not a
    storage outage) is logged and tried again later, as an outage is: it ended the expiry task, and no watched
    game of the process was ever found expired again."""
    from server.expiry import ExpiryWatch
    from server.store import GameStore, connect, game_key

    admin = redis.Redis.from_url(private_redis.url)
    admin.acl_setuser("checker", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-pttl"])
    admin.set(game_key("g_gone_later"), "x")
    host, port = private_redis.url.removeprefix("redis://").split("/")[0].split(":")

    async def main() -> None:
        store = GameStore(connect(f"redis://checker:pw@{host}:{port}/0"), op_timeout_s=5.0)
        watch = ExpiryWatch(store, retry_s=0.2)
        gone: list[str] = []
        task = asyncio.create_task(watch.run(lambda game_id: True, gone.append))
        watch.track("g_gone_later")
        await asyncio.sleep(1.0)  # several failed looks (every 0.2 s)
        assert not task.done(), repr(task.exception()) if task.done() else None
        admin.acl_setuser("checker", commands=["+pttl"])
        admin.delete(game_key("g_gone_later"))
        for _ in range(200):
            if gone:
                break
            await asyncio.sleep(0.05)
        assert gone == ["g_gone_later"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()

    try:
        asyncio.run(main())
    finally:
        admin.acl_deluser("checker")
        admin.close()
