"""server.durability against real redis-servers started with each persistence setting."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from server.durability import DurabilityError, Persistence, check_durability
from server.redis_launcher import RedisProcess, find_redis_server, start_redis

pytestmark = pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")

SETTINGS = {
    "always": ["--appendonly", "yes", "--appendfsync", "always", "--save", ""],
    "everysec": ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
    "aof-no-fsync": ["--appendonly", "yes", "--appendfsync", "no", "--save", ""],
    "rdb-only": ["--appendonly", "no", "--save", "900 1"],
    "nothing": ["--appendonly", "no", "--save", ""],
    "config-renamed": ["--rename-command", "CONFIG", ""],  # as on many managed Redis
}


@pytest.fixture(params=sorted(SETTINGS))
def setting(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, RedisProcess]]:
    process = start_redis(tmp_path / request.param, extra_args=SETTINGS[request.param])
    try:
        yield request.param, process
    finally:
        process.stop()


def _check(process: RedisProcess, mode: str) -> Persistence | None:
    async def run() -> Persistence | None:
        client = aioredis.Redis.from_url(process.url)
        try:
            return await check_durability(client, mode)  # type: ignore[arg-type]
        finally:
            await client.aclose()

    return asyncio.run(run())


EXPECTED = {  # setting: (what the log says, its level, whether --durability strict starts)
    "always": ("an OS crash loses no acknowledged move", logging.INFO, True),
    "everysec": ("up to about 1 s of acknowledged moves", logging.INFO, False),
    "aof-no-fsync": ("the OS had not yet written", logging.INFO, False),
    "rdb-only": ("since the last RDB snapshot", logging.INFO, False),
    "nothing": ("NO PERSISTENCE", logging.WARNING, False),
    "config-renamed": ("could not check Redis's persistence settings", logging.WARNING, False),
}


def test_every_persistence_setting_is_said_and_strict_starts_only_on_fsync_always(
    setting: tuple[str, RedisProcess], caplog: pytest.LogCaptureFixture
) -> None:
    name, process = setting
    words, level, strict_ok = EXPECTED[name]
    with caplog.at_level(logging.INFO, logger="rummy_referee"):
        found = _check(process, "warn")  # warn never refuses
    said = [r for r in caplog.records if r.name == "rummy_referee"]
    assert len(said) == 1 and words in said[0].getMessage() and said[0].levelno == level, said
    assert (found is None) == (name == "config-renamed")
    if strict_ok:
        assert _check(process, "strict") == found
    else:
        with pytest.raises(DurabilityError, match="--durability strict"):
            _check(process, "strict")


def test_a_redis_that_does_not_answer_cannot_be_checked(caplog: pytest.LogCaptureFixture) -> None:
    async def run(mode: str) -> Persistence | None:
        client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=1)
        try:
            return await check_durability(client, mode, timeout_s=5)  # type: ignore[arg-type]
        finally:
            await client.aclose()

    with caplog.at_level(logging.WARNING, logger="rummy_referee"):
        assert asyncio.run(run("warn")) is None
    assert "could not check" in caplog.text
    with pytest.raises(DurabilityError, match="could not check"):
        asyncio.run(run("strict"))
