"""Watch fan-out across processes and shards. bench/fanout.py, briefly: two referees on the suite's six-node Redis
Cluster, 50 games with 5 streams each split over both (a move committed by one referee is delivered by the other
too); every stream compared with the stored log, and each referee's Redis connections counted on every node by its
pid. And a slow watcher on the cluster: cut (WATCHER_TOO_SLOW) and resumed without a gap."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.redis_cluster import LocalCluster
from tests.server.refkit import Client, ServerThread
from tests.server.test_fanout import _hub, cut_and_resumed

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


@pytest.fixture(scope="module")
def cluster_referee(redis_cluster: LocalCluster) -> Iterator[tuple[ServerThread, Client]]:
    server = ServerThread(redis_cluster.url)
    client = Client(server.address)
    try:
        yield server, client
    finally:
        client.close()
        server.stop()


def test_a_slow_watcher_on_the_cluster_is_cut_and_resumes_without_a_gap(
    monkeypatch: pytest.MonkeyPatch, cluster_referee: tuple[ServerThread, Client]
) -> None:
    """As tests/server/test_fanout.py's, on the cluster: a follower that takes nothing holds at most its queue_limit
    events, is cut with WATCHER_TOO_SLOW, and a watch resumed from its last event gets the rest of the log."""
    server, client = cluster_referee
    hub = _hub(server)
    monkeypatch.setattr(hub, "watch", dataclasses.replace(hub.watch, queue_limit=3))
    cut_and_resumed(server, client, 61)
