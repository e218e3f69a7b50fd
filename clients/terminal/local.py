"""A private referee for one terminal game: ``rummy-referee serve`` as a child process on a free port.

The client side never imports the server: it runs ``python -m server.cli serve --port 0`` (clients.referee_proc),
which starts its own zero-setup redis-server in a temporary data directory, reads the address it prints, and
talks to it over gRPC like any other referee. The organizer token (needed for ``--seed``) is made here and passed in
the child's environment. The child runs in a session of its own so that a Ctrl-C typed at the game does not reach
it, and it is told to exit if this process dies.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from clients.referee_proc import RefereeProcess, RefereeStartError


class LocalRefereeError(RuntimeError):
    """The local referee did not start (its log tail is in the message)."""


class LocalReferee:
    """``with LocalReferee() as ref:`` a running referee at ``ref.address``; ``ref.organizer_token`` is its
    organizer token. Everything it wrote (Redis's append-only file, its log) is removed on exit."""

    def __init__(self, start_timeout: float = 30.0) -> None:
        self.start_timeout = start_timeout
        self.organizer_token = secrets.token_urlsafe(24)
        self.address = ""
        self._dir = Path(tempfile.mkdtemp(prefix="rummy-play-"))
        self._process: RefereeProcess | None = None

    @property
    def log_path(self) -> Path:
        """The referee's log (its output)."""
        return self._dir / "referee.log"

    def start(self) -> str:
        """Start the referee and wait for its address (raises LocalRefereeError)."""
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RUMMY_ORGANIZER_TOKEN")}
        env["RUMMY_ORGANIZER_TOKEN"] = self.organizer_token
        self._process = RefereeProcess(
            ["--host", "127.0.0.1", "--port", "0", "--no-http", "--data-dir", str(self._dir / "data"), "--grace", "1"],
            env=env, log=self.log_path, cwd=None, die_with_parent=True, new_session=True,
        )  # fmt: skip
        try:
            self._process.start(self.start_timeout)
        except RefereeStartError as exc:
            self.stop()
            raise LocalRefereeError(f"the local referee did not start:\n{str(exc).partition(chr(10))[2]}") from None
        self.address = self._process.address
        return self.address

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the referee stops its redis-server too), SIGKILL after ``timeout``; then remove its files."""
        process, self._process = self._process, None
        if process is not None:
            process.stop(timeout)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LocalReferee:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
