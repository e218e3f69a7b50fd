"""Redis stopped mid-game: moves get UNAVAILABLE; once Redis is back, play resumes and nothing acknowledged is
lost (the test Redis runs with appendonly and `appendfsync always`, and is killed with SIGKILL)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ServerProcess
from tests.server import refkit
from tests.server.refkit import (
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    bot_move,
    expect_error,
    md,
    reason_of,
    wait_for,
)


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


def test_redis_killed_under_concurrent_moves_loses_no_acknowledged_one_and_applies_no_refused_one(
    private_redis: RedisProcess, tmp_path: Path
) -> None:
    """Six games played at once while Redis (``appendfsync always``) is SIGKILLed and started again on its
    append-only file, twice. Each move goes with ``expected_version``: one answered STORAGE_UNAVAILABLE ("not
    applied, and will not be") is sent again under a new request_id at the same expected version, which an
    applied first send would make ABORTED; one answered COMMIT_OUTCOME_UNKNOWN is resent with its request_id until
    answered. Then every answered move is in its game's log, once, in order, and nothing else is."""
    server = ServerProcess(private_redis.url, log_dir=tmp_path, args=["--no-bots"])
    server.start()
    client = Client(server.address)
    direct = redis.Redis.from_url(private_redis.url)
    games = 6
    stop = threading.Event()
    errors: list[BaseException] = []
    answers: dict[str, list[rpb.SubmitMoveResponse]] = {}
    refused: list[str] = []  # the moves answered STORAGE_UNAVAILABLE
    seen_down: list[str] = []  # every call answered UNAVAILABLE

    def view(game: Game, token: str) -> pb.GameView:
        deadline = time.monotonic() + 60
        while True:
            try:
                return client.view(game, token)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline, exc.code()
                seen_down.append(game.game_id)
                time.sleep(0.05)

    try:
        created = [client.create("gin", token=ORGANIZER, seed=bytes([n + 7]) * 16) for n in range(games)]

        def play(n: int, game: Game) -> None:
            rng = random.Random(n)
            mine = answers.setdefault(game.game_id, [])
            sends = 0
            try:
                while not stop.is_set():
                    public = view(game, game.tokens[0])
                    if public.phase == pb.PHASE_MATCH_OVER:
                        return
                    token = game.tokens[public.to_act]
                    own = view(game, token)
                    move = bot_move(own, rng)
                    while True:  # this move until it is answered
                        sends += 1
                        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, request_id=f"s{sends}",
                                                        expected_version=own.version)  # fmt: skip
                        try:
                            answer = client.stub.SubmitMove(request, metadata=md(token), timeout=30)
                            break
                        except grpc.RpcError as exc:
                            assert exc.code() == grpc.StatusCode.UNAVAILABLE, (exc.code(), exc.details())
                            reason = reason_of(exc)
                            if reason == "COMMIT_OUTCOME_UNKNOWN":  # the same request_id until answered
                                answer = refkit.retry_unavailable(
                                    partial(client.stub.SubmitMove, request, metadata=md(token), timeout=30), 60
                                )
                                break
                            assert reason == "STORAGE_UNAVAILABLE", reason
                            refused.append(game.game_id)
                            seen_down.append(game.game_id)
                            time.sleep(0.05)
                    assert answer.version == own.version + 1, (game.game_id, answer.version, own.version)
                    mine.append(answer)
            except BaseException as exc:  # reported by the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=play, args=(n, g), daemon=True) for n, g in enumerate(created)]
        for t in threads:
            t.start()
        for at in (5, 12):
            wait_for(lambda: min(len(answers.get(g.game_id, ())) for g in created) >= at or bool(errors),  # noqa: B023
                     f"every game answered {at} moves", 60)  # fmt: skip
            assert not errors, errors
            down = len(seen_down)
            private_redis.kill()  # mid-play: commits of several games are in flight
            wait_for(lambda: len(seen_down) > down or bool(errors), "a call refused while Redis is down", 60)  # noqa: B023
            private_redis.restart()
        wait_for(lambda: min(len(answers[g.game_id]) for g in created) >= 16 or bool(errors),
                 "every game played on after the restarts", 60)  # fmt: skip
        stop.set()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "a game's player never finished"
        assert not errors, errors
        print(f"moves answered: {sum(len(a) for a in answers.values())}; refused STORAGE_UNAVAILABLE: {len(refused)}")
        for game in created:
            mine = answers[game.game_id]
            version = len(mine)
            assert [a.version for a in mine] == list(range(1, version + 1))
            assert direct.hget(f"game:{{{game.game_id}}}", "version") == str(version).encode()
            assert direct.llen(f"game:{{{game.game_id}}}:log") == version + 1
            stored = [(e.version, e.index, e.kind, e.seat) for page in client.replay(game) for e in page.events
                      if e.version]  # fmt: skip
            assert stored == [(e.version, e.index, e.kind, e.seat) for a in mine for e in a.events]
    finally:
        stop.set()
        client.close()
        direct.close()
        server.stop()

