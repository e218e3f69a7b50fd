"""A real Redis Cluster on this machine: N masters with R replicas each, one redis-server child per node on free
ports of 127.0.0.1, the cluster made by `redis-cli --cluster create`, every node stopped by its own pid.

Tests, benchmarks and `docker-compose`-less demos use it the same way::

    cluster = start_cluster(tmp_dir)          # 3 masters, 1 replica each: six processes
    try:
        url = cluster.url                     # redis-cluster://127.0.0.1:PORT (any node is a seed)
        master = cluster.master_for_key("game:{abc}")
        master.kill()                         # SIGKILL: its replica is promoted
        cluster.wait_ok()
    finally:
        cluster.stop()
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from server.redis_launcher import RedisLaunchError, RedisProcess, find_redis_server, start_redis

# A node's cluster bus listens on its port + 10000: both must be free.
_BUS_OFFSET = 10000


def _port_pair_free(port: int) -> bool:
    for candidate in (port, port + _BUS_OFFSET):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                return False
    return True


def _free_cluster_port() -> int:
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + _BUS_OFFSET < 65536 and _port_pair_free(port):
            return port
    raise RedisLaunchError("no free port pair (port, port + 10000) for a cluster node")


def find_redis_cli(server_binary: str | None = None) -> str | None:
    """redis-cli beside the redis-server in use, or on PATH."""
    if server_binary:
        beside = Path(server_binary).with_name("redis-cli")
        if beside.exists():
            return str(beside)
    return shutil.which("redis-cli")


@dataclass
class ClusterNode:
    process: RedisProcess
    node_id: str = ""

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def pid(self) -> int:
        return self.process.pid

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)  # type: ignore[arg-type]

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        self.process.kill()

    def stop(self) -> None:
        self.process.stop()

    def restart(self) -> None:
        self.process.restart()

    def running(self) -> bool:
        return self.process.running()

    def role(self) -> str:
        """'master' or 'slave', as the node itself says (ROLE)."""
        with self.client(socket_timeout=2) as conn:
            kind = conn.execute_command("ROLE")[0]
        return kind.decode() if isinstance(kind, bytes) else str(kind)


@dataclass
class LocalCluster:
    nodes: list[ClusterNode]
    replicas: int
    data_dir: Path
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """A seed URL the referee takes (`redis-cluster://`): any live node."""
        for node in self.nodes:
            if node.running():
                return f"redis-cluster://127.0.0.1:{node.port}"
        raise RedisLaunchError("no node of the cluster is running")

    @property
    def pids(self) -> list[int]:
        return [node.pid for node in self.nodes if node.running()]

    def _any_client(self) -> redis.Redis:
        for node in self.nodes:
            if node.running():
                return node.client(socket_timeout=2)
        raise RedisLaunchError("no node of the cluster is running")

    def masters(self) -> list[ClusterNode]:
        """The nodes that are masters now (after a failover, a former replica)."""
        by_port = {node.port: node for node in self.nodes}
        found = []
        with self._any_client() as conn:
            for line in conn.execute_command("CLUSTER", "NODES").decode().splitlines():
                parts = line.split()
                flags = parts[2].split(",")
                if "master" in flags and "fail" not in flags and "fail?" not in flags and len(parts) > 8:
                    port = int(parts[1].split("@")[0].rsplit(":", 1)[1])
                    if port in by_port:
                        found.append(by_port[port])
        return found

    def master_for_key(self, key: str | bytes) -> ClusterNode:
        """The master that serves `key`'s slot now."""
        with self._any_client() as conn:
            slot = int(conn.execute_command("CLUSTER", "KEYSLOT", key))
            for start, end, master, *_ in conn.execute_command("CLUSTER", "SLOTS"):
                if int(start) <= slot <= int(end):
                    port = int(master[1])
                    return next(node for node in self.nodes if node.port == port)
        raise RedisLaunchError(f"no node serves the slot of {key!r}")

    def replica_of(self, master: ClusterNode) -> ClusterNode | None:
        for node in self.nodes:
            if node is master or not node.running():
                continue
            with node.client(socket_timeout=2) as conn:
                role = conn.execute_command("ROLE")
            if role[0] in (b"slave", "slave") and int(role[2]) == master.port:
                return node
        return None

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node says cluster_state:ok and every slot has a live master."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                states = []
                for node in self.nodes:
                    if not node.running():
                        continue
                    with node.client(socket_timeout=1) as conn:
                        info = conn.execute_command("CLUSTER", "INFO").decode()
                    states.append("cluster_state:ok" in info and "cluster_slots_ok:16384" in info)
                if states and all(states) and self._slots_served():
                    return
                last = f"{states}"
            except (redis.RedisError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.1)
        raise RedisLaunchError(f"the cluster did not become ok within {timeout}s ({last})")

    def _slots_served(self) -> bool:
        """Every slot's master, as every live node sees it, is a running node that says it is a master."""
        running = {node.port: node for node in self.nodes if node.running()}
        for node in running.values():
            with node.client(socket_timeout=1) as conn:
                for _start, _end, master, *_ in conn.execute_command("CLUSTER", "SLOTS"):
                    owner = running.get(int(master[1]))
                    if owner is None or owner.role() != "master":
                        return False
        return True

    def replicas_in_sync(self) -> bool:
        """Every live replica linked to its master and done with its first sync. A replica promoted before that
        comes up without the data: WAIT answers 0 (after its timeout) while the first sync is still running."""
        for node in self.nodes:
            if node.running() and node.role() == "slave":
                with node.client(socket_timeout=2) as conn:
                    info = conn.info("replication")
                if info.get("master_link_status") != "up" or info.get("master_sync_in_progress"):
                    return False
        return True

    def wait_replicas_in_sync(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.replicas_in_sync():
            if time.monotonic() > deadline:
                raise RedisLaunchError(f"the replicas were not in sync within {timeout}s")
            time.sleep(0.05)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _start_node(root: Path, index: int, exe: str, appendfsync: str, args: list[str]) -> RedisProcess:
    """One node on a free port pair. The pair was free when chosen; another process (this machine runs other
    suites) may take either port before redis-server binds it: then a new pair, in a new directory, a few times,
    as start_redis does for a single server."""
    error: RedisLaunchError | None = None
    for attempt in range(4):
        try:
            return start_redis(root / f"node-{index}-{attempt}", port=_free_cluster_port(), appendfsync=appendfsync,
                               binary=exe, extra_args=args)  # fmt: skip
        except RedisLaunchError as exc:
            error = exc
    assert error is not None
    raise error


def start_cluster(
    data_dir: Path | str,
    *,
    masters: int = 3,
    replicas: int = 1,
    appendfsync: str = "everysec",
    node_timeout_ms: int = 2000,
    binary: str | None = None,
    extra_args: Sequence[str] = (),
    ready_timeout: float = 60.0,
) -> LocalCluster:
    """Start `masters * (1 + replicas)` redis-server nodes and join them into one cluster (`redis-cli --cluster
    create --cluster-replicas R`); returns once every node reports cluster_state:ok. On any failure every node
    started so far is stopped."""
    exe = binary or find_redis_server()
    if exe is None:
        raise RedisLaunchError("no redis-server found")
    cli = find_redis_cli(exe)
    if cli is None:
        raise RedisLaunchError("no redis-cli found (it creates the cluster)")
    root = Path(data_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    nodes: list[ClusterNode] = []
    try:
        for index in range(masters * (1 + replicas)):
            args = [
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms),
                # a replica whose master was down long before still takes over: the tests kill masters
                "--cluster-replica-validity-factor", "0",
                # a replica's first sync starts at once (Redis 7 waits 5 s for more replicas to join it)
                "--repl-diskless-sync-delay", "0",
                *extra_args,
            ]  # fmt: skip
            nodes.append(ClusterNode(_start_node(root, index, exe, appendfsync, args)))
        addresses = [f"127.0.0.1:{node.port}" for node in nodes]
        created = subprocess.run(
            [cli, "--cluster", "create", *addresses, "--cluster-replicas", str(replicas), "--cluster-yes"],
            capture_output=True,
            timeout=ready_timeout,
            check=False,
        )
        if created.returncode != 0:
            raise RedisLaunchError(f"redis-cli --cluster create failed: {created.stdout[-2000:]!r}")
        cluster = LocalCluster(nodes=nodes, replicas=replicas, data_dir=root)
        cluster.wait_ok(ready_timeout)
        # Every node must know every other before a client maps the slots (CLUSTER SLOTS from a lagging node
        # lists fewer replicas).
        deadline = time.monotonic() + ready_timeout
        for node in nodes:
            while True:
                with node.client(socket_timeout=2) as conn:
                    known = len(conn.execute_command("CLUSTER", "NODES").decode().splitlines())
                if known >= len(nodes):
                    break
                if time.monotonic() > deadline:
                    raise RedisLaunchError("the cluster's nodes did not all meet")
                time.sleep(0.05)
        for node in nodes:
            with node.client(socket_timeout=2) as conn:
                node.node_id = conn.execute_command("CLUSTER", "MYID").decode()
        # A test may kill a master at once: its replica must hold the data by then.
        cluster.wait_replicas_in_sync(max(0.0, deadline - time.monotonic()) + 5.0)
        return cluster
    except BaseException:
        for node in nodes:
            node.stop()
        raise
