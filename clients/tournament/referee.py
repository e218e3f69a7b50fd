"""The referee a tournament plays through: a running one (``--referee host:port`` with the organizer token), or
one the tournament starts for itself.

A referee of its own is ``rummy-referee serve`` run as a child process (clients.referee_proc: the clients
never import the server's code) on a free port of 127.0.0.1, with a fresh organizer token and its zero-setup
private redis-server in a temporary data directory; it is stopped (SIGTERM, then SIGKILL) when the tournament
ends, and on Linux it also gets SIGTERM if the tournament process dies first.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clients import referee_proc
from clients.referee_proc import RefereeProcess
from clients.sdk import RefereeClient, RefereeError


class RefereeStartError(RuntimeError):
    """The referee of the tournament's own could not be started."""


@dataclass(frozen=True, slots=True)
class RefereeAddress:
    """Where the referee is, and the organizer token it accepts."""

    address: str
    organizer_token: str
    own: bool = False


@contextlib.contextmanager
def own_referee(log_path: Path, timeout: float = 60.0) -> Iterator[RefereeAddress]:
    """Start ``rummy-referee serve`` for the tournament, and stop it at the end."""
    token = secrets.token_urlsafe(24)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rummy-tournament-") as data_dir:
        env = {**os.environ, "RUMMY_ORGANIZER_TOKEN": token}  # in the environment: not on a visible command line
        env.pop("REDIS_URL", None)  # its own private redis-server, never someone else's database
        proc = RefereeProcess(
            ["--host", "127.0.0.1", "--port", "0", "--no-http", "--data-dir", data_dir, "--grace", "2"],
            env=env, log=log_path, cwd=None, die_with_parent=True,
            new_session=True,  # a Ctrl-C in the terminal stops the tournament, which then stops the referee
        )  # fmt: skip
        try:
            try:
                proc.start(timeout)
            except referee_proc.RefereeStartError as exc:
                tail = str(exc).partition("\n")[2]
                raise RefereeStartError(f"the referee did not start (see {log_path}):\n{tail}") from None
            _await_ping(proc.address, timeout)
            yield RefereeAddress(proc.address, token, own=True)
        finally:
            proc.stop()


def _await_ping(address: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with RefereeClient(address, timeout=2.0) as probe:
        while True:
            try:
                probe.ping()
                return
            except RefereeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


@contextlib.contextmanager
def referee(address: str | None, organizer_token: str | None, log_path: Path) -> Iterator[RefereeAddress]:
    """The given referee (which must answer Ping), or one of the tournament's own when ``address`` is None."""
    if address is None:
        with own_referee(log_path) as own:
            yield own
        return
    if not organizer_token:
        raise RefereeStartError("--referee needs the organizer token (--organizer-token or $RUMMY_ORGANIZER_TOKEN)")
    try:
        _await_ping(address, 10.0)
    except RefereeError as exc:
        raise RefereeStartError(f"no referee answers at {address}: {exc}") from None
    yield RefereeAddress(address, organizer_token)
