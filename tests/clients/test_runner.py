"""The seat runner: whole matches through the referee, forfeits of faulty bots, and a referee killed with
SIGKILL and started again in the middle of a match."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import engine
from clients.bots import make_bot
from clients.bots.base import Bot
from clients.runner import SeatResult, play_seat, play_seat_async
from clients.sdk import RefereeClient, RetryPolicy
from clients.sdk.values import CreatedGame, MoveResult
from clients.view import View
from tests.clients.clientkit import ServerProcess, ServerThread, wait_until


def _run_seats(target: str, game: CreatedGame, bots: Sequence[Bot], **kwargs: Any) -> list[SeatResult]:
    """Every seat's runner in a thread of its own; their results by seat."""
    results: list[SeatResult | None] = [None] * len(bots)

    def run(seat: int) -> None:
        results[seat] = play_seat(target, game.game_id, game.tokens[seat], bots[seat], **kwargs)

    threads = [threading.Thread(target=run, args=(seat,), daemon=True) for seat in range(len(bots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None for r in results), "a runner did not return"
    return [r for r in results if r is not None]


def _assert_played_out(results: Sequence[SeatResult], client: RefereeClient, game: CreatedGame) -> None:
    """Every seat saw the match end; every applied move was counted by exactly one runner, once."""
    final = client.get_game(game.game_id, token=game.tokens[0]).snapshot
    assert final.over
    for seat, r in enumerate(results):
        assert (r.finished, r.forfeit, r.rejected, r.seat) == (True, False, 0, seat), r
        assert r.match_result == final.result
    assert sum(r.moves for r in results) == final.version


#: The runners' idle_check where a test tells "at once" from "after idle_check" by the idle fetches.
IDLE_CHECK_S = 60.0


class _Faulty:
    """A random bot that misbehaves on its ``after``-th move: raises, sleeps, or plays an illegal move."""

    name = "faulty"

    def __init__(self, fault: str, after: int = 0, seed: int = 0) -> None:
        self.fault = fault
        self.after = after
        self.moves = 0
        self.faulted = False
        self.inner = make_bot("random", seed)

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        self.moves += 1
        if self.moves > self.after:
            if self.fault == "raise":
                raise RuntimeError("bot bug")
            if self.fault == "sleep":
                time.sleep(6)
            if self.fault == "illegal" and not self.faulted and view.phase == "discard":
                self.faulted = True
                outside = next(c for c in range(52) if engine.card_text(c) not in view.hand)
                return engine.Discard(outside)
            if self.fault == "junk":
                return "discard TD"  # type: ignore[return-value]
        return self.inner.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        self.inner.observe(event)


class _Recorder:
    """Wraps a bot and records every event it is shown. With ``table`` (every recorder of the game), its first
    move waits until each of them has been shown an event: every runner is then following the game from before
    the first move (a runner that started later would rightly show its bot only the events after its first view)."""

    def __init__(self, bot: Bot, table: Sequence[_Recorder] = ()) -> None:
        self.name = bot.name
        self.bot = bot
        self.events: list[Mapping[str, Any]] = []
        self.table = table

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        if self.table:
            assert wait_until(lambda: all(r.events for r in self.table), timeout=5), "a runner did not start"
        return self.bot.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)
        self.bot.observe(event)


def test_two_runners_play_a_gin_match_to_its_end(client: RefereeClient, referee: ServerThread) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=2)
    bots: list[_Recorder] = []
    bots += [_Recorder(make_bot("random", 1), bots), _Recorder(make_bot("strong", 2), bots)]
    results = _run_seats(referee.address, game, bots)
    _assert_played_out(results, client, game)
    assert all(r.missed_turns == 0 for r in results)  # every turn was noticed from the events (see below)
    replay = client.get_replay(game.game_id, token=game.tokens[0]).events
    _assert_observed_the_whole_match(bots, replay)


def _assert_observed_the_whole_match(bots: Sequence[_Recorder], replay: Sequence[Mapping[str, Any]]) -> None:
    """Each bot observed every event of the match, in order, once: the first deal's (version 0) too, its own
    ``dealt`` with its cards and every other seat's without."""
    assert [e["kind"] for e in replay if e["version"] == 0] == ["hand_started"] + ["dealt"] * len(bots)
    for seat, bot in enumerate(bots):
        assert [(e["version"], e["index"], e["kind"]) for e in bot.events] == [
            (e["version"], e["index"], e["kind"]) for e in replay
        ]
        first_deal = [e for e in bot.events if e["version"] == 0 and e["kind"] == "dealt"]
        assert [(e["seat"], "cards" in e) for e in first_deal] == [(s, s == seat) for s in range(len(bots))]
        assert first_deal[seat] == next(e for e in replay if e["kind"] == "dealt" and e["seat"] == seat)


def test_async_runners_play_a_rummy_match(client: RefereeClient, referee: ServerThread) -> None:
    game = client.create_game("rummy", ["Ann", "Bob", "Cy", "Dee"], max_hands=1)
    bots: list[_Recorder] = []
    bots += [_Recorder(make_bot("random" if s % 2 else "strong", s), bots) for s in range(4)]

    async def main() -> list[SeatResult]:
        return list(await asyncio.gather(*(
            play_seat_async(referee.address, game.game_id, game.tokens[s], bots[s]) for s in range(4)
        )))  # fmt: skip

    results = asyncio.run(main())
    _assert_played_out(results, client, game)
    _assert_observed_the_whole_match(bots, client.get_replay(game.game_id, token=game.tokens[0]).events)


class _OvertakenAnswers(RefereeClient):
    """A client whose first ``times`` move answers that pass the turn reach the runner only once the turn came
    back to its seat: the event stream has brought the other seat's moves before them (as under load)."""

    def __init__(self, target: str, token: str, times: int) -> None:
        super().__init__(target, token)
        self.times = times
        self.overtaken = 0

    def submit_move(
        self,
        game_id: str,
        move: engine.Move,
        *,
        request_id: str | None = None,
        expected_version: int | None = None,
        token: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> MoveResult:
        result = super().submit_move(game_id, move, request_id=request_id, expected_version=expected_version,
                                     token=token, timeout=timeout, retry=retry)  # fmt: skip
        if self.overtaken < self.times and not result.snapshot.my_turn and not result.snapshot.over:
            assert wait_until(lambda: self._turn_back(game_id), timeout=10)
            time.sleep(0.3)  # the stream delivers the other seat's moves meanwhile
            self.overtaken += 1
        return result

    def _turn_back(self, game_id: str) -> bool:
        now = self.get_game(game_id).snapshot
        return now.my_turn or now.over


def test_a_runner_whose_move_answer_the_stream_overtook_sees_its_turn_at_once(
    client: RefereeClient, referee: ServerThread
) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    results: dict[int, SeatResult] = {}

    def other() -> None:
        results[1] = play_seat(referee.address, game.game_id, game.tokens[1], make_bot("random", 6),
                               idle_check=IDLE_CHECK_S)  # fmt: skip

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    overtaken = _OvertakenAnswers(referee.address, game.tokens[0], times=3)
    with overtaken:
        results[0] = play_seat(overtaken, game.game_id, game.tokens[0], make_bot("random", 5),
                               idle_check=IDLE_CHECK_S)  # fmt: skip
    thread.join(60)
    assert overtaken.overtaken == 3
    _assert_played_out([results[0], results[1]], client, game)
    # its own move's view was older than the events it had seen: it looked again at once, not after idle_check
    # (IDLE_CHECK_S, not the 5 s default: a loaded machine may leave a table silent 5 s; 60 s is a hang)
    assert results[0].idle_fetches == 0 and results[1].idle_fetches == 0


def _forfeit_case(client: RefereeClient, target: str, fault: Bot, **kwargs: Any) -> tuple[SeatResult, SeatResult]:
    """Seat 0 played by ``fault``, seat 1 by a random bot that stops once seat 0's runner returned."""
    game = client.create_game("gin", ["Faulty", "Fine"], max_hands=3)
    stop = threading.Event()
    results: dict[int, SeatResult] = {}

    def other() -> None:
        results[1] = play_seat(target, game.game_id, game.tokens[1], make_bot("random", 9), stop=stop)

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    results[0] = play_seat(target, game.game_id, game.tokens[0], fault, **kwargs)
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    return results[0], results[1]


def test_a_bot_that_raises_forfeits(client: RefereeClient, referee: ServerThread) -> None:
    faulty, fine = _forfeit_case(client, referee.address, _Faulty("raise", after=3))
    assert faulty.forfeit and "bot bug" in (faulty.forfeit_reason or "")
    assert not faulty.finished and faulty.moves == 3
    assert fine.stopped and not fine.forfeit


def test_a_bot_that_takes_too_long_forfeits(client: RefereeClient, referee: ServerThread) -> None:
    start = time.monotonic()
    faulty, _ = _forfeit_case(client, referee.address, _Faulty("sleep", after=2), move_timeout=0.3)
    assert faulty.forfeit and "0.3s" in (faulty.forfeit_reason or "")
    assert time.monotonic() - start < 5.5  # it did not wait for the bot's answer (which takes 6 s)


def test_a_refused_move_is_counted_and_forfeits(client: RefereeClient, referee: ServerThread) -> None:
    faulty, _ = _forfeit_case(client, referee.address, _Faulty("illegal", after=1))
    assert faulty.forfeit and faulty.rejected == 1
    assert faulty.rejections == ["CARD_NOT_IN_HAND"]
    assert "refused" in (faulty.forfeit_reason or "")


def test_refused_moves_within_the_allowance_are_counted_and_play_goes_on(
    client: RefereeClient, referee: ServerThread
) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    results = _run_seats(referee.address, game, [_Faulty("illegal", after=2), make_bot("random", 4)],
                         max_rejections=1)  # fmt: skip
    assert results[0].finished and results[0].rejected == 1 and not results[0].forfeit
    assert results[0].rejections == ["CARD_NOT_IN_HAND"]
    assert results[1].finished and results[1].rejected == 0


def test_a_bot_that_answers_with_no_move_forfeits(client: RefereeClient, referee: ServerThread) -> None:
    faulty, _ = _forfeit_case(client, referee.address, _Faulty("junk", after=0))
    assert faulty.forfeit and "not a move" in (faulty.forfeit_reason or "")
    assert faulty.rejected == 0


class _SoreLoser:
    """A random bot whose ``observe`` raises on the match's last event (match_ended)."""

    name = "sore-loser"

    def __init__(self, seed: int) -> None:
        self.inner = make_bot("random", seed)

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        return self.inner.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        if event["kind"] == "match_ended":
            raise RuntimeError("observe bug at the end")
        self.inner.observe(event)


def test_a_bot_whose_observe_raises_on_match_ended_keeps_the_match_result(
    client: RefereeClient, referee: ServerThread
) -> None:
    """The match is over when match_ended arrives: a bot that raises on it has not forfeited anything. Its seat's
    result is the referee's (finished, the match result), and the error is reported apart (``bot_errors``)."""
    game = client.create_game("gin", ["Sore", "Fine"], max_hands=1)
    results = _run_seats(referee.address, game, [_SoreLoser(1), make_bot("random", 2)])
    _assert_played_out(results, client, game)
    assert len(results[0].bot_errors) == 1 and "observe bug at the end" in results[0].bot_errors[0]
    assert results[1].bot_errors == []


def test_an_async_bot_that_raises_forfeits(client: RefereeClient, referee: ServerThread) -> None:
    game = client.create_game("gin", ["Faulty", "Fine"], max_hands=3)

    async def main() -> tuple[SeatResult, SeatResult]:
        stop = asyncio.Event()
        other = asyncio.create_task(
            play_seat_async(referee.address, game.game_id, game.tokens[1], make_bot("random", 3), stop=stop)
        )
        faulty = await play_seat_async(referee.address, game.game_id, game.tokens[0], _Faulty("raise", after=2))
        stop.set()
        return faulty, await asyncio.wait_for(other, 10)

    faulty, fine = asyncio.run(main())
    assert faulty.forfeit and faulty.moves == 2 and fine.stopped


def test_runners_finish_a_match_across_a_killed_and_restarted_referee(
    spawn_referee: Callable[[], ServerProcess],
) -> None:
    server = spawn_referee()
    with RefereeClient(server.address, retry=None) as client:
        game = client.create_game("gin", ["Ann", "Bob"], max_hands=2)
        kills: list[int] = []

        def killer() -> None:
            for at in (25, 60):
                if not wait_until(lambda: _version(client, game) >= at, timeout=60):  # noqa: B023
                    return
                server.kill()
                kills.append(at)
                time.sleep(0.5)  # the runners find nobody there for a while
                server.start()

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        results = _run_seats(server.address, game, [make_bot("random", 1), make_bot("random", 2)],
                             reconnect_timeout=30.0)  # fmt: skip
        thread.join(60)
        assert kills == [25, 60] and server.starts == 3
        _assert_played_out(results, client, game)
        assert all(r.reconnects >= len(kills) for r in results)  # each kill broke each runner's stream ...
        # ... which resumed and told whose turn it was (not "no idle fetch": one is a matter of timing, a table
        # silent idle_check seconds on a loaded machine, clients/runner.py; test_bot_play's failed so, issue 8)
        assert all(r.missed_turns == 0 for r in results)


def _version(client: RefereeClient, game: CreatedGame) -> int:
    try:
        return client.get_game(game.game_id, token=game.tokens[0]).version
    except Exception:
        return -1
