"""The pipelined hot path on a real Redis Cluster (three masters, one replica each: the `redis_cluster` fixture):
one connection per master, every command on the master of its game's slot, MOVED and ASK followed while a game's
slot migrates. Every answer is compared byte for byte with the same game played on a standalone Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from server.hotpath import ClusterHotPath
from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess
from server.store import GameStore, StoreUnavailable, connect, game_key, game_keys
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread

DRAW = pb.Move(draw_stock=pb.Move.DrawStock())
KNOCKS = ("knock", "big_gin")


def _hot(server: ServerThread) -> ClusterHotPath:
    assert server.referee is not None
    hot = server.referee.store._hot
    assert isinstance(hot, ClusterHotPath), "the cluster store has the pipelined path"
    return hot


@pytest.fixture(scope="module")
def servers(redis_server: RedisProcess, redis_cluster: LocalCluster) -> Iterator[tuple[Client, Client, ServerThread]]:
    """A referee on the standalone Redis and one on the cluster, and a client of each."""
    standalone, clustered = ServerThread(redis_server.url), ServerThread(redis_cluster.url)
    plain, cluster = Client(standalone.address), Client(clustered.address)
    try:
        yield plain, cluster, clustered
    finally:
        plain.close()
        cluster.close()
        standalone.stop()
        clustered.stop()


def _create(client: Client, seed: int) -> Game:
    # a seed of the organizer's: the same deal and reshuffles on both Redis
    return client.create("gin", token=ORGANIZER, seed=seed.to_bytes(2, "big") * 8)


def _step(client: Client, game: Game, n: int) -> tuple[list[bytes], bool]:
    """One move of whoever acts (its view first), its resend, and a stale resubmission: every answer as bytes (the
    game id blanked out: the only difference between two games of the same seed), and whether the match is over."""
    answers: list[bytes] = []

    def blank(message: bytes) -> bytes:
        return message.replace(game.game_id.encode(), b"<game>")

    view = client.view(game, game.tokens[0])
    if view.phase == pb.PHASE_MATCH_OVER:
        return [blank(view.SerializeToString(deterministic=True))], True
    seat = view.to_act
    own = client.view(game, game.tokens[seat])
    answers.append(blank(own.SerializeToString(deterministic=True)))
    knock = next((m for m in own.legal_moves if m.WhichOneof("move") in KNOCKS), None)
    move = knock or (DRAW if DRAW in own.legal_moves else own.legal_moves[0])
    fields = {"expected_version": own.version, "request_id": f"r{n}"}
    moved = client.move(game, game.tokens[seat], move, **fields)
    again = client.move(game, game.tokens[seat], move, **fields)  # the idempotent resend
    assert again == moved
    answers += [blank(moved.SerializeToString(deterministic=True)), blank(again.SerializeToString(deterministic=True))]
    with pytest.raises(grpc.RpcError) as stale:
        client.move(game, game.tokens[seat], move, expected_version=own.version)
    answers.append(f"{stale.value.code()} {stale.value.details()}".encode())
    return answers, False


def _replay(client: Client, game: Game) -> list[bytes]:
    """The game's replay pages as bytes, its id and its seed's commitment (a hash of the id too) blanked out."""
    pages = []
    for page in client.replay(game):
        page.settings.ClearField("seed_commitment")
        pages.append(page.SerializeToString(deterministic=True).replace(game.game_id.encode(), b"<game>"))
    return pages


def test_games_on_the_cluster_answer_byte_for_byte_as_on_a_standalone_redis(
    servers: tuple[Client, Client, ServerThread], redis_cluster: LocalCluster
) -> None:
    plain, cluster, clustered = servers
    pairs: list[tuple[Game, Game]] = []
    owners: dict[int, int] = {}
    seed = 0
    while len(owners) < 3 or min(owners.values()) < 2:  # games on every master, two each at least
        seed += 1
        pair = (_create(plain, seed), _create(cluster, seed))
        port = redis_cluster.master_for_key(game_key(pair[1].game_id)).port
        if owners.get(port, 0) < 2:
            owners[port] = owners.get(port, 0) + 1
            pairs.append(pair)
    moves = 0
    for a, b in pairs:
        for n in range(1, 13):
            on_standalone, over = _step(plain, a, n)
            on_cluster, over_too = _step(cluster, b, n)
            assert on_cluster == on_standalone, (b.game_id, n)
            assert over_too == over
            if over:
                break
            moves += 1
        assert _replay(cluster, b) == _replay(plain, a)
    assert moves == 6 * 12
    hot = _hot(clustered)
    assert hot.connections() == 3, "one pipelined connection per master"
    for _, game in pairs:  # every key of a game on its own slot's master
        keys = redis_cluster.master_for_key(game_key(game.game_id)).client().keys(f"game:{{{game.game_id}}}*")
        assert {k.decode() for k in keys} <= set(game_keys(game.game_id)) and keys


def _node_id(node_client: redis.Redis) -> str:
    return str(node_client.execute_command("CLUSTER", "MYID").decode())


def test_moves_follow_a_game_whose_slot_migrates_ask_then_moved(
    servers: tuple[Client, Client, ServerThread], redis_cluster: LocalCluster
) -> None:
    """CLUSTER SETSLOT ... IMPORTING / MIGRATING, MIGRATE of the game's keys (ASK: the source no longer has them),
    then SETSLOT ... NODE on every master (MOVED): the moves go on, each answer as on a standalone Redis; the slot
    goes back home at the end, the same way."""
    plain, cluster, clustered = servers
    hot = _hot(clustered)
    a, b = _create(plain, 77), _create(cluster, 77)
    key = game_key(b.game_id)
    n = 0

    def play(count: int) -> None:
        nonlocal n
        for _ in range(count):
            n += 1
            on_standalone, over = _step(plain, a, n)
            assert _step(cluster, b, n) == (on_standalone, over), n
            assert not over

    play(2)  # every key of the game exists (its idempotency records too)
    source = redis_cluster.master_for_key(key)
    target = next(m for m in redis_cluster.masters() if m.port != source.port)
    for there, back in ((source, target), (target, source)):
        src, dst = there.client(socket_timeout=5), back.client(socket_timeout=5)
        try:
            slot = int(src.execute_command("CLUSTER", "KEYSLOT", key))
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", _node_id(src))
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", _node_id(dst))
            play(2)  # migrating, the keys still on the source: it serves them
            asked = hot.asked
            src.execute_command("MIGRATE", "127.0.0.1", back.port, "", 0, 5000, "KEYS", *game_keys(b.game_id))
            # this game's keys, not the slot's: the suite's cluster holds other tests' games, some in this slot
            ours = {k.encode() for k in game_keys(b.game_id)}
            held = [ours & set(c.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10_000)) for c in (src, dst)]
            assert held == [set(), ours], held
            play(2)  # the keys on the target, the slot not yet: ASK, ASKING
            assert hot.asked > asked
            moved = hot.moved
            for master in redis_cluster.masters():  # the slot is the target's now
                with master.client(socket_timeout=5) as each:
                    each.execute_command("CLUSTER", "SETSLOT", slot, "NODE", _node_id(dst))
            play(2)  # MOVED: the map follows
            assert hot.moved > moved
            play(1)  # and no redirection any more
        finally:
            src.close()
            dst.close()
    assert redis_cluster.master_for_key(key).port == source.port


def test_a_master_down_is_store_unavailable_and_not_applied_then_the_promoted_replica_serves(
    private_cluster: LocalCluster,
) -> None:
    """A master killed with SIGKILL: the hot path's commands to its slots fail as on a standalone Redis that went
    away (StoreUnavailable; a commit not written is not applied) and, once its replica is promoted, the map is
    refreshed and the same game loads and commits again, on the new master."""

    async def body() -> None:
        store = GameStore(connect(private_cluster.url), op_timeout_s=2.0)
        try:
            assert isinstance(store._hot, ClusterHotPath)
            gid = "g_failover"
            assert await store.create(gid, {"state": "s0", "version": "0", "meta": "{}"}, b"deal")
            game = await store.load(gid)
            assert game is not None and game.version == 0
            master = private_cluster.master_for_key(game_key(gid))
            replica = private_cluster.replica_of(master)
            assert replica is not None
            with master.client() as conn:
                # the replica has the game (WAIT answers how many replicas acknowledged it)
                assert conn.execute_command("WAIT", 1, 5000) == 1
            master.kill()
            with pytest.raises(StoreUnavailable):
                await store.load(gid)
            await asyncio.to_thread(private_cluster.wait_ok, 60)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while True:  # the referee's map catches up by itself (each failure starts a refresh)
                try:
                    game = await store.load(gid)
                    break
                except StoreUnavailable:
                    assert loop.time() < deadline, "the promoted replica never served the game"
                    await asyncio.sleep(0.1)
            assert game is not None and game.version == 0
            result = await store.commit(gid, base_version=0, progress_json="s1", commit_id="c1", entry=b"e1")
            assert result.outcome == "ok" and result.version == 1
            assert private_cluster.master_for_key(game_key(gid)).port == replica.port
        finally:
            await store.close()

    asyncio.run(body())
