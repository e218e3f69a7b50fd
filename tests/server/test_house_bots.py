"""House bots (issue 9): seats given to a bundled bot at CreateGame, played by the bot host inside `serve` through the
public API, each seat by one host at a time (a lease in Redis), surviving a referee killed and restarted.

Every test runs real `rummy-referee serve` subprocesses (their bot hosts on by default) over a real redis-server
of its own (the registry of bot seats is then the test's alone)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
import redis

from clients.bots import BOTS, make_bot
from clients.runner import play_seat
from clients.sdk import RefereeClient, RefereeError, SeatSpec
from server.bot_seats import HOUSE_BOTS, LEASE_PREFIX, REGISTRY_KEY
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ROOT, ServerProcess, wait_until

FAST_HOST = ("--bot-lease", "2", "--bot-poll", "0.2")


@pytest.fixture
def spawn(private_redis: RedisProcess, tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(*extra: str) -> ServerProcess:
        server = ServerProcess(private_redis.url, log_dir=tmp_path, extra_args=extra)
        server.start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def db(private_redis: RedisProcess) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    try:
        yield client
    finally:
        client.close()


def _over(client: RefereeClient, game_id: str, token: str) -> bool:
    return client.get_game(game_id, token=token).snapshot.over


def test_house_bot_names_are_the_bundled_bots() -> None:
    assert set(HOUSE_BOTS) == set(BOTS)


def test_unknown_bot_and_open_bot_seat_are_refused_and_create_nothing(
    spawn: Callable[..., ServerProcess], db: redis.Redis
) -> None:
    server = spawn()
    with RefereeClient(server.address) as client:
        for seat, reason in ((SeatSpec(bot="deep-blue"), "UNKNOWN_BOT"),
                             (SeatSpec(bot="gin", open=True), "BOT_SEAT_OPEN")):  # fmt: skip
            with pytest.raises(RefereeError) as refused:
                client.create_game("gin", ["Ann", seat])
            assert (refused.value.code, refused.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert db.hlen(REGISTRY_KEY) == 0
    assert not [k for k in db.scan_iter("game:*")]


def test_a_human_seat_plays_a_house_bot_to_the_end(spawn: Callable[..., ServerProcess], db: redis.Redis) -> None:
    server = spawn(*FAST_HOST)
    with RefereeClient(server.address) as client:
        game = client.create_game("gin", ["Ann", SeatSpec(bot="gin")], target_score=30, allow_spectators=True)
        assert set(game.tokens) == {0}, "the creator gets no token for the bot's seat"
        bot_seat = game.settings.seats[1]
        assert (bot_seat.kind, bot_seat.bot, bot_seat.name) == ("bot", "gin", "gin bot")
        assert db.hlen(REGISTRY_KEY) == 1
        # the test drives seat 0 through the SDK's runner (with a bot of its own for the decisions)
        result = play_seat(client, game.game_id, game.tokens[0], make_bot("random", seed=1), reconnect_timeout=30)
        assert result.finished, result
        assert result.rejected == 0
        assert game.spectator_token and _over(client, game.game_id, game.spectator_token)
        settings = client.get_game(game.game_id, token=game.spectator_token).settings
        assert [(s.kind, s.bot) for s in settings.seats] == [("human", ""), ("bot", "gin")]
    assert wait_until(lambda: db.hlen(REGISTRY_KEY) == 0, timeout=30), "the finished game left the registry"
    assert wait_until(lambda: not list(db.scan_iter(LEASE_PREFIX + "*")), timeout=30)
    assert "house bot move refused" not in server.log.read_text()


def test_a_game_of_house_bots_only_finishes_by_itself(spawn: Callable[..., ServerProcess], db: redis.Redis) -> None:
    server = spawn(*FAST_HOST)
    with RefereeClient(server.address) as client:
        game = client.create_game(
            "rummy", [SeatSpec(bot="strong"), SeatSpec(bot="rummy"), SeatSpec(bot="random")],
            max_hands=1, allow_spectators=True,
        )  # fmt: skip
        assert game.tokens == {}
        assert game.spectator_token
        assert wait_until(lambda: _over(client, game.game_id, game.spectator_token or ""), timeout=120, interval=0.2)
        replay = client.get_replay(game.game_id)
        assert replay.events[-1]["kind"] == "match_ended"
    assert wait_until(lambda: db.hlen(REGISTRY_KEY) == 0, timeout=30)
    assert "house bot move refused" not in server.log.read_text()


def _holders(db: redis.Redis) -> dict[str, str]:
    return {key: value for key in db.scan_iter(LEASE_PREFIX + "*") if (value := db.get(key)) is not None}


def _pid(holder: str) -> int:
    return int(holder.split(":")[-2])


def test_house_bots_finish_with_two_referees_while_one_is_killed_and_restarted(
    spawn: Callable[..., ServerProcess], db: redis.Redis
) -> None:
    first, second = spawn(*FAST_HOST), spawn(*FAST_HOST)
    with RefereeClient(first.address) as client, RefereeClient(second.address) as other:
        game = client.create_game("gin", [SeatSpec(bot="gin"), SeatSpec(bot="strong")], target_score=800,
                                  allow_spectators=True)  # fmt: skip
        spectator = game.spectator_token or ""
        seen: list[dict[str, str]] = []  # the leases' holders, sampled all along

        def sample() -> dict[str, str]:
            holders = _holders(db)
            seen.append(holders)
            return holders

        assert wait_until(lambda: len(sample()) == 2, timeout=30, interval=0.05), "both seats claimed"
        assert wait_until(lambda: other.get_game(game.game_id, token=spectator).snapshot.version >= 20, timeout=60)
        holders = sample()
        assert len(holders) == 2
        victim = first if any(_pid(h) == first.process.pid for h in holders.values()) else second  # type: ignore[union-attr]
        survivor = second if victim is first else first
        killed_pid = victim.process.pid  # type: ignore[union-attr]
        version_at_kill = other.get_game(game.game_id, token=spectator).snapshot.version
        victim.kill()
        survivor_client = other if survivor is second else client
        assert not _over(survivor_client, game.game_id, spectator), "the kill came after the end: a longer match"
        # the dead host's seats are taken over when its leases run out, by the survivor (or the restarted one)
        assert wait_until(lambda: all(_pid(h) != killed_pid for h in sample().values()) and len(seen[-1]) == 2,
                          timeout=30, interval=0.05)  # fmt: skip
        victim.start()
        deadline = time.monotonic() + 300
        while not _over(survivor_client, game.game_id, spectator):
            assert time.monotonic() < deadline, "the house-bot game did not finish"
            sample()
            time.sleep(0.1)
        final = survivor_client.get_game(game.game_id, token=spectator).snapshot.version
        assert final > version_at_kill
    # one holder per seat at every sample (a lease is one key: two holders at once would be two keys or a
    # changed value mid-play), and nobody holds anything once the match is over
    for holders in seen:
        assert len(holders) <= 2
    # each seat's holders over time: the killed host's claims end with its death and never come back
    for key in {k for holders in seen for k in holders}:
        timeline = [h[key] for h in seen if key in h]
        changes = [h for i, h in enumerate(timeline) if i == 0 or timeline[i - 1] != h]
        dead = [i for i, h in enumerate(changes) if _pid(h) == killed_pid]
        assert dead in ([], [0]), f"{key}: {changes}"
    assert wait_until(lambda: db.hlen(REGISTRY_KEY) == 0 and not _holders(db), timeout=30)
    for server in (first, second):
        log = server.log.read_text()
        assert "house bot move refused" not in log, log[-3000:]
        assert not re.search(r"Traceback", log), log[-3000:]


def test_serve_without_bots_and_a_bot_host_process_of_its_own(
    spawn: Callable[..., ServerProcess], db: redis.Redis, private_redis: RedisProcess, tmp_path: Path
) -> None:
    server = spawn("--no-bots")
    with RefereeClient(server.address) as client:
        game = client.create_game("gin", [SeatSpec(bot="random"), SeatSpec(bot="gin")], target_score=20,
                                  allow_spectators=True)  # fmt: skip
        assert db.hlen(REGISTRY_KEY) == 2
        assert not _holders(db), "serve --no-bots claims nothing"
        log = tmp_path / "bots.log"
        with open(log, "wb") as out:
            host = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "bots", "--referee", server.address, "--redis-url",
                 private_redis.url, *FAST_HOST],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert wait_until(lambda: _over(client, game.game_id, game.spectator_token or ""), timeout=120,
                              interval=0.1), log.read_text()  # fmt: skip
            assert wait_until(lambda: db.hlen(REGISTRY_KEY) == 0, timeout=30)
        finally:
            host.send_signal(signal.SIGTERM)
            assert host.wait(30) == 0, log.read_text()
    assert "house bot move refused" not in log.read_text()
    assert "playing through " + server.address in log.read_text()
