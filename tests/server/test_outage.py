"""Redis stopped mid-game: moves get UNAVAILABLE; once Redis is back, play resumes and nothing acknowledged is
lost (the test Redis runs with appendonly and `appendfsync always`, and is killed with SIGKILL)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import grpc
import pytest

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server import refkit
from tests.server.refkit import ORGANIZER, Client, ServerThread, bot_move, expect_error, md, reason_of


@pytest.fixture
def outage_server(private_redis: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(private_redis.url) as server:
        yield server


def test_redis_killed_mid_game(private_redis: RedisProcess, outage_server: ServerThread) -> None:
    client = Client(outage_server.address)
    game = client.create("gin", token=ORGANIZER, seed=b"outage-seed-0123", match=rpb.MatchSettings(target_score=40))
    rng = random.Random(11)
    acknowledged: list[rpb.SubmitMoveResponse] = []

    def next_request(n: int) -> tuple[str, rpb.SubmitMoveRequest]:
        view = client.view(game, game.tokens[0])
        token = game.tokens[view.to_act]
        move = bot_move(client.view(game, token), rng)
        return token, rpb.SubmitMoveRequest(game_id=game.game_id, move=move, request_id=f"move-{n}")

    for n in range(12):
        token, request = next_request(n)
        acknowledged.append(client.stub.SubmitMove(request, metadata=md(token)))
    watch = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
    assert next(watch).snapshot.version == 12
    token, pending = next_request(12)

    private_redis.kill()
    with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
        client.stub.SubmitMove(pending, metadata=md(token))
    with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
        client.view(game, game.tokens[0])
    with pytest.raises(grpc.RpcError) as cut:
        next(watch)  # the live stream ends too: the client will resume from its last version
    assert cut.value.code() == grpc.StatusCode.UNAVAILABLE and reason_of(cut.value) == "STORAGE_UNAVAILABLE"

    private_redis.restart()
    resumed = refkit.retry_unavailable(lambda: client.stub.SubmitMove(pending, metadata=md(token)), seconds=20)
    again = client.stub.SubmitMove(pending, metadata=md(token))  # the same request_id: the same answer
    assert resumed == again and resumed.version == 13
    acknowledged.append(resumed)

    pages = client.replay(game)
    stored = [(e.version, e.index, e.kind) for page in pages for e in page.events if e.version]
    assert stored == [(e.version, e.index, e.kind) for r in acknowledged for e in r.events]
    assert pages[-1].current.version == 13

    watch = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=12),
                                  metadata=md(game.tokens[0]))  # fmt: skip
    assert [(m.event.version, m.event.index) for m in [next(watch) for _ in resumed.events]] == [
        (e.version, e.index) for e in resumed.events
    ]
    watch.cancel()
    view = client.view(game, game.tokens[0])
    while view.phase != pb.PHASE_MATCH_OVER:  # and the match plays on to its end
        own = client.view(game, game.tokens[view.to_act])
        view = client.move(game, game.tokens[view.to_act], bot_move(own, rng)).view
    client.close()
