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


CLUSTER = ROOT / "docker-compose.cluster.yml"


@pytest.mark.skipif(COMPOSE is None, reason="docker-compose is not installed (apt-get install docker-compose)")
def test_cluster_compose_file_is_valid() -> None:
    assert COMPOSE is not None
    quiet = subprocess.run([COMPOSE, "-f", CLUSTER.name, "config", "-q"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    services = subprocess.run([COMPOSE, "-f", CLUSTER.name, "config", "--services"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=True).stdout.split()  # fmt: skip
    assert sorted(services) == ["cluster-init", "redis-1", "redis-2", "redis-3", "referee-1", "referee-2"]


def test_cluster_compose_promises() -> None:
    """Three cluster-enabled masters with their own volumes, a one-shot `redis-cli --cluster create` over them, and
    two referees on the cluster, each on a host port of its own, started once the cluster is made."""
    text = CLUSTER.read_text()
    for node in ("redis-1", "redis-2", "redis-3"):
        block = text.split(f"\n  {node}:\n")[1].split("\n\n")[0]
        assert '"--cluster-enabled", "yes"' in block and f'"--cluster-announce-hostname", "{node}"' in block
        assert '"--appendonly", "yes"' in block and f"{node}-data:/data" in block
    init = text.split("\n  cluster-init:\n")[1].split("\n\n")[0]
    assert "redis-cli --cluster create" in init and "--cluster-yes" in init
    assert init.count("condition: service_healthy") == 3 and 'restart: "no"' in init
    assert "REDIS_URL: redis-cluster://redis-1:6379" in text
    assert "condition: service_completed_successfully" in text
    for referee, port in (("referee-1", "50051"), ("referee-2", "50052")):
        block = text.split(f"\n  {referee}:\n")[1].split("\n\n")[0]
        assert "<<: *referee" in block and f'"{port}:50051"' in block
