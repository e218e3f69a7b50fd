"""A private referee for one terminal game: ``rummy-referee serve`` as a child process on a free port.

The client side never imports the server: it runs ``python -m server.cli serve --port 0`` (which starts its own
zero-setup redis-server in a temporary data directory), reads the address it prints, and talks to it over gRPC
like any other referee. The organizer token (needed for ``--seed``) is made here and passed in the child's
environment. The child runs in a session of its own so that a Ctrl-C typed at the game does not reach it, and it
is told to exit if this process dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType

_PR_SET_PDEATHSIG = 1
_ROOT = Path(__file__).resolve().parents[2]


class LocalRefereeError(RuntimeError):
    """The local referee did not start (its log tail is in the message)."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalReferee:
    """``with LocalReferee() as ref:`` a running referee at ``ref.address``; ``ref.organizer_token`` is its
    organizer token. Everything it wrote (Redis's append-only file, its log) is removed on exit."""

    def __init__(self, start_timeout: float = 30.0) -> None:
        self.start_timeout = start_timeout
        self.organizer_token = secrets.token_urlsafe(24)
        self.address = ""
        self._dir = Path(tempfile.mkdtemp(prefix="rummy-play-"))
        self._process: subprocess.Popen[str] | None = None

    @property
    def log_path(self) -> Path:
        """The referee's log (stderr)."""
        return self._dir / "referee.log"

    def start(self) -> str:
        """Start the referee and wait for its address (raises LocalRefereeError)."""
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")}
        env["RUMMY_ORGANIZER_TOKEN"] = self.organizer_token
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
        cmd = [sys.executable, "-m", "server.cli", "serve", "--host", "127.0.0.1", "--port", "0", "--no-http",
               "--data-dir", str(self._dir / "data"), "--grace", "1"]  # fmt: skip
        with self.log_path.open("w") as log:
            self._process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                start_new_session=True, preexec_fn=_die_with_parent,
            )  # fmt: skip
        line = self._first_line()
        prefix = "listening on "
        if prefix not in line:
            tail = self._log_tail()
            self.stop()
            raise LocalRefereeError(f"the local referee did not start:\n{tail}")
        self.address = line.split(prefix, 1)[1].strip()
        return self.address

    def _first_line(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.start_timeout)
        return got[0] if got else ""

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-5:]) or "(empty log)"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the referee stops its redis-server too), SIGKILL after ``timeout``; then remove its files."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if process is not None and process.stdout is not None:
            process.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LocalReferee:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
