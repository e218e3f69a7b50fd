"""Limits against filling the storage and flooding the referee (issue 8, item 13), through a real server and Redis:
games created per minute per peer and per token, a request rate per peer, the cap on unfinished games shared in
Redis, and the short expiry of games that never got a move."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.limits import UNLIMITED, Buckets, Limits, peer_key
from server.open_games import REGISTRY_KEY
from server.redis_launcher import RedisProcess
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    expect_error,
    md,
    move_from_text,
)

ROOT = Path(__file__).resolve().parents[2]
DAY = 24 * 3600


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


IPV6 = _ipv6_loopback()  # a second peer address (the server listens on [::1] too); without it, one peer only


def retry_delay(exc: grpc.RpcError) -> float | None:
    """The retry_delay of the google.rpc.RetryInfo of a failed call, in seconds; None if it has none."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return float(info.retry_delay.ToTimedelta().total_seconds())
    return None


def wait_until(predicate: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(predicate())  # type: ignore[operator]


@pytest.fixture
def admin(private_redis: RedisProcess) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(private_redis.url)
    try:
        yield client
    finally:
        client.close()


def _knock_match(client: Client) -> Game:
    """An organizer game of one hand that ends the match in three moves (GIN_KNOCK_MOVES)."""
    match = rpb.MatchSettings(target_score=20)
    return client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=match)


def _finish(client: Client, game: Game) -> None:
    for n, (seat, text) in enumerate(GIN_KNOCK_MOVES, 1):
        assert client.move(game, game.tokens[seat], move_from_text(text), expected_version=n - 1).version == n
    assert client.view(game, game.tokens[0]).phase == pb.PHASE_MATCH_OVER


# --------------------------------------------------------------------------------------------- pure parts


def test_a_bucket_refuses_past_its_burst_and_refills_at_its_rate() -> None:
    now = [100.0]
    buckets = Buckets(rate=2.0, burst=3, capacity=10, clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(0.5)  # one token every 0.5 s
    assert buckets.take("b") == 0.0  # another key has its own bucket
    now[0] += 0.25
    assert buckets.wait("a") == pytest.approx(0.25) and buckets.take("a") == pytest.approx(0.25)
    now[0] += 0.25
    assert buckets.take("a") == 0.0
    now[0] += 1000
    assert [buckets.take("a") for _ in range(4)][-1] > 0  # refilled to the burst, not beyond


def test_the_buckets_forget_the_least_recently_used_key_beyond_their_capacity() -> None:
    buckets = Buckets(rate=1.0, burst=1, capacity=3, clock=lambda: 0.0)
    for key in ("a", "b", "c"):
        buckets.take(key)
    buckets.take("a")  # refused, and "a" is now the most recently used
    buckets.take("d")  # evicts "b"
    assert len(buckets) == 3
    assert buckets.wait("a") > 0 and buckets.wait("c") > 0
    assert buckets.wait("b") == 0.0  # forgotten: a full bucket again


def test_peers_count_by_address_and_ipv6_by_its_64() -> None:
    assert peer_key("ipv4:10.1.2.3:5555") == peer_key("ipv4:10.1.2.3:6666") == "10.1.2.3"
    assert peer_key("ipv6:[2001:db8:1:2:aaaa::1]:5555") == peer_key("ipv6:[2001:db8:1:2:bbbb::9]:1") == (
        "2001:db8:1:2::/64"
    )
    assert peer_key("ipv6:[::ffff:10.1.2.3]:5555") == "10.1.2.3"
    assert peer_key("unix:/run/referee.sock") == "unix:/run/referee.sock"


def test_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError):
        Limits(requests_per_s=-1)
    with pytest.raises(ValueError):
        Limits(request_burst=0)
    assert not UNLIMITED.active and Limits().active


# ------------------------------------------------------------------------------------------- through gRPC


def test_a_creation_loop_is_refused_once_over_the_rate(redis_server: RedisProcess) -> None:
    server = ServerThread(redis_server.url, limits=Limits(games_per_minute=3), also_ipv6=IPV6)
    v4, v6 = Client(server.address), Client(server.ipv6_address if IPV6 else server.address)
    try:
        for _ in range(3):
            v4.create(token="a-player-token")
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED") as caught:
            v4.create()
        delay = retry_delay(caught[0])
        assert delay is not None and 0 < delay <= 20.0  # 3 a minute: a new one within 20 s
        # the organizer is exempt, from the same address
        for _ in range(5):
            v4.create(token=ORGANIZER)
        # another peer is unaffected, except with the token that used its share
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED") as caught:
            v6.create(token="a-player-token")
        assert retry_delay(caught[0]) is not None
        if IPV6:
            v6.create()
            v6.create(token="another-token")
        # other calls are not creations: still served
        game = v4.create(token=ORGANIZER)
        assert v4.view(game, game.tokens[0]).version == 0
    finally:
        v4.close()
        v6.close()
        server.stop()


def test_a_request_flood_is_refused_per_peer(redis_server: RedisProcess) -> None:
    server = ServerThread(redis_server.url, limits=Limits(requests_per_s=2, request_burst=5), also_ipv6=IPV6)
    v4, v6 = Client(server.address), Client(server.ipv6_address if IPV6 else server.address)
    try:
        served = 0
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED") as caught:
            for _ in range(1000):  # far more than the calls 2 a second allow during this loop
                v4.stub.Ping(rpb.PingRequest())
                served += 1
        assert served >= 5
        delay = retry_delay(caught[0])
        assert delay is not None and 0 < delay <= 0.5
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"):  # every RPC, before its checks
            v4.stub.GetGame(rpb.GetGameRequest(game_id="g_none"), metadata=md("whatever"))
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"):  # streams too
            next(v4.stub.WatchGame(rpb.WatchGameRequest(game_id="g_none"), metadata=md("whatever")))
        # health checks are never refused: a container's health check must not fail under a flood
        health = health_pb2_grpc.HealthStub(v4.channel)
        for _ in range(20):
            assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
        if IPV6:
            v6.stub.Ping(rpb.PingRequest())  # another peer is unaffected
            with expect_error(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND"):
                v6.stub.GetGame(rpb.GetGameRequest(game_id="g_none"), metadata=md("whatever"))

        def served_again() -> bool:
            try:
                v4.stub.Ping(rpb.PingRequest())
                return True
            except grpc.RpcError:
                return False

        assert wait_until(served_again)  # a token comes back at the rate
    finally:
        v4.close()
        v6.close()
        server.stop()


def test_max_open_games_refuses_the_next_game_and_a_finished_match_frees_its_place(
    private_redis: RedisProcess, admin: redis.Redis
) -> None:
    servers = [ServerThread(private_redis.url, max_open_games=2) for _ in range(2)]  # two referees, one cap
    clients = [Client(s.address) for s in servers]
    try:
        organizers = _knock_match(clients[0])
        clients[1].create()
        assert admin.zcard(REGISTRY_KEY) == 2
        for client in clients:
            with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_OPEN_GAMES") as caught:
                client.create()
            delay = retry_delay(caught[0])
            assert delay is not None and 1.0 <= delay <= 3600.0  # when the earliest open game expires
        assert admin.zcard(REGISTRY_KEY) == 2 and admin.dbsize() == 1 + 2 * 2  # nothing written
        _knock_match(clients[1])  # the organizer is never refused (but counted)
        assert admin.zcard(REGISTRY_KEY) == 3
        _finish(clients[0], organizers)  # the match's end takes it out of the registry (just after the answer)
        assert wait_until(lambda: admin.zcard(REGISTRY_KEY) == 2)
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_OPEN_GAMES"):
            clients[0].create()
        other = _knock_match(clients[0])
        _finish(clients[1], other)
        _finish(clients[0], _knock_match(clients[0]))
        assert wait_until(lambda: admin.zcard(REGISTRY_KEY) == 2)
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_OPEN_GAMES"):
            clients[1].create()
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()


def test_a_freed_place_is_taken_by_the_next_game(private_redis: RedisProcess, admin: redis.Redis) -> None:
    server = ServerThread(private_redis.url, max_open_games=1)
    client = Client(server.address)
    try:
        first = _knock_match(client)
        with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_OPEN_GAMES"):
            client.create()
        _finish(client, first)
        assert wait_until(lambda: admin.zcard(REGISTRY_KEY) == 0)
        game = client.create()
        assert admin.zrange(REGISTRY_KEY, 0, -1) == [game.game_id.encode()]
    finally:
        client.close()
        server.stop()


def test_an_unplayed_game_expires_after_the_short_ttl_and_a_move_gives_it_the_idle_ttl(
    private_redis: RedisProcess, admin: redis.Redis
) -> None:
    server = ServerThread(private_redis.url, unplayed_ttl_s=6, max_open_games=10)
    client = Client(server.address)
    try:
        unplayed, played = client.create(), client.create()
        organizers = client.create(token=ORGANIZER)
        for game in (unplayed, played):
            for key in (f"game:{{{game.game_id}}}", f"game:{{{game.game_id}}}:log"):
                assert 0 < admin.ttl(key) <= 6
        assert admin.ttl(f"game:{{{organizers.game_id}}}") > 29 * DAY  # the organizer's: the idle time
        view = client.view(played, played.tokens[0])
        seat = view.to_act
        own = client.view(played, played.tokens[seat])
        client.move(played, played.tokens[seat], own.legal_moves[0])
        assert admin.ttl(f"game:{{{played.game_id}}}") > 29 * DAY  # the first move: the idle time (30 days)
        assert admin.ttl(f"game:{{{played.game_id}}}:log") > 29 * DAY
        keys = (f"game:{{{unplayed.game_id}}}", f"game:{{{unplayed.game_id}}}:log")
        assert wait_until(lambda: admin.exists(*keys) == 0)
        with expect_error(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND"):
            client.view(unplayed, unplayed.tokens[0])
        # Both registry entries are due now; the next creation checks them: the expired game leaves the registry,
        # the played one stays, with its real expiry.
        assert wait_until(lambda: admin.time()[0] * 1000 > admin.zscore(REGISTRY_KEY, played.game_id))  # type: ignore[operator]
        newest = client.create()
        registered = dict(admin.zrange(REGISTRY_KEY, 0, -1, withscores=True))
        assert set(registered) == {played.game_id.encode(), organizers.game_id.encode(), newest.game_id.encode()}
        assert registered[played.game_id.encode()] > admin.time()[0] * 1000 + 29 * DAY * 1000
        assert client.view(played, played.tokens[0]).version == 1
    finally:
        client.close()
        server.stop()


def test_redis_memory_stays_bounded_under_a_creation_loop(private_redis: RedisProcess, admin: redis.Redis) -> None:
    server = ServerThread(private_redis.url, limits=UNLIMITED, max_open_games=25)
    rated = ServerThread(private_redis.url, limits=Limits(games_per_minute=10), max_open_games=0)
    client, rated_client = Client(server.address), Client(rated.address)
    try:
        keys_before = admin.dbsize()
        memory_before = int(admin.info("memory")["used_memory"])
        refused = {"TOO_MANY_OPEN_GAMES": 0, "RATE_LIMITED": 0}
        created = {"capped": 0, "rated": 0}
        start = time.monotonic()
        for n in range(600):
            which, c = ("capped", client) if n % 2 else ("rated", rated_client)
            try:
                c.create()
                created[which] += 1
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                status = rpc_status.from_call(exc)  # type: ignore[arg-type]
                assert status is not None and retry_delay(exc) is not None
                info = error_details_pb2.ErrorInfo()
                assert status.details[0].Unpack(info)
                refused[info.reason] += 1
        elapsed = time.monotonic() - start
        assert created["capped"] == 25 and refused["TOO_MANY_OPEN_GAMES"] == 275
        assert 10 <= created["rated"] <= 10 + elapsed / 6 + 1  # 10 at once, then one every 6 s
        assert refused["RATE_LIMITED"] == 300 - created["rated"]
        games = created["capped"] + created["rated"]
        assert admin.dbsize() - keys_before == 2 * games + 1  # each game's hash and events, and the registry
        grown = int(admin.info("memory")["used_memory"]) - memory_before
        assert grown < games * 16_000 + 1_000_000, f"Redis grew {grown} bytes for {games} games"
    finally:
        client.close()
        rated_client.close()
        server.stop()
        rated.stop()


def test_serve_takes_the_limits_from_its_flags(private_redis: RedisProcess, admin: redis.Redis) -> None:
    process = RefereeProcess(["--port", "0", "--no-http", "--redis-url", private_redis.url,
                              "--grace", "1", "--games-per-minute", "2", "--unplayed-ttl", "7",
                              "--max-open-games", "5"])  # fmt: skip
    try:
        process.start()
        client = Client(process.address)
        try:
            games = [client.create(), client.create()]
            with expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED") as caught:
                client.create()
            assert retry_delay(caught[0]) is not None
            assert all(0 < admin.ttl(f"game:{{{g.game_id}}}") <= 7 for g in games)
            assert admin.zcard(REGISTRY_KEY) == 2
        finally:
            client.close()
    finally:
        assert process.stop(30) == 0


@pytest.mark.parametrize("flag,value", [("--max-open-games", "-1"), ("--games-per-minute", "x"),
                                        ("--requests-per-second", "-5"), ("--unplayed-ttl", "-1")])  # fmt: skip
def test_serve_refuses_a_bad_limit(flag: str, value: str) -> None:
    done = subprocess.run([sys.executable, "-m", "server.cli", "serve", flag, value], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 2 and flag in done.stderr


def test_the_sdk_reports_the_retry_delay(redis_server: RedisProcess) -> None:
    import pickle

    from clients.sdk import RefereeClient, RefereeError

    server = ServerThread(redis_server.url, limits=Limits(games_per_minute=1))
    try:
        with RefereeClient(server.address) as sdk:
            sdk.create_game()
            with pytest.raises(RefereeError) as refused:
                sdk.create_game()
        error = refused.value
        assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.reason == "RATE_LIMITED"
        assert error.retry_after_s is not None and 0 < error.retry_after_s <= 60
        assert not error.transient  # not resent by the SDK by itself: the caller decides when
        assert pickle.loads(pickle.dumps(error)).retry_after_s == error.retry_after_s
    finally:
        server.stop()
