"""Fixtures of the server tests: the real referee on port 0 over the suite's real Redis (tests/kit.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.redis_launcher import RedisProcess
from tests import kit
from tests.kit import ServerThread
from tests.server import refkit
from tests.server.refkit import Client


@pytest.fixture(scope="session")
def referee_server(referee_thread: ServerThread) -> ServerThread:
    """The session's referee (tests/conftest.py ``referee_thread``; tests create their own games)."""
    return referee_thread


@pytest.fixture
def client(referee_server: ServerThread) -> Iterator[Client]:
    """A blocking gRPC client of the session's referee."""
    c = Client(referee_server.address)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def web(redis_server: RedisProcess) -> Iterator[kit.ServerThread]:
    """A referee of the module's own with its HTTP port too (Connect, gRPC-Web, JSON), over the suite's Redis."""
    with refkit.ServerThread(redis_server.url, http=True) as server:
        yield server
