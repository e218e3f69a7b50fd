"""Load balancing across referees: three real `rummy-referee serve` processes over one redis-server.

A client given all three addresses spreads its calls over them (gRPC ``round_robin``; each referee's metrics say
it served moves); a referee stopped with SIGTERM mid-run costs no move (the SDK resends UNAVAILABLE with the same
request id, the others take the calls); and the referees' maximum connection age makes a client behind a TCP load
balancer reconnect (the GOAWAY seen on the wire), so a referee added after it connected gets its calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import socket
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from clients.sdk import AsyncRefereeClient, RefereeClient, channel_target
from clients.sdk.values import RetryPolicy
from server.redis_launcher import RedisProcess
from tests.server.test_observability import SUBMIT, Served, scrape, start_serve, stop_serve, value

# connections live ~1 s here (300 s by default): the GOAWAYs happen during the test, under the moves of all of it
AGE = ["--max-connection-age", "1", "--max-connection-age-grace", "2"]
RETRY = RetryPolicy(attempts=8, initial_backoff=0.05, max_backoff=0.5)


@pytest.fixture(scope="module")
def referees(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Served]]:
    started: list[Served] = []
    try:
        for n in range(3):
            started.append(start_serve(redis_server.url, tmp_path_factory.mktemp(f"referee{n}"), AGE))
        yield started
    finally:
        for served in started:
            stop_serve(served.process)


def moves_served(served: Served) -> float:
    return value(scrape(served.metrics_url), "rummy_rpc_handled_total", method=SUBMIT, code="OK")


@dataclass
class Table:
    """A two-seat Gin game played with random legal moves, each answer checked to follow the one before."""

    client: RefereeClient
    game_id: str
    tokens: dict[int, str]
    rng: random.Random
    version: int = 0
    moves: int = 0

    @staticmethod
    def create(client: RefereeClient, seed: int) -> Table:
        game = client.create_game("gin", ["north", "south"])
        return Table(client, game.game_id, dict(game.tokens), random.Random(seed), game.version)

    def move(self) -> bool:
        """One move by the seat to act (False: the match is over)."""
        snapshot = self.client.get_game(self.game_id, token=self.tokens[0]).snapshot
        if snapshot.to_act is None:
            return False
        token = self.tokens[snapshot.to_act]
        legal = self.client.get_game(self.game_id, token=token).snapshot.legal
        result = self.client.submit_move(self.game_id, self.rng.choice(legal), token=token)
        assert result.version > self.version, (self.game_id, result.version, self.version)
        self.version = result.version
        self.moves += 1
        return True


def test_calls_spread_over_three_referees_and_one_stopped_costs_no_move(referees: list[Served]) -> None:
    before = [moves_served(r) for r in referees]
    client = RefereeClient(",".join(r.address for r in referees), retry=RETRY)
    stopped = threading.Event()
    halfway = threading.Barrier(4)
    errors: list[BaseException] = []

    def player(seed: int) -> None:
        try:
            tables = [Table.create(client, seed * 10 + n) for n in range(2)]
            for _ in range(15):
                for table in tables:
                    table.move()
            halfway.wait(60)
            stopped.wait(60)
            for _ in range(15):  # after the stop: every move answered, none lost nor doubled
                for table in tables:
                    table.move()
            for table in tables:
                assert client.get_game(table.game_id, token=table.tokens[0]).snapshot.version == table.version
        except BaseException as exc:  # reported by the test's thread
            traceback.print_exc()
            errors.append(exc)
            halfway.abort()

    threads = [threading.Thread(target=player, args=(n,)) for n in range(3)]
    try:
        for thread in threads:
            thread.start()
        halfway.wait(120)
        served = [moves_served(r) - b for r, b in zip(referees, before, strict=True)]
        assert all(n > 0 for n in served), f"moves served by each referee: {served}"
        referees[0].process.signal(signal.SIGTERM)  # by pid: NOT_SERVING, calls in flight finish, the port closes
        stopped.set()
        for thread in threads:
            thread.join(120)
    finally:
        stopped.set()
        client.close()
        stop_serve(referees[0].process)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    after = [moves_served(r) for r in referees[1:]]
    assert all(a > b for a, b in zip(after, before[1:], strict=True)), (before, after)


@dataclass
class Balancer:
    """A TCP load balancer: each new connection goes to the backend with the fewest open connections. It reads
    the HTTP/2 frames the backends send and counts the GOAWAY frames among them."""

    backends: list[str]
    listener: socket.socket = field(init=False)
    open: dict[str, int] = field(default_factory=dict)
    accepted: int = 0
    goaways: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.listener.getsockname()[1]}"

    def add(self, backend: str) -> None:
        with self.lock:
            self.backends.append(backend)

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                backend = min(self.backends, key=lambda b: self.open.get(b, 0))
                self.open[backend] = self.open.get(backend, 0) + 1
                self.accepted += 1
            host, port = backend.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, backend), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, backend: str | None) -> None:
        """Copy ``source`` to ``sink``; from a backend (``backend`` named), parse the frames as they pass."""
        pending = b""
        try:
            while data := source.recv(65536):
                sink.sendall(data)
                if backend is not None:
                    pending = self._frames(pending + data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            if backend is not None:
                source.close()
                sink.close()
                with self.lock:
                    self.open[backend] -= 1

    def _frames(self, data: bytes) -> bytes:
        """Count the GOAWAY frames (type 7) of the whole frames in ``data``; the incomplete rest is returned."""
        while len(data) >= 9:
            length = int.from_bytes(data[:3], "big")
            if len(data) < 9 + length:
                break
            if data[3] == 0x7:
                with self.lock:
                    self.goaways += 1
            data = data[9 + length :]
        return data


def test_max_connection_age_brings_a_connected_client_to_a_new_referee(referees: list[Served]) -> None:
    """Behind a TCP load balancer a client keeps its one connection: only its end (the referee's GOAWAY at the
    maximum connection age) lets the balancer send it to a referee started since."""
    first, added = referees[1], referees[2]
    balancer = Balancer([first.address])
    client = RefereeClient(balancer.address, retry=RETRY)
    try:
        table = Table.create(client, 7)
        table.move()
        assert balancer.accepted == 1
        baseline = moves_served(added)
        balancer.add(added.address)
        for _ in range(2000):  # bounded: ~1 s of connection age is a few hundred moves
            if not table.move():
                table = Table.create(client, 8)
            if moves_served(added) > baseline:
                break
        assert moves_served(added) > baseline, "the added referee never got a call"
        assert balancer.goaways >= 1 and balancer.accepted >= 2, (balancer.goaways, balancer.accepted)
    finally:
        client.close()
        balancer.close()


def test_a_list_of_addresses_is_one_balanced_channel() -> None:
    assert channel_target("localhost:50051") == ("localhost:50051", [])
    assert channel_target("dns:///referees.example:50051") == ("dns:///referees.example:50051", [])
    target, options = channel_target("127.0.0.1:5001, 127.0.0.1:5002,localhost:5003")
    assert target == "ipv4:127.0.0.1:5001,127.0.0.1:5002,127.0.0.1:5003"
    assert dict(options)["grpc.default_authority"] == "127.0.0.1:5001"
    assert json.loads(dict(options)["grpc.service_config"]) == {"loadBalancingConfig": [{"round_robin": {}}]}
    assert channel_target(["[::1]:5001", "[::1]:5002"])[0] == "ipv6:[::1]:5001,[::1]:5002"
    for bad in ("", " , ", "127.0.0.1,127.0.0.1:5002", "127.0.0.1:5001,referee.invalid:5002"):
        with pytest.raises(ValueError):
            channel_target(bad)


def test_a_watch_outlives_the_connections_the_referee_ends(referees: list[Served]) -> None:
    """Connections end every ~1 s here (GOAWAY, then 2 s of grace): a WatchGame stream cut with its connection
    is resumed by the SDK from its last event, and every event arrives once, in order."""
    client = RefereeClient(referees[1].address, retry=RETRY)
    table = Table.create(client, 11)
    watch = client.watch(table.game_id, token=table.tokens[0])
    seen: list[tuple[int, int]] = []
    first = threading.Event()
    last = [2**63]  # the version to read up to, once known

    def follow() -> None:
        for item in watch:
            first.set()
            if isinstance(item, dict):
                seen.append((item["version"], item["index"]))
                if item["version"] >= last[0]:
                    return

    reader = threading.Thread(target=follow, daemon=True)
    try:
        reader.start()
        assert first.wait(30), "no snapshot"
        for _ in range(3000):  # bounded: a few connection ages are a few hundred moves
            if not table.move() or watch.reconnects >= 2:
                break
        assert watch.reconnects >= 2, "the stream was never cut"
        last[0] = table.version + 1  # not reached yet: the next move's events are
        table.move()
        reader.join(60)
        assert not reader.is_alive()
    finally:
        watch.cancel()
        client.close()
    assert seen == sorted(set(seen)), "an event twice or out of order"
    versions = {v for v, _ in seen}
    assert versions == set(range(min(versions), table.version + 1)), "a version missing"


def test_the_async_client_balances_too(referees: list[Served]) -> None:
    """``AsyncRefereeClient`` over a list: the same channel target, games created on both referees."""
    live = referees[1:]  # the first one may have been stopped above
    before = [value(scrape(r.metrics_url), "rummy_games_created_total") for r in live]

    async def create() -> None:
        async with AsyncRefereeClient([r.address for r in live], retry=RETRY) as client:
            for _ in range(6):
                await client.create_game("gin", ["a", "b"])

    asyncio.run(create())
    after = [value(scrape(r.metrics_url), "rummy_games_created_total") for r in live]
    created = [a - b for a, b in zip(after, before, strict=True)]
    assert sum(created) == 6 and min(created) >= 1, created
