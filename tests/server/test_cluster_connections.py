"""A referee on the six-node Redis Cluster holds a bounded number of connections to each node, however many
CreateGame calls come at once: redis-py's cluster client keeps a pool per node that grows to the commands in
flight (its own ``max_connections`` refuses past it, never waits), so the store's ``FailoverCluster`` lets at most
``POOL_MAX_CONNECTIONS`` commands at once reach one node and the others wait (docs/design.md). Counted from each
node's side (CLIENT LIST), the referee's connections told apart by their local ports (the referee is a process of
its own)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.redis_cluster import LocalCluster
from server.store import POOL_MAX_CONNECTIONS
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import ORGANIZER, md

pytestmark = pytest.mark.integration

CONCURRENT = 120  # CreateGame calls in flight at once, in each of the waves
WAVES = 3
#: Besides the bounded pool: the hot path's pipelined connection and the sharded subscriber, one each per
#: master, and the slot map's refresh (CLUSTER SLOTS) now and then.
OWN_CONNECTIONS = 3


@pytest.fixture
def referee(redis_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(redis_cluster.url, log_dir=tmp_path_factory.mktemp("connections"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _local_ports(pid: int) -> set[int]:
    """The local ports of the TCP sockets a process holds (Linux /proc: its socket inodes in the TCP tables)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rpartition(":")[2], 16))
    return ports


def _per_node(cluster: LocalCluster, pid: int) -> dict[int, int]:
    """The referee's connections to each node (by node port), as the nodes list their clients."""
    own = _local_ports(pid)
    counts: Counter[int] = Counter()
    for node in cluster.nodes:
        with node.client() as conn:
            for client in conn.client_list():
                host, _, port = client["addr"].rpartition(":")
                if host == "127.0.0.1" and int(port) in own:
                    counts[node.port] += 1
    return dict(counts)


def test_concurrent_creations_hold_a_bounded_number_of_connections_per_node(
    redis_cluster: LocalCluster, referee: ServerProcess
) -> None:
    assert referee.process is not None
    pid = referee.process.pid
    peak: Counter[int] = Counter()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for port, n in _per_node(redis_cluster, pid).items():
                peak[port] = max(peak[port], n)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    request = rpb.CreateGameRequest(profile="gin", seats=[pb.SeatSpec(display_name="A"), pb.SeatSpec(display_name="B")])
    created = 0
    try:
        with grpc.insecure_channel(referee.address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            for _ in range(WAVES):
                calls = [stub.CreateGame.future(request, metadata=md(ORGANIZER), timeout=30) for _ in range(CONCURRENT)]
                for call in calls:
                    assert call.result().game_id
                    created += 1
            after = _per_node(redis_cluster, pid)
    finally:
        stop.set()
        sampler.join(10)
    for port, n in after.items():
        peak[port] = max(peak[port], n)
    masters = {m.port for m in redis_cluster.masters()}
    most = {port: peak[port] for port in sorted(masters)}
    print(f"\n{created} games created, {CONCURRENT} at once; the referee's connections per master, at most: {most}, "
          f"after: { {port: after.get(port, 0) for port in sorted(masters)} }")  # fmt: skip
    assert created == WAVES * CONCURRENT
    assert set(peak) & masters == masters, "the games' nodes are every master"
    bound = POOL_MAX_CONNECTIONS + OWN_CONNECTIONS
    assert all(n <= bound for n in peak.values()), (dict(peak), bound)
