"""The commit fence: a move answered as failed is never applied later (issue 8, item 1).

Through a real referee and a real redis-server: Redis paused (SIGSTOP) with a commit in flight, held past the
commit's fence, then resumed (SIGCONT): Redis runs the queued script late, and it writes nothing; the resend with
the same request_id is then applied exactly once. And Redis killed (SIGKILL) and restarted.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.gamelog import encode_entry
from server.redis_launcher import RedisProcess
from server.store import GameStore, StoreUnavailable, connect, game_key, log_key
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    ServerThread,
    drawn_knock_game,
    evalsha_calls,
    md,
    move_from_text,
    reason_of,
    wait_for,
)

OP_TIMEOUT_S = 1.0
DRAW = move_from_text("draw stock")


@pytest.fixture
def fenced_server(private_redis: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(private_redis.url, store_options={"op_timeout_s": OP_TIMEOUT_S}) as server:
        yield server


def test_a_move_in_flight_while_redis_is_paused_is_never_applied_later(
    private_redis: RedisProcess, fenced_server: ServerThread
) -> None:
    client = Client(fenced_server.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        game = drawn_knock_game(client)
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("discard KC"), request_id="r1")
        calls_before = evalsha_calls(direct)

        private_redis.process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(grpc.RpcError) as failed:
                client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
            assert reason_of(failed.value) in ("COMMIT_OUTCOME_UNKNOWN", "STORAGE_UNAVAILABLE")
            time.sleep(OP_TIMEOUT_S)  # held stopped well past the fence (the answer came after it already)
        finally:
            private_redis.process.send_signal(signal.SIGCONT)

        # Redis runs the script it had queued, late: the fence makes it write nothing
        wait_for(lambda: evalsha_calls(direct) > calls_before, "saw Redis run the queued commit")
        assert direct.hget(game_key(game.game_id), "version") == b"1"
        assert direct.llen(log_key(game.game_id)) == 2

        resent = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
        again = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
        assert resent.version == 2
        assert again.SerializeToString(deterministic=True) == resent.SerializeToString(deterministic=True)
        assert direct.hget(game_key(game.game_id), "version") == b"2"
        assert [(e.version, e.kind) for e in resent.events] == [(2, "discarded")]
        assert direct.llen(log_key(game.game_id)) == 3
    finally:
        client.close()
        direct.close()


def test_a_move_while_redis_is_killed_is_not_applied_and_its_resend_applies_once(
    private_redis: RedisProcess, fenced_server: ServerThread
) -> None:
    client = Client(fenced_server.address)
    try:
        game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
        assert client.view(game, game.tokens[1]).version == 0
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-while-down")
        private_redis.kill()
        with pytest.raises(grpc.RpcError) as failed:
            client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert reason_of(failed.value) in ("COMMIT_OUTCOME_UNKNOWN", "STORAGE_UNAVAILABLE")
        private_redis.restart()
        deadline = time.monotonic() + 30
        while True:
            try:
                resent = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline
                time.sleep(0.05)
        again = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=60)
        assert resent.version == again.version == 1
        assert client.view(game, game.tokens[1]).version == 1
    finally:
        client.close()


def test_a_join_in_flight_while_redis_is_paused_never_takes_the_seat_later(private_redis: RedisProcess) -> None:
    """The join script is fenced too: a join answered with an error never takes the seat (whose token nobody
    got). At the store (a JoinGame loads the game first, so a pause lands before its script is sent)."""
    direct = redis.Redis.from_url(private_redis.url)

    async def body() -> None:
        store = GameStore(connect(private_redis.url), op_timeout_s=OP_TIMEOUT_S)
        try:
            meta = {
                "profile": "gin",
                "spectator": "",
                "spectators": False,
                "organizer_deals": False,
                "seats": [{"kind": "human", "name": "", "auth": ""}, {"kind": "bot", "name": "B", "auth": "h"}],
            }
            entry = encode_entry(0, -1, b"null", [b"{}"])
            assert await store.create("g_join", {"state": "s", "version": "0", "meta": json.dumps(meta)}, entry)
            await store.ping()  # Redis's clock is known
            assert await store.join("g_none", seat=-1, token_hash="x", name="") == -2  # the script is loaded
            calls_before = evalsha_calls(direct)
            private_redis.process.send_signal(signal.SIGSTOP)
            try:
                with pytest.raises(StoreUnavailable):
                    await store.join("g_join", seat=-1, token_hash="late", name="Late")
                await asyncio.sleep(OP_TIMEOUT_S)
            finally:
                private_redis.process.send_signal(signal.SIGCONT)
            await asyncio.to_thread(
                wait_for, lambda: evalsha_calls(direct) > calls_before, "saw Redis run the queued join"
            )
            stored = json.loads(direct.hget(game_key("g_join"), "meta") or b"{}")
            assert stored["seats"][0]["auth"] == "" and direct.hget(game_key("g_join"), "joins") is None
            assert await store.join("g_join", seat=-1, token_hash="ann", name="Ann") == 0
        finally:
            await store.close()

    try:
        asyncio.run(body())
    finally:
        direct.close()
