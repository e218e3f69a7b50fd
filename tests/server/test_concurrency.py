"""Races: conflicting moves on one game, and two server processes sharing one Redis."""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.refkit import ORGANIZER, Client, ServerThread, bot_move, md, reason_of

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 16
ROUNDS = 100


def test_sixteen_clients_race_one_move_per_round(referee_server: ServerThread) -> None:
    clients = [Client(referee_server.address) for _ in range(CLIENTS)]
    try:
        main = clients[0]
        game = main.create("gin", match=rpb.MatchSettings(target_score=100_000))
        barrier = threading.Barrier(CLIENTS)
        applied_events = 0
        with ThreadPoolExecutor(CLIENTS) as pool:
            for round_no in range(ROUNDS):
                view = main.view(game, game.tokens[0])
                token = game.tokens[view.to_act]
                own = main.view(game, token)
                # no knock: the hands run to the end of the stock, so the match goes on for all 100 rounds
                moves = [m for m in own.legal_moves if m.WhichOneof("move") not in ("knock", "big_gin")]
                pinned = round_no % 2 == 0  # half the rounds pin expected_version, half let the server retry

                request = rpb.SubmitMoveRequest(game_id=game.game_id)
                if pinned:
                    request.expected_version = own.version
                jobs = [
                    (clients[i], _with_move(request, moves[i % len(moves)]), token, barrier) for i in range(CLIENTS)
                ]
                results = list(pool.map(_race, jobs))
                won = [r for r in results if isinstance(r, rpb.SubmitMoveResponse)]
                lost = [r for r in results if isinstance(r, grpc.RpcError)]
                assert len(won) == 1, f"round {round_no}: {len(won)} moves applied"
                assert won[0].version == own.version + 1
                for exc in lost:
                    expected = {grpc.StatusCode.ABORTED} if pinned else {
                        grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION}  # fmt: skip
                    assert exc.code() in expected, (exc.code(), exc.details())
                    assert reason_of(exc) is not None
                applied_events += len(won[0].events)
        final = main.view(game, game.tokens[0])
        assert final.version == ROUNDS
        replayed = [e for page in main.replay(game, ORGANIZER) for e in page.events if e.version]
        assert len(replayed) == applied_events
        assert sorted({e.version for e in replayed}) == list(range(1, ROUNDS + 1))
    finally:
        for c in clients:
            c.close()


def _with_move(request: rpb.SubmitMoveRequest, move: pb.Move) -> rpb.SubmitMoveRequest:
    copy = rpb.SubmitMoveRequest()
    copy.CopyFrom(request)
    copy.move.CopyFrom(move)
    return copy


def _race(job: tuple[Client, rpb.SubmitMoveRequest, str, threading.Barrier]) -> rpb.SubmitMoveResponse | grpc.RpcError:
    client, request, token, barrier = job
    barrier.wait()
    try:
        response: rpb.SubmitMoveResponse = client.stub.SubmitMove(request, metadata=md(token))
        return response
    except grpc.RpcError as exc:
        return exc


@pytest.fixture
def two_servers(redis_server: RedisProcess) -> Iterator[list[str]]:
    """Two `rummy-referee serve` processes on free ports, sharing the suite's Redis."""
    env = {**os.environ, "RUMMY_ORGANIZER_TOKEN": ORGANIZER}
    processes = [RefereeProcess(["--port", "0", "--no-http", "--redis-url", redis_server.url], env=env)
                 for _ in range(2)]  # fmt: skip
    try:
        for process in processes:
            process.start()
        yield [process.address for process in processes]
    finally:
        for process in processes:
            process.signal(signal.SIGTERM)
        for process in processes:
            assert process.process is None or process.wait(30) == 0


def test_two_servers_alternate_moves_of_the_same_games(two_servers: list[str]) -> None:
    clients = [Client(a) for a in two_servers]
    try:
        games = [clients[0].create("gin", token=ORGANIZER, seed=bytes([n]) * 16) for n in range(3)]
        games.append(clients[1].create("rummy", ("Ann", "Bob", "Cy"), token=ORGANIZER, seed=b"r" * 16))
        rng = random.Random(7)
        # a watcher on server 0 follows game 0, whose moves alternate between the servers
        watch = clients[0].stub.WatchGame(rpb.WatchGameRequest(game_id=games[0].game_id, after_version=0),
                                          metadata=md(games[0].tokens[0]))  # fmt: skip
        reported: dict[str, list[tuple[int, int]]] = {g.game_id: [] for g in games}
        moves_made = dict.fromkeys(reported, 0)
        for step in range(240):
            game = games[step % len(games)]
            c = clients[(step // len(games)) % 2]  # each game's moves alternate between the two servers
            view = c.view(game, game.tokens[0])
            if view.phase == pb.PHASE_MATCH_OVER:
                continue
            own = c.view(game, game.tokens[view.to_act])
            response = c.move(game, game.tokens[view.to_act], bot_move(own, rng), expected_version=own.version)
            moves_made[game.game_id] += 1
            assert response.version == moves_made[game.game_id]
            reported[game.game_id] += [(e.version, e.index) for e in response.events]
        for i, game in enumerate(games):
            stored = [(e.version, e.index) for page in clients[i % 2].replay(game) for e in page.events if e.version]
            assert stored == reported[game.game_id]
            assert clients[(i + 1) % 2].view(game, game.tokens[1]).version == moves_made[game.game_id]
        seen = []
        for message in watch:
            seen.append((message.event.version, message.event.index))
            if len(seen) == len(reported[games[0].game_id]):
                break
        watch.cancel()
        assert seen == reported[games[0].game_id]
    finally:
        for c in clients:
            c.close()
