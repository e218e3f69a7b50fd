"""server.redis_launcher: the private redis-server of `rummy-referee serve` and of this test suite."""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from server import redis_launcher
from server.redis_launcher import (
    DataDirInUse,
    RedisLaunchError,
    RedisProcess,
    find_redis_server,
    lock_data_dir,
    start_redis,
)
from tests.server.refkit import Client, ServerThread, move_from_text

REDIS_CLI = shutil.which("redis-cli") or ""


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def test_the_launched_server_is_ours_durable_and_local(private_redis: RedisProcess) -> None:
    client = redis.Redis.from_url(private_redis.url)
    config = client.config_get("*")
    assert config["appendonly"] == "yes" and config["appendfsync"] == "always"
    assert config["bind"] == "127.0.0.1" and config["dir"] == str(private_redis.data_dir)
    assert client.info("server")["process_id"] == private_redis.pid
    client.set("acknowledged", "1")
    private_redis.kill()  # a crash: SIGKILL
    private_redis.restart()
    assert redis.Redis.from_url(private_redis.url).get("acknowledged") == b"1"


def test_no_binary_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert find_redis_server() is None
    with pytest.raises(RedisLaunchError, match="no redis-server found"):
        start_redis(tmp_path)


def test_a_taken_port_is_refused_without_touching_whoever_holds_it(private_redis: RedisProcess, tmp_path: Path) -> None:
    with pytest.raises(RedisLaunchError, match="exited"):
        start_redis(tmp_path, port=private_redis.port)
    assert redis.Redis.from_url(private_redis.url).ping()


def test_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert redis_launcher.default_data_dir() == tmp_path / "rummy-referee"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert redis_launcher.default_data_dir() == Path("data")


def test_the_unix_socket_server_is_reachable_by_this_user_only(tmp_path: Path) -> None:
    """`serve`'s Redis: no TCP port at all, a Unix socket of mode 0700 in a data directory of its user's only; it
    restarts there."""
    process = start_redis(tmp_path / "data", unix_socket=True)
    try:
        sock = tmp_path / "data" / "redis.sock"
        assert process.unix_socket == sock and process.port == 0
        assert process.url == f"unix://{sock}?db=0"
        assert stat.S_IMODE(sock.stat().st_mode) == 0o700
        client = redis.Redis.from_url(process.url)
        assert client.config_get("port")["port"] == "0" and client.info("server")["process_id"] == process.pid
        client.set("kept", "1")
        process.stop()
        process.restart()
        assert redis.Redis.from_url(process.url).get("kept") == b"1"
        # the append-only file holds every hand: the data directory and all in it are this user's only
        files = [tmp_path / "data", *(tmp_path / "data").rglob("*")]
        assert any(f.name.endswith(".aof") for f in files)
        assert all(stat.S_IMODE(f.stat().st_mode) & 0o077 == 0 for f in files), [
            (f.name, oct(f.stat().st_mode)) for f in files
        ]
    finally:
        process.stop()


def test_an_open_data_dir_left_by_an_earlier_run_is_closed(tmp_path: Path) -> None:
    """A data directory made open to others (an earlier version, or another umask) is made this user's only: what
    is inside can then not be reached by anyone else, whatever its own mode."""
    data = tmp_path / "odd #dir? 100%"  # and its socket's URL survives characters that URLs give meaning to
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    process = start_redis(data, unix_socket=True)
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert redis.Redis.from_url(process.url).info("server")["process_id"] == process.pid
    finally:
        process.stop()


def _other_user_cannot_use(*target: str) -> str:
    """What `redis-cli <target> ping` answers when run as the user nobody (never PONG, or the test fails)."""
    done = subprocess.run(["runuser", "-u", "nobody", "--", REDIS_CLI, *target, "ping"], capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    answer = (done.stdout + done.stderr).strip()
    assert "PONG" not in answer, f"another user got PONG from {target}"
    return answer


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory every user may enter (unlike pytest's tmp_path, under a 0700 directory): what keeps another user
    out is then only what the launcher does."""
    base = Path(tempfile.mkdtemp(prefix="rummy-open-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


needs_other_user = pytest.mark.skipif(
    not (shutil.which("runuser") and REDIS_CLI and os.geteuid() == 0 and _user_exists("nobody")),
    reason="needs root, runuser, redis-cli and the user nobody to try as another user",
)


@needs_other_user
def test_another_user_cannot_reach_the_socket_in_the_data_dir(open_base: Path) -> None:
    control = open_base / "control"  # the same check against an open socket does reach it: the check can fail
    opened = start_redis(control, unix_socket=True, extra_args=["--unixsocketperm", "777"])
    control.chmod(0o755)
    process = start_redis(open_base / "data", unix_socket=True)
    try:
        done = subprocess.run(["runuser", "-u", "nobody", "--", REDIS_CLI, "-s", str(opened.unix_socket), "ping"],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        assert done.stdout.strip() == "PONG"
        assert process.unix_socket == open_base / "data" / "redis.sock"
        assert "Permission denied" in _other_user_cannot_use("-s", str(process.unix_socket))
        assert redis.Redis.from_url(process.url).ping()
    finally:
        process.stop()
        opened.stop()


@needs_other_user
def test_a_data_dir_too_deep_for_a_unix_socket_gets_a_short_private_one(open_base: Path) -> None:
    """A socket path must fit in about 100 bytes: for a deeper data directory the socket goes into a new 0700
    directory of this user's (under $XDG_RUNTIME_DIR or /tmp), still no TCP port; stop() removes it."""
    deep = open_base / ("d" * 100)
    process = start_redis(deep, unix_socket=True)
    try:
        sock = process.unix_socket
        assert sock is not None and process.port == 0 and process.socket_dir == sock.parent
        assert len(os.fsencode(sock)) <= 100 and not sock.is_relative_to(deep)
        private = sock.parent.stat()
        assert stat.S_IMODE(private.st_mode) == 0o700 and private.st_uid == os.geteuid()
        client = redis.Redis.from_url(process.url)
        assert client.config_get("port")["port"] == "0" and client.info("server")["process_id"] == process.pid
        assert client.config_get("dir")["dir"] == str(deep)  # the append-only file stays in the data directory
        assert "Permission denied" in _other_user_cannot_use("-s", str(sock))
        client.set("kept", "1")
        process.stop()
        assert not sock.parent.exists()
        process.restart()
        assert redis.Redis.from_url(process.url).get("kept") == b"1"
    finally:
        process.stop()


@needs_other_user
def test_when_no_socket_path_fits_tcp_needs_a_password_no_other_user_can_see(open_base: Path) -> None:
    """Nowhere for a short socket: 127.0.0.1 with a random password, given to redis-server on its standard input
    (its command line is readable by every user: `ps`)."""
    deep = open_base / ("d" * 100)
    process = start_redis(deep, unix_socket=True, socket_dirs=[deep])
    try:
        assert process.unix_socket is None and process.port > 0 and process.password
        assert len(process.password) >= 32
        assert process.password not in Path(f"/proc/{process.pid}/cmdline").read_text()
        assert process.password not in process.public_url and process.password not in repr(process)
        assert "NOAUTH" in _other_user_cannot_use("-h", "127.0.0.1", "-p", str(process.port))
        assert "NOAUTH" in _other_user_cannot_use("-h", "127.0.0.1", "-p", str(process.port), "--user", "default",
                                                  "--pass", "guess")  # fmt: skip
        assert redis.Redis.from_url(process.url).ping()
        assert not any(f.name.endswith(".conf") for f in deep.iterdir())  # the password is written nowhere
        referee = ServerThread(process.url)  # the referee's store (and its pipelined hot path) authenticates
        try:
            client = Client(referee.address)
            game = client.create("gin")
            assert client.move(game, game.tokens[1], move_from_text("draw stock")).version == 1
            client.close()
        finally:
            referee.stop()
        process.stop()
        process.restart()  # the same password again, on the same port
        assert redis.Redis.from_url(process.url).ping()
    finally:
        process.stop()


def test_a_private_socket_dir_taken_by_someone_else_meanwhile_is_refused(open_base: Path) -> None:
    """Between stop() and restart() the private directory is gone: one of that name made open meanwhile (by
    another user, in a shared /tmp) must not receive the socket."""
    process = start_redis(open_base / ("d" * 100), unix_socket=True)
    try:
        assert process.socket_dir is not None
        process.stop()
        process.socket_dir.mkdir(mode=0o777)
        process.socket_dir.chmod(0o777)
        with pytest.raises(RedisLaunchError, match="no longer a private directory"):
            process.restart()
        assert not process.running()
    finally:
        process.stop()


def test_one_referee_per_data_dir(tmp_path: Path) -> None:
    """The data directory's lock: a second taker is refused with who holds it; released, it can be taken again."""
    first = lock_data_dir(tmp_path / "data")
    try:
        first.record(port=50051)
        with pytest.raises(DataDirInUse, match=rf"pid {os.getpid()}, port 50051\)"):
            lock_data_dir(tmp_path / "data")
    finally:
        first.release()
    again = lock_data_dir(tmp_path / "data")
    again.release()
    assert stat.S_IMODE((tmp_path / "data" / "referee.lock").stat().st_mode) == 0o600


def test_the_lock_waits_for_the_redis_of_a_crashed_referee(tmp_path: Path) -> None:
    """A referee killed outright releases its lock at once, while its Redis (told by the kernel) is still exiting:
    the next one waits for that Redis rather than share its append-only file."""
    data = tmp_path / "data"
    process = start_redis(data, unix_socket=True)
    try:
        lock = lock_data_dir(data)
        lock.record(redis_pid=process.pid)
        lock.release()
        with pytest.raises(RedisLaunchError, match=f"pid {process.pid}.* still runs"):
            lock_data_dir(data, leftover_timeout=0.2)
    finally:
        process.stop()
    lock_data_dir(data, leftover_timeout=0.2).release()
