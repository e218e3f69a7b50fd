"""The fuzz test of issue 8: thousands of random and mutated requests across every RPC, against a real
``rummy-referee serve`` subprocess over a real redis-server of this test alone, on real games it created.

Requests: random bytes; valid encodings with bytes flipped, cut, inserted or repeated; valid messages with random
field values (edge numbers, unknown enum values, huge and broken strings, real and fake game ids, cards, tokens);
random metadata and authorization headers; and now and then a legal move, so that the games move on. Asserted:
no UNKNOWN, no INTERNAL (nor any status outside the documented set), every refusal with an ErrorInfo reason,
no change in Redis from any refused request (every key of every game compared with ``DUMP`` before and after,
and the number of keys), and at the end the same referee process alive and answering, with no traceback in its log.

Deterministic: seeded (``RUMMY_FUZZ_SEED``, default below); ``RUMMY_FUZZ_REQUESTS`` sets the count (>= 5000).
"""

from __future__ import annotations

import os
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ORGANIZER, ServerProcess
from tests.server.refkit import ALL_CARDS, GIN_KNOCK_DEAL, GIN_KNOCK_MOVES, Client, md, move_from_text, reason_of

SEED = int(os.environ.get("RUMMY_FUZZ_SEED", "20261201"))
REQUESTS = max(5000, int(os.environ.get("RUMMY_FUZZ_REQUESTS", "5000")))
SERVICE = rpb.DESCRIPTOR.services_by_name["RefereeService"]
C = grpc.StatusCode
# what a refusal may be (STYLE.md's table); never UNKNOWN, never INTERNAL
REFUSALS = {C.INVALID_ARGUMENT, C.FAILED_PRECONDITION, C.ABORTED, C.UNAUTHENTICATED, C.PERMISSION_DENIED,
            C.NOT_FOUND, C.RESOURCE_EXHAUSTED}  # fmt: skip
HEALTH_REFUSALS = {C.INVALID_ARGUMENT, C.NOT_FOUND, C.UNIMPLEMENTED}  # (List: not in every grpcio-health-checking)
HEALTH = ("/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/List")
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
WATCH_WAIT_S = 0.3  # a watch that is right gets its first message at once; one at the head of the game waits

FIELD_TYPES = FieldDescriptor
INT32 = (0, 1, 2, 3, -1, 5, 51, 52, 99, 2**31 - 1, -(2**31))
UINT32 = (0, 1, 2, 3, 500, 2000, 2001, 2**32 - 1)
INT64 = (0, 1, -1, 2, 10, 100, 99, 150, 1000, 100_000, 2**31, 2**63 - 1, -(2**63))
UINT64 = (0, 1, 2, 3, 4, 5, 10, 2**32, 2**53 - 1, 2**53, 2**63, 2**64 - 1)
TEXTS = ("", " ", "x", "\u00e9\u4e2d\U0001f600", "a" * 200, "Z" * 5000, "\x00", "-1", "g_", "{x}", "*", "..")
PROFILES = ("", "gin", "gin-standard", "oklahoma-gin", "hollywood-gin", "rummy", "rummy-g4a", "canasta")
CARDS = (*ALL_CARDS, "10D", "td", " AS ", "ZZ", "", "1", "AS AS", "A" * 300)


@dataclass
class World:
    """What the fuzzer knows: the games it follows and every token it has seen."""

    rng: random.Random
    games: dict[str, dict[int, str]] = field(default_factory=dict)  # game id -> seat tokens
    tokens: list[str] = field(default_factory=lambda: [ORGANIZER])
    request_ids: list[str] = field(default_factory=lambda: ["r1", "r2", "r3"])
    finished: set[str] = field(default_factory=set)  # followed games whose match is over

    def game_id(self) -> str:
        rng = self.rng
        if self.games and rng.random() < 0.85:
            return rng.choice(list(self.games))
        return rng.choice(("nosuchgame", "g_" + "A" * 22, "bad/id", "", "a" * 65, "g_{x}", *TEXTS))

    def token(self) -> str:
        return self.rng.choice(self.tokens)

    def follow(self, game_id: str, tokens: dict[int, str], spectator: str = "") -> None:
        self.tokens += [*tokens.values(), *([spectator] if spectator else [])]
        if len(self.games) < 10:
            self.games[game_id] = dict(tokens)


def _scalar(world: World, f: FieldDescriptor) -> Any:
    rng, name, t = world.rng, f.name, f.type
    if t == FIELD_TYPES.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FIELD_TYPES.TYPE_ENUM:
        return rng.choice((0, 1, 2, 3, 7, 8, -1, 2**31 - 1))
    if t in (FIELD_TYPES.TYPE_INT32, FIELD_TYPES.TYPE_SINT32, FIELD_TYPES.TYPE_SFIXED32):
        return rng.choice(INT32) if rng.random() < 0.8 else rng.randint(-(2**31), 2**31 - 1)
    if t in (FIELD_TYPES.TYPE_UINT32, FIELD_TYPES.TYPE_FIXED32):
        return rng.choice(UINT32)
    if t in (FIELD_TYPES.TYPE_INT64, FIELD_TYPES.TYPE_SINT64, FIELD_TYPES.TYPE_SFIXED64):
        return rng.choice(INT64)
    if t in (FIELD_TYPES.TYPE_UINT64, FIELD_TYPES.TYPE_FIXED64):
        return rng.choice(UINT64)
    if t == FIELD_TYPES.TYPE_BYTES:
        return rng.randbytes(rng.choice((0, 1, 8, 15, 16, 32, 64, 65, 300)))
    # strings, by what the field holds
    if name == "game_id":
        return world.game_id()
    if name in ("card", "cards", "discard", "upcard", "stock"):
        return rng.choice(CARDS)
    if name == "profile":
        return rng.choice(PROFILES)
    if name == "request_id":
        return rng.choice(world.request_ids) if rng.random() < 0.7 else rng.choice(TEXTS)
    if name == "display_name":
        return rng.choice(("Ann", "Bob", "Eve", *TEXTS))
    if name == "string_value":
        return rng.choice(("none", "take_or_pass", "draw", "fiftieth_card", "gin_only", "one", "shuffle", *TEXTS))
    return rng.choice(TEXTS)


def random_message(world: World, desc: Descriptor, depth: int = 0) -> Message:
    """A message of type ``desc`` with random field values (each field set or not; one member of each oneof)."""
    rng = world.rng
    msg: Any = message_factory.GetMessageClass(desc)()
    chosen = {o.name: rng.choice(o.fields).name for o in desc.oneofs}
    for f in desc.fields:
        if f.containing_oneof is not None and chosen[f.containing_oneof.name] != f.name:
            continue
        if f.name != "game_id" and rng.random() < 0.4:
            continue
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            for _ in range(rng.choice((0, 1, 1, 2, 3))):
                key = rng.choice((*engine.OPTION_NAMES, "no_such_option", "", "x" * 100))
                value = random_message(world, f.message_type.fields_by_name["value"].message_type, depth + 1)
                getattr(msg, f.name)[key].CopyFrom(value)
            continue
        if f.is_repeated:
            n = rng.choice((0, 1, 2, 3, 10, 11, 12)) if depth < 3 else 0
            if f.message_type is not None:
                for _ in range(n):
                    getattr(msg, f.name).add().CopyFrom(random_message(world, f.message_type, depth + 1))
            else:
                getattr(msg, f.name).extend(_scalar(world, f) for _ in range(n))
            continue
        if f.message_type is not None:
            if depth < 4:
                getattr(msg, f.name).CopyFrom(random_message(world, f.message_type, depth + 1))
            continue
        setattr(msg, f.name, _scalar(world, f))
    result: Message = msg
    return result


def mutate(rng: random.Random, data: bytes) -> bytes:
    """``data`` with a few random edits: bytes flipped, cut, inserted, repeated."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        kind = rng.randrange(5)
        at = rng.randrange(len(out) + 1)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del out[at:]
        elif kind == 2:
            out[at:at] = rng.randbytes(rng.randint(1, 4))
        elif kind == 3 and out:
            end = min(len(out), at + rng.randint(1, 8))
            out[at:at] = out[at:end]
        else:
            out[at:at] = rng.choice((b"\xff\xfe", b"\x80" * 10, b"\x0c", b"\x0a\x7f", b"\xc0\x80", b"\x00"))
    return bytes(out)


def metadata(world: World) -> tuple[tuple[str, Any], ...]:
    """Random call metadata: a token (good, foreign, malformed) or none, sometimes with other headers."""
    rng = world.rng
    pairs: list[tuple[str, Any]] = []
    roll = rng.random()
    if roll < 0.6:
        pairs.append(("authorization", f"Bearer {world.token()}"))
    elif roll < 0.8:
        printable = "".join(rng.choice(string.printable[:95]) for _ in range(rng.randint(0, 60)))
        pairs.append(("authorization", rng.choice(
            ("Bearer", "Bearer ", "Basic abc", "bearer  " + world.token(), "Bearer x y", "", printable,
             "Bearer " + "t" * 2000, "Bearer " + world.token() + "x")
        )))  # fmt: skip
    for _ in range(rng.choice((0, 0, 0, 1, 2))):
        key = "x-" + "".join(rng.choice(string.ascii_lowercase + string.digits + "-_.") for _ in range(6))
        pairs.append((key, "".join(rng.choice(string.printable[:95]) for _ in range(rng.randint(0, 30)))))
    if rng.random() < 0.03:
        pairs.append(("authorization", f"Bearer {world.token()}"))  # a second one
    if rng.random() < 0.03:
        pairs.append((rng.choice(("authorization-bin", "x-trace-bin")), rng.randbytes(rng.randint(0, 40))))
    return tuple(pairs)


_TYPES: dict[bytes, bytes] = {}  # key -> its Redis type (a key keeps its type while it exists)


def snapshot(r: redis.Redis, game_ids: list[str]) -> tuple[int, dict[bytes, Any]]:
    """The number of keys in Redis, and the content of every key of every followed game (a hash's fields, a
    list's or a stream's entries, a set's members, a string's bytes; the DUMP of any other type). Not the DUMP
    of a hash: that of a hash in hashtable encoding lists its fields in bucket order, which Redis's incremental
    rehashing changes without any write."""
    pipe = r.pipeline(transaction=False)
    pipe.dbsize()
    for gid in game_ids:
        pipe.keys(f"*{{{gid}}}*")
    found = pipe.execute()
    keys = sorted({k for ks in found[1:] for k in ks})
    if unknown := [k for k in keys if k not in _TYPES]:
        pipe = r.pipeline(transaction=False)
        for k in unknown:
            pipe.type(k)
        _TYPES.update(zip(unknown, pipe.execute(), strict=True))
    pipe = r.pipeline(transaction=False)
    for k in keys:
        kind = _TYPES[k]
        if kind == b"list":
            pipe.lrange(k, 0, -1)
        elif kind == b"zset":
            pipe.zrange(k, 0, -1, withscores=True)
        else:
            {b"hash": pipe.hgetall, b"stream": pipe.xrange, b"string": pipe.get, b"set": pipe.smembers}.get(
                kind, pipe.dump)(k)  # fmt: skip
    return found[0], dict(zip(keys, pipe.execute(), strict=True))


def _diff(a: tuple[int, dict[bytes, Any]], b: tuple[int, dict[bytes, Any]]) -> str:
    lines = [f"keys {a[0]} -> {b[0]}"] if a[0] != b[0] else []
    for key in sorted(a[1].keys() | b[1].keys()):
        x, y = a[1].get(key), b[1].get(key)
        if x != y:
            if isinstance(x, dict) and isinstance(y, dict):
                fields = sorted(f for f in x.keys() | y.keys() if x.get(f) != y.get(f))
                lines.append(f"{key!r}: fields {fields}: {[(x.get(f), y.get(f)) for f in fields][:3]}"[:2000])
            else:
                lines.append(f"{key!r}: {str(x)[:300]} -> {str(y)[:300]}")
    return "; ".join(lines)


@pytest.fixture
def referee(private_redis: RedisProcess, tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(private_redis.url, log_dir=tmp_path)
    server.start(timeout=60)
    try:
        yield server
    finally:
        server.stop()


def _setup(client: Client, world: World) -> None:
    """Games in several phases: Gin at its first turn, after a draw, after a knock (the defender to lay off), a
    finished match (replays for anyone), a Rummy game with an open seat, a Hollywood game."""
    def created(**fields: Any) -> Any:
        return client.create(token=ORGANIZER, **fields)

    first = created(profile="gin", preset_deals=[GIN_KNOCK_DEAL], allow_spectators=True)
    world.follow(first.game_id, first.tokens, first.spectator)
    drawn = created(profile="gin", preset_deals=[GIN_KNOCK_DEAL])
    client.move(drawn, drawn.tokens[1], move_from_text("draw stock"))
    world.follow(drawn.game_id, drawn.tokens)
    knocked = created(profile="gin", preset_deals=[GIN_KNOCK_DEAL])
    for seat, text in GIN_KNOCK_MOVES[:2]:
        client.move(knocked, knocked.tokens[seat], move_from_text(text))
    world.follow(knocked.game_id, knocked.tokens)
    over = created(profile="gin", preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(target_score=20))
    for seat, text in GIN_KNOCK_MOVES:
        client.move(over, over.tokens[seat], move_from_text(text))
    world.follow(over.game_id, over.tokens)
    seats = [pb.SeatSpec(display_name="Ann"), pb.SeatSpec(display_name="Bob"), pb.SeatSpec(open=True)]
    rummy = client.stub.CreateGame(rpb.CreateGameRequest(profile="rummy", seats=seats, allow_spectators=True))
    world.follow(rummy.game_id, {t.seat: t.token for t in rummy.seat_tokens}, rummy.spectator_token)
    hollywood = client.create("hollywood-gin")
    world.follow(hollywood.game_id, hollywood.tokens)


def _legal_move(client: Client, world: World) -> tuple[str, bytes, tuple[tuple[str, str], ...]] | None:
    """A SubmitMove of a legal move by the seat to act of a followed game (None when no game can move)."""
    rng = world.rng
    for game_id in rng.sample(list(world.games), len(world.games)):
        tokens = world.games[game_id]
        if game_id in world.finished or not tokens:
            continue
        seen = client.stub.GetGame(rpb.GetGameRequest(game_id=game_id), metadata=md(next(iter(tokens.values()))))
        if seen.view.phase == pb.PHASE_MATCH_OVER:
            world.finished.add(game_id)
            continue
        token = tokens.get(seen.view.to_act)
        if token is None:  # the seat to act was open and taken by a JoinGame of the fuzzer's: token unknown
            continue
        view = client.stub.GetGame(rpb.GetGameRequest(game_id=game_id), metadata=md(token)).view
        if view.legal_moves:
            request = rpb.SubmitMoveRequest(game_id=game_id, move=rng.choice(view.legal_moves))
            if rng.random() < 0.5:
                request.request_id = rng.choice(world.request_ids)
            if rng.random() < 0.3:
                request.expected_version = view.version
            return "SubmitMove", request.SerializeToString(), md(token)
    return None


def _request(client: Client, world: World) -> tuple[str, bytes, tuple[tuple[str, str], ...]]:
    rng = world.rng
    roll = rng.random()
    if roll < 0.1 and (legal := _legal_move(client, world)) is not None:
        return legal
    meta = metadata(world)
    if roll < 0.115:  # reflection too: a client stream of requests
        listing = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
        by_name = reflection_pb2.ServerReflectionRequest(file_containing_symbol=rng.choice(
            (SERVICE.full_name, "rummy.v1.Move", "google.rpc.ErrorInfo", *TEXTS))).SerializeToString()
        body = rng.choice((listing, by_name, mutate(rng, by_name), rng.randbytes(rng.randint(0, 8))))
        return REFLECTION, body, meta
    if roll < 0.13:  # the health service shares the server (and its handlers)
        check = health_pb2.HealthCheckRequest(service=rng.choice(("", SERVICE.full_name, *TEXTS))).SerializeToString()
        return rng.choice(HEALTH), rng.choice((check, mutate(rng, check), rng.randbytes(rng.randint(0, 8)))), meta
    method = rng.choice(SERVICE.methods)
    if roll < 0.25:
        return method.name, rng.randbytes(rng.choice((0, 1, 2, 3, 5, 8, 16, 64))), meta
    body = random_message(world, method.input_type).SerializeToString()
    if roll < 0.55:
        body = mutate(rng, body)
    return method.name, body, meta


def _call(channel: grpc.Channel, method: str, body: bytes, meta: tuple[tuple[str, str], ...]) -> tuple[Any, Any]:
    """(status code, response bytes or the error)."""
    path = method if method.startswith("/") else f"/{SERVICE.full_name}/{method}"
    try:
        if method == REFLECTION:
            return C.OK, b"".join(channel.stream_stream(path)(iter([body, body]), metadata=meta, timeout=60))
        if method == "WatchGame":
            stream = channel.unary_stream(path)(body, metadata=meta, timeout=WATCH_WAIT_S)
            try:
                return C.OK, next(stream)
            except StopIteration:
                return C.OK, b""
            finally:
                stream.cancel()
        return C.OK, channel.unary_unary(path)(body, metadata=meta, timeout=60)
    except grpc.RpcError as exc:
        return exc.code(), exc


@pytest.mark.timeout(max(300, REQUESTS // 10))  # a larger RUMMY_FUZZ_REQUESTS gets the time it needs
def test_fuzz_every_rpc(referee: ServerProcess, private_redis: RedisProcess) -> None:
    world = World(random.Random(SEED))
    r = redis.Redis.from_url(private_redis.url)
    client = Client(referee.address)
    channel = grpc.insecure_channel(referee.address)
    assert referee.process is not None
    pid = referee.process.pid
    counts: dict[str, int] = {}
    try:
        _setup(client, world)
        before = snapshot(r, list(world.games))
        for n in range(REQUESTS):
            method, body, meta = _request(client, world)
            code, answer = _call(channel, method, body, meta)
            counts[code.name] = counts.get(code.name, 0) + 1
            where = f"request {n}: {method} {body[:80].hex()} {meta}"
            if code == C.OK:
                if method == "CreateGame":
                    created = rpb.CreateGameResponse.FromString(answer)
                    world.follow(created.game_id, {t.seat: t.token for t in created.seat_tokens},
                                 created.spectator_token)  # fmt: skip
                elif method == "JoinGame":
                    world.tokens.append(rpb.JoinGameResponse.FromString(answer).token)
                before = snapshot(r, list(world.games))
                continue
            if method == "WatchGame" and code in (C.DEADLINE_EXCEEDED, C.CANCELLED):
                continue  # a watch at the head of its game: nothing came within WATCH_WAIT_S
            if method in HEALTH or method == REFLECTION:  # grpc's own services: no ErrorInfo (but no UNKNOWN)
                assert code in HEALTH_REFUSALS, f"{where}: {code} {answer.details()}"
                continue
            assert code in REFUSALS, f"{where}: {code} {answer.details()}"
            if code != C.RESOURCE_EXHAUSTED:  # gRPC's own size limit has no ErrorInfo
                assert reason_of(answer), f"{where}: no ErrorInfo in {code} {answer.details()}"
            after = snapshot(r, list(world.games))
            assert after == before, f"{where}: refused ({code}) but Redis changed: {_diff(before, after)}"
        assert referee.process.poll() is None and referee.process.pid == pid and referee.starts == 1
        client.stub.Ping(rpb.PingRequest(), timeout=30)
    finally:
        channel.close()
        client.close()
    log = referee.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    assert counts.get("OK", 0) > REQUESTS // 20 and counts.get("INVALID_ARGUMENT", 0) > REQUESTS // 5, counts
    print(f"fuzz: {REQUESTS} requests, seed {SEED}: {counts}")
