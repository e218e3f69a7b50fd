"""The referee's background loops and the SDK's backoff draw their jitter from generators of their own, never from
the process's global ``random`` (its program's: a bot's seeded moves, a test framework's draws). A CI run showed
why: Hypothesis warned "Do not use the random module inside strategies" in engine tests while the session's firing
referee, in the same process, jittered its polls with ``random.random()``."""

from __future__ import annotations

import random
import threading

from clients.sdk import RetryPolicy
from server.redis_launcher import RedisProcess
from tests.server import refkit


def test_a_firing_referee_leaves_the_global_random_state_alone(private_redis: RedisProcess) -> None:
    with refkit.ServerThread(private_redis.url, firer=True) as server:
        assert server.referee is not None
        before = random.getstate()
        threading.Event().wait(0.6)  # the firer polls every 0.1 s (plus jitter): a few polls
        assert random.getstate() == before


def test_the_sdk_backoff_leaves_the_global_random_state_alone() -> None:
    before = random.getstate()
    delays = [RetryPolicy(initial_backoff=0.1).backoff(n) for n in range(5)]
    assert random.getstate() == before
    assert all(0.05 <= d <= 2.0 for d in delays)
