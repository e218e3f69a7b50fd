"""GameStore and its Lua scripts against a real redis-server."""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from server.gamelog import encode_entry
from server.redis_launcher import RedisProcess
from server.store import (
    CommitResult,
    GameStore,
    StoredEvent,
    StoreUnavailable,
    connect,
    game_key,
    idem_key,
    log_key,
)

T = TypeVar("T")


def run(redis: RedisProcess, body: Callable[[GameStore], Awaitable[T]], ttl: int = 3600, idle: int = 0,
        unplayed: int = 3600) -> T:  # fmt: skip
    async def main() -> T:
        store = GameStore(connect(redis.url), finished_ttl_s=ttl, idle_ttl_s=idle, unplayed_ttl_s=unplayed)
        try:
            return await body(store)
        finally:
            await store.close()

    return asyncio.run(main())


def new_id() -> str:
    return secrets.token_urlsafe(9)


META = {
    "profile": "gin", "spectator": "", "spectators": False, "organizer_deals": False,
    "seats": [{"kind": "bot", "name": "Ann", "auth": "h0"}] + [{"kind": "human", "name": "", "auth": ""}] * 3,
}  # fmt: skip


async def make_game(store: GameStore, game_id: str) -> None:
    fields = {"state": "s0", "version": "0", "meta": json.dumps(META)}
    assert await store.create(game_id, fields, encode_entry(0, -1, b"null", [b'{"kind":"hand_started"}']))


async def commit(store: GameStore, game_id: str, *, base_version: int, events: list[str], **kw: Any) -> CommitResult:
    """A commit whose log entry has ``events`` (each stored as a JSON string)."""
    payloads = [json.dumps(e).encode() for e in events]
    entry = encode_entry(base_version + 1, 0, b'{"kind":"draw_stock"}', payloads)
    return await store.commit(game_id, base_version=base_version, entry=entry, **kw)


def payloads(events: list[StoredEvent]) -> list[Any]:
    return [json.loads(e.payload) for e in events]


def test_create_refuses_an_existing_id(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        assert not await store.create(gid, {"state": "other", "version": "9", "meta": "{}"}, b"x")
        game = await store.load(gid)
        assert game is not None
        assert (game.progress_json, game.version, json.loads(game.meta)) == (b"s0", 0, META)
        assert payloads(await store.events_after(gid, -1)) == [{"kind": "hand_started"}]

    run(redis_server, body)


def test_load_of_unknown_game_is_none(redis_server: RedisProcess) -> None:
    assert run(redis_server, lambda store: store.load(new_id())) is None


def test_commit_writes_state_events_and_version(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        result = await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a", "b"])
        assert (result.outcome, result.version) == ("ok", 1)
        result = await commit(store, gid, base_version=1, progress_json="s2", commit_id="c2", events=["c"])
        assert (result.outcome, result.version) == ("ok", 2)
        game = await store.load(gid)
        assert game is not None and (game.progress_json, game.version) == (b"s2", 2)
        after0 = await store.events_after(gid, 0)
        assert [(e.version, e.index, e.payload) for e in after0] == [(1, 1, b'"a"'), (1, 2, b'"b"'), (2, 1, b'"c"')]
        assert payloads(await store.events_after(gid, 1)) == ["c"]
        assert payloads(await store.events_since(gid, (-1, 0))) == [{"kind": "hand_started"}, "a", "b", "c"]
        assert payloads(await store.events_since(gid, (1, 1))) == ["b", "c"]
        assert payloads(await store.events_since(gid, (0, 0), count=2)) == [{"kind": "hand_started"}, "a"]
        assert payloads(await store.events_since(gid, (2**64 - 1, 0))) == []
        entries = await store.log_entries(gid, 0)
        assert [(e.version, e.seat, e.move) for e in entries] == [(0, -1, None), (1, 0, {"kind": "draw_stock"}),
                                                                 (2, 0, {"kind": "draw_stock"})]  # fmt: skip
        assert await store.last_position(gid) == (2, 1)
        assert await store.ttl(gid) == -1

    run(redis_server, body)


def test_stale_base_version_conflicts_and_writes_nothing(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a"])
        before = await store.client.hgetall(game_key(gid))  # type: ignore[misc]
        result = await commit(
            store, gid, base_version=0, progress_json="LOST", commit_id="c2", events=["x"], idem=b"r" * 16
        )
        assert (result.outcome, result.version) == ("conflict", 1)
        assert await store.client.hgetall(game_key(gid)) == before  # type: ignore[misc]
        assert await store.client.llen(log_key(gid)) == 2  # type: ignore[misc]
        assert await store.client.exists(idem_key(gid)) == 0  # type: ignore[misc]

    run(redis_server, body)


def test_a_retried_commit_that_had_committed_is_recognised(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        first = await commit(store, gid, base_version=0, progress_json="s1", commit_id="same", events=["a"])
        again = await commit(store, gid, base_version=0, progress_json="s1", commit_id="same", events=["a"])
        assert (first.outcome, first.version) == (again.outcome, again.version) == ("ok", 1)
        assert len(await store.events_after(gid, 0)) == 1

    run(redis_server, body)


def test_idempotency_record_is_found_before_the_version_check(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        key, other = b"K" * 16, b"k" * 16
        await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a"], idem=key)
        await commit(store, gid, base_version=1, progress_json="s2", commit_id="c2", events=["b"], idem=other)
        dup = await commit(store, gid, base_version=0, progress_json="s1b", commit_id="c3", events=["x"], idem=key)
        assert (dup.outcome, dup.version) == ("dup", 1)
        dup = await commit(store, gid, base_version=2, progress_json="s3", commit_id="c4", events=["x"], idem=other)
        assert (dup.outcome, dup.version) == ("dup", 2)
        assert await store.idem_version(gid, key) == 1 and await store.idem_version(gid, other) == 2
        assert await store.idem_version(gid, b"K" * 15 + b"k") is None
        records = await store.client.get(idem_key(gid))  # type: ignore[misc]
        assert records == key + b"\0\0\0\1" + other + b"\0\0\0\2"
        game = await store.load(gid)
        assert game is not None and (game.version, game.progress_json) == (2, b"s2")
        assert 0 < int(await store.client.ttl(idem_key(gid))) <= 24 * 3600  # type: ignore[misc]

    run(redis_server, body)


def test_a_record_key_is_only_found_at_a_record_boundary() -> None:
    from server.store import find_idem

    records = b"A" * 8 + b"B" * 8 + b"\0\0\0\7" + b"B" * 8 + b"C" * 8 + b"\0\0\0\x09"
    assert find_idem(records, b"B" * 8 + b"C" * 8) == 9
    assert find_idem(records, b"A" * 8 + b"B" * 8) == 7
    assert find_idem(records, b"B" * 16) is None


def test_commit_on_a_missing_game_writes_nothing(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        result = await commit(store, gid, base_version=0, progress_json="s", commit_id="c", events=["a"])
        assert result.outcome == "missing"
        assert not await store.exists(gid)
        assert await store.client.exists(log_key(gid), idem_key(gid)) == 0  # type: ignore[misc]

    run(redis_server, body)


def test_the_match_ending_commit_sets_the_expiry(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        await commit(store, gid, base_version=0, progress_json="end", commit_id="c", events=["a"], match_over=True)
        assert 3500 < await store.ttl(gid) <= 3600
        assert 3500 < await store.client.ttl(log_key(gid)) <= 3600  # type: ignore[misc]

    run(redis_server, body, ttl=3600)


def test_join_gives_each_open_seat_once(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)  # seat 0 taken, seats 1..3 open
        taken = await asyncio.gather(*(store.join(gid, seat=-1, token_hash=f"t{i}", name=f"p{i}") for i in range(5)))
        assert sorted(taken) == [-1, -1, 1, 2, 3]
        assert await store.join(gid, seat=2, token_hash="x", name="") == -1
        assert await store.join(gid, seat=9, token_hash="x", name="") == -1
        assert await store.join(new_id(), seat=-1, token_hash="x", name="") == -2
        game = await store.load(gid)
        assert game is not None
        meta = json.loads(game.meta)
        assert [s["auth"] for s in meta["seats"]] == ["h0"] + [f"t{taken.index(n)}" for n in (1, 2, 3)]
        assert [s["name"] for s in meta["seats"]] == ["Ann"] + [f"p{taken.index(n)}" for n in (1, 2, 3)]
        assert [s.get("joined") for s in meta["seats"]] == [None, 0, 0, 0] and game.joins == 3
        assert [s.get("was") for s in meta["seats"]] == [None, "", "", ""]
        assert meta["profile"] == "gin" and meta["spectators"] is False  # the rest of meta is kept as it was

    run(redis_server, body)


def test_concurrent_commits_on_one_version_apply_exactly_one(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        results = await asyncio.gather(
            *(commit(store, gid, base_version=0, progress_json=f"s{i}", commit_id=f"c{i}", events=[str(i)])
              for i in range(16))
        )  # fmt: skip
        assert sorted(r.outcome for r in results) == ["conflict"] * 15 + ["ok"]
        winner = next(i for i, r in enumerate(results) if r.outcome == "ok")
        game = await store.load(gid)
        assert game is not None and game.progress_json == f"s{winner}".encode()
        assert payloads(await store.events_after(gid, 0)) == [str(winner)]

    run(redis_server, body)


def test_an_unreachable_redis_is_store_unavailable(private_redis: RedisProcess) -> None:
    private_redis.stop()

    async def body(store: GameStore) -> None:
        with pytest.raises(StoreUnavailable):
            await store.load(new_id())
        with pytest.raises(StoreUnavailable):
            await commit(store, new_id(), base_version=0, progress_json="s", commit_id="c", events=[])

    run(private_redis, body)


def test_a_commit_after_the_script_cache_was_flushed_loads_the_script_again(redis_server: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        await store.client.script_flush()
        result = await commit(store, gid, base_version=0, progress_json="s1", commit_id="c", events=["a"])
        assert (result.outcome, result.version) == ("ok", 1)

    run(redis_server, body)


def test_a_hung_redis_is_unavailable_within_the_operation_timeout(private_redis: RedisProcess) -> None:
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        store.op_timeout_s = 0.3
        private_redis.process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.load(gid)
            with pytest.raises(StoreUnavailable):
                await commit(store, gid, base_version=0, progress_json="s1", commit_id="c", events=["a"])
            assert time.monotonic() - started < 3
        finally:
            private_redis.process.send_signal(signal.SIGCONT)
        # the connections cut mid-command are gone: no late reply is read as the answer to another command
        result = await commit(store, gid, base_version=0, progress_json="s1", commit_id="c", events=["a"])
        assert result.outcome in ("ok", "conflict")  # the timed-out commit may have run once Redis went on
        game = await store.load(gid)
        assert game is not None and game.version == 1 and game.progress_json == b"s1"

    run(private_redis, body)


def test_the_hot_path_speaks_the_same_protocol_as_redis_py() -> None:
    from redis.asyncio.connection import Connection

    from server.hotpath import resp

    packer = Connection()
    for args in [("HMGET", "game:{x}", "state", "version"), ("EVALSHA", "ab" * 20, 2, "k", b"\x00\xff", "é", 0, -5)]:
        assert resp(args) == b"".join(packer.pack_command(*args))


def test_a_game_nobody_moves_in_expires_after_the_idle_time(redis_server: RedisProcess) -> None:
    """Unfinished games do not stay for ever: both keys expire after the unplayed time if no move comes, then
    after the idle time, counted again from every move; the match-ending move sets the finished-game time instead;
    an idle time of 0 keeps games for ever."""

    async def ttls(store: GameStore, gid: str) -> tuple[int, int]:
        return await store.ttl(gid), int(await store.client.ttl(log_key(gid)))  # type: ignore[misc]

    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        assert all(50 < t <= 60 for t in await ttls(store, gid))  # never played: the unplayed time
        await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a"])
        assert all(500 < t <= 600 for t in await ttls(store, gid))  # the move counted the idle time again
        await commit(store, gid, base_version=1, progress_json="end", commit_id="c2", events=["b"], match_over=True)
        assert all(3500 < t <= 3600 for t in await ttls(store, gid))

        kept = GameStore(store.client, finished_ttl_s=3600, idle_ttl_s=0)
        other = new_id()
        await make_game(kept, other)
        await commit(kept, other, base_version=0, progress_json="s1", commit_id="c1", events=["a"])
        assert await ttls(kept, other) == (-1, -1)

    run(redis_server, body, ttl=3600, idle=600, unplayed=60)


@pytest.mark.parametrize("ttl", [{"idle_ttl_s": -1}, {"finished_ttl_s": 10**16}, {"unplayed_ttl_s": -1}])
def test_impossible_times_to_keep_games_are_refused(redis_server: RedisProcess, ttl: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="time to keep games"):
        GameStore(connect(redis_server.url), **ttl)


def test_the_idempotency_records_have_an_expiry_of_their_own(redis_server: RedisProcess) -> None:
    """A day by default (counted from the last move with a request_id), whatever the game's; 0: the game's."""

    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a"], idem=b"A" * 16)
        assert 24 * 3600 - 60 < int(await store.client.ttl(idem_key(gid))) <= 24 * 3600  # type: ignore[misc]
        assert await store.ttl(gid) > 29 * 24 * 3600  # the game: the idle time
        same = GameStore(store.client, finished_ttl_s=3600, idle_ttl_s=600, idem_ttl_s=0)
        await commit(same, gid, base_version=1, progress_json="s2", commit_id="c2", events=["b"], idem=b"B" * 16)
        assert 500 < int(await store.client.ttl(idem_key(gid))) <= 600  # type: ignore[misc]
        await commit(same, gid, base_version=2, progress_json="s3", commit_id="c3", events=["c"])  # no request_id
        assert 500 < int(await store.client.ttl(idem_key(gid))) <= 600  # type: ignore[misc]
        assert await store.idem_version(gid, b"A" * 16) == 1 and await store.idem_version(gid, b"B" * 16) == 2

    run(redis_server, body, ttl=3600, idle=30 * 24 * 3600)


def test_a_commit_prepared_before_a_join_is_a_conflict_at_the_same_version(redis_server: RedisProcess) -> None:
    """Its answer would show the seat still open: the referee retries it from a new load (nothing written)."""

    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        assert await store.join(gid, seat=-1, token_hash="t", name="p") == 1
        stale = await commit(store, gid, base_version=0, progress_json="s1", commit_id="c1", events=["a"], joins=0)
        assert (stale.outcome, stale.version) == ("conflict", 0)
        game = await store.load(gid)
        assert game is not None and game.joins == 1 and game.version == 0
        fresh = await commit(store, gid, base_version=0, progress_json="s1", commit_id="c2", events=["a"], joins=1)
        assert (fresh.outcome, fresh.version) == ("ok", 1)

    run(redis_server, body)


def test_the_hot_path_writes_the_commands_of_one_loop_turn_together(redis_server: RedisProcess) -> None:
    """Commands given in one turn of the event loop go out in one write, each caller gets its own reply, and a
    connection lost with commands not written yet sends them again on a new one."""
    from server.hotpath import HotPath

    async def main() -> None:
        client = connect(redis_server.url)
        hot = HotPath(client.connection_pool.connection_kwargs)
        try:
            assert await hot.call(2.0, "PING") == b"PONG"  # connected
            conn = hot._conn
            assert conn is not None and conn.transport is not None
            writes: list[bytes] = []
            write = conn.transport.write
            conn.transport.write = lambda data: (writes.append(bytes(data)), write(data))[1]  # type: ignore[func-returns-value]
            replies = await asyncio.gather(*(hot.call(2.0, "ECHO", f"m{i}") for i in range(50)))
            assert replies == [f"m{i}".encode() for i in range(50)]
            assert len(writes) == 1 and writes[0].count(b"ECHO") == 50

            pending = [asyncio.ensure_future(hot.call(2.0, "ECHO", f"n{i}")) for i in range(5)]
            await asyncio.sleep(0)  # given, not written yet
            assert conn._unsent
            conn.connection_lost(ConnectionResetError("cut"))  # as the loop reports a lost connection
            assert await asyncio.gather(*pending) == [f"n{i}".encode() for i in range(5)]
            assert hot._conn is not conn
        finally:
            hot.close()
            await client.aclose()

    asyncio.run(main())


def test_commits_store_and_publish_each_version_in_decimal(redis_server: RedisProcess) -> None:
    # commit_move.lua passes the versions on as the text given (not Lua numbers): the field holds the same decimal
    # text a Lua number wrote, the channel gets it, and the checks by text agree with the checks by number
    async def body(store: GameStore) -> None:
        gid = new_id()
        await make_game(store, gid)
        pubsub = store.client.pubsub()
        await pubsub.subscribe(f"{game_key(gid)}:ev")
        published: list[bytes] = []
        for v in range(12):
            done = await commit(store, gid, base_version=v, events=[], progress_json=f"s{v + 1}", commit_id=f"c{v}")
            assert done == CommitResult("ok", version=v + 1)
            assert await store.client.hget(game_key(gid), "version") == str(v + 1).encode()  # type: ignore[misc]
        again = await commit(store, gid, base_version=10, events=[], progress_json="s11", commit_id="c10")
        assert again == CommitResult("conflict", version=12)  # c10 made version 11, and the game moved on
        again = await commit(store, gid, base_version=11, events=[], progress_json="s12", commit_id="c11")
        assert again == CommitResult("ok", version=12)  # the very commit that made version 12: ok, nothing written
        assert await commit(store, gid, base_version=1, events=[], progress_json="x", commit_id="n") == CommitResult(
            "conflict", version=12
        )
        deadline = time.monotonic() + 5
        while len(published) < 12 and time.monotonic() < deadline:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message is not None:
                published.append(message["data"])
        assert published == [str(v).encode() for v in range(1, 13)]
        assert await store.client.llen(log_key(gid)) == 13  # type: ignore[misc]
        await pubsub.aclose()

    run(redis_server, body)
