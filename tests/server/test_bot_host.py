"""The bot host (server/bot_host.py) in this process, against a real referee (no host of its own) over a real
redis-server of the test's own: the bound on seats, a lost lease, a failing bot."""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import redis

import engine
from clients.bots.base import BOTS
from clients.sdk import RefereeClient, SeatSpec
from engine.melds import meld_kind
from server.bot_host import BotHost, HostSettings
from server.bot_seats import LEASE_PREFIX, REGISTRY_KEY, BotSeat, BotSeats
from server.redis_launcher import RedisProcess
from server.store import connect
from tests.clients.clientkit import ServerThread, wait_until


class HostThread:
    """A BotHost running in a thread of its own (its own event loop)."""

    def __init__(self, redis_url: str, address: str, settings: HostSettings) -> None:
        self.host: BotHost | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(redis_url, address, settings),),
                                        daemon=True, name="bot-host")  # fmt: skip
        self._thread.start()
        assert self._ready.wait(30)

    async def _main(self, redis_url: str, address: str, settings: HostSettings) -> None:
        client = connect(redis_url)
        self._loop = asyncio.get_running_loop()
        self.host = BotHost(BotSeats(client), address, settings)
        self._ready.set()
        try:
            await self.host.run()
        finally:
            await client.aclose()

    def stop(self) -> None:
        if self._loop is not None and self.host is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.host.close(), self._loop).result(10)
            self._thread.join(30)
            assert not self._thread.is_alive()


@pytest.fixture
def referee(private_redis: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(private_redis.url) as server:
        yield server


@pytest.fixture
def db(private_redis: RedisProcess) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    try:
        yield client
    finally:
        client.close()


def _host(private_redis: RedisProcess, referee: ServerThread, **settings: float) -> HostThread:
    return HostThread(private_redis.url, referee.address, HostSettings(**settings))  # type: ignore[arg-type]


def _leases_of(db: redis.Redis, holder: str) -> list[str]:
    return [key for key in db.scan_iter(LEASE_PREFIX + "*") if db.get(key) == holder]


def test_a_host_plays_at_most_its_number_of_seats_and_finishes_every_game(
    private_redis: RedisProcess, referee: ServerThread, db: redis.Redis
) -> None:
    with RefereeClient(referee.address) as client:
        games = [client.create_game("gin", [SeatSpec(bot="gin"), SeatSpec(bot="random")], target_score=20,
                                    allow_spectators=True) for _ in range(3)]  # fmt: skip
        runner = _host(private_redis, referee, max_seats=2, lease_s=2.0, poll_s=0.1)
        try:
            assert runner.host is not None
            most = 0

            def all_over() -> bool:
                nonlocal most
                most = max(most, len(_leases_of(db, runner.host.holder)))  # type: ignore[union-attr]
                return all(client.get_game(g.game_id, token=g.spectator_token).snapshot.over for g in games)

            assert wait_until(all_over, timeout=180, interval=0.02)
            assert most == 2, "two seats at a time: one game at a time, both its seats"
            assert wait_until(lambda: db.hlen(REGISTRY_KEY) == 0, timeout=30), "finished seats leave the registry"
            assert runner.host.finished == 6
        finally:
            runner.stop()


def test_a_host_that_loses_its_lease_stops_playing_the_seat(
    private_redis: RedisProcess, referee: ServerThread, db: redis.Redis
) -> None:
    with RefereeClient(referee.address) as client:
        game = client.create_game("gin", ["Ann", SeatSpec(bot="strong")])
        runner = _host(private_redis, referee, lease_s=1.0, poll_s=0.1)
        try:
            host = runner.host
            assert host is not None
            lease = f"{LEASE_PREFIX}{game.game_id}:1"
            assert wait_until(lambda: db.get(lease) == host.holder, timeout=30)
            db.set(lease, "another-host", px=60_000)  # taken by another (as after a long pause of this one)
            assert wait_until(lambda: f"{game.game_id}:1" not in list(host.playing), timeout=30)
            assert db.get(lease) == "another-host", "the host left the other's lease alone"
            assert db.hexists(REGISTRY_KEY, f"{game.game_id}:1"), "the seat is still to be played"
        finally:
            runner.stop()


def test_a_failing_bot_is_logged_and_retried_and_the_host_plays_on(
    private_redis: RedisProcess, referee: ServerThread, db: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rummy_referee.bots")
    with RefereeClient(referee.address) as client:
        broken = client.create_game("gin", ["Ann", "Bob"])
        good = client.create_game("gin", [SeatSpec(bot="gin"), SeatSpec(bot="gin")], target_score=20,
                                  allow_spectators=True)  # fmt: skip
        # a seat whose bot cannot even be made (as a bot that raises): the host must survive it
        asyncio.run(_register(private_redis.url, BotSeat(broken.game_id, 1, "no-such-bot", broken.tokens[1])))
        runner = _host(private_redis, referee, lease_s=2.0, poll_s=0.1, retry_s=0.2)
        try:
            host = runner.host
            assert host is not None
            assert wait_until(lambda: client.get_game(good.game_id, token=good.spectator_token).snapshot.over,
                              timeout=120, interval=0.05)  # fmt: skip
            assert wait_until(lambda: host.failures >= 3, timeout=30), "tried again, and again"
            assert wait_until(lambda: not db.hexists(REGISTRY_KEY, f"{good.game_id}:0"), timeout=30)
        finally:
            runner.stop()
    failed = [r for r in caplog.records if f"{broken.game_id}:1 failed" in r.getMessage()]
    assert len(failed) >= 3
    assert db.hexists(REGISTRY_KEY, f"{broken.game_id}:1"), "a failing seat stays registered"


async def _register(url: str, seat: BotSeat) -> None:
    client = connect(url)
    try:
        await BotSeats(client).register([seat])
    finally:
        await client.aclose()


def test_a_bot_slower_than_its_move_timeout_is_counted_a_timeout(
    private_redis: RedisProcess, referee: ServerThread
) -> None:
    """The host's failures say which were timeouts (``rummy_bot_failures_total{kind="timeout"}``)."""
    with RefereeClient(referee.address) as client:
        client.create_game("gin", [SeatSpec(bot="gin"), SeatSpec(bot="gin")])
        runner = _host(private_redis, referee, lease_s=2.0, poll_s=0.1, retry_s=0.2, move_timeout_s=1e-9)
        try:
            host = runner.host
            assert host is not None
            assert wait_until(lambda: host.timeouts >= 1, timeout=30), (host.failures, host.timeouts)
            assert host.timeouts <= host.failures
        finally:
            runner.stop()


class _BadKnocker:
    """A bot that, whenever it may discard, knocks with a 'meld' of three of its cards that is none (refused:
    INVALID_MELD, whose message names those cards); it records the cards it named."""

    name = "bad-knocker"

    def __init__(self, seed: int | None) -> None:
        self.named: set[str] = set()

    def choose(self, view: object, legal: Sequence[engine.Move]) -> engine.Move:
        held = [m.card for m in legal if isinstance(m, engine.Discard)]
        for a, b, c, d in itertools.permutations(held, 4):
            mask = (1 << b) | (1 << c) | (1 << d)
            if meld_kind(mask) is None:
                self.named.update(engine.card_text(x) for x in (b, c, d))
                return engine.Knock(a, (mask,))
        return legal[0]

    def observe(self, event: Mapping[str, Any]) -> None:
        pass


class _RaisingBot(_BadKnocker):
    """A bot with a bug whose exception names a card of its hand."""

    def choose(self, view: object, legal: Sequence[engine.Move]) -> engine.Move:
        held = [engine.card_text(m.card) for m in legal if isinstance(m, engine.Discard)]
        if not held:
            return legal[0]
        self.named.add(held[0])
        raise ValueError(f"no plan for {held[0]}")


def _log_of_failing_bot(
    bot_class: type[_BadKnocker],
    private_redis: RedisProcess,
    referee: ServerThread,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[set[str], list[str]]:
    """A house bot of ``bot_class`` plays seat 1 until its play ends (a failure): the cards it named, and every line
    the referee logged meanwhile."""
    bots: list[_BadKnocker] = []

    def factory(seed: int | None) -> _BadKnocker:
        bots.append(bot_class(seed))
        return bots[-1]

    monkeypatch.setitem(BOTS, "gin", factory)
    caplog.set_level(logging.INFO, logger="rummy_referee")
    with RefereeClient(referee.address) as client:
        game = client.create_game("gin", ["Ann", "Bob"])
        asyncio.run(_register(private_redis.url, BotSeat(game.game_id, 1, "gin", game.tokens[1])))
        runner = _host(private_redis, referee, lease_s=2.0, poll_s=0.1, retry_s=30.0)
        try:
            host = runner.host
            assert host is not None
            assert wait_until(lambda: host.failures >= 1, timeout=60), "the bot's play ends"
        finally:
            runner.stop()
    named = set().union(*(b.named for b in bots))
    assert named, "the bot named cards of its hand"
    return named, [r.getMessage() for r in caplog.records]


def _naming(lines: list[str], cards: set[str]) -> list[str]:
    return [line for line in lines if any(re.search(rf"\b{card}\b", line) for card in cards)]


def test_a_house_bot_s_refused_moves_are_logged_without_its_cards(
    private_redis: RedisProcess,
    referee: ServerThread,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RULES.md section 4: a seat's cards stay out of the logs, a house bot's too. The referee's message of a
    refused move may name the mover's own cards (INVALID_MELD: not a set or run: ...): the host logs the reason code
    only."""
    named, lines = _log_of_failing_bot(_BadKnocker, private_redis, referee, caplog, monkeypatch)
    assert any("INVALID_MELD" in line for line in lines), lines
    assert not _naming(lines, named)


def test_a_house_bot_s_exception_is_logged_without_its_message(
    private_redis: RedisProcess,
    referee: ServerThread,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RULES.md section 4, as above: a bot's exception is logged by its type and where it was raised (as
    server.logs logs any exception), not its message, which may name the bot's cards."""
    named, lines = _log_of_failing_bot(_RaisingBot, private_redis, referee, caplog, monkeypatch)
    assert any("ValueError" in line for line in lines), lines
    assert not _naming(lines, named)
