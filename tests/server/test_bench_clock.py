"""bench/clock.py runs end to end (quick mode) and prints its figures: a smoke test of the benchmark, not a timing
(tests assert correctness, not speed)."""

from __future__ import annotations

import pytest

from server.redis_launcher import find_redis_server
from tests import kit

KEYS = {"timeout_late_p99_ms", "timeout_late_p50_ms", "clock_move_ratio", "moves_per_s_clock", "moves_per_s_plain"}


@pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")
def test_the_clock_bench_prints_every_figure() -> None:
    figures, _ = kit.run_bench("clock.py", "--quick", "--games", "40", "--servers", "1")
    assert set(figures) >= KEYS, figures
    assert figures["games"] == 40 and figures["unfinished"] == 0
    assert figures["timeouts"] == 20 + 20 * 3  # forfeit games: one timeout; auto_move (max 1): three
    assert all(figures[k] > 0 for k in KEYS if k != "timeout_late_p50_ms"), figures
