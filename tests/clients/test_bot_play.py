"""The issue's bar for bot play: 200 Gin hands and 200 Rummy hands (3 and 6 players) between the bundled bots,
every pairing of ``random`` and the strong bots, through real referees and Redis, with zero moves refused.

Games run in parallel threads, each seat a ``play_seat`` runner of its own. Two referee processes share the
suite's Redis and take the tables in turn: one referee's event loop is the bottleneck of this test (a Python
thread), and two of them are how the service scales anyway.

Every turn must be noticed from the events: no *missed turn* (``SeatResult.missed_turns``: a view fetched by the
runner's safety net, after ``idle_check`` seconds of silence, that gave the seat the turn although no event up to
it had announced that). Idle fetches themselves are only counted and printed: on a loaded machine a table can be
silent for 5 s (a bot starved of CPU among the ~100 seat threads of this process), and a run that long also
outlives the 300 s watch deadline, so each stream is renewed once (``reconnects=1``). Asserting no idle fetch
asserted a timing, and failed so under a full ``make test`` (issue 8 item 15)."""

from __future__ import annotations

import concurrent.futures
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from clients.bots import make_bot
from clients.runner import SeatResult, play_seat
from clients.sdk import RefereeClient
from tests.clients.clientkit import ServerProcess

PARALLEL_GAMES = 12
REFEREES = 2


@dataclass(frozen=True)
class Table:
    """One match to play: profile, the bot of each seat, hands."""

    profile: str
    bots: tuple[str, ...]
    hands: int
    seed: int


def _tables() -> list[Table]:
    tables: list[Table] = []
    seed = itertools.count(1)
    # Gin: 200 hands, every ordered pairing of random and the Gin bot: 4 pairings x 5 matches x 10 hands.
    for pairing in itertools.product(("random", "strong"), repeat=2):
        tables += [Table("gin", pairing, 10, next(seed)) for _ in range(5)]
    # Rummy: 100 hands at 3 seats and 100 at 6, every mix of random and the Rummy bot (alone, and with the
    # other at the seats before and after it): 4 line-ups x 5 matches x 5 hands per player count.
    for players in (3, 6):
        lineups = [
            ("random",) * players,
            ("strong",) * players,
            tuple("strong" if i % 2 else "random" for i in range(players)),
            tuple("random" if i % 3 else "strong" for i in range(players)),
        ]
        for lineup in lineups:
            tables += [Table("rummy", lineup, 5, next(seed)) for _ in range(5)]
    return tables


@dataclass
class Played:
    table: Table
    hands: int
    version: int
    results: list[SeatResult]
    seconds: float


def _play(target: str, table: Table, pool: concurrent.futures.Executor) -> Played:
    start = time.monotonic()
    with RefereeClient(target) as client:
        names = [f"{bot}-{i}" for i, bot in enumerate(table.bots)]
        game = client.create_game(table.profile, names, max_hands=table.hands, target_score=100_000)
        futures = [
            pool.submit(play_seat, target, game.game_id, game.tokens[seat],
                        make_bot(bot, table.seed * 10 + seat), move_timeout=30.0)
            for seat, bot in enumerate(table.bots)
        ]  # fmt: skip
        results = [f.result(timeout=600) for f in futures]
        final = client.get_game(game.game_id, token=game.tokens[0]).snapshot
    return Played(table, final.view.extra["hands_played"], final.version, results, time.monotonic() - start)


# 100-130 s on a quiet 2-core machine, the suite's longest test: the suite-wide 300 s would fail it on a CI machine
# at half that speed, which is a timing, not a bug
@pytest.mark.timeout(900)
def test_bundled_bots_play_200_gin_and_200_rummy_hands_without_a_refused_move(
    spawn_referee: Callable[[], ServerProcess],
) -> None:
    servers = [spawn_referee() for _ in range(REFEREES)]
    tables = _tables()
    seats = sum(len(t.bots) for t in tables)
    start = time.monotonic()
    seat_pool = concurrent.futures.ThreadPoolExecutor(seats, thread_name_prefix="seat")
    with seat_pool, concurrent.futures.ThreadPoolExecutor(PARALLEL_GAMES, thread_name_prefix="table") as tables_pool:
        played: Sequence[Played] = list(tables_pool.map(
            lambda i: _play(servers[i % REFEREES].address, tables[i], seat_pool), range(len(tables))
        ))
    elapsed = time.monotonic() - start
    moves = sum(p.version for p in played)
    by_game: dict[str, int] = {}
    for p in played:
        key = f"{p.table.profile}-{len(p.table.bots)}"
        by_game[key] = by_game.get(key, 0) + p.hands
        for r in p.results:
            assert r.finished and not r.forfeit, (p.table, r)
            result = r.match_result  # the match finished with a result: the winners and every seat's total
            assert result is not None and result["ended"] == "completed", (p.table, result)
            assert result["winners"] and set(result["winners"]) <= set(range(len(p.table.bots))), result
            assert len(result["totals"]) == len(p.table.bots), result
            assert r.rejected == 0, (p.table, r.rejections)
            assert r.missed_turns == 0, (p.table, r)  # every turn was noticed from the events
        assert sum(r.moves for r in p.results) == p.version  # every move applied once
    fetches = sum(r.fetches for p in played for r in p.results)
    idle = sum(r.idle_fetches for p in played for r in p.results)
    reconnects = sum(r.reconnects for p in played for r in p.results)
    print(f"\n{len(played)} matches, {moves} moves, {fetches} GetGame ({idle} after silence), {reconnects} "
          f"stream reconnections, {by_game} hands in {elapsed:.1f}s ({moves / elapsed:.0f} moves/s)")
    assert by_game == {"gin-2": 200, "rummy-3": 100, "rummy-6": 100}
