"""Time controls and timeout policies, enforced by real `rummy-referee serve` processes sharing one redis-server.

Each referee runs the timeout firer (server/clocks.py); the deadlines are short (300-500 ms), so the whole module
takes a few seconds beyond the processes' start.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
import redis

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess, start_redis
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, expect_error, md, move_from_text
from tests.server.refkit import create_timed as _create

ROOT = Path(__file__).resolve().parents[2]
TC = pb.TimeControl
AUTO = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=2)
FORFEIT = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH)


class Referee:
    """One `rummy-referee serve` subprocess (its firer polls every 50 ms)."""

    def __init__(self, redis_url: str) -> None:
        self.process = RefereeProcess(
            ["--port", "0", "--no-http", "--no-bots", "--timeout-poll", "0.05", "--redis-url", redis_url],
            env={**os.environ, "RUMMY_ORGANIZER_TOKEN": ORGANIZER},
        ).start()  # fmt: skip
        self.client = Client(self.process.address)

    def kill(self) -> None:
        """SIGKILL, by pid."""
        self.client.close()
        self.process.kill()

    def stop(self) -> None:
        if self.process.process is not None and self.process.process.poll() is None:
            self.client.close()
            assert self.process.stop(30) == 0


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of this module (its referees' firers must not fire other modules' games)."""
    process = start_redis(tmp_path_factory.mktemp("clocks-redis"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def referees(own_redis: RedisProcess) -> Iterator[list[Referee]]:
    """Two referees sharing the module's Redis."""
    started = [Referee(own_redis.url) for _ in range(2)]
    try:
        yield started
    finally:
        for r in started:
            r.stop()


def _watch_to_end(client: Client, game: Game, timeout: float = 60) -> list[pb.Event]:
    """Every event of the game from its creation (the stream ends after match_ended)."""
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0),
                                   metadata=md(game.spectator), timeout=timeout)  # fmt: skip
    return [r.event for r in stream if r.HasField("event")]


def _lateness_ms(events: list[pb.Event]) -> list[float]:
    """For each timed_out event: its commit's time (the clock_stopped of the same version) minus its deadline."""
    late = []
    for e in events:
        if e.kind == "timed_out":
            stop = next(x for x in events if x.version == e.version and x.kind == "clock_stopped")
            late.append(stop.data["at_ms"] - e.data["deadline_ms"])
    return late


#: How late a timeout may fire here: a failure bound only (a timeout that never fires fails the watch's 60 s). How
#: promptly they fire is bench/clock.py's figure (README Benchmarks: p99 < 1000 ms); these tests asserted that bar,
#: so a firer paused for a second (a loaded machine; shown with SIGSTOP: 1343 ms) failed them.
LATE_BOUND_MS = 30_000

GAMES = [  # profile, time control, policy, players, automatic moves of the loser before its forfeit
    ("gin", TC(per_move=TC.PerMove(limit_ms=300)), FORFEIT, 2, 0),
    ("hollywood-gin", TC(clock=TC.Clock(initial_ms=400, increment_ms=0)), AUTO, 2, 2),
    ("oklahoma-gin", TC(bank=TC.Bank(allowance_ms=200, bank_ms=200)), FORFEIT, 2, 0),
    ("rummy", TC(per_move=TC.PerMove(limit_ms=300)), AUTO, 3, 2),
    ("rummy", TC(clock=TC.Clock(initial_ms=300, increment_ms=50)), FORFEIT, 2, 0),
]


def test_seats_that_never_move_lose_on_time_under_each_policy_with_a_referee_killed(
    own_redis: RedisProcess, referees: list[Referee]
) -> None:
    doomed = Referee(own_redis.url)  # creates the games, then is killed before any deadline
    games = [_create(doomed.client, profile, control, policy, n) for profile, control, policy, n, _ in GAMES]
    doomed.kill()
    watcher = referees[0].client
    with ThreadPoolExecutor(len(games)) as pool:
        results = list(pool.map(lambda g: _watch_to_end(watcher, g), games))
    for (profile, _, policy, _, autos), game, events in zip(GAMES, games, results, strict=True):
        kinds = [e.kind for e in events]
        assert kinds[-1] == "match_ended", (profile, kinds)
        view = watcher.view(game, game.spectator)
        assert view.result.ended == pb.MATCH_END_TIME
        timed_out = [e for e in events if e.kind == "timed_out"]
        loser = timed_out[-1].seat
        assert timed_out[-1].data["forfeit"]
        assert [s for s, end in enumerate(view.result.seat_ends) if end == pb.SEAT_END_LOST_ON_TIME] == [loser]
        assert view.result.winners and loser not in view.result.winners
        auto = [e for e in events if e.kind == "auto_moved"]
        if policy is FORFEIT:
            assert not auto and len(timed_out) == 1
        else:  # every seat got its automatic moves (each seat's count in a row), the loser exactly `autos`
            assert len([e for e in auto if e.seat == loser]) == autos
            assert max(e.data["auto_moves"] for e in auto) == autos
            moved = {e.version for e in events if e.kind in ("drew", "discarded", "passed", "declared")}
            assert {e.version for e in auto} <= moved  # each automatic move played a real move
        late = _lateness_ms(events)
        assert late and max(late) < LATE_BOUND_MS, (profile, late)
        assert min(late) >= 0


def test_a_move_racing_its_own_deadline_exactly_one_applies(referees: list[Referee], own_redis: RedisProcess) -> None:
    trials = 24
    clients = [r.client for r in referees]
    games = [_create(clients[i % 2], "gin", TC(per_move=TC.PerMove(limit_ms=300)), FORFEIT) for i in range(trials)]
    r = redis.Redis.from_url(own_redis.url)

    def redis_ms() -> int:
        seconds, micros = r.time()
        return int(seconds * 1000 + micros // 1000)

    def race(i: int) -> tuple[bool, str]:
        game = games[i]
        client = clients[(i + 1) % 2]
        view = client.view(game, game.tokens[0])
        target = view.deadline_ms + random.uniform(-40, 25)
        while (left := target - redis_ms()) > 0:
            time.sleep(min(left, 20) / 1000)  # sleeping up to a moment in time: what is raced is the clock
        try:
            client.move(game, game.tokens[view.to_act], move_from_text("draw stock"))
            return True, ""
        except grpc.RpcError as exc:
            return False, exc.details() or ""

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(race, range(trials)))
    r.close()
    applied = 0
    for game, (moved, detail) in zip(games, outcomes, strict=True):
        events = _watch_to_end(clients[0], game)
        first = [e for e in events if e.version == 1]
        if moved:  # the move is version 1; the timeout (of the other seat) comes later
            assert first[0].kind == "drew", [e.kind for e in first]
            applied += 1
        else:  # the timeout is version 1, and the move changed nothing
            assert first[0].kind == "timed_out", ([e.kind for e in first], detail)
            assert not [e for e in events if e.kind == "drew"]
        assert [e.kind for e in events].count("timed_out") == 1
        assert [e.kind for e in events].count("match_ended") == 1
    print(f"race: {applied} moves applied, {trials - applied} timeouts first")


def test_clock_fields_in_views_and_events(referees: list[Referee]) -> None:
    client = referees[0].client
    # a clock with an increment
    game = _create(client, "gin", TC(clock=TC.Clock(initial_ms=20_000, increment_ms=1_000)), FORFEIT)
    view = client.view(game, game.tokens[0])
    seat = view.to_act
    assert [c.remaining_ms for c in view.clocks] == [20_000, 20_000]
    assert [c.running for c in view.clocks] == [s == seat for s in range(2)]
    running = view.clocks[seat]
    assert view.deadline_ms == running.deadline_ms == running.started_ms + 20_000
    answer = client.move(game, game.tokens[seat], move_from_text("draw stock"))
    stopped = next(e for e in answer.events if e.kind == "clock_stopped")
    started = next(e for e in answer.events if e.kind == "clock_started")
    spent = int(stopped.data["spent_ms"])
    assert 0 <= spent < 20_000
    assert stopped.data["remaining_ms"] == 20_000 - spent + 1_000
    assert started.seat == seat  # the same seat's next decision: its discard
    assert started.deadline_ms == started.data["started_ms"] + 21_000 - spent
    assert [c.remaining_ms for c in started.clocks][seat] == 21_000 - spent
    assert answer.view.deadline_ms == started.deadline_ms
    assert answer.view.clocks[seat].running and not answer.view.clocks[1 - seat].running
    # a bank: spent only beyond the allowance
    game = _create(client, "gin", TC(bank=TC.Bank(allowance_ms=250, bank_ms=10_000)), FORFEIT)
    view = client.view(game, game.tokens[0])
    seat = view.to_act
    assert view.deadline_ms == view.clocks[seat].started_ms + 250 + 10_000
    quick = client.move(game, game.tokens[seat], move_from_text("draw stock"))
    stop = next(e for e in quick.events if e.kind == "clock_stopped")
    if stop.data["spent_ms"] <= 250:
        assert stop.data["remaining_ms"] == 10_000
    time.sleep(0.4)  # think beyond the allowance: the bank pays for the rest
    card = next(m for m in quick.view.legal_moves if m.HasField("discard")).discard.card
    slow = client.move(game, game.tokens[seat], move_from_text(f"discard {card}"))
    stop = next(e for e in slow.events if e.kind == "clock_stopped")
    assert stop.data["spent_ms"] >= 400
    before = next(e for e in quick.events if e.kind == "clock_started").data["remaining_ms"]
    assert stop.data["remaining_ms"] == before - (stop.data["spent_ms"] - 250)
    # a limit per move: each decision gets the limit
    game = _create(client, "rummy", TC(per_move=TC.PerMove(limit_ms=30_000)), AUTO)
    created = game.created.settings
    assert created.time_control.per_move.limit_ms == 30_000
    assert created.timeout_policy.kind == pb.TimeoutPolicy.KIND_AUTO_MOVE and created.timeout_policy.max_auto_moves == 2
    view = client.view(game, game.tokens[0])
    assert [c.remaining_ms for c in view.clocks] == [30_000, 30_000]
    # watchers see the clocks start and stop, typed
    answer = client.move(game, game.tokens[view.to_act], move_from_text("draw stock"))
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0),
                                   metadata=md(game.spectator), timeout=10)  # fmt: skip
    seen = []
    for r in stream:
        seen.append(r.event)
        if r.event.version == answer.version and r.event.kind == "clock_started":
            break
    stream.cancel()
    kinds = [(e.version, e.kind) for e in seen]
    assert (0, "clock_started") in kinds and (1, "clock_stopped") in kinds and (1, "clock_started") in kinds
    assert all(len(e.clocks) == 2 for e in seen if e.kind == "clock_started")
    assert not any(e.clocks for e in seen if e.kind == "clock_stopped")  # the clock_started after it has them
    assert seen[-1].deadline_ms == seen[-1].data["started_ms"] + 30_000
    # a game without a time control has no clocks
    plain = client.create("gin")
    assert not client.view(plain, plain.tokens[0]).clocks
    assert not client.view(plain, plain.tokens[0]).HasField("deadline_ms")


@pytest.mark.parametrize(
    ("control", "policy"),
    [
        (TC(per_move=TC.PerMove(limit_ms=0)), None),
        (TC(per_move=TC.PerMove(limit_ms=86_400_001)), None),
        (TC(clock=TC.Clock(initial_ms=1000, increment_ms=-1)), None),
        (TC(bank=TC.Bank(allowance_ms=100, bank_ms=0)), None),
        (
            TC(per_move=TC.PerMove(limit_ms=1000)),
            pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=1001),
        ),
        (
            TC(per_move=TC.PerMove(limit_ms=1000)),
            pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH, max_auto_moves=2),
        ),
        (TC(per_move=TC.PerMove(limit_ms=1000)), pb.TimeoutPolicy(kind=7)),  # type: ignore[arg-type]
        (None, FORFEIT),
    ],
)
def test_bad_time_controls_are_refused(referees: list[Referee], control: pb.TimeControl | None,
                                       policy: pb.TimeoutPolicy | None) -> None:  # fmt: skip
    request = rpb.CreateGameRequest(seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")])
    if control is not None:
        request.time_control.CopyFrom(control)
    if policy is not None:
        request.timeout_policy.CopyFrom(policy)
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TIME_CONTROL"):
        referees[0].client.stub.CreateGame(request)


def test_open_seats_and_a_time_control_are_refused(referees: list[Referee]) -> None:
    request = rpb.CreateGameRequest(seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(open=True)],
                                    time_control=TC(per_move=TC.PerMove(limit_ms=1000)))  # fmt: skip
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TIME_CONTROL"):
        referees[0].client.stub.CreateGame(request)


def test_pending_deadlines_fire_after_a_restart(tmp_path: Path) -> None:
    """No referee runs while the deadlines pass; the next one to start fires them."""
    store = start_redis(tmp_path / "redis")
    try:
        first = Referee(store.url)
        games = [_create(first.client, "gin", TC(per_move=TC.PerMove(limit_ms=300)), FORFEIT) for _ in range(3)]
        first.kill()
        threading.Event().wait(0.5)  # every deadline passes with no referee running
        second = Referee(store.url)
        try:
            for game in games:
                events = _watch_to_end(second.client, game)
                assert [e.kind for e in events][-1] == "match_ended"
                assert any(e.kind == "timed_out" for e in events)
        finally:
            second.stop()
    finally:
        store.stop()


def test_timeouts_fire_on_a_redis_cluster(redis_cluster: LocalCluster) -> None:
    """The deadline index spreads over the Cluster's nodes (16 shards, each its own hash tag); a Cluster client
    has no pipelined hot path, so the index write is awaited before the commit."""
    server = ServerThread(redis_cluster.url, firer=True)
    client = Client(server.address)
    try:
        games = [_create(client, "gin", TC(per_move=TC.PerMove(limit_ms=300)), FORFEIT) for _ in range(4)]
        games.append(_create(client, "rummy", TC(bank=TC.Bank(allowance_ms=150, bank_ms=150)), AUTO))
        for game in games:
            events = _watch_to_end(client, game)
            assert events[-1].kind == "match_ended"
            assert client.view(game, game.spectator).result.ended == pb.MATCH_END_TIME
            assert max(_lateness_ms(events)) < LATE_BOUND_MS
            assert len(events[-2].clocks) == 2  # the last clock_stopped: no clock starts after it
    finally:
        client.close()
        server.stop()
