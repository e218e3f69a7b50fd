"""The read path never writes, and ``rummy-referee migrate`` is the one way a game of the earlier layout is
converted: GetGame, WatchGame and GetReplay of any game change nothing in Redis (its own write counter,
``rdb_changes_since_last_save``, stays where it was); a game stored the earlier way is refused by them
(STORED_BY_EARLIER_VERSION) and left as it is until `migrate` converts it, to exactly what today's referee would
have stored."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import orjson
import pytest
import redis

import engine
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.cache import config_json, progress_json, state_from_stored
from server.gamelog import decode_entry, encode_entry, event_payload
from server.migrate import CannotMigrate, converted
from server.redis_launcher import RedisProcess
from server.store import game_key, log_key
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    bot_move,
    expect_error,
    md,
    move_from_text,
)

ROOT = Path(__file__).resolve().parents[2]


World = tuple[Client, redis.Redis, str]


@pytest.fixture
def world(private_redis: RedisProcess) -> Iterator[World]:
    """A referee, an admin client of its Redis (a private one: nothing else writes there), and that Redis's URL."""
    server = ServerThread(private_redis.url)
    client = Client(server.address)
    admin = redis.Redis.from_url(private_redis.url)
    try:
        yield client, admin, private_redis.url
    finally:
        client.close()
        server.stop()
        admin.close()


def played(client: Client, moves: int, seed: int) -> Game:
    game = client.create("gin")
    rng = random.Random(seed)
    for _ in range(moves):
        view = client.view(game, game.tokens[0])
        seat = view.to_act
        client.move(game, game.tokens[seat], bot_move(client.view(game, game.tokens[seat]), rng))
    return game


def finished(client: Client) -> Game:
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
    for seat, text in GIN_KNOCK_MOVES:
        client.move(game, game.tokens[seat], move_from_text(text), request_id=f"r{seat}{text}")
    return game


def contents(admin: redis.Redis, key: str | bytes) -> object:
    """What a key holds, by type (not DUMP: a hash stored as a hash table dumps its fields in table order, which
    Redis's rehashing may change with no write)."""
    kind = admin.type(key)
    if kind == b"hash":
        return ("hash", admin.hgetall(key))
    if kind == b"list":
        return ("list", admin.lrange(key, 0, -1))
    if kind == b"stream":
        return ("stream", admin.xrange(key))
    if kind == b"string":
        return ("string", admin.get(key))
    if kind == b"set":
        return ("set", admin.smembers(key))
    if kind == b"zset":
        return ("zset", admin.zrange(key, 0, -1, withscores=True))
    return (kind, None)


def snapshot(admin: redis.Redis) -> dict[bytes, object]:
    """Every game key's contents."""
    return {key: contents(admin, key) for key in admin.keys("game:*")}


def writes(admin: redis.Redis) -> int:
    """Redis's count of writes since its last save (every write command that changed something)."""
    return int(admin.info("persistence")["rdb_changes_since_last_save"])


def quiet(admin: redis.Redis) -> int:
    """The write count, once nothing has written for a moment (a finished match's open-game release comes late)."""
    last = writes(admin)
    while True:
        time.sleep(0.3)
        now = writes(admin)
        if now == last:
            return now
        last = now


def read_everything(client: Client, game: Game, *, over: bool) -> list[object]:
    """What GetGame, WatchGame (from the start, and resumed) and GetReplay answer, for each token."""
    answers: list[object] = []
    for token in game.tokens.values():
        answers.append(client.view(game, token))
        timeout = 2.0  # a live game's watch waits for more: cut it
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token), timeout=timeout)
        resumed = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=0),
                                        metadata=md(token), timeout=timeout)  # fmt: skip
        for call in (stream, resumed):
            try:
                answers.extend(call)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    if over:
        answers.extend(client.replay(game))
    else:
        with expect_error(grpc.StatusCode.PERMISSION_DENIED, "MATCH_NOT_OVER"):
            client.replay(game, game.tokens[0])
        answers.extend(client.replay(game, ORGANIZER))
    return answers


def test_get_watch_and_replay_never_write(world: World) -> None:
    client, admin, _ = world
    live, over = played(client, 9, seed=1), finished(client)
    before = quiet(admin)
    dumps = snapshot(admin)
    assert read_everything(client, live, over=False) and read_everything(client, over, over=True)
    assert writes(admin) == before
    assert snapshot(admin) == dumps


def _store_the_earlier_way(admin: redis.Redis, game: Game, old_id: str, layout: str) -> None:
    """``game`` as the referee before the game log stored it: the whole state in "state" (or an engine-format
    config), a "start" view and answers in the hash, the events in a stream without the moves."""
    fields = admin.hgetall(game_key(game.game_id))
    state = state_from_stored(fields[b"config"], fields[b"state"])
    old = {k: v for k, v in fields.items() if k not in (b"config", b"joins")}
    if layout == "whole state":
        old[b"state"] = engine.state_to_json(state).encode()
    else:
        old[b"config"] = json.dumps(engine.config_to_dict(state)).encode()
    old[b"start"] = b"{}"
    old[b"idem:abc:r1"] = b"an answer of the earlier layout"
    admin.hset(game_key(old_id), mapping=old)  # type: ignore[arg-type]
    for raw in admin.lrange(log_key(game.game_id), 0, -1):
        entry = decode_entry(raw)
        for index, event in enumerate(entry.events, 1):
            admin.xadd(f"game:{{{old_id}}}:events", {"e": event_payload(event)}, id=f"{entry.version}-{index}")
    admin.pexpire(game_key(old_id), 3_600_000)
    admin.pexpire(f"game:{{{old_id}}}:events", 3_600_000)


def _migrate(url: str, *game_ids: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", "migrate", "--redis-url", url, *game_ids],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize("layout", ["whole state", "config of the engine's format"])
def test_a_game_of_the_earlier_layout_is_refused_unchanged_until_migrate_converts_it(
    world: World, layout: str
) -> None:
    client, admin, url = world
    originals = [played(client, 11, seed=7), finished(client)]
    olds = []
    for game in originals:
        old = Game(game.game_id + "old", game.tokens, game.spectator, game.created)
        _store_the_earlier_way(admin, game, old.game_id, layout)
        olds.append(old)
    # events beyond the game's version: refused by migrate too, and left as it is
    broken = Game(originals[0].game_id + "bad", originals[0].tokens, "", originals[0].created)
    _store_the_earlier_way(admin, originals[0], broken.game_id, layout)
    admin.xadd(f"game:{{{broken.game_id}}}:events", {"e": b'{"kind":"nothing"}'}, id="999-1")

    before = quiet(admin)
    kept = snapshot(admin)
    for old in olds:
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "STORED_BY_EARLIER_VERSION"):
            client.view(old, old.tokens[0])
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "STORED_BY_EARLIER_VERSION"):
            list(client.stub.WatchGame(rpb.WatchGameRequest(game_id=old.game_id), metadata=md(old.tokens[0]),
                                       timeout=5))  # fmt: skip
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "STORED_BY_EARLIER_VERSION"):
            client.replay(old)
    assert writes(admin) == before and snapshot(admin) == kept

    done = _migrate(url)
    assert done.returncode == 1, done.stderr  # one game could not be converted
    lines = done.stdout.splitlines()
    assert sorted(lines[:-1]) == sorted([f"{o.game_id}: migrated" for o in olds] + [
        f"{broken.game_id}: not migrated: stored events after the game's version 11"
    ]), done.stdout  # fmt: skip
    assert lines[-1] == "2 migrated, 2 current, 0 missing, 1 failed", done.stdout
    for key in (game_key(broken.game_id), f"game:{{{broken.game_id}}}:events"):
        assert contents(admin, key) == kept[key.encode()]

    for game, old in zip(originals, olds, strict=True):
        new, original = admin.hgetall(game_key(old.game_id)), admin.hgetall(game_key(game.game_id))
        for field in (b"config", b"state", b"version", b"meta"):
            assert new[field] == original[field], field
        assert not {b"start", b"idem:abc:r1"} & set(new)
        assert admin.lrange(log_key(old.game_id), 0, -1) == admin.lrange(log_key(game.game_id), 0, -1)
        assert not admin.exists(f"game:{{{old.game_id}}}:events")
        assert 0 < admin.pttl(game_key(old.game_id)) <= 3_600_000 and admin.pttl(log_key(old.game_id)) > 0
        # read as the original game reads (its own id aside), and playable again
        for token in game.tokens.values():
            view, original_view = client.view(old, token), client.view(game, token)
            assert view.version == original_view.version and view.hand == original_view.hand
            assert view.legal_moves == original_view.legal_moves
    replay, original_replay = client.replay(olds[1]), client.replay(originals[1])
    assert [e for p in replay for e in p.events] == [e for p in original_replay for e in p.events]
    view = client.view(olds[0], olds[0].tokens[0])
    mover = view.to_act
    client.move(olds[0], olds[0].tokens[mover], bot_move(client.view(olds[0], olds[0].tokens[mover]),
                                                         random.Random(3)))  # fmt: skip

    again = _migrate(url, *(o.game_id for o in olds), "g_nosuchgame")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines() == ["g_nosuchgame: missing", "0 migrated, 2 current, 1 missing, 0 failed"]


@pytest.mark.parametrize("profile", sorted(engine.PROFILES))
def test_the_replay_finds_every_move_of_random_games_of_each_profile(profile: str) -> None:
    """``converted`` rebuilds the log of an earlier-layout game of any profile (melds, lay-offs, resignations
    included) from its events alone, the very entries today's referee writes; a changed event is refused."""
    rng = random.Random(profile)
    rules = engine.rules_from_profile(profile, players=3 if profile.startswith("rummy") else None)
    state, dealt = engine.new_game_with_events(rules, bytes(rng.randrange(256) for _ in range(32)))
    stream = [(f"0-{i}".encode(), {b"e": orjson.dumps(e.to_dict())}) for i, e in enumerate(dealt, 1)]
    expected = [encode_entry(0, -1, b"null", [orjson.dumps(e.to_dict()) for e in dealt])]
    last = 0
    for version in range(1, 151):
        moves = engine.legal_moves(state)
        if not moves:
            break
        last = version
        seat, move = state.to_act, rng.choice(moves)
        if version == 150:
            seat, move = rng.randrange(rules.players), engine.Resign()
        state, events = engine.apply(state, seat, move)
        payloads = [orjson.dumps(e.to_dict()) for e in events]
        stream += [(f"{version}-{i}".encode(), {b"e": p}) for i, p in enumerate(payloads, 1)]
        expected.append(encode_entry(version, seat, orjson.dumps(engine.move_to_dict(move)), payloads))
    fields = {b"state": engine.state_to_json(state).encode(), b"version": str(last).encode(), b"meta": b"{}"}
    config, progress, entries = converted(fields, stream)
    assert (config, progress) == (config_json(state), progress_json(state))
    assert [decode_entry(e) for e in entries] == [decode_entry(e) for e in expected]
    altered = stream[:-1] + [(stream[-1][0], {b"e": b'{"kind":"something else"}'})]
    with pytest.raises(CannotMigrate):
        converted(fields, altered)
