"""`serve --wait-replicas N`: a move is answered as done only once N replicas have it (Redis WAIT on the game's
node), never falsely: with its replica frozen, a move is UNAVAILABLE COMMIT_OUTCOME_UNKNOWN (applied on the master
only), and its resend with the same request_id is answered once the replica has it. A real master and a real
replica (`--replicaof`), the commit over the pipelined hot path and the WAIT over another connection."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, start_redis
from tests.server.refkit import ORGANIZER, Client, ServerThread, bot_move, expect_error


@pytest.fixture
def replica(private_redis: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    with redis.Redis.from_url(private_redis.url) as master:
        master.config_set("repl-diskless-sync-delay", 0)  # the first sync at once, not after 5 s
    node = start_redis(tmp_path_factory.mktemp("replica"), appendfsync="always",
                       extra_args=["--replicaof", "127.0.0.1", str(private_redis.port)])  # fmt: skip
    try:
        with redis.Redis.from_url(private_redis.url) as master:
            deadline = time.monotonic() + 30
            while master.info("replication").get("slave0", {}).get("state") != "online":  # (its first sync done)
                assert time.monotonic() < deadline, "the replica never came online"
                time.sleep(0.05)
        yield node
    finally:
        os.kill(node.pid, signal.SIGCONT)
        node.stop()


def test_a_move_is_answered_only_once_the_replica_has_it(private_redis: RedisProcess, replica: RedisProcess) -> None:
    # The wait is long enough for a live replica on a loaded machine (0.3 s was not: a move answered UNAVAILABLE
    # while its replica was merely slow), and is waited out twice below with the replica frozen.
    server = ServerThread(private_redis.url, store_options={"wait_replicas": 1, "wait_timeout_s": 2.0})
    client = Client(server.address)
    admin = redis.Redis.from_url(private_redis.url)
    try:
        game = client.create("gin", token=ORGANIZER, match=rpb.MatchSettings(target_score=500))
        rng = random.Random(5)
        for n in range(1, 4):  # replicated in time: answered
            view = client.view(game, game.tokens[0])
            token = game.tokens[view.to_act]
            moved = client.move(game, token, bot_move(client.view(game, token), rng), request_id=f"r{n}")
            assert moved.version == n
        view = client.view(game, game.tokens[0])
        token = game.tokens[view.to_act]
        move = bot_move(client.view(game, token), rng)
        os.kill(replica.pid, signal.SIGSTOP)  # the replica stops acknowledging
        try:
            with expect_error(grpc.StatusCode.UNAVAILABLE, "COMMIT_OUTCOME_UNKNOWN"):
                client.move(game, token, move, expected_version=3, request_id="r4")
            assert int(admin.hget(f"game:{{{game.game_id}}}", "version")) == 4  # on the master only: not "done"
            with expect_error(grpc.StatusCode.UNAVAILABLE, "COMMIT_OUTCOME_UNKNOWN"):  # the resend waits too
                client.move(game, token, move, expected_version=3, request_id="r4")
        finally:
            os.kill(replica.pid, signal.SIGCONT)
        again = client.move(game, token, move, expected_version=3, request_id="r4")  # now the replica has it
        assert again.version == 4
        with redis.Redis.from_url(replica.url) as copy:
            assert int(copy.hget(f"game:{{{game.game_id}}}", "version")) == 4
    finally:
        admin.close()
        client.close()
        server.stop()
