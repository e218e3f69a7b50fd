"""bench/fanout.py across processes and shards, briefly: two referees on the suite's six-node Redis Cluster, 50
games with 5 streams each split over both (a move committed by one referee is delivered by the other too); every
stream compared with the stored log, and each referee's Redis connections counted on every node by its pid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from server.redis_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


def test_streams_over_two_referees_on_the_cluster_get_every_event_once_with_few_connections_each(
    redis_cluster: LocalCluster,
) -> None:
    command = [sys.executable, "bench/fanout.py", "--cluster-url", redis_cluster.url, "--processes", "2",
               "--streams", "250", "--seconds", "2", "--rate", "60", "--channels", "4"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["cluster"] is True and figures["processes"] == 2 and figures["games"] == 50
    assert figures["fanout_streams_failed"] == 0, done.stdout
    assert figures["moves"] > 0 and figures["deliveries"] >= 5 * figures["moves"] * 0.9, figures
    per_process = figures["redis_connections_by_process"]
    assert len(per_process) == 2 and all(0 < n <= 20 for n in per_process.values()), per_process
