"""The referee a tournament plays through: a running one (``--referee host:port`` with the organizer token), or
one the tournament starts for itself.

A referee of its own is ``rummy-referee serve`` run as a child process (``python -m server.cli``: the clients
never import the server's code) on a free port of 127.0.0.1, with a fresh organizer token and its zero-setup
private redis-server in a temporary data directory; it is stopped (SIGTERM, then SIGKILL) when the tournament
ends, and on Linux it also gets SIGTERM if the tournament process dies first.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from clients.sdk import RefereeClient, RefereeError

_PR_SET_PDEATHSIG = 1
_READY = "rummy-referee listening on "


class RefereeStartError(RuntimeError):
    """The referee of the tournament's own could not be started."""


@dataclass(frozen=True, slots=True)
class RefereeAddress:
    """Where the referee is, and the organizer token it accepts."""

    address: str
    organizer_token: str
    own: bool = False


def _prctl() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here, not in the forked child (which may hold no lock of the parent's threads)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if callable(_PRCTL):
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _pump(stream: IO[str], log: IO[str]) -> None:
    """Copy the rest of the referee's stdout into its log (so that its pipe never fills)."""
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            log.write(line)
            log.flush()


@contextlib.contextmanager
def own_referee(log_path: Path, timeout: float = 60.0) -> Iterator[RefereeAddress]:
    """Start ``rummy-referee serve`` for the tournament, and stop it at the end."""
    token = secrets.token_urlsafe(24)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rummy-tournament-") as data_dir, open(log_path, "a") as log:
        env = {**os.environ, "RUMMY_ORGANIZER_TOKEN": token}  # in the environment: not on a visible command line
        env.pop("REDIS_URL", None)  # its own private redis-server, never someone else's database
        proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--host", "127.0.0.1", "--port", "0", "--no-http",
             "--data-dir", data_dir, "--grace", "2"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env, text=True,
            start_new_session=True,  # a Ctrl-C in the terminal stops the tournament, which then stops the referee
            preexec_fn=_die_with_parent if _PRCTL is not None else None,
        )  # fmt: skip
        try:
            address = _await_ready(proc, log_path, timeout)
            assert proc.stdout is not None
            threading.Thread(target=_pump, args=(proc.stdout, log), daemon=True, name="referee-log").start()
            _await_ping(address, timeout)
            yield RefereeAddress(address, token, own=True)
        finally:
            _stop(proc)


def _await_ready(proc: subprocess.Popen[str], log_path: Path, timeout: float) -> str:
    """The address the referee prints once it listens."""
    box: list[str] = []
    assert proc.stdout is not None
    stdout = proc.stdout

    def read() -> None:
        box.append(stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    line = box[0] if box else ""
    if not line.startswith(_READY):
        _stop(proc)
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-10:])
        raise RefereeStartError(f"the referee did not start (see {log_path}):\n{tail}")
    return line[len(_READY):].strip()


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


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


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
