"""The referee on a Redis Cluster (`--redis-cluster` / a redis-cluster:// URL): a one-node cluster holding all
16384 slots, started by the suite. Every key of a game shares its hash tag, so each Lua script runs on one node."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, find_redis_server, start_redis
from server.store import game_keys
from tests.server.refkit import GIN_KNOCK_DEAL, GIN_KNOCK_MOVES, ORGANIZER, Client, ServerThread, md, move_from_text

pytestmark = pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")


@pytest.fixture(scope="module")
def cluster_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    node = start_redis(
        tmp_path_factory.mktemp("cluster"),
        appendfsync="always",
        extra_args=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
    )
    try:
        admin = redis.Redis.from_url(node.url)
        admin.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        deadline = time.monotonic() + 10
        while b"cluster_state:ok" not in admin.execute_command("CLUSTER", "INFO"):
            assert time.monotonic() < deadline, "the one-node cluster never became ok"
            time.sleep(0.05)
        yield node
    finally:
        node.stop()


def test_a_match_on_a_redis_cluster(cluster_node: RedisProcess) -> None:
    server = ServerThread(f"redis-cluster://127.0.0.1:{cluster_node.port}")
    client = Client(server.address)
    try:
        game = client.create(
            "gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(target_score=20)
        )
        watch = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
        assert next(watch).snapshot.version == 0
        for n, (seat, text) in enumerate(GIN_KNOCK_MOVES, 1):
            moved = client.move(
                game, game.tokens[seat], move_from_text(text), expected_version=n - 1, request_id=f"r{n}"
            )
            assert moved.version == n
            again = client.move(
                game, game.tokens[seat], move_from_text(text), expected_version=n - 1, request_id=f"r{n}"
            )
            assert again == moved  # the resend's answer, rebuilt from the log, through the cluster client
        streamed = [m.event.kind for m in watch]  # ends with the match
        assert server.referee is not None and server.referee.hub.subscriber_connects >= 1  # woken by Pub/Sub
        assert streamed[-1] == "match_ended" and "knocked" in streamed
        view = client.view(game, game.tokens[1])
        assert view.phase == pb.PHASE_MATCH_OVER and list(view.result.totals) == [0, 25]
        replayed = [e.kind for page in client.replay(game, None) for e in page.events]
        assert replayed == ["hand_started", "dealt", "dealt", *streamed]
        keys = redis.Redis.from_url(cluster_node.url).keys(f"game:{{{game.game_id}}}*")
        assert sorted(keys) == sorted(k.encode() for k in game_keys(game.game_id))  # one hash tag: one slot
    finally:
        client.close()
        server.stop()


def test_the_open_games_registry_on_a_redis_cluster(cluster_node: RedisProcess) -> None:
    """The registry has its own slot: creation counts and checks it (the PTTLs of the due games pipelined across
    slots), the match's end releases its game."""
    from server.open_games import REGISTRY_KEY

    server = ServerThread(f"redis-cluster://127.0.0.1:{cluster_node.port}", unplayed_ttl_s=2, max_open_games=3)
    client = Client(server.address)
    admin = redis.Redis.from_url(cluster_node.url)
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
        admin.close()
        client.close()
        server.stop()


def test_the_bot_seats_registry_and_leases_on_a_redis_cluster(cluster_node: RedisProcess) -> None:
    """Each command and script of server/bot_seats.py touches one key: all of them run on a cluster (the registry
    and every lease key in slots of their own)."""
    import asyncio

    from server.bot_seats import BotSeat, BotSeats
    from server.store import connect

    async def scenario() -> None:
        client = connect(f"redis-cluster://127.0.0.1:{cluster_node.port}")
        seats = BotSeats(client)
        try:
            await seats.register([BotSeat("g_cluster", 0, "gin", "st_a"), BotSeat("g_cluster", 1, "strong", "st_b")])
            assert {(s.field, s.bot) for s in await seats.all()} == {("g_cluster:0", "gin"), ("g_cluster:1", "strong")}
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
            assert await seats.all() == []
            assert await seats.holder("g_cluster:1") is None
        finally:
            await client.aclose()

    asyncio.run(scenario())
