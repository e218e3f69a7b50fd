"""Fixtures of the server tests: the real referee on port 0 over the suite's real Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.redis_launcher import RedisProcess
from tests.server.refkit import Client, ServerThread


@pytest.fixture(scope="session")
def referee_server(redis_server: RedisProcess) -> Iterator[ServerThread]:
    """One referee for the session (tests create their own games)."""
    server = ServerThread(redis_server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def client(referee_server: ServerThread) -> Iterator[Client]:
    """A blocking gRPC client of the session's referee."""
    c = Client(referee_server.address)
    try:
        yield c
    finally:
        c.close()
