"""docker-compose.yml is valid (`docker-compose config -q`, Debian package docker-compose) and keeps its
promises: Redis with an append-only file and a health check, the referee built from this repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")


@pytest.mark.skipif(COMPOSE is None, reason="docker-compose is not installed (apt-get install docker-compose)")
def test_compose_file_is_valid() -> None:
    assert COMPOSE is not None
    quiet = subprocess.run([COMPOSE, "-f", "docker-compose.yml", "config", "-q"], cwd=ROOT, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    resolved = subprocess.run([COMPOSE, "-f", "docker-compose.yml", "config"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=True).stdout  # fmt: skip
    redis, referee = resolved.split("\n  referee:")[0], resolved.split("\n  referee:")[1]
    assert "--appendonly" in redis and "healthcheck:" in redis and "redis-cli" in redis
    assert "build:" in referee and "REDIS_URL: redis://redis:6379/0" in referee
    assert "condition: service_healthy" in referee and "healthcheck:" in referee


def test_dockerfile_serves_on_all_interfaces() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert '"serve", "--host", "0.0.0.0"' in dockerfile and "EXPOSE 50051" in dockerfile
    assert 'CMD ["rummy-referee", "health"]' in dockerfile
