"""Every setting flows from the ``Settings`` through the factory (server.app) into the object that uses it: a referee
built with non-default values runs with them (through real Redis and gRPC), and every flag of `serve` lands in its
field of the settings (server.cli ``settings_from_args``).

The values are far from serve's defaults, so that each test would fail with the default in its place: a watch
queue of 3 events cuts a watcher 8 moves behind; a look at watched games every 0.3 s ends the watch of a game
whose keys vanished within seconds, not serve's 60 s; a health poll every 0.05 s pings Redis ten times as often.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import clocks, memo
from server.app import build_referee, open_store
from server.cli import _parser, settings_from_args
from server.hotpath import ClusterHotPath
from server.redis_launcher import RedisProcess
from server.settings import (
    DEFAULTS,
    BotSettings,
    CacheSettings,
    GameSettings,
    LimitSettings,
    NetworkSettings,
    RetentionSettings,
    Settings,
    StorageSettings,
    WatchSettings,
)
from server.store import GameStore, game_keys
from tests import kit
from tests.server.refkit import ORGANIZER, Client, md
from tests.server.test_fanout import _new_game, cut_and_resumed

#: non-default values of the settings without a flag (each test below shows one or more taking effect)
WATCH = dataclasses.replace(DEFAULTS.watch, queue_limit=3, backlog_page=7, read_slots=2, read_attempts=5,
                            watcher_bytes=50_000, total_bytes=600_000, expiry_slack_s=0.01,
                            expiry_max_look_s=0.3, expiry_retry_s=0.2, expiry_batch=3)  # fmt: skip
CACHES = dataclasses.replace(DEFAULTS.caches, memo_entries=40, memo_mib=1.5, state_games=5, state_mib=2.0,
                             delayed_games=2, clock_memo_entries=3)  # fmt: skip


def _settings(redis_url: str) -> Settings:
    base = kit.referee_settings(redis_url, organizer_token=ORGANIZER)
    return dataclasses.replace(
        base, watch=WATCH, caches=CACHES,
        limits=dataclasses.replace(base.limits, open_games_sweep_batch=5, open_games_sweeps_when_full=2),
        storage=dataclasses.replace(base.storage, settle_read_s=0.25, pool_timeout_s=0.4, hot_max_redirects=2,
                                    hot_tryagain_s=0.005, hot_refresh_gap_s=0.05, hot_slot_cache=4),
    )  # fmt: skip


@pytest.fixture(scope="module")
def tuned(redis_server: RedisProcess) -> Iterator[kit.ServerThread]:
    with kit.ServerThread(_settings(redis_server.url)) as server:
        yield server
    # the process-wide tables back to serve's bounds for the tests that run after this module
    memo.configure()
    clocks.configure()


@pytest.fixture
def tuned_client(tuned: kit.ServerThread) -> Iterator[Client]:
    client = Client(tuned.address)
    yield client
    client.close()


def test_the_factory_hands_every_setting_to_its_object(tuned: kit.ServerThread) -> None:
    """The wiring: each value reaches the object that uses it (the tests below show them at work)."""
    assert tuned.referee is not None and tuned.app is not None
    referee, store = tuned.referee, tuned.app.store
    assert referee.hub.watch == WATCH  # type: ignore[attr-defined]
    expiry = referee.hub._expiry  # type: ignore[attr-defined]
    assert (expiry._slack_s, expiry._max_look_s, expiry._retry_s, expiry._batch) == (0.01, 0.3, 0.2, 3)
    assert referee._delayed._games == 2
    assert referee.open_games is not None
    assert (referee.open_games.sweep_batch, referee.open_games.sweeps_when_full) == (5, 2)
    assert referee._states._size == 5
    assert {t.max_entries for t in memo.tables()} == {max(1, int(40 * t.share)) for t in memo.tables()}
    assert isinstance(store, GameStore)
    assert (store.settle_read_s, store.background_pool_timeout_s) == (0.25, 0.4)
    own = store.own_client()
    assert own.connection_pool.timeout == 0.4  # type: ignore[attr-defined]


def test_a_tiny_watch_queue_cuts_a_slow_watcher(tuned: kit.ServerThread, tuned_client: Client) -> None:
    """``watch.queue_limit`` 3 (serve: 2000): a follower that takes nothing while 8 moves are made is cut with
    WATCHER_TOO_SLOW, and resumes without a gap."""
    cut_and_resumed(tuned, tuned_client, 71)  # type: ignore[arg-type]


def test_a_short_look_ends_the_watch_of_a_vanished_game(
    tuned: kit.ServerThread, tuned_client: Client, redis_server: RedisProcess
) -> None:
    """``watch.expiry_max_look_s`` 0.3 (serve: 60): a watched game, kept an hour by its TTL, whose keys vanish is
    noticed at the next look, within seconds; its watch ends cleanly."""
    game = _new_game(tuned_client, 72)
    ended: list[str] = []
    started = threading.Event()

    def read() -> None:
        try:
            for _ in tuned_client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id),
                                                 metadata=md(game.tokens[0])):  # fmt: skip
                started.set()
            ended.append("OK")
        except grpc.RpcError as exc:
            ended.append(exc.code().name)
        started.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert started.wait(30)
    time.sleep(0.5)  # looked at once (an hour to go), so the next look is the short one
    admin = redis.Redis.from_url(redis_server.url)
    try:
        admin.delete(*game_keys(game.game_id))
    finally:
        admin.close()
    gone = time.monotonic()
    thread.join(45)
    assert not thread.is_alive(), "the watch of the vanished game did not end"
    # within 30 s: serve's next look would come a minute after the first (a bound of 5 s asked a loaded machine
    # for more than the setting's effect)
    assert ended == ["OK"] and time.monotonic() - gone < 30.0


def test_small_clock_memos_stay_small(tuned: kit.ServerThread, tuned_client: Client) -> None:
    """``caches.clock_memo_entries`` 3 (serve: 4096): the clocks of many timed games' views leave at most 3
    entries in each parse memo."""
    control = pb.TimeControl(clock=pb.TimeControl.Clock(initial_ms=60_000, increment_ms=1000))
    for seed in range(80, 88):
        game = _new_game(tuned_client, seed, time_control=control)
        tuned_client.view(game, game.tokens[0])
    assert max(clocks.memo_sizes()) <= 3


def test_a_small_delayed_games_cache_keeps_few_games(tuned: kit.ServerThread, tuned_client: Client) -> None:
    """``caches.delayed_games`` 2 (serve: 1024): the spectators of 5 delayed games leave 2 rebuilt states."""
    assert tuned.referee is not None
    for seed in range(90, 95):
        game = _new_game(tuned_client, seed, spectator_delay=pb.SpectatorDelay(moves=2))
        tuned_client.view(game, game.spectator)
    assert len(tuned.referee._delayed._rebuilt) == 2


def test_the_cluster_hot_path_gets_its_settings() -> None:
    """``storage.hot_*``: the cluster hot path of a store opened by the factory remembers at most
    ``hot_slot_cache`` keys' slots and follows ``hot_max_redirects`` redirections (no connection needed)."""
    storage = dataclasses.replace(DEFAULTS.storage, redis_url="redis://127.0.0.1:9/0", cluster=True,
                                  hot_max_redirects=2, hot_tryagain_s=0.005, hot_refresh_gap_s=0.05,
                                  hot_slot_cache=4)  # fmt: skip
    store = open_store(Settings(storage=storage))
    hot = store._hot
    assert isinstance(hot, ClusterHotPath)
    assert (hot.max_redirects, hot._tryagain_s, hot._refresh_gap_s, hot.slot_cache) == (2, 0.005, 0.05, 4)
    for i in range(20):
        hot._slot(f"game:{{{i}}}")
        assert len(hot._slots) <= 4


def test_a_short_health_poll_pings_redis_often(private_redis: RedisProcess) -> None:
    """``network.health_interval_s`` 0.05 (serve: 0.5): the health service's pings of Redis (each reads Redis's
    clock: TIME), counted by Redis, come ten times as often; ``health_ping_timeout_s`` reaches them too. Told by
    how soon 15 pings come: at serve's interval they take 7 s at least, however fast the machine. (It counted the
    commands of a fixed 1.5 s instead, 15 or more of them: a loaded machine's referee sent 8.)"""
    net = dataclasses.replace(kit.referee_settings(private_redis.url).network, health_interval_s=0.05,
                              health_ping_timeout_s=0.2)  # fmt: skip
    settings = dataclasses.replace(kit.referee_settings(private_redis.url), network=net, caches=CACHES)
    admin = redis.Redis.from_url(private_redis.url)

    def pings() -> int:
        return int(admin.info("commandstats").get("cmdstat_time", {}).get("calls", 0))

    async def run() -> float:
        app = build_referee(settings)
        await app.start()
        try:
            before = await asyncio.to_thread(pings)
            started = time.monotonic()
            task = app.watch_storage()
            while await asyncio.to_thread(pings) - before < 15:
                assert time.monotonic() - started < 60, "the health service never pinged 15 times"
                await asyncio.sleep(0.02)
            elapsed = time.monotonic() - started
            task.cancel()
            return elapsed
        finally:
            await app.stop()

    try:
        elapsed = asyncio.run(run())
    finally:
        admin.close()
    assert elapsed < 14 * 0.5, elapsed  # 14 waits of serve's 0.5 s between the first ping and the 15th


# ------------------------------------------------------------------------------------------ serve's flags


def test_every_flag_of_serve_lands_in_its_setting(tmp_path: Path) -> None:
    """Each of serve's flags, given a non-default value, is the value of its field in ``settings_from_args``;
    and every flag of serve is one of these (a new flag must be added here)."""
    flags: dict[str, list[str]] = {
        "--host": ["0.0.0.0"], "--port": ["6001"], "--http-port": ["6002"], "--no-http": [],
        "--cors-origin": ["http://a.example", "--cors-origin", "http://b.example"],
        "--redis-url": ["redis://r.example:7000/1"], "--redis-cluster": [], "--organizer-token": ["org"],
        "--data-dir": [str(tmp_path)], "--finished-ttl": ["11"], "--idle-ttl": ["12"], "--unplayed-ttl": ["13"],
        "--max-open-games": ["14"], "--games-per-minute": ["15"], "--requests-per-second": ["16"],
        "--request-burst": ["17"], "--storage-timeout": ["1.8"], "--wait-replicas": ["2"],
        "--wait-replicas-timeout": ["1.9"], "--timeout-poll": ["0.2"], "--state-cache-games": ["21"],
        "--state-cache-mib": ["2.2"], "--memo-entries": ["23"], "--memo-mib": ["2.4"], "--idem-ttl": ["25"],
        "--grace": ["2.6"], "--max-connection-age": ["27"], "--max-connection-age-grace": ["2.8"],
        "--durability": ["strict"], "--metrics-port": ["6003"], "--log-format": ["json"],
        "--tls-cert": [str(tmp_path / "c.pem")], "--tls-key": [str(tmp_path / "k.pem")],
        "--tls-client-ca": [str(tmp_path / "ca.pem")], "--no-bots": [], "--bot-seats": ["31"],
        "--bot-lease": ["3.2"], "--bot-poll": ["3.3"], "--http-read-timeout": ["3.4"],
        "--watches-per-address": ["35"], "--trusted-proxy": ["10.0.0.0/8"],
    }  # fmt: skip
    parser = _parser()
    serve = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["serve"]  # type: ignore[union-attr]
    options = {s for action in serve._actions for s in action.option_strings if s.startswith("--")} - {"--help"}
    assert options == set(flags)
    argv = ["serve"] + [part for flag, values in flags.items() for part in (flag, *values)]
    got = settings_from_args(parser.parse_args(argv))
    assert got == Settings(
        storage=StorageSettings(redis_url="redis://r.example:7000/1", cluster=True, data_dir=tmp_path,
                                durability="strict", timeout_s=1.8, wait_replicas=2, wait_timeout_s=1.9),
        retention=RetentionSettings(finished_ttl_s=11, idle_ttl_s=12, unplayed_ttl_s=13, idem_ttl_s=25),
        caches=CacheSettings(state_games=21, state_mib=2.2, memo_entries=23, memo_mib=2.4),
        watch=WatchSettings(),
        network=NetworkSettings(host="0.0.0.0", port=6001, http_port=None,
                                cors_origins=("http://a.example", "http://b.example"), max_connection_age_s=27.0,
                                max_connection_age_grace_s=2.8, grace_s=2.6, http_read_timeout_s=3.4,
                                trusted_proxies=("10.0.0.0/8",),
                                metrics_port=6003, log_format="json",
                                tls_cert=tmp_path / "c.pem", tls_key=tmp_path / "k.pem",
                                tls_client_ca=tmp_path / "ca.pem"),
        limits=LimitSettings(requests_per_s=16.0, request_burst=17, games_per_minute=15.0, max_open_games=14,
                             watches_per_peer=35),
        games=GameSettings(organizer_token="org", timeout_poll_s=0.2),
        bots=BotSettings(enabled=False, max_seats=31, lease_s=3.2, poll_s=3.3),
    )  # fmt: skip
    # --http-port without --no-http; the private redis-server's URL when there is no --redis-url
    with_http = settings_from_args(parser.parse_args(["serve", "--http-port", "6002"]), "unix:///tmp/r.sock")
    assert with_http.network.http_port == 6002 and with_http.storage.redis_url == "unix:///tmp/r.sock"


def test_serve_with_no_flags_is_the_default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` with no flags (and no REDIS_URL / RUMMY_ORGANIZER_TOKEN) is ``Settings()``."""
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("RUMMY_ORGANIZER_TOKEN", raising=False)
    assert settings_from_args(_parser().parse_args(["serve"])) == Settings()
