"""bench/cluster.py runs end to end (briefly, on the suite's cluster and standalone Redis) and prints the figures
the README quotes: a smoke test of the benchmark itself, not a timing (tests assert correctness, not speed)."""

from __future__ import annotations

from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess
from tests import kit

KEYS = {"cluster_moves_per_s_16", "standalone_moves_per_s_16", "cluster_vs_standalone_16",
        "cluster_referee_cpu_us_per_move_16", "standalone_referee_cpu_us_per_move_16"}  # fmt: skip


def test_the_cluster_bench_prints_every_figure(redis_cluster: LocalCluster, redis_server: RedisProcess) -> None:
    figures, lines = kit.run_bench("cluster.py", "--quick", "--cluster-url", redis_cluster.url,
                                   "--redis-url", redis_server.url)  # fmt: skip
    assert set(figures) >= KEYS, figures
    assert all(figures[k] > 0 for k in KEYS), figures
    assert figures["servers"] == 1 and figures["rounds"] == 2
    assert any(line.startswith("cluster/standalone x16") for line in lines)
