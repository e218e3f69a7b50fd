"""A referee as a child process: ``rummy-referee serve`` (``python -m server.cli serve``) started, waited for until
it listens, stopped by its pid, its output kept.

One helper for everything that runs a referee of its own: terminal play (clients.terminal.local), tournaments
(clients.tournament.referee), the benchmarks (bench/) and the tests. It imports nothing of the server's (the
clients never do): it runs the command, reads the addresses the referee prints once it listens
(``rummy-referee listening on HOST:PORT``, then ``http on``, ``metrics on``, then ``stop it with ...``), and
copies the rest of its standard output to the log, with its standard error (or to the log alone when asked).

    with RefereeProcess(["--redis-url", url, "--no-http"], log=path) as ref:
        ref.address   # "127.0.0.1:PORT"
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
_PR_SET_PDEATHSIG = 1
_LISTENING = "rummy-referee listening on "
_HTTP = "rummy-referee http on "
_METRICS = "rummy-referee metrics on "
_READY = "stop it with "  # the last line `serve` prints once every port listens
_KEPT_LINES = 5000  # of its output, without a log


class RefereeStartError(RuntimeError):
    """The referee did not start: its exit code or a time-out, and the tail of its log, in the message."""


def _prctl() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here, not in the forked child (which may hold no lock of the parent's threads)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if callable(_PRCTL):
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def serve_command(args: Sequence[str] = (), python: str = sys.executable) -> list[str]:
    """The command line of ``rummy-referee serve`` with ``args``."""
    return [python, "-m", "server.cli", "serve", *args]


class RefereeProcess:
    """``rummy-referee serve ARGS`` as a child process.

    ``args``: the options of ``serve`` (``--port 0`` unless a ``--port`` is among them); ``env``: its
    environment (default: this one's; the repository is put first on PYTHONPATH); ``log``: where its output goes
    (appended; default: kept in memory, ``output()``); ``die_with_parent``: it gets SIGTERM if this process dies
    (Linux); ``new_session``: a session of its own, so a Ctrl-C typed at a terminal does not reach it.
    ``root``: the source tree whose referee it runs (its working directory, first on PYTHONPATH; an earlier
    checkout, for a benchmark's baseline); ``python_args``: options of the interpreter before ``-m server.cli``
    (e.g. ``-m cProfile -o FILE``); ``copy_stdout``: its standard output goes to the log too (else only its
    standard error: e.g. JSON log lines alone); ``all_ports``: wait until every port listens (the last line
    `serve` prints), else only for the gRPC address (a referee of an earlier version prints no more).
    ``start()`` may be called again after ``stop()`` or ``kill()`` (the same options: the same port if fixed).
    """

    def __init__(self, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None, log: Path | None = None,
                 cwd: Path | None = ROOT, die_with_parent: bool = False, new_session: bool = False,
                 python: str = sys.executable, python_args: Sequence[str] = (), root: Path = ROOT,
                 all_ports: bool = True, copy_stdout: bool = True) -> None:  # fmt: skip
        args = list(args)
        self.args = args if "--port" in args else ["--port", "0", *args]
        self.env = dict(os.environ if env is None else env)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), self.env.get("PYTHONPATH", "")) if p)
        self.log = log
        self.cwd = root if cwd == ROOT else cwd
        self.python_args = list(python_args)
        self.all_ports = all_ports
        self.copy_stdout = copy_stdout
        self.die_with_parent = die_with_parent
        self.new_session = new_session
        self.python = python
        self.process: subprocess.Popen[str] | None = None
        #: What it printed once it listened: HOST:PORT of gRPC, of the HTTP port and of the metrics (or None).
        self.listening = ""
        self.listening_line = ""  # the whole line, e.g. "rummy-referee listening on 127.0.0.1:PORT (TLS)"
        self.http_line = ""
        #: The line `serve` prints last once it listens ("stop it with Ctrl-C, or SIGTERM (kill PID): ...").
        self.ready_line = ""
        self.http_address: str | None = None
        self.metrics_address: str | None = None
        self.starts = 0
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    # ----------------------------------------------------------------------------------------- start, stop

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def address(self) -> str:
        """HOST:PORT of its gRPC port (once started)."""
        return self.listening

    @property
    def port(self) -> int:
        """The gRPC port (once started)."""
        return int(self.address.rpartition(":")[2])

    @property
    def http_port(self) -> int | None:
        return int(self.http_address.rpartition(":")[2]) if self.http_address else None

    def start(self, timeout: float = 60.0) -> RefereeProcess:
        """Start it and wait until every port listens (RefereeStartError if it exits or ``timeout`` passes)."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self._ready.clear()
        self.listening, self.ready_line, self.http_address, self.metrics_address = "", "", None, None
        self.listening_line = self.http_line = ""
        log = open(self.log, "a") if self.log is not None else None  # noqa: SIM115 - closed right after the start
        try:
            if self.log is not None:
                self.log.parent.mkdir(parents=True, exist_ok=True)
            self.process = subprocess.Popen(
                [self.python, *self.python_args, *serve_command(self.args)[1:]], cwd=self.cwd, env=self.env, text=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=log if log is not None else subprocess.STDOUT, start_new_session=self.new_session,
                preexec_fn=_die_with_parent if self.die_with_parent and _PRCTL is not None else None,
            )  # fmt: skip
        finally:
            if log is not None:
                log.close()
        self.starts += 1
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True,
                                        name="referee-output")  # fmt: skip
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.process.poll() is not None:
                self._reader.join(2)
                raise RefereeStartError(f"the referee exited with {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RefereeStartError(f"the referee did not listen within {timeout:g} s:\n{self.log_tail()}")
        return self

    def _read(self, stdout: IO[str]) -> None:
        copy = self.log is not None and self.copy_stdout
        sink = open(self.log, "a") if copy and self.log is not None else None  # noqa: SIM115 - closed at the end
        try:
            for line in stdout:
                with self._lock:
                    self._lines.append(line)
                    del self._lines[:-_KEPT_LINES]
                if sink is not None:
                    sink.write(line)
                    sink.flush()
                if line.startswith(_LISTENING):
                    self.listening_line = line.rstrip("\n")
                    self.listening = line[len(_LISTENING):].split()[0]
                    if not self.all_ports:
                        self._ready.set()
                elif line.startswith(_HTTP):
                    self.http_line = line.rstrip("\n")
                    self.http_address = line[len(_HTTP):].split()[0]
                elif line.startswith(_METRICS):
                    self.metrics_address = line[len(_METRICS):].split()[0]
                elif line.startswith(_READY) and self.listening:
                    self.ready_line = line.rstrip("\n")
                    self._ready.set()
        except (OSError, ValueError):
            pass
        finally:
            if sink is not None:
                sink.close()
            with contextlib.suppress(OSError, ValueError):
                stdout.close()

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (the referee drains and stops its private redis-server), SIGKILL after ``timeout``; its exit
        code (None: it was not started)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if self._reader is not None:
            self._reader.join(5)
        return process.returncode

    def kill(self) -> None:
        """SIGKILL: it dies with calls and streams in flight (a crash)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        if self._reader is not None:
            self._reader.join(5)

    def signal(self, sig: int) -> None:
        """Send ``sig`` to it (while it runs)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code, once it exits."""
        assert self.process is not None, "not started"
        code = self.process.wait(timeout)
        if self._reader is not None:
            self._reader.join(5)
        return code

    # ------------------------------------------------------------------------------------------ output

    def output(self) -> str:
        """Its last lines of output (stdout and, without a log, stderr)."""
        with self._lock:
            return "".join(self._lines)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` of its log (or of its output, without one)."""
        text = self.output()
        if self.log is not None:
            try:
                text = self.log.read_text(errors="replace")
            except OSError:
                text = ""
        return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"

    def __enter__(self) -> RefereeProcess:
        if self.process is None:
            self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
