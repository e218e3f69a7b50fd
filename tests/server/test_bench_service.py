"""bench/service.py runs end to end (briefly) and prints the figures the README quotes: a smoke test of the
benchmark itself, not a timing (tests assert correctness, not speed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.redis_launcher import find_redis_server
from tests import kit

KEYS = {"moves_per_s_1", "moves_per_s_16", "moves_per_s_64", "echo_per_s_1", "echo_per_s_16", "echo_per_s_64",
        "move_p50_ms_16", "move_p99_ms_16", "move_vs_echo_16"}  # fmt: skip


@pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")
def test_the_service_bench_prints_every_figure() -> None:
    figures, lines = kit.run_bench("service.py", "--seconds", "0.2", "--rounds", "2", "--servers", "1")
    assert set(figures) >= KEYS, figures
    assert all(figures[k] > 0 for k in KEYS), figures
    assert figures["servers"] == 1 and figures["rounds"] == 2
    assert any(line.startswith("moves/echo x16") for line in lines)


def test_a_plain_python_runs_the_bench_in_the_project_venv() -> None:
    """The issue says `python bench/service.py`: an interpreter without the project's packages hands over to .venv."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    if not base.exists() or not (kit.ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no base interpreter or no .venv here")
    done = subprocess.run([str(base), "bench/service.py", "--help"], cwd=kit.ROOT, capture_output=True, text=True,
                          timeout=60, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})  # fmt: skip
    assert done.returncode == 0 and "--rounds" in done.stdout, done.stderr
