"""The seat runner's safety net, apart from its correctness: an *idle fetch* (a view fetched after ``idle_check``
seconds without any event) is a matter of timing: a slow bot or a loaded machine is silent that long, and a
stream renewed (``reconnects``) says nothing either. What must never happen is a *missed turn*: an idle fetch
that finds the seat to act although the events up to that view never announced it. test_bot_play asserts that,
not the absence of silence (which failed under load: issue 8 item 15)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import engine
from clients.bots import make_bot
from clients.bots.base import Bot
from clients.runner import SeatResult, play_seat, play_seat_async
from clients.sdk import RefereeClient
from clients.sdk.client import Watch
from tests.clients.clientkit import ServerThread


class _Slow:
    """A bot that thinks for ``pause`` seconds at every ``every``-th of its first moves: the table is silent
    meanwhile."""

    def __init__(self, bot: Bot, pause: float, every: int = 3, first: int = 12) -> None:
        self.bot, self.pause, self.every, self.first, self.moves = bot, pause, every, first, 0

    def observe(self, event: dict[str, Any]) -> None:
        self.bot.observe(event)

    def choose(self, view: Any, legal: Sequence[engine.Move]) -> engine.Move:
        self.moves += 1
        if self.moves % self.every == 0 and self.moves <= self.first:
            time.sleep(self.pause)
        return self.bot.choose(view, legal)


def _play(target: str | RefereeClient, referee: ServerThread, bots: Sequence[Bot], idle_check: float,
          **create: Any) -> tuple[list[SeatResult], int]:  # fmt: skip
    """Both seats of a new Gin game: seat 0 through ``target``, seat 1 directly. The results and the version."""
    with RefereeClient(referee.address) as client:
        game = client.create_game("gin", ["a", "b"], **create)
        results: list[SeatResult | None] = [None, None]

        def run(seat: int) -> None:
            where = target if seat == 0 else referee.address
            results[seat] = play_seat(where, game.game_id, game.tokens[seat], bots[seat], idle_check=idle_check)

        threads = [threading.Thread(target=run, args=(s,), daemon=True) for s in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        version = client.get_game(game.game_id, token=game.tokens[0]).version
    assert all(r is not None for r in results), "a runner did not return"
    return [r for r in results if r is not None], version


def test_a_silent_table_costs_idle_fetches_and_misses_no_turn(referee: ServerThread) -> None:
    bots = [_Slow(make_bot("random", 1), pause=0.8), make_bot("random", 2)]
    results, version = _play(referee.address, referee, bots, idle_check=0.3, max_hands=1)
    assert all(r.finished and not r.forfeit for r in results)
    assert sum(r.moves for r in results) == version
    assert results[1].idle_fetches > 0  # seat 0's thinking: silence, so the safety net looked ...
    assert results[0].missed_turns == results[1].missed_turns == 0  # ... and never found a turn it had missed


def test_the_async_runner_counts_the_same(referee: ServerThread) -> None:
    async def body() -> list[SeatResult]:
        with RefereeClient(referee.address) as client:
            game = client.create_game("gin", ["a", "b"], max_hands=1)
        bots = [_Slow(make_bot("random", 3), pause=0.8), make_bot("random", 4)]
        return await asyncio.gather(*(
            play_seat_async(referee.address, game.game_id, game.tokens[s], bots[s], idle_check=0.3) for s in (0, 1)
        ))  # fmt: skip

    results = asyncio.run(body())
    assert all(r.finished for r in results)
    assert results[1].idle_fetches > 0
    assert results[0].missed_turns == results[1].missed_turns == 0


class _Deaf(Watch):
    """A watch that withholds the first ``times`` discards of the other seat: events that pass the turn to this
    seat."""

    def __init__(self, inner: Watch, me: int, times: int = 3) -> None:
        self.inner, self.me, self.times = inner, me, times

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        while True:
            item = next(self.inner)
            if self.times and isinstance(item, dict) and item["kind"] == "discarded" and item.get("seat") != self.me:
                self.times -= 1
                continue
            return item

    def cancel(self) -> None:
        self.inner.cancel()


class _DeafClient(RefereeClient):
    deaf: _Deaf | None = None

    def watch(self, game_id: str, **kwargs: Any) -> Watch:
        self.deaf = _Deaf(super().watch(game_id, **kwargs), me=0)
        return self.deaf


def test_a_turn_the_stream_never_announced_is_counted_as_missed(referee: ServerThread) -> None:
    """The check can fail: with the announcing events withheld, the turns are found by the safety net.

    Not every withheld turn need be: when the other seat's next events overtake the answer to this seat's own move
    (a loaded machine), the runner fetches its view at once (`moved`), finds the turn without the safety net, and
    rightly counts no missed turn. Seat 1 thinks a moment before each of its first moves, which makes that rare;
    the bound below holds either way: the safety net found at least one turn, and never more than were withheld."""
    deaf = _DeafClient(referee.address)
    seat1 = _Slow(make_bot("random", 6), pause=0.25, every=1, first=6)
    try:
        results, _ = _play(deaf, referee, [make_bot("random", 5), seat1], idle_check=0.2, max_hands=1)
    finally:
        deaf.close()
    assert results[0].finished
    assert deaf.deaf is not None
    withheld = 3 - deaf.deaf.times
    assert withheld > 0
    assert 1 <= results[0].missed_turns <= withheld  # withheld announcements: turns found by the safety net
    assert results[1].missed_turns == 0
