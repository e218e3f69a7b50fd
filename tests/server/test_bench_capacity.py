"""bench/capacity.py runs end to end (briefly) and prints the figures docs/scaling.md quotes: a smoke test of the
benchmark itself, not a timing (tests assert correctness, not speed)."""

from __future__ import annotations

import pytest

from server.redis_launcher import find_redis_server
from server.settings import DEFAULTS
from tests import kit

POSITIVE = {"referee_cpu_us_per_move", "referee_cpu_us_per_ping", "redis_cpu_us_per_move", "moves_per_s_measured",
            "moves_per_s_two_referees", "moves_per_s_per_referee_core", "moves_per_s_predicted",
            "two_vs_one_predicted", "redis_connections_idle"}  # fmt: skip
# INFO memory deltas over 20 games: present, but their sign is noise (idle connections' buffers shrink meanwhile)
MEMORY = {"redis_bytes_per_new_game", "redis_bytes_per_game_20_moves"}
WATCHES = 12  # watched games: well above what the multiplexed feeds may add


@pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")
def test_the_capacity_bench_prints_every_figure() -> None:
    figures, _ = kit.run_bench("capacity.py", "--seconds", "0.2", "--rounds", "1", "--memory-games", "20",
                               "--watches", str(WATCHES))  # fmt: skip
    assert set(figures) >= POSITIVE | MEMORY | {"cpu_per_move_two_vs_one", "redis_connections_per_watch"}, figures
    assert all(figures[k] > 0 for k in POSITIVE), figures
    # The watch feeds are multiplexed (server/events.py): the watched games add the subscriber connection and at
    # most the pool connections of the feeds' reads in flight at once (read_slots), never one per watched game.
    added = figures["redis_connections_watching"] - figures["redis_connections_idle"]
    assert added <= 1 + DEFAULTS.watch.read_slots < WATCHES, figures
    assert figures["rounds"] == 1
