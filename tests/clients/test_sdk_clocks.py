"""The SDK's time controls through a real referee over the suite's real redis-server: a game with a limit per move
and one with a clock (both clients), every seat's clock and the deadline in the views and events a bot receives,
and the seat runner with a bot that sleeps past its time (the referee's timeout policy decides, not the runner)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import engine
from clients.bots import make_bot
from clients.runner import SeatResult, play_seat, play_seat_async
from clients.sdk import AsyncRefereeClient, Clock, CreatedGame, PerMove, RefereeClient, TimeoutPolicy
from clients.view import View
from server.redis_launcher import RedisProcess
from tests import kit
from tests.clients.clientkit import ORGANIZER, ServerThread, wait_until


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_a_limit_per_move_in_settings_views_and_events(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], time_control=PerMove(20), allow_spectators=True)
    assert game.settings.time_control == PerMove(20)
    assert game.settings.timeout_policy == TimeoutPolicy("forfeit_match")  # pinned by the referee
    spectator = client.get_game(game.game_id, token=game.spectator_token).snapshot
    seat = spectator.to_act
    assert seat is not None and spectator.deadline_ms is not None
    before = _now_ms()
    snap = client.get_game(game.game_id, token=game.tokens[seat]).snapshot
    view = snap.view
    assert [c.seat for c in view.clocks] == [0, 1] and view.clocks == spectator.clocks  # clocks are public
    mine = view.my_clock
    assert mine is not None and mine.running and mine.remaining == 20
    assert mine.started_ms is not None and mine.deadline_ms == view.deadline_ms == mine.started_ms + 20_000
    left = view.time_left()
    assert left is not None and 0 < left <= 20 and view.deadline_ms - before <= 20_000 + 1000
    other = view.clocks[1 - seat]
    assert not other.running and other.deadline_ms is None and other.remaining == 20
    idle = client.get_game(game.game_id, token=game.tokens[1 - seat]).snapshot.view
    assert idle.time_left() is None and idle.deadline_ms == view.deadline_ms  # not its decision

    moved = client.submit_move(game.game_id, snap.legal[0], token=game.tokens[seat])
    kinds = [e["kind"] for e in moved.events]
    assert kinds[-2:] == ["clock_stopped", "clock_started"], kinds
    stopped, started = moved.events[-2], moved.events[-1]
    assert stopped["seat"] == seat and started["seat"] == moved.snapshot.to_act
    assert started["deadline_ms"] == moved.snapshot.deadline_ms and len(started["clocks"]) == 2
    assert [c["running"] for c in started["clocks"]] == [s == started["seat"] for s in (0, 1)]
    assert moved.snapshot.view.clocks[seat].remaining == 20  # a limit per move carries nothing over
    # a watcher from the start sees the first clock start too, with the deadline
    with client.watch(game.game_id, after_version=-1, token=game.spectator_token) as watch:
        seen = []
        for item in watch:
            assert isinstance(item, dict)
            seen.append(item)
            if item["version"] == moved.version and item["kind"] == "clock_started":
                break
    first = next(e for e in seen if e["kind"] == "clock_started")
    assert first["version"] == 0 and first["seat"] == seat and first["deadline_ms"] == view.deadline_ms


def test_a_clock_with_an_increment_through_the_async_client(referee: ServerThread) -> None:
    async def body() -> None:
        async with AsyncRefereeClient(referee.address) as client:
            game = await client.create_game("rummy", ["Ann", "Bob", "Cy"], time_control=Clock(30, 2),
                                            timeout_policy=TimeoutPolicy("auto_move", 2))  # fmt: skip
            assert game.settings.time_control == Clock(30, 2)
            assert game.settings.timeout_policy == TimeoutPolicy("auto_move", 2)
            info = await client.get_game(game.game_id, token=game.tokens[0])
            seat = info.snapshot.to_act
            assert seat is not None
            snap = (await client.get_game(game.game_id, token=game.tokens[seat])).snapshot
            assert [c.remaining for c in snap.clocks] == [30, 30, 30]
            moved = await client.submit_move(game.game_id, snap.legal[0], token=game.tokens[seat])
            after = moved.snapshot.view.clocks[seat]
            # the time it spent is gone, the increment added; the others' clocks untouched. (The time spent is the
            # referee's, in its event: "a few round trips" under 1 s was no bound on a loaded machine.)
            stopped = next(e for e in moved.events if e["kind"] == "clock_stopped")
            assert stopped["seat"] == seat and 0 <= stopped["spent_ms"] < 30_000
            assert round(after.remaining * 1000) == 30_000 - stopped["spent_ms"] + 2_000
            assert [c.remaining for c in moved.snapshot.clocks if c.seat != seat] == [30, 30]
            # every seat's clocks ride on the clock_started that follows (on clock_stopped only when none does)
            stamped = [e for e in moved.events if e["kind"] in ("clock_stopped", "clock_started") and "clocks" in e]
            assert [e["kind"] for e in stamped] == ["clock_started"]
            clocks = stamped[-1]["clocks"]
            assert clocks[seat]["remaining_ms"] == round(after.remaining * 1000)

    asyncio.run(body())


class _Sleepy:
    """A random bot that, from its ``after``-th decision on, thinks for ``seconds`` (past any short limit); it
    records the time its view gave it and the clock events it observed."""

    name = "sleepy"

    def __init__(self, after: int, seconds: float) -> None:
        self.inner = make_bot("random", 1)
        self.after, self.seconds = after, seconds
        self.asked = 0
        self.left: list[float | None] = []
        self.kinds: list[str] = []

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        self.asked += 1
        self.left.append(view.time_left())
        if self.asked > self.after:
            time.sleep(self.seconds)
        return self.inner.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        self.kinds.append(str(event["kind"]))


def _first(client: RefereeClient, game: CreatedGame) -> int:
    """The seat to act first (the bot that sleeps takes it: with a short limit, the well-behaved bot then never
    has to beat it on a loaded machine)."""
    seat = client.get_game(game.game_id, token=game.tokens[0]).snapshot.to_act
    assert seat is not None
    return seat


def _play_both(redis_url: str, quiet: kit.ServerThread, game: CreatedGame, sleepy: _Sleepy, seat: int,
               **kwargs: Any) -> tuple[SeatResult, SeatResult]:  # fmt: skip
    """Seat ``seat`` played by ``sleepy``, the other by a random bot, through ``quiet``, a referee that fires no
    timeouts: (sleepy's result, the other's). Timeouts are fired (by another referee over the same Redis) only once
    the sleepy bot has been asked its first decision: with the session's firing referee, a short first deadline
    passed before a runner started on a loaded machine, and the bot was never asked nor saw the timeout."""
    results: dict[int, SeatResult] = {}
    fine = make_bot("random", 2)
    threads = [
        threading.Thread(target=lambda s=s, b=b, k=k: results.__setitem__(s, play_seat(
            quiet.address, game.game_id, game.tokens[s], b, idle_check=1.0, **k)), daemon=True)
        for s, b, k in ((seat, sleepy, kwargs), (1 - seat, fine, {}))
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    assert wait_until(lambda: sleepy.asked >= 1, timeout=60), "the sleepy bot was never asked"
    with ServerThread(redis_url):  # fires the timeouts from now on
        for thread in threads:
            thread.join(60)
            assert not thread.is_alive(), "a seat's runner never stopped"
    return results[seat], results[1 - seat]


def _quiet(redis_url: str) -> kit.ServerThread:
    """A referee that fires no timeouts (a move after its deadline is refused OUT_OF_TIME, the timeout waits)."""
    return kit.ServerThread(kit.referee_settings(redis_url, organizer_token=ORGANIZER))


def test_a_bot_that_sleeps_past_a_short_limit_loses_the_match_on_time(private_redis: RedisProcess) -> None:
    with _quiet(private_redis.url) as quiet, RefereeClient(quiet.address) as client:
        game = client.create_game("gin", ["Sleepy", "Fine"], time_control=PerMove(0.3))
        seat = _first(client, game)
        sleepy = _Sleepy(after=0, seconds=2.0)
        started = time.monotonic()
        late, fine = _play_both(private_redis.url, quiet, game, sleepy, seat,
                                move_timeout=0.1)  # the runner's own limit: not applied  # fmt: skip
        assert time.monotonic() - started < 15
    assert late.finished and not late.forfeit and late.seat_end == "lost_on_time" and late.rejected == 0
    assert late.late == sleepy.asked <= 1  # left behind once the referee timed it out (unless it came too late)
    assert fine.finished and fine.seat_end == "finished"
    result = late.match_result
    assert result is not None and result["ended"] == "time" and result["winners"] == [1 - seat]
    assert all(left is not None and 0 <= left <= 0.3 for left in sleepy.left)  # the bot saw its time
    assert "timed_out" in sleepy.kinds and sleepy.kinds[-1] == "match_ended"


def test_under_auto_move_the_referee_plays_for_a_sleeping_bot_until_it_forfeits(private_redis: RedisProcess) -> None:
    with _quiet(private_redis.url) as quiet, RefereeClient(quiet.address) as client:
        game = client.create_game("gin", ["Sleepy", "Fine"], time_control=PerMove(1.0),
                                  timeout_policy=TimeoutPolicy("auto_move", 1))  # fmt: skip
        seat = _first(client, game)
        sleepy = _Sleepy(after=0, seconds=2.5)
        late, fine = _play_both(private_redis.url, quiet, game, sleepy, seat)
    assert late.seat_end == "lost_on_time" and fine.seat_end == "finished" and late.rejected == 0
    assert "auto_moved" in sleepy.kinds and 1 <= late.late <= 2 and "timed_out" in sleepy.kinds


def test_the_asyncio_runner_leaves_a_sleeping_bot_behind_once_the_referee_timed_it_out(
    client: RefereeClient, referee: ServerThread
) -> None:
    game = client.create_game("rummy", ["Sleepy", "Fine"], time_control=Clock(0.3, 0.1))
    seat = _first(client, game)
    sleepy = _Sleepy(after=0, seconds=2.0)

    async def body() -> list[SeatResult]:
        async with AsyncRefereeClient(referee.address) as aio:
            return await asyncio.gather(
                play_seat_async(aio, game.game_id, game.tokens[seat], sleepy, idle_check=1.0),
                play_seat_async(aio, game.game_id, game.tokens[1 - seat], make_bot("random", 3), idle_check=1.0),
            )

    late, fine = asyncio.run(body())
    assert late.seat_end == "lost_on_time" and late.late == sleepy.asked <= 1 and not late.forfeit
    assert fine.seat_end == "finished" and fine.match_result is not None
    assert fine.match_result["winners"] == [1 - seat]
