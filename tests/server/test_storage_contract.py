"""The storage port's contract (server/ports.py ``GameStorage``): every promise of it, checked through the port's
own methods against each storage it runs on: a standalone redis-server and a real Redis Cluster (three masters,
one replica each), and, as an extra run for the fast loop, the in-memory twin (tests/server/memory_storage.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar, cast

import pytest

from server.events import EventHub
from server.ports import END_OF_VERSION, EventFeed, GameStorage, StoredEvent, after_version
from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess
from server.store import GameStore, connect
from tests.server.memory_storage import MemoryFeed, MemoryStorage

T = TypeVar("T")
# the Redis runs start servers (through getfixturevalue, which conftest's marking cannot see): integration
STORAGES = [pytest.param("redis", marks=pytest.mark.integration),
            pytest.param("cluster", marks=pytest.mark.integration), "memory"]  # fmt: skip

META = {
    "profile": "gin", "spectator": "", "spectators": False, "organizer_deals": False,
    "seats": [{"kind": "human", "name": "Ann", "auth": "h0"}, {"kind": "human", "name": "", "auth": ""},
              {"kind": "human", "name": "", "auth": ""}],
}  # fmt: skip
DEAL = [b'{"kind":"hand_started","n":0}', b'{"kind":"dealt","n":1}']


@pytest.fixture(params=STORAGES)
def storage_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of each storage the contract is checked on (the suite's session-wide servers; "memory": the twin)."""
    if request.param == "redis":
        server: RedisProcess = request.getfixturevalue("redis_server")
        yield server.url
    elif request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("redis_cluster")
        yield cluster.url
    else:
        yield "memory"


def run(url: str, body: Callable[[GameStorage], Awaitable[T]], **ttls: int) -> T:
    async def main() -> T:
        store: GameStorage = MemoryStorage(**ttls) if url == "memory" else GameStore(connect(url), **ttls)
        try:
            return await body(store)
        finally:
            await store.close()

    return asyncio.run(main())


def new_id() -> str:
    return "c_" + secrets.token_urlsafe(9)


async def new_game(store: GameStorage, game_id: str, **kw: object) -> None:
    assert await store.create_game(game_id, config=b'{"v":2,"c":1}', progress=b'{"p":0}', meta=json.dumps(META),
                                   deal_events=DEAL, **kw)  # type: ignore[arg-type]  # fmt: skip


async def move(store: GameStorage, game_id: str, base: int, events: list[str], **kw: object) -> tuple[str, int]:
    result = await store.commit_move(
        game_id, base_version=base, progress=f'{{"p":{base + 1}}}'.encode(), seat=0, move_json=b'{"kind":"x"}',
        events=[json.dumps({"e": e}).encode() for e in events], **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return result.outcome, result.version


def names(events: list[StoredEvent]) -> list[str]:
    return [json.loads(e.payload)["e"] for e in events]


def test_create_is_all_or_nothing_and_load_reads_it_back(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        gid = new_id()
        assert await store.load(gid) is None
        await new_game(store, gid)
        assert not await store.create_game(gid, config=b"other", progress=b"other", meta="{}", deal_events=[])
        game = await store.load(gid)
        assert game is not None
        assert (game.game_id, game.version, game.joins, game.clock) == (gid, 0, 0, b"")
        assert (game.config, game.progress_json, json.loads(game.meta)) == (b'{"v":2,"c":1}', b'{"p":0}', META)
        assert [json.loads(e.payload) for e in await store.events_since(gid, (-1, 0))] == [json.loads(d) for d in DEAL]
        assert await store.last_position(gid) == (0, 2)
        entry = await store.log_entry(gid, 0)
        assert entry is not None and (entry.version, entry.seat, entry.move) == (0, -1, None)

    run(storage_url, body)


def test_commit_is_version_checked(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        gid = new_id()
        await new_game(store, gid)
        assert await move(store, gid, 0, ["a"]) == ("ok", 1)
        assert await move(store, gid, 0, ["lost"]) == ("conflict", 1)
        assert await move(store, gid, 5, ["lost"]) == ("conflict", 1)
        game = await store.load(gid)
        assert game is not None and (game.version, game.progress_json) == (1, b'{"p":1}')
        assert names(await store.events_after(gid, 0)) == ["a"]
        assert await move(store, new_id(), 0, ["a"]) == ("missing", 0)
        # racing commits of one version: exactly one wins, the others are conflicts and wrote nothing
        outcomes = await asyncio.gather(*(move(store, gid, 1, [f"r{i}"]) for i in range(6)))
        assert sorted(outcomes) == [("conflict", 2)] * 5 + [("ok", 2)]
        assert len(await store.events_after(gid, 1)) == 1

    run(storage_url, body)


def test_a_request_key_makes_a_commit_idempotent(storage_url: str) -> None:
    async def story(store: GameStorage) -> None:
        gid = new_id()
        await new_game(store, gid)
        key, other = store.request_key("st_token", "r1"), store.request_key("st_token", "r2")
        assert key == store.request_key("st_token", "r1") and store.request_key("st_other", "r1") not in (key, other)
        assert await store.request_version(gid, key) is None
        assert await move(store, gid, 0, ["a"], request_key=key) == ("ok", 1)
        assert await move(store, gid, 0, ["again"], request_key=key) == ("dup", 1)  # the stored answer's version
        assert await move(store, gid, 1, ["b"], request_key=other) == ("ok", 2)
        assert await move(store, gid, 2, ["again"], request_key=key) == ("dup", 1)  # based on a later version too
        assert await move(store, gid, 2, ["c"]) == ("ok", 3)  # no request key: never a dup
        assert await store.request_version(gid, key) == 1 and await store.request_version(gid, other) == 2
        assert names(await store.events_after(gid, 0)) == ["a", "b", "c"]  # the resends wrote nothing

    run(storage_url, story)


def test_joins_give_each_open_seat_once_and_void_commits_prepared_before(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        gid = new_id()
        await new_game(store, gid)
        taken = await asyncio.gather(*(store.join(gid, seat=-1, token_hash=f"t{i}", name=f"p{i}") for i in range(5)))
        assert sorted(taken) == [-1, -1, -1, 1, 2]
        assert await store.join(gid, seat=1, token_hash="x", name="late") == -1
        assert await store.join(new_id(), seat=-1, token_hash="x", name="p") == -2
        game = await store.load(gid)
        assert game is not None and game.joins == 2 and game.version == 0
        seats = json.loads(game.meta)["seats"]
        assert sorted(s["auth"] for s in seats[1:]) == sorted(f"t{i}" for i, s in enumerate(taken) if s >= 0)
        assert await move(store, gid, 0, ["stale"], joins=0) == ("conflict", 0)
        assert await move(store, gid, 0, ["fresh"], joins=2) == ("ok", 1)

    run(storage_url, body)


def test_events_since_a_position_page_through_the_log(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        gid = new_id()
        await new_game(store, gid)
        batches = [["a", "b"], ["c"], ["d", "e", "f"], ["g"]]
        for base, events in enumerate(batches):
            assert await move(store, gid, base, events) == ("ok", base + 1)
        assert await store.last_position(gid) == (4, 1)
        assert names(await store.events_since(gid, after_version(0))) == list("abcdefg")
        assert names(await store.events_since(gid, (1, 1))) == list("bcdefg")
        assert names(await store.events_since(gid, (3, 2))) == list("fg")
        assert names(await store.events_after(gid, 2)) == list("defg")
        assert after_version(2) == (2, END_OF_VERSION)
        assert await store.events_after(gid, 4) == []
        # pages of at most ``count`` events, each from where the last ended: the whole log, once
        seen, position = [], after_version(0)
        while page := await store.events_since(gid, position, count=2):
            assert len(page) <= 2
            seen += page
            position = (page[-1].version, page[-1].index)
        assert names(seen) == list("abcdefg")
        assert [(e.version, e.index) for e in seen] == [(1, 1), (1, 2), (2, 1), (3, 1), (3, 2), (3, 3), (4, 1)]
        entries = await store.log_entries(gid, 2, 3)
        assert [(e.version, e.seat, e.move) for e in entries] == [(2, 0, {"kind": "x"}), (3, 0, {"kind": "x"})]
        assert [len(e.events) for e in await store.log_entries(gid, 0)] == [2, 2, 1, 3, 1]
        assert await store.log_entry(gid, 9) is None

    run(storage_url, body)


def test_a_follower_waits_for_the_events_committed_after_it_started(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        gid = new_id()
        await new_game(store, gid)
        assert await move(store, gid, 0, ["a"]) == ("ok", 1)
        hub: EventFeed = EventHub(store) if isinstance(store, GameStore) else MemoryFeed(cast(MemoryStorage, store))
        feed = hub.follow(gid, after_version(1))
        try:
            nxt = asyncio.ensure_future(anext(feed))
            await asyncio.sleep(0.2)
            assert not nxt.done()  # nothing after version 1 yet: it waits
            assert await move(store, gid, 1, ["b", "c"]) == ("ok", 2)
            first = await asyncio.wait_for(nxt, 5)
            second = await asyncio.wait_for(anext(feed), 5)
            assert names([first, second]) == ["b", "c"]
            assert [(first.version, first.index), (second.version, second.index)] == [(2, 1), (2, 2)]
        finally:
            with contextlib.suppress(Exception):
                await feed.aclose()
            await hub.close(drain_s=0.1)

    run(storage_url, body)


def test_games_expire_whole_by_their_times(storage_url: str) -> None:
    async def body(store: GameStorage) -> None:
        unplayed, played, kept = new_id(), new_id(), new_id()
        await new_game(store, played)
        assert await move(store, played, 0, ["a"], request_key=store.request_key("t", "r")) == ("ok", 1)
        await new_game(store, kept, ttl_s=0)  # kept for ever (until a move gives it the idle time)
        # no move: gone after the unplayed time (1 s: made last, so that only one round trip has to fit in it)
        await new_game(store, unplayed)
        left = await store.time_left_ms([unplayed, played, kept, new_id()])
        assert left[0] is not None and 0 < left[0] <= 1000
        assert left[1] is not None and 1000 < left[1] <= 3000
        assert left[2:] == [-1, None]
        deadline = time.monotonic() + 5
        while await store.load(unplayed) is not None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert await store.time_left_ms([unplayed]) == [None]
        assert await store.events_since(unplayed, (-1, 0)) == [] and await store.last_position(unplayed) == (0, 0)
        while await store.load(played) is not None:
            assert time.monotonic() < deadline + 3
            await asyncio.sleep(0.1)
        assert await store.request_version(played, store.request_key("t", "r")) is None
        assert await store.log_entries(played, 0) == []
        assert await move(store, played, 1, ["b"]) == ("missing", 0)
        assert await store.load(kept) is not None

    run(storage_url, body, unplayed_ttl_s=1, idle_ttl_s=3, finished_ttl_s=3, idem_ttl_s=0)  # records: as the game
