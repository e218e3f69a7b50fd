"""The referee's health loop on a Redis Cluster (server.grpc_api.watch_shards), driven directly over the suite's
real cluster: a shard whose master answers the probe with an error the store does not know is NOT_SERVING (the
storage service degraded), the loop goes on, and the shard is SERVING again once its master answers."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator

import pytest
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer

from server.grpc_api import SERVICE_NAME, SHARD_SERVICE_PREFIX, STORAGE_SERVICE, watch_shards
from server.redis_cluster import LocalCluster
from server.store import GameStore, connect

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
USER, PASSWORD = "shard-prober", "pw-of-the-prober"


class _Recording(HealthServicer):  # type: ignore[misc]
    """The health servicer, with the last status set of each service at hand."""

    def __init__(self) -> None:
        super().__init__()
        self.now: dict[str, int] = {}

    async def set(self, service: str, status: int) -> None:
        self.now[service] = status
        await super().set(service, status)


@pytest.fixture
def prober(redis_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """A user of this test alone on every node of the suite's cluster (deleted after it)."""
    for node in redis_cluster.nodes:
        with node.client() as c:
            c.acl_setuser(USER, enabled=True, passwords=[f"+{PASSWORD}"], keys=["*"], channels=["*"],
                          commands=["+@all"])  # fmt: skip
    try:
        yield redis_cluster
    finally:
        for node in redis_cluster.nodes:
            with node.client() as c:
                c.acl_deluser(USER)


def test_a_shard_answering_an_unknown_error_is_not_serving_and_the_loop_goes_on(prober: LocalCluster) -> None:
    master = prober.masters()[0]
    url = prober.url.replace("redis-cluster://", f"redis-cluster://{USER}:{PASSWORD}@")

    async def wait(health: _Recording, service: str, status: int, what: str) -> None:
        for _ in range(600):
            if health.now.get(service) == status:
                return
            assert not loop_task.done(), f"the loop ended: {loop_task.exception()!r}"
            await asyncio.sleep(0.05)
        raise AssertionError(f"never {what}: {health.now}")

    loop_task: asyncio.Task[None]

    async def main() -> None:
        nonlocal loop_task
        store = GameStore(connect(url), op_timeout_s=5.0)
        health = _Recording()
        # each probe may take 30 s (serve's: 1 s): what is looked at is an answer, never a time-out; with 1 s, a
        # probe of another shard slowed past it on a loaded machine would make two shards NOT_SERVING, not one
        loop_task = asyncio.create_task(watch_shards(types.SimpleNamespace(store=store), health, interval=0.1,
                                                     ping_timeout=30.0))  # fmt: skip
        try:
            await wait(health, STORAGE_SERVICE, SERVING, "SERVING at first")
            shards = [s for s in health.now if s.startswith(SHARD_SERVICE_PREFIX)]
            assert len(shards) == 3, health.now
            with master.client() as c:  # the probe (EXISTS) refused on one master: NOPERM, no outage
                c.acl_setuser(USER, commands=["-exists"])
            await wait(health, STORAGE_SERVICE, NOT_SERVING, "degraded")
            down = [s for s in shards if health.now[s] == NOT_SERVING]
            assert len(down) == 1, health.now
            assert health.now[SERVICE_NAME] == SERVING  # the other shards' games still move
            with master.client() as c:
                c.acl_setuser(USER, commands=["+exists"])
            await wait(health, STORAGE_SERVICE, SERVING, "SERVING again")
            assert all(health.now[s] == SERVING for s in shards), health.now
        finally:
            loop_task.cancel()
            await asyncio.gather(loop_task, return_exceptions=True)
            await store.close()

    asyncio.run(main())
