"""server.redis_launcher: the private redis-server of `rummy-referee serve` and of this test suite."""

from __future__ import annotations

import importlib.util
import shutil
import stat
from pathlib import Path

import pytest
import redis

from server import redis_launcher
from server.redis_launcher import RedisLaunchError, RedisProcess, find_redis_server, start_redis


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


def test_a_data_dir_too_deep_for_a_unix_socket_gets_a_tcp_port(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    process = start_redis(deep, unix_socket=True)
    try:
        assert process.unix_socket is None and process.port > 0
        assert process.url.startswith("redis://127.0.0.1:") and redis.Redis.from_url(process.url).ping()
    finally:
        process.stop()
