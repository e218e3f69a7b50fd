"""WatchGame through connections that break: the SDK's watch resumes from the last event it delivered, so the
watcher gets exactly the events of an undisturbed watcher, in order, none twice, none missing."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clients.sdk import FROM_START, AsyncRefereeClient, GameSnapshot, RefereeClient, RefereeError, RetryPolicy
from clients.sdk.values import CreatedGame
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ORGANIZER, H2Proxy, ServerProcess, wait_until

FAST = RetryPolicy(attempts=20, initial_backoff=0.02, max_backoff=0.2)


def _events(items: list[Any]) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)]


FIRST_DEAL = [(0, 1), (0, 2), (0, 3)]  # version 0 of a Gin game: hand_started, then each seat's dealt


def _after_the_snapshot(items: list[Any], replay: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """The positions of the replay's events after the version of the watch's snapshot (its first item); the
    events up to it are the first deal's (the snapshot shows them)."""
    snapshot = items[0]
    assert isinstance(snapshot, GameSnapshot) and snapshot.version == 0
    assert [(e["version"], e["index"]) for e in replay if e["version"] <= snapshot.version] == FIRST_DEAL
    return [(e["version"], e["index"]) for e in replay if e["version"] > snapshot.version]


def _play(client: RefereeClient, game: CreatedGame, rng: random.Random, on_move: Any) -> int:
    """Random legal moves until the match ends, calling ``on_move(n)`` after each; the number of moves."""
    tokens = game.tokens
    n = 0
    info = client.get_game(game.game_id, token=tokens[0]).snapshot
    while not info.over:
        seat = info.to_act
        assert seat is not None
        mine = info if info.seat == seat else client.get_game(game.game_id, token=tokens[seat]).snapshot
        info = client.submit_move(game.game_id, rng.choice(mine.legal), token=tokens[seat]).snapshot
        n += 1
        on_move(n)
    return n


def _cutter(proxy: H2Proxy, seen: list[Any], every: int) -> Any:
    """``on_move`` for ``_play``: every ``every`` moves, once the watcher has the move before, cut its connection
    (while the events of the move just made may be on the way)."""

    def cut(n: int) -> None:
        if n % every == 0:
            assert wait_until(lambda: bool(_events(seen)) and _events(seen)[-1]["version"] >= n - 1)
            proxy.cut_all()

    return cut


def _follow(client: RefereeClient, game_id: str, token: str, out: list[Any], **kwargs: Any) -> threading.Thread:
    def run() -> None:
        out.extend(client.watch(game_id, token=token, **kwargs))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_watch_resumes_after_cut_connections_without_gap_or_duplicate(
    client: RefereeClient, proxy: H2Proxy
) -> None:
    game = client.create_game("rummy", ["Ann", "Bob", "Cy"], max_hands=1, allow_spectators=True)
    reconnections: list[int | None] = []
    with RefereeClient(proxy.address, retry=FAST) as flaky:
        steady: list[Any] = []
        broken: list[Any] = []
        steady_thread = _follow(client, game.game_id, game.tokens[1], steady)
        broken_thread = _follow(flaky, game.game_id, game.tokens[1], broken, on_reconnect=reconnections.append)
        assert wait_until(lambda: bool(steady) and bool(broken))

        moves = _play(client, game, random.Random(7), _cutter(proxy, broken, every=9))
        steady_thread.join(30)
        broken_thread.join(30)
    assert not broken_thread.is_alive()
    assert isinstance(broken[0], GameSnapshot) and broken[0].version == 0
    assert sum(isinstance(i, GameSnapshot) for i in broken) == 1  # a resumption sends no second snapshot
    assert _events(broken) == _events(steady)
    positions = [(e["version"], e["index"]) for e in _events(broken)]
    assert positions == sorted(set(positions))
    assert {v for v, _ in positions} == set(range(1, moves + 1))
    assert _events(broken)[-1]["kind"] == "match_ended"
    assert len(reconnections) >= moves // 9 - 1 >= 2  # (a cut after the last event ends nothing)
    versions = [v for v in reconnections if v is not None]
    assert versions == reconnections and versions == sorted(versions) and len(set(versions)) >= moves // 9 - 1


def test_a_watch_started_from_a_version_resumes_from_there(client: RefereeClient, proxy: H2Proxy) -> None:
    # a fixed deal (the organizer's seed): with a random deal, random moves could end the hand before move 12
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1, allow_spectators=True, seed=bytes(range(32)),
                              token=ORGANIZER)  # fmt: skip
    rng = random.Random(3)
    _play_until = 12
    for _ in range(_play_until):
        info = client.get_game(game.game_id, token=game.tokens[0]).snapshot
        seat = info.to_act
        assert seat is not None
        legal = client.get_game(game.game_id, token=game.tokens[seat]).legal
        client.submit_move(game.game_id, rng.choice(legal), token=game.tokens[seat])
    with RefereeClient(proxy.address, game.spectator_token, retry=FAST) as flaky:
        late: list[Any] = []
        thread = _follow(flaky, game.game_id, game.spectator_token or "", late, after_version=5)
        assert wait_until(lambda: len(late) > 3)
        proxy.cut_all()
        _play(client, game, rng, _cutter(proxy, late, every=11))
        thread.join(30)
    everything = client.get_replay(game.game_id, token=game.tokens[0]).events
    expected = [(e["version"], e["index"], e["kind"]) for e in everything if e["version"] > 5]
    assert [(e["version"], e["index"], e["kind"]) for e in _events(late)] == expected
    assert not any(isinstance(i, GameSnapshot) for i in late)


def test_a_watch_from_the_start_gets_the_first_deal_and_resumes_within_it(
    client: RefereeClient, proxy: H2Proxy
) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    reconnections: list[int | None] = []
    seen: list[Any] = []
    with RefereeClient(proxy.address, retry=FAST) as flaky:
        proxy.drop_next_request()  # the watch's first call is cut: it resumes having received nothing
        thread = _follow(flaky, game.game_id, game.tokens[0], seen, after_version=FROM_START,
                         on_reconnect=reconnections.append)  # fmt: skip
        assert wait_until(lambda: len(seen) >= 3), (seen, reconnections, proxy.cuts)
        assert proxy.cuts >= 1 and reconnections[:1] == [FROM_START], (reconnections, proxy.cuts)  # all of v0 again
        moves = _play(client, game, random.Random(13), _cutter(proxy, seen, every=8))
        thread.join(30)
    assert not thread.is_alive()
    replay = client.get_replay(game.game_id, token=game.tokens[0]).events
    positions = [(e["version"], e["index"]) for e in replay]
    assert positions[:3] == FIRST_DEAL
    assert not any(isinstance(i, GameSnapshot) for i in seen)
    assert [(e["version"], e["index"], e["kind"]) for e in _events(seen)] == [
        (e["version"], e["index"], e["kind"]) for e in replay
    ]
    assert seen[1] == replay[1] and "cards" not in seen[2]  # seat 0's own deal with its cards; not seat 1's
    assert len(reconnections) >= 1 + moves // 8 - 1 >= 2  # the first cut, then those during play (but the last)
    versions = [v for v in reconnections if v is not None]
    assert versions == reconnections and versions == sorted(versions)
    # resuming inside version 0 (as after a cut between its events): the rest of it, then everything after
    rest = client.watch(game.game_id, after_version=FROM_START, token=game.tokens[1])
    rest.cursor.last = (0, 1)
    assert [(e["version"], e["index"]) for e in _events(list(rest))] == positions[1:]


def test_the_async_watch_resumes_too(client: RefereeClient, proxy: H2Proxy) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    seen: list[Any] = []
    started = threading.Event()

    async def watch() -> int:
        async with AsyncRefereeClient(proxy.address, game.tokens[0], retry=FAST) as flaky:
            stream = flaky.watch(game.game_id)
            async for item in stream:
                seen.append(item)
                started.set()
            return stream.reconnects

    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(watch())), daemon=True)
    thread.start()
    assert started.wait(10)
    moves = _play(client, game, random.Random(5), _cutter(proxy, seen, every=7))
    thread.join(30)
    replay = client.get_replay(game.game_id, token=game.tokens[0]).events
    assert [(e["version"], e["index"]) for e in _events(seen)] == _after_the_snapshot(seen, replay)
    assert result and result[0] >= moves // 7 - 1 >= 2


def test_a_watch_renews_its_stream_at_its_deadline_without_a_gap(client: RefereeClient) -> None:
    """Every call has a deadline, a watch too: the stream ends at it and is resumed at once."""
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    seen: list[Any] = []
    with client.watch(game.game_id, token=game.tokens[0], timeout=0.3) as watch:
        thread = threading.Thread(target=lambda: seen.extend(watch), daemon=True)
        thread.start()
        assert wait_until(lambda: watch.reconnects >= 3, timeout=5)  # a quiet game: three deadlines passed
        _play(client, game, random.Random(11), lambda n: None)
        thread.join(30)
    replay = client.get_replay(game.game_id, token=game.tokens[0]).events
    assert sum(isinstance(i, GameSnapshot) for i in seen) == 1
    assert [(e["version"], e["index"]) for e in _events(seen)] == _after_the_snapshot(seen, replay)


def test_a_watch_of_a_quiet_game_outlives_more_aged_out_connections_than_its_retry_attempts(
    redis_server: RedisProcess, tmp_path: Path
) -> None:
    """`serve --max-connection-age` ends every connection at that age, a watch stream with it (README: the client
    reconnects). A watch of a game where nothing happens gets nothing on its resumed streams, yet each reached the
    referee: no failed reconnection, however many in a row (``retry`` bounds those that cannot reach it)."""
    server = ServerProcess(redis_server.url, log_dir=tmp_path, args=("--no-bots", "--max-connection-age", "1",
                                                                     "--max-connection-age-grace", "0.5"))  # fmt: skip
    server.start()
    try:
        with RefereeClient(server.address, retry=RetryPolicy(attempts=2, initial_backoff=0.02)) as client:
            game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
            seen: list[Any] = []
            failed: list[BaseException] = []

            def follow(watch: Any) -> None:
                try:
                    seen.extend(watch)
                except RefereeError as exc:
                    failed.append(exc)

            with client.watch(game.game_id, token=game.tokens[0]) as watch:
                thread = threading.Thread(target=follow, args=(watch,), daemon=True)
                thread.start()
                assert wait_until(lambda: watch.reconnects >= 4 or bool(failed), timeout=60)
                assert not failed, failed
                _play(client, game, random.Random(5), lambda n: None)
                thread.join(30)
            assert not failed and _events(seen)[-1]["kind"] == "match_ended"
    finally:
        server.stop()
