"""The suite's own Redis Cluster (server/redis_cluster.py): six processes, three shards, a real failover."""

from __future__ import annotations

import redis

from server.redis_cluster import LocalCluster


def test_the_cluster_has_three_masters_each_with_a_replica(redis_cluster: LocalCluster) -> None:
    masters = redis_cluster.masters()
    assert len(masters) == 3 and len(redis_cluster.nodes) == 6
    assert all(redis_cluster.replica_of(master) is not None for master in masters)
    client = redis.RedisCluster.from_url(redis_cluster.url.replace("redis-cluster://", "redis://"))
    try:
        owners = {redis_cluster.master_for_key(f"game:{{g{i}}}").port for i in range(60)}
        assert owners == {master.port for master in masters}  # hash tags spread over every shard
        client.set("game:{probe}", b"1")
        assert client.get("game:{probe}") == b"1"
    finally:
        client.close()


def test_a_killed_master_is_replaced_by_its_replica(private_cluster: LocalCluster) -> None:
    master = private_cluster.master_for_key("game:{failover}")
    replica = private_cluster.replica_of(master)
    assert replica is not None
    master.kill()
    private_cluster.wait_ok()
    assert replica.role() == "master"
    assert private_cluster.master_for_key("game:{failover}").port == replica.port
