"""The one test kit for starting referees: the production wiring (server.app ``build_referee`` over a
server.settings ``Settings``), in a thread of the test process or as a child process (clients.referee_proc).

- ``referee_settings(redis_url, ...)``: `serve`'s settings as the tests run them (port 0, no HTTP port unless asked,
  limits far above the tests' rates, a 5 s storage timeout: the suite's Redis fsyncs every write on a shared
  machine, a 1 s grace, no maximum connection age);
- ``ServerThread(settings)``: that referee's asyncio loop in a daemon thread, so that plain blocking clients can
  drive it (``firer``: fire the deadlines of time controls, as `serve` does);
- ``ServerProcess``: ``rummy-referee serve`` as a child process over a given Redis, to kill and restart;
- ``run_bench(script, *args)``: one of bench/'s scripts, which start referees of their own, run to its figures.

tests/server/refkit.py and tests/clients/clientkit.py build on these (their ``ServerThread`` keep their options).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

from clients.referee_proc import RefereeProcess
from server.app import RefereeApp, build_referee, limit_settings
from server.grpc_api import set_serving
from server.limits import Limits
from server.service import Referee
from server.settings import (
    GameSettings,
    NetworkSettings,
    RetentionSettings,
    Settings,
    StorageSettings,
)

#: The organizer token of every test referee.
ORGANIZER = "organizer-secret-for-tests"
#: Limits far above the tests' rates (still on, so every call goes through the limiter as in production).
TEST_LIMITS = Limits(requests_per_s=1e6, request_burst=1_000_000, games_per_minute=1e6)
TEST_LIMIT_FLAGS = ("--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000")
#: The repository's root.
ROOT = Path(__file__).resolve().parents[1]
#: Not serve's 1 s: the suite's Redis fsyncs every write on a shared machine (fault tests use serve's).
TEST_STORAGE_TIMEOUT_S = 5.0


def referee_settings(redis_url: str, *, organizer_token: str | None = None, limits: Limits = TEST_LIMITS,
                     max_open_games: int = 100_000, finished_ttl_s: int = 3600, unplayed_ttl_s: int = 3600,
                     idle_ttl_s: int | None = None, idem_ttl_s: int | None = None,
                     op_timeout_s: float = TEST_STORAGE_TIMEOUT_S, wait_replicas: int = 0,
                     wait_timeout_s: float | None = None, pool_max_connections: int | None = None,
                     pool_timeout_s: float | None = None, http: bool = False, cors_origins: Sequence[str] = (),
                     also_ipv6: bool = False, max_attempts: int = 8, firer: bool = False) -> Settings:  # fmt: skip
    """The settings of a test referee on 127.0.0.1:0 over ``redis_url`` (the rest: `serve`'s defaults)."""
    retention = RetentionSettings(finished_ttl_s=finished_ttl_s, unplayed_ttl_s=unplayed_ttl_s)
    if idle_ttl_s is not None:
        retention = dataclasses.replace(retention, idle_ttl_s=idle_ttl_s)
    if idem_ttl_s is not None:
        retention = dataclasses.replace(retention, idem_ttl_s=idem_ttl_s)
    storage = StorageSettings(redis_url=redis_url, timeout_s=op_timeout_s, wait_replicas=wait_replicas)
    for name, value in (("wait_timeout_s", wait_timeout_s), ("pool_max_connections", pool_max_connections),
                        ("pool_timeout_s", pool_timeout_s)):  # fmt: skip
        if value is not None:
            storage = dataclasses.replace(storage, **{name: value})
    return Settings(
        storage=storage, retention=retention,
        # connections never aged out (GOAWAY): a session's referee outlives serve's 300 s, as its tests' clients do
        network=NetworkSettings(port=0, http_port=0 if http else None, cors_origins=tuple(cors_origins),
                                also_ipv6=also_ipv6, grace_s=1.0, max_connection_age_s=0.0),
        limits=limit_settings(limits, max_open_games=max_open_games),
        games=GameSettings(organizer_token=organizer_token, max_attempts=max_attempts, timeout_firer=firer),
    )  # fmt: skip


class ServerThread:
    """The referee of ``settings`` (server.app), its asyncio loop in a daemon thread; ``port`` (and
    ``http_port``) once started. It reports SERVING at once (the tests' Redis is up)."""

    def __init__(self, settings: Settings, *, start_timeout: float = 30.0) -> None:
        self.settings = settings
        self.redis_url = settings.storage.redis_url or ""
        self.port = 0
        self.http_port = 0
        self.app: RefereeApp | None = None
        self.referee: Referee | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name="referee")
        self._thread.start()
        if not self._ready.wait(start_timeout):
            raise RuntimeError("the referee did not start")
        if self._error is not None:
            raise RuntimeError("the referee did not start") from self._error

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ipv6_address(self) -> str:
        return f"[::1]:{self.port}"

    @property
    def http_url(self) -> str:
        """The base URL of the HTTP port (``http=True``)."""
        assert self.http_port, "started without an HTTP port"
        return f"http://127.0.0.1:{self.http_port}"

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = self.app = build_referee(self.settings)
        self.referee = app.referee
        self.port = app.port
        self.http_port = app.http_port or 0
        await app.start()
        await set_serving(app.health, True)
        if self.settings.games.timeout_firer:
            app.start_firer()
        self._ready.set()
        await self._stop.wait()
        await app.stop()

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerProcess(RefereeProcess):
    """``rummy-referee serve`` over ``redis_url`` as a child process (clients.referee_proc) with the tests'
    organizer token, limits and a 1 s grace; on ``port`` (default: a free one, found at the first start and kept
    for restarts); with ``http``, its HTTP port too (else ``--no-http``); its output in ``log_dir``."""

    def __init__(self, redis_url: str, organizer_token: str, port: int | None = None, log_dir: Path | None = None,
                 args: Sequence[str] = (), *, http: bool = False) -> None:  # fmt: skip
        self.redis_url = redis_url
        self.fixed_port = port or free_port()
        self.fixed_http_port = free_port() if http else None
        self.extra_args = tuple(args)
        log = (log_dir or Path("/tmp")) / f"referee-{self.fixed_port}.log"
        http_args = ["--http-port", str(self.fixed_http_port)] if self.fixed_http_port else ["--no-http"]
        super().__init__(
            ["--redis-url", redis_url, "--port", str(self.fixed_port), "--organizer-token", organizer_token,
             "--grace", "1", *TEST_LIMIT_FLAGS, *http_args, *self.extra_args],
            log=log,
        )  # fmt: skip

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.fixed_port}"

    @property
    def port(self) -> int:
        return self.fixed_port

    @property
    def http_port(self) -> int | None:
        return self.fixed_http_port


def two_referees(redis_url: str, log_dir: Path, args: Sequence[str] = (), *,
                 http: bool = False) -> Iterator[tuple[ServerProcess, ServerProcess]]:  # fmt: skip
    """Two ``serve`` processes (ServerProcess, the tests' organizer token) over one Redis, started, then stopped
    after: a fixture's body (``yield from``)."""
    a = ServerProcess(redis_url, ORGANIZER, log_dir=log_dir, args=args, http=http)
    b = ServerProcess(redis_url, ORGANIZER, log_dir=log_dir, args=args, http=http)
    a.start()
    b.start()
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def free_port() -> int:
    """A TCP port of 127.0.0.1 free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_bench(script: str, *args: str, timeout: float = 240) -> tuple[dict[str, Any], list[str]]:
    """``python bench/<script> args`` from the repository's root, which must exit 0: the figures it printed last
    (a line of JSON) and every line it printed."""
    done = subprocess.run([sys.executable, f"bench/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures, lines
