"""bench/floor.py runs end to end (briefly) and prints its figures; its floor moves answer the recorded move and
its real moves still play: a smoke test of the benchmark itself, not a timing."""

from __future__ import annotations

import pytest

from server.redis_launcher import find_redis_server
from tests import kit

KEYS = {"echo_per_s_16", "moves_per_s_16", "floor_per_s_16", "move_vs_echo_16", "floor_vs_echo_16",
        "move_vs_floor_16"}  # fmt: skip


@pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")
def test_the_floor_bench_prints_every_figure() -> None:
    figures, lines = kit.run_bench("floor.py", "--seconds", "0.2", "--rounds", "3", "--servers", "1")
    assert set(figures) >= KEYS, figures
    assert all(figures[k] > 0 for k in KEYS), figures
    assert figures["servers"] == 1 and figures["rounds"] == 3
    assert any(line.startswith("floor/echo x16") for line in lines)
