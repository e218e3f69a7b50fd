"""Fixtures of the client tests: real referees over the suite's real redis-server, never mocks.

- ``referee``: the production server (server.app ``build_referee``, tests/kit.py) on port 0, its asyncio loop in a
  thread of the test process (one per session: tests/conftest.py ``firing_referee_thread``).
- ``spawn_referee``: ``rummy-referee serve`` (``python -m server.cli``) as a subprocess on a free port, for tests
  that kill it with SIGKILL and start it again, and for load (a process of its own: its own GIL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clients.sdk import RefereeClient
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import H2Proxy, ServerProcess
from tests.kit import ServerThread


@pytest.fixture(scope="session")
def referee(firing_referee_thread: ServerThread) -> ServerThread:
    """The session's in-process referee firing deadlines (tests/conftest.py; tests make their own games)."""
    return firing_referee_thread


@pytest.fixture
def client(referee: ServerThread) -> Iterator[RefereeClient]:
    """A blocking SDK client of the session's referee."""
    with RefereeClient(referee.address) as c:
        yield c


@pytest.fixture
def spawn_referee(
    redis_server: RedisProcess, tmp_path: Path
) -> Iterator[Callable[[], ServerProcess]]:
    """Start referee subprocesses (each on its own free port); all are stopped at the end of the test."""
    started: list[ServerProcess] = []

    def spawn() -> ServerProcess:
        server = ServerProcess(redis_server.url, log_dir=tmp_path)
        server.start()
        started.append(server)
        return server

    try:
        yield spawn
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def proxy(referee: ServerThread) -> Iterator[H2Proxy]:
    """An HTTP/2-reading TCP proxy in front of the session's referee (clientkit.H2Proxy), to break connections."""
    p = H2Proxy(referee.address)
    try:
        yield p
    finally:
        p.close()
