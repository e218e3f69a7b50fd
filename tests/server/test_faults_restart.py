"""Redis down when the referee starts, Redis restarted on an empty data directory (every game and the script cache
gone), clients that give up mid-call and many resends of one request_id across an outage: through a real referee
and a real redis-server the test starts itself. Every wait is on a condition, with a generous deadline."""

from __future__ import annotations

import asyncio
import shutil
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import pytest
import redis
from google.protobuf import json_format
from grpc_health.v1 import health_pb2

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from server.store import game_key, log_key
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    ServerThread,
    drawn_knock_game,
    expect_error,
    health_status,
    md,
    move_from_text,
    retry_unavailable,
    wait_for,
)
from tests.server.webkit import SERVICE

C = grpc.StatusCode
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
DRAW = move_from_text("draw stock")
DISCARD = move_from_text("discard KC")


def test_a_referee_started_while_redis_is_down_is_not_serving_then_serves_once_it_is_up(
    private_redis: RedisProcess, tmp_path: Path
) -> None:
    private_redis.kill()
    server = ServerProcess(private_redis.url, log_dir=tmp_path, args=["--no-bots"], http=True)
    server.start()  # it starts, and says so
    client = Client(server.address)
    try:
        assert health_status(server.address) == NOT_SERVING
        with expect_error(C.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.create("gin")
        with httpx.Client(base_url=f"http://127.0.0.1:{server.http_port}", timeout=30) as http:
            request = rpb.CreateGameRequest(profile="gin", seats=[{"display_name": "A"}, {"display_name": "B"}])
            reply = http.post(f"/{SERVICE}/CreateGame", content=json_format.MessageToJson(request),
                              headers={"content-type": "application/json"})  # fmt: skip
            assert reply.status_code == 503 and reply.json()["code"] == "unavailable"
            health = http.get("/grpc.health.v1.Health/Check?connect=v1&encoding=json&message={}")
            assert health.json() == {"status": "NOT_SERVING"}
            private_redis.restart()
            wait_for(lambda: health_status(server.address) == SERVING, "SERVING once Redis is up")
            assert http.get("/grpc.health.v1.Health/Check?connect=v1&encoding=json&message={}").json() == {
                "status": "SERVING"
            }
        game = client.create("gin")
        assert client.move(game, game.tokens[1], DRAW).version == 1
    finally:
        client.close()
        server.stop()


def _wipe(redis_process: RedisProcess) -> None:
    """Kill Redis and take away its files: it starts again with nothing."""
    redis_process.kill()
    for path in redis_process.data_dir.iterdir():
        if path.name.startswith("appendonly") or path.suffix == ".rdb":
            shutil.rmtree(path) if path.is_dir() else path.unlink()


@pytest.fixture
def referee(private_redis: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(private_redis.url, http=True, store_options={"op_timeout_s": 1.0}) as server:
        yield server


def test_redis_restarted_empty_the_lost_games_are_not_found_and_new_games_play(
    private_redis: RedisProcess, referee: ServerThread
) -> None:
    client = Client(referee.address)
    try:
        played = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])  # in the state cache
        assert client.move(played, played.tokens[1], DRAW, request_id="d1").version == 1
        idle = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
        _wipe(private_redis)
        private_redis.restart()
        assert redis.Redis.from_url(private_redis.url).dbsize() == 0  # and no script cached

        def lost(call: Callable[[], object]) -> None:
            with expect_error(C.NOT_FOUND, "GAME_NOT_FOUND"):
                retry_unavailable(call)

        lost(lambda: client.move(played, played.tokens[1], DISCARD))  # the cached copy is not taken for the game
        lost(lambda: client.move(played, played.tokens[1], DRAW, request_id="d1"))  # its record is gone with it
        lost(lambda: client.view(idle, idle.tokens[0]))
        lost(lambda: client.move(idle, idle.tokens[1], DRAW))
        lost(lambda: client.replay(idle))
        lost(lambda: client.stub.JoinGame(rpb.JoinGameRequest(game_id=idle.game_id, display_name="Z")))
        lost(lambda: next(client.stub.WatchGame(rpb.WatchGameRequest(game_id=idle.game_id),
                                                metadata=md(idle.tokens[0]))))  # fmt: skip
        game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])  # the scripts are loaded again
        assert client.move(game, game.tokens[1], DRAW).version == 1
        assert client.move(game, game.tokens[1], DISCARD).version == 2
    finally:
        client.close()


#: The event hub's tasks (server/events.py), started by the first watch and kept while the referee runs.
_HUB_TASKS = ("EventHub._worker", "EventHub._safety_check", "EventHub._run_link", "ExpiryWatch.run")


def _tasks(server: ServerThread) -> dict[int, str]:
    """The referee loop's tasks (but the one asking), each by its id: its name and coroutine."""

    async def tasks() -> dict[int, str]:
        me = asyncio.current_task()
        return {id(t): f"{t.get_name()} {t.get_coro()!r}" for t in asyncio.all_tasks() if t is not me}

    assert server._loop is not None
    return asyncio.run_coroutine_threadsafe(tasks(), server._loop).result(30)


def _task_count(server: ServerThread) -> int:
    return len(_tasks(server))


@pytest.fixture
def patient_referee(private_redis: RedisProcess) -> Iterator[ServerThread]:
    """The tests' storage timeout (5 s): the calls wait for a frozen Redis while their clients give up."""
    with ServerThread(private_redis.url, http=True) as server:
        yield server


def test_clients_that_give_up_mid_call_leave_no_task_and_no_move_applied_twice(
    private_redis: RedisProcess, patient_referee: ServerThread
) -> None:
    referee = patient_referee
    client = Client(referee.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        games = [client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL]) for _ in range(3)]
        for game in games:
            assert client.move(game, game.tokens[1], DRAW).version == 1
        watch = client.stub.WatchGame(rpb.WatchGameRequest(game_id=games[0].game_id), metadata=md(games[0].tokens[0]))
        next(watch)  # its first message: the event hub starts its tasks as the watch subscribes, in its own time
        wait_for(lambda: all(any(name in task for task in _tasks(referee).values()) for name in _HUB_TASKS),
                 "the event hub started")  # fmt: skip
        watch.cancel()
        before = _tasks(referee)  # the hub's tasks stay, with no watcher: what idle counts
        idle = len(before)
        requests = [rpb.SubmitMoveRequest(game_id=g.game_id, move=DISCARD, request_id="d2") for g in games]
        private_redis.process.send_signal(signal.SIGSTOP)
        try:
            calls: list[grpc.Future] = []
            for game, request in zip(games, requests, strict=True):
                calls.append(client.stub.SubmitMove.future(request, metadata=md(game.tokens[1])))
                calls.append(client.stub.GetGame.future(rpb.GetGameRequest(game_id=game.game_id),
                                                        metadata=md(game.tokens[1])))  # fmt: skip
            watches = [client.stub.WatchGame(rpb.WatchGameRequest(game_id=g.game_id), metadata=md(g.tokens[0]))
                       for g in games]  # fmt: skip
            wait_for(lambda: _task_count(referee) > idle, "the calls in the referee")
            with httpx.Client(base_url=referee.http_url, timeout=0.3) as http:  # gives up after 0.3 s
                for game, request in zip(games, requests, strict=True):
                    with pytest.raises(httpx.TimeoutException):
                        http.post(f"/{SERVICE}/SubmitMove", content=json_format.MessageToJson(request),
                                  headers={"content-type": "application/json",
                                           "authorization": f"Bearer {game.tokens[1]}"})  # fmt: skip
            for call in calls:
                call.cancel()
            for stream in watches:
                stream.cancel()
        finally:
            private_redis.process.send_signal(signal.SIGCONT)
        try:
            wait_for(lambda: _task_count(referee) <= idle, "every task of the calls ended")
        except AssertionError:
            left = sorted(task for key, task in _tasks(referee).items() if key not in before)
            raise AssertionError(f"the tasks of the calls never all ended; tasks since: {left}") from None
        for game, request in zip(games, requests, strict=True):
            resent = client.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=30)
            assert resent.version == 2  # applied (by a send whose caller left), and once
            assert direct.hget(game_key(game.game_id), "version") == b"2"
            assert direct.llen(log_key(game.game_id)) == 3
    finally:
        client.close()
        direct.close()


@pytest.mark.parametrize("fault", ["SIGSTOP", "SIGKILL"])
def test_many_concurrent_resends_of_one_request_across_an_outage_get_one_answer_and_apply_once(
    private_redis: RedisProcess, referee: ServerThread, fault: str
) -> None:
    client = Client(referee.address)
    direct = redis.Redis.from_url(private_redis.url)
    try:
        game = drawn_knock_game(client)
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DISCARD, request_id="the-one")
        go = threading.Event()
        refusals: Counter[str] = Counter()

        def resend(n: int) -> bytes:
            """Send until answered, as an SDK does (half with a short deadline)."""
            mine = Client(referee.address)
            go.wait()
            deadline = time.monotonic() + 60
            try:
                while True:
                    try:
                        answer = mine.stub.SubmitMove(request, metadata=md(game.tokens[1]), timeout=0.3 if n % 2 else 5)
                        return answer.SerializeToString(deterministic=True)
                    except grpc.RpcError as exc:
                        assert exc.code() in (C.UNAVAILABLE, C.DEADLINE_EXCEEDED), (exc.code(), exc.details())
                        refusals[exc.code().name] += 1
                        assert time.monotonic() < deadline, "never answered"
                        time.sleep(0.02)
            finally:
                mine.close()

        with ThreadPoolExecutor(16) as pool:
            sent = [pool.submit(resend, n) for n in range(16)]
            if fault == "SIGSTOP":
                private_redis.process.send_signal(signal.SIGSTOP)
            else:
                private_redis.kill()
            go.set()
            wait_for(lambda: sum(refusals.values()) >= 16, "the resends refused while Redis is out")
            if fault == "SIGSTOP":
                private_redis.process.send_signal(signal.SIGCONT)
            else:
                private_redis.restart()
            answers = {future.result() for future in sent}
        assert len(answers) == 1  # every resend got the same answer, byte for byte ...
        assert rpb.SubmitMoveResponse.FromString(answers.pop()).version == 2
        assert direct.hget(game_key(game.game_id), "version") == b"2"  # ... and the move was applied once
        assert direct.llen(log_key(game.game_id)) == 3
    finally:
        client.close()
        direct.close()
