"""The referee on a real Redis Cluster (a redis-cluster:// URL): the suite's six-node cluster (`redis_cluster`:
three masters, one replica each). Every key of a game shares its hash tag, so each Lua script runs on one node;
the games spread over the three shards; each referee follows the watched games with one sharded Pub/Sub
(SSUBSCRIBE) connection per master."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_cluster import LocalCluster
from server.store import game_keys
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    bot_move,
    md,
    move_from_text,
)


@pytest.fixture(scope="module")
def cluster_server(redis_cluster: LocalCluster) -> Iterator[ServerThread]:
    with ServerThread(redis_cluster.url) as server:
        yield server


@pytest.fixture
def admin(redis_cluster: LocalCluster) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster.from_url(redis_cluster.url.replace("redis-cluster://", "redis://"))
    try:
        yield client
    finally:
        client.close()


def games_on_every_shard(cluster: LocalCluster, new_game: Callable[[], Game], each: int) -> list[Game]:
    """New games until every master holds ``each`` of them (game ids are random: so many on each shard surely)."""
    masters = {m.port for m in cluster.masters()}
    per_master: Counter[int] = Counter()
    games = []
    while len(per_master) < len(masters) or min(per_master.values()) < each:
        game = new_game()
        port = cluster.master_for_key(f"game:{{{game.game_id}}}").port
        if per_master[port] < each:
            per_master[port] += 1
            games.append(game)
    return games


def _events(watch: Iterator[rpb.WatchGameResponse]) -> list[tuple[int, int, str]]:
    return [(m.event.version, m.event.index, m.event.kind) for m in watch]


def test_matches_on_every_shard_with_retries_watch_streams_and_replays(
    redis_cluster: LocalCluster, cluster_server: ServerThread
) -> None:
    client = Client(cluster_server.address)
    try:
        knock = rpb.MatchSettings(target_score=20)
        games = games_on_every_shard(
            redis_cluster, lambda: client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=knock), 4
        )
        masters = redis_cluster.masters()
        per_node: Counter[int] = Counter()
        for master in masters:  # every key of every game on one master, and some games on each
            with master.client() as conn:
                for game in games:
                    keys = conn.keys(f"game:{{{game.game_id}}}*")
                    if keys:
                        assert set(keys) == {k.encode() for k in game_keys(game.game_id)[:2]}  # (no moves yet)
                        per_node[master.port] += 1
        assert sum(per_node.values()) == len(games) and set(per_node.values()) == {4}
        watches = [
            client.stub.WatchGame(rpb.WatchGameRequest(game_id=g.game_id), metadata=md(g.tokens[0])) for g in games
        ]
        assert all(next(w).snapshot.version == 0 for w in watches)
        for game in games:
            for n, (seat, text) in enumerate(GIN_KNOCK_MOVES, 1):
                request = {"expected_version": n - 1, "request_id": f"r{n}"}
                moved = client.move(game, game.tokens[seat], move_from_text(text), **request)
                assert moved.version == n
                again = client.move(game, game.tokens[seat], move_from_text(text), **request)
                assert again == moved  # the resend's answer, rebuilt from the log, through the cluster client
        hub = cluster_server.referee.hub if cluster_server.referee is not None else None
        assert hub is not None
        for game, watch in zip(games, watches, strict=True):
            streamed = _events(watch)  # ends with the match
            assert streamed[-1][2] == "match_ended" and "knocked" in [kind for _, _, kind in streamed]
            replayed = [(e.version, e.index, e.kind) for page in client.replay(game, None) for e in page.events]
            assert replayed[3:] == streamed and [kind for _, _, kind in replayed[:3]] == [
                "hand_started",
                "dealt",
                "dealt",
            ]
            view = client.view(game, game.tokens[1])
            assert view.phase == pb.PHASE_MATCH_OVER and list(view.result.totals) == [0, 25]
            # resumed from a version: exactly what came after it
            resumed = client.stub.WatchGame(
                rpb.WatchGameRequest(game_id=game.game_id, after_version=1, after_index=1), metadata=md(game.tokens[0])
            )
            assert _events(resumed) == [e for e in streamed if (e[0], e[1]) > (1, 1)]
        assert hub.subscriber_connects >= 3  # woken by sharded Pub/Sub: a connection to each master
    finally:
        client.close()


def test_the_referee_follows_watched_games_with_one_sharded_subscriber_per_master(
    redis_cluster: LocalCluster, cluster_server: ServerThread
) -> None:
    client = Client(cluster_server.address)
    rng = random.Random(13)
    try:
        games = games_on_every_shard(redis_cluster, lambda: client.create("gin", token=ORGANIZER), 3)
        watches = [
            client.stub.WatchGame(rpb.WatchGameRequest(game_id=g.game_id), metadata=md(g.spectator or g.tokens[0]))
            for g in games
        ]
        assert all(next(w).snapshot.version == 0 for w in watches)
        channels: Counter[int] = Counter()
        deadline = time.monotonic() + 30
        while sum(channels.values()) < len(games):  # each channel subscribed on the master of its game only
            assert time.monotonic() < deadline, f"channels subscribed: {channels}"
            channels.clear()
            for master in redis_cluster.masters():
                with master.client() as conn:
                    listed = conn.execute_command("PUBSUB", "SHARDCHANNELS", "game:*")
                    mine = {f"game:{{{g.game_id}}}:ev".encode() for g in games}
                    channels[master.port] = len(mine & set(listed))
            time.sleep(0.05)
        assert set(channels) == {m.port for m in redis_cluster.masters()} and all(channels.values())
        for game in games:  # a few moves each: every stream gets them, each once, in order
            for _ in range(4):
                view = client.view(game, game.tokens[0])
                token = game.tokens[view.to_act]
                client.move(game, token, bot_move(client.view(game, token), rng))
        for game, watch in zip(games, watches, strict=True):
            got = []
            for message in watch:
                got.append((message.event.version, message.event.index))
                if message.event.version == 4 and len(got) >= 4:
                    stored = [(e.version, e.index) for p in client.replay(game) for e in p.events if e.version]
                    if got == stored:
                        break
            assert got == [(e.version, e.index) for p in client.replay(game) for e in p.events if e.version]
            watch.cancel()
        assert cluster_server.referee is not None
        assert len(cluster_server.referee.hub._links) == 3  # one subscriber connection per master
    finally:
        client.close()


def test_the_open_games_registry_on_a_redis_cluster(redis_cluster: LocalCluster, admin: redis.RedisCluster) -> None:
    """The registry has its own slot: creation counts and checks it (the PTTLs of the due games pipelined across
    slots), the match's end releases its game."""
    from server.open_games import REGISTRY_KEY

    server = ServerThread(redis_cluster.url, unplayed_ttl_s=2, max_open_games=3)
    client = Client(server.address)
    admin.delete(REGISTRY_KEY)  # (the session's cluster: other tests' games)
    try:
        unplayed, played = client.create(), client.create()
        view = client.view(played, played.tokens[0])
        own = client.view(played, played.tokens[view.to_act])
        client.move(played, played.tokens[view.to_act], own.legal_moves[0])
        deadline = time.monotonic() + 30
        while admin.exists(f"game:{{{unplayed.game_id}}}") or admin.time()[0] * 1000 <= float(
            admin.zscore(REGISTRY_KEY, played.game_id) or 0
        ):
            assert time.monotonic() < deadline, "the unplayed game never expired"
            time.sleep(0.05)
        knock = client.create(
            "gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(target_score=20)
        )
        assert {m.decode() for m in admin.zrange(REGISTRY_KEY, 0, -1)} == {played.game_id, knock.game_id}
        for n, (seat, text) in enumerate(GIN_KNOCK_MOVES, 1):
            client.move(knock, knock.tokens[seat], move_from_text(text), expected_version=n - 1)
        deadline = time.monotonic() + 30
        while admin.zrange(REGISTRY_KEY, 0, -1) != [played.game_id.encode()]:  # released just after the answer
            assert time.monotonic() < deadline, "the finished game was never released"
            time.sleep(0.05)
    finally:
        admin.delete(REGISTRY_KEY)
        client.close()
        server.stop()


def test_the_bot_seats_registry_and_leases_on_a_redis_cluster(redis_cluster: LocalCluster) -> None:
    """Each command and script of server/bot_seats.py touches one key: all of them run on a cluster (the registry
    and every lease key in slots of their own)."""
    import asyncio

    from server.bot_seats import BotSeat, BotSeats
    from server.store import connect

    async def scenario() -> None:
        client = connect(redis_cluster.url)
        seats = BotSeats(client)
        try:
            await seats.register([BotSeat("g_cluster", 0, "gin", "st_a"), BotSeat("g_cluster", 1, "strong", "st_b")])
            assert {(s.field, s.bot) for s in await seats.all()} >= {("g_cluster:0", "gin"), ("g_cluster:1", "strong")}
            assert await seats.claim("g_cluster:0", "host-a", 5000)
            assert not await seats.claim("g_cluster:0", "host-b", 5000)
            assert await seats.renew("g_cluster:0", "host-a", 5000)
            assert not await seats.renew("g_cluster:0", "host-b", 5000)
            assert await seats.holder("g_cluster:0") == "host-a"
            assert not await seats.release("g_cluster:0", "host-b")
            assert await seats.release("g_cluster:0", "host-a")
            assert await seats.holder("g_cluster:0") is None
            assert await seats.claim("g_cluster:1", "host-b", 5000)
            await seats.unregister("g_cluster", [0, 1])
            assert not {s.field for s in await seats.all()} & {"g_cluster:0", "g_cluster:1"}
            assert await seats.holder("g_cluster:1") is None
        finally:
            await client.aclose()

    asyncio.run(scenario())
