"""An adversarial review of WatchGame (README: "resumable after after_version (and after_index) with no gap and no
duplicate"; docs/design.md, Live streams): every resume position, streams cut and reopened in storms on both
ports, many watchers over two referees sharing one Redis, streams of games that do not exist or are gone, the
HTTP streams' end-of-stream errors, and each viewer's events against the replay after the match."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import random
import re
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.limits import Limits
from server.redis_cluster import LocalCluster
from server.redis_launcher import RedisProcess
from tests import kit
from tests.kit import ServerProcess, two_referees
from tests.server import refkit, webkit
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, md, reason_of, wait_for
from tests.server.webkit import SERVICE, connect_error_answer, envelope
from tests.server.webkit import watch as http_watch
from wire.events import event_from_proto as wire_event_from_proto

Position = tuple[int, int]
CAP = 4  # --watches-per-address of this module's referee
LIMITS = Limits(requests_per_s=1e6, request_burst=1_000_000, games_per_minute=1e6, watches_per_peer=CAP)


@pytest.fixture(scope="module")
def capped(redis_server: RedisProcess) -> Iterator[ServerThread]:
    """A referee of this module's own, with its HTTP port and a small cap on the streams open per address."""
    with ServerThread(redis_server.url, http=True, limits=LIMITS) as server:
        yield server


@pytest.fixture
def client(capped: ServerThread) -> Iterator[Client]:
    c = Client(capped.address)
    try:
        yield c
    finally:
        c.close()


def _new_game(client: Client, seed: int, **fields: Any) -> Game:
    return client.create("gin", token=ORGANIZER, seed=bytes([seed]) * 16,
                         match=rpb.MatchSettings(target_score=100, max_hands=1), allow_spectators=True,
                         **fields)  # fmt: skip


def _positions(client: Client, game: Game) -> list[Position]:
    return [(e.version, e.index) for page in client.replay(game) for e in page.events]


def _grpc_opens(client: Client, game: Game) -> bool:
    """Whether a new WatchGame stream of this address is admitted now (its snapshot comes)."""
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.spectator),
                                   timeout=30)  # fmt: skip
    try:
        return next(stream).HasField("snapshot")
    except grpc.RpcError as exc:
        assert reason_of(exc) == "RATE_LIMITED", exc
        return False
    finally:
        stream.cancel()


def _hub_idle(server: ServerThread) -> bool:
    assert server.referee is not None
    hub = server.referee.hub
    return hub._streams == 0 and hub.watched_games == 0


def test_http_streams_cut_by_their_client_free_their_place_under_the_cap(capped: ServerThread,
                                                                         client: Client) -> None:  # fmt: skip
    """A storm of Connect streams each cut by the client after its snapshot (the connection closed) must not use
    up the address's --watches-per-address: each cut stream ends on the referee and frees its place."""
    game = _new_game(client, 1)
    with httpx.Client(base_url=capped.http_url, timeout=30) as http:
        for _ in range(CAP * 4):
            parts, end = http_watch(http, rpb.WatchGameRequest(game_id=game.game_id), game.spectator, limit=1)
            assert end is None and parts[0].message.HasField("snapshot")
    wait_for(lambda: _hub_idle(capped), "every cut stream ended on the referee", 30)
    assert _grpc_opens(client, game)


def test_grpc_streams_cancelled_by_their_client_free_their_place_under_the_cap(capped: ServerThread,
                                                                               client: Client) -> None:  # fmt: skip
    game = _new_game(client, 2)
    for _ in range(CAP * 4):
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.spectator),
                                       timeout=30)  # fmt: skip
        assert next(stream).HasField("snapshot")
        stream.cancel()
    wait_for(lambda: _hub_idle(capped), "every cancelled stream ended on the referee", 30)
    assert _grpc_opens(client, game)


def _events_from(client: Client, game: Game, token: str, **after: int) -> list[Position]:
    """The positions a stream from ``after`` delivers (the game is over: the stream ends by itself)."""
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, **after), metadata=md(token),
                                   timeout=60)  # fmt: skip
    got = []
    for message in stream:
        if message.HasField("snapshot"):
            assert not after and not got
            got.append((-1, message.snapshot.version))
        else:
            got.append((message.event.version, message.event.index))
    return got


def _cursors(positions: list[Position], upto: int) -> list[dict[str, int]]:
    """Every resume position up to version ``upto``: each whole version, each event, past a version's last index."""
    cursors: list[dict[str, int]] = [{}]
    for v in range(upto + 1):
        cursors.append({"after_version": v})
        cursors.append({"after_version": v, "after_index": 2**32 - 1})
        cursors.append({"after_version": v, "after_index": 0})
    for v, i in positions:
        if v <= upto:
            cursors.append({"after_version": v, "after_index": i})
            cursors.append({"after_version": v, "after_index": i + 1})
    return cursors


def _expected(positions: list[Position], after: dict[str, int], version: int) -> list[Position]:
    if not after:
        return [(-1, version)] + [p for p in positions if p[0] > version]
    start = (after["after_version"], after.get("after_index", 2**63))
    return [p for p in positions if p > start]


def test_a_finished_game_resumed_from_every_position_gives_exactly_the_events_after_it(client: Client) -> None:
    game = _new_game(client, 3)
    refkit.play(client, game, random.Random(3))
    positions = _positions(client, game)
    last = positions[-1][0]
    assert len([p for p in positions if p[0] == last]) >= 2  # the last version: hand_ended and match_ended
    for after in _cursors(positions, last):
        for token in (game.tokens[0], game.tokens[1], game.spectator):
            assert _events_from(client, game, token, **after) == _expected(positions, after, last), after


@pytest.fixture(scope="module")
def pair(redis_server: RedisProcess) -> Iterator[tuple[ServerThread, ServerThread]]:
    """Two referees over one Redis (the tests' limits: no cap on streams that matters here)."""
    with ServerThread(redis_server.url) as a, ServerThread(redis_server.url) as b:
        yield a, b


def test_a_live_game_resumed_from_every_position_on_two_referees_gives_exactly_the_events_after_it(
    pair: tuple[ServerThread, ServerThread],
) -> None:
    """Streams opened mid-game from every position, for every viewer, half on each referee, while the moves go
    to both in turn: each stream gets exactly the events after its position, in order, then ends with the match."""
    clients = [Client(pair[0].address), Client(pair[1].address)]
    try:
        game = _new_game(clients[0], 4)
        rng = random.Random(4)
        refkit.play_over(clients, game, rng, moves=6)
        now = clients[0].view(game, game.tokens[0]).version
        cursors = _cursors(_positions(clients[0], game), now)
        tokens = (game.tokens[0], game.tokens[1], game.spectator)
        jobs = [(n, after, token) for n, (after, token) in enumerate((a, t) for a in cursors for t in tokens)]
        results: dict[int, list[Position]] = {}
        opened: list[Iterator[rpb.WatchGameResponse]] = []

        def read(n: int, stream: Iterator[rpb.WatchGameResponse], first: list[Position]) -> None:
            got = list(first)
            for message in stream:
                got.append((message.event.version, message.event.index))
            results[n] = got

        threads = []
        for n, after, token in jobs:
            stream = clients[n % 2].stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, **after),
                                                   metadata=md(token), timeout=120)  # fmt: skip
            first: list[Position] = []
            if not after:  # the snapshot is sent at once: it says the version this stream starts after
                snapshot = next(stream).snapshot
                first.append((-1, snapshot.version))
            opened.append(stream)
            threads.append(threading.Thread(target=read, args=(n, stream, first), daemon=True))
        for t in threads:
            t.start()
        refkit.play_over(clients, game, rng)
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a stream did not end with the match"
        positions = _positions(clients[0], game)
        for n, after, _ in jobs:
            got = results[n]
            start = got[0][1] if not after else now
            assert got == _expected(positions, after, start), (after, got[:3])
    finally:
        for c in clients:
            c.close()


# ------------------------------------------------------------------ a referee stopped under its streams


class _Stream:
    """One WatchGame stream read on a thread of its own: the events' positions, and how it ended."""

    def __init__(self, target: Any, *args: Any) -> None:
        self.got: list[Position] = []
        self.kinds: list[str] = []
        self.snapshot: int | None = None
        self.end: tuple[str, str | None] | None = None  # (status, ErrorInfo reason)
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(target, *args), daemon=True)
        self.thread.start()

    def _run(self, target: Any, *args: Any) -> None:
        try:
            self.end = target(self, *args)
        except httpx.TransportError:  # the connection cut (SIGKILL) without an end-of-stream message
            self.end = ("CUT", None)
        finally:
            self.started.set()

    def add(self, message: rpb.WatchGameResponse) -> None:
        if message.HasField("snapshot"):
            self.snapshot = message.snapshot.version
        else:
            self.got.append((message.event.version, message.event.index))
            self.kinds.append(message.event.kind)
        self.started.set()


def _grpc_reader(s: _Stream, address: str, request: rpb.WatchGameRequest, token: str) -> tuple[str, str | None]:
    with grpc.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        try:
            for message in stub.WatchGame(request, metadata=md(token), timeout=120):
                s.add(message)
        except grpc.RpcError as exc:
            return exc.code().name, reason_of(exc)
    return "OK", None


def _connect_reader(s: _Stream, http_url: str, request: rpb.WatchGameRequest, token: str) -> tuple[str, str | None]:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/connect+json",
               "connect-protocol-version": "1"}  # fmt: skip
    body = envelope(json_format.MessageToJson(request).encode())
    with httpx.Client(base_url=http_url, timeout=120) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:  # fmt: skip
        for flags, payload in webkit.frames_as_they_come(reply.iter_raw()):
            if flags & 0x02:
                end = json.loads(payload)
                if "error" not in end:
                    return "OK", None
                answer = connect_error_answer(json.dumps(end["error"]).encode(), 200)
                return answer.status, answer.reason
            s.add(json_format.Parse(payload, rpb.WatchGameResponse()))
    return "CUT", None  # no end-of-stream message


def _grpc_web_reader(s: _Stream, http_url: str, request: rpb.WatchGameRequest, token: str) -> tuple[str, str | None]:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    with httpx.Client(base_url=http_url, timeout=120) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=envelope(request.SerializeToString()),
                        headers=headers) as reply:  # fmt: skip
        for flags, payload in webkit.frames_as_they_come(reply.iter_raw()):
            if flags & 0x80:
                answer = webkit.grpc_status_answer(webkit.trailer_fields(payload))
                return answer.status, answer.reason
            s.add(rpb.WatchGameResponse.FromString(payload))
    return "CUT", None


@pytest.fixture
def two(redis_server: RedisProcess, tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two `rummy-referee serve` processes over one Redis, each with its HTTP port."""
    yield from two_referees(redis_server.url, tmp_path, http=True)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_streams_of_a_stopped_referee_end_as_promised_and_resume_on_the_other(
    two: tuple[ServerProcess, ServerProcess], how: str
) -> None:
    """SIGTERM: every stream of the stopped referee, by gRPC, Connect and gRPC-Web, ends with UNAVAILABLE
    SHUTTING_DOWN and its ErrorInfo (design.md: "at shutdown it ends with UNAVAILABLE SHUTTING_DOWN"). SIGKILL:
    the streams are cut. Either way each resumes on the other referee from the last event it got, and gets the
    rest of the game exactly once."""
    a, b = two
    clients = [Client(a.address), Client(b.address)]
    try:
        game = _new_game(clients[1], 7)
        rng = random.Random(7)
        refkit.play_over(clients[1:], game, rng, moves=3)
        request = rpb.WatchGameRequest(game_id=game.game_id)
        assert a.http_port and b.http_port
        a_url, b_url = f"http://127.0.0.1:{a.http_port}", f"http://127.0.0.1:{b.http_port}"
        streams = [(_Stream(_grpc_reader, a.address, request, game.tokens[0]), game.tokens[0]),
                   (_Stream(_connect_reader, a_url, request, game.tokens[1]), game.tokens[1]),
                   (_Stream(_grpc_web_reader, a_url, request, game.spectator), game.spectator)]  # fmt: skip
        for s, _ in streams:
            assert s.started.wait(60) and s.snapshot == 3, s.end
        refkit.play_over(clients[1:], game, rng, moves=3)
        wait_for(lambda: all(len(s.got) >= 3 for s, _ in streams), "each stream got the moves", 60)
        if how == "SIGTERM":
            a.signal(signal.SIGTERM)
            assert a.wait(60) == 0, a.log_tail()
        else:
            a.kill()
        for s, _ in streams:
            s.thread.join(60)
            assert not s.thread.is_alive()
        for s, _ in streams:
            if how == "SIGTERM":
                assert s.end == ("UNAVAILABLE", "SHUTTING_DOWN"), s.end
            else:
                assert s.end is not None and s.end[0] in ("UNAVAILABLE", "CUT"), s.end
        refkit.play_over(clients[1:], game, rng, moves=4)  # the game goes on meanwhile, on the other referee
        resumed = []
        for (s, token), reader, target in zip(streams, (_grpc_reader, _connect_reader, _grpc_web_reader),
                                              (b.address, b_url, b_url), strict=True):  # fmt: skip
            version, index = s.got[-1]
            again = rpb.WatchGameRequest(game_id=game.game_id, after_version=version, after_index=index)
            resumed.append(_Stream(reader, target, again, token))
        refkit.play_over(clients[1:], game, rng)
        positions = [p for p in _positions(clients[1], game) if p[0] > 3]
        for (s, _), r in zip(streams, resumed, strict=True):
            r.thread.join(60)
            assert r.end == ("OK", None), r.end
            assert s.got + r.got == positions
    finally:
        for c in clients:
            c.close()


# ------------------------------------------------------------------ refusals, by both ports


def test_after_index_without_after_version_is_refused_before_the_game_is_looked_up(
    capped: ServerThread, client: Client
) -> None:
    """design.md, "Order of checks for a game RPC: token present, request well formed, game exists, token is one
    of the game's, ...": after_index without after_version is a malformed request (INVALID_POSITION), whatever
    the game and the token, as GetReplay's max_events out of range is (INVALID_PAGE_SIZE) and an after_version
    over 2^53-1 is (VERSION_AHEAD)."""
    game = _new_game(client, 8)
    for game_id, token in [("g_neverCreated", game.spectator), (game.game_id, "st_garbage"),
                           (game.game_id, game.spectator)]:  # fmt: skip
        request = rpb.WatchGameRequest(game_id=game_id, after_index=1)
        with pytest.raises(grpc.RpcError) as refused:
            next(client.stub.WatchGame(request, metadata=md(token), timeout=30))
        assert (refused.value.code(), reason_of(refused.value)) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                                   "INVALID_POSITION"), (game_id, token)  # fmt: skip
        with httpx.Client(base_url=capped.http_url, timeout=30) as http:
            parts, end = http_watch(http, request, token)
        assert not parts and end is not None and (end.status, end.reason) == ("INVALID_ARGUMENT",
                                                                              "INVALID_POSITION")  # fmt: skip


# ------------------------------------------------------------------ each viewer's events against the replay


def _as_viewer(event: pb.Event, viewer: int | None) -> dict[str, Any]:
    """A replay event (every card) as ``viewer`` (a seat, or None: a spectator) may see it (RULES.md section 4;
    engine.events SECRET_FIELDS): a card dealt to a seat or drawn by it from the stock is that seat's alone, the
    stock of a restock nobody's."""
    d: dict[str, Any] = dict(wire_event_from_proto(event))
    kind = d["kind"]
    own = viewer is not None and d["seat"] == viewer
    if kind == "dealt" and not own:
        d.pop("cards", None)
    elif kind == "drew" and d.get("source") == "stock" and not own:
        d.pop("card", None)
    elif kind == "restocked":
        d.pop("stock", None)
    return d


@pytest.mark.parametrize("port", ["grpc", "connect"])
def test_every_viewer_s_watched_events_are_the_replay_s_as_that_viewer_may_see_them(
    capped: ServerThread, client: Client, port: str
) -> None:
    """Each seat and a spectator watch a whole match from its first deal (after_version 0, after_index 0) while
    it is played; after the match, each stream is the replay's events, field for field, as that viewer may see
    them: nothing hidden shown, nothing missing, nothing added."""
    game = _new_game(client, 9 if port == "grpc" else 10)
    viewers: list[tuple[str, int | None]] = [(game.tokens[0], 0), (game.tokens[1], 1), (game.spectator, None)]
    request = rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0)
    got: dict[int, list[pb.Event]] = {}

    def read(n: int, token: str) -> None:
        if port == "grpc":
            got[n] = [m.event for m in client.stub.WatchGame(request, metadata=md(token), timeout=120)]
        else:
            with httpx.Client(base_url=capped.http_url, timeout=120) as http:
                parts, end = http_watch(http, request, token)
            assert end is not None and end.status == "OK", end
            got[n] = [p.message.event for p in parts]

    threads = [threading.Thread(target=read, args=(n, token), daemon=True) for n, (token, _) in enumerate(viewers)]
    for t in threads:
        t.start()
    refkit.play(client, game, random.Random(9))
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    replay = [e for page in client.replay(game) for e in page.events]
    for n, (_, viewer) in enumerate(viewers):
        assert [wire_event_from_proto(e) for e in got[n]] == [_as_viewer(e, viewer) for e in replay], viewer


# ------------------------------------------------------------------ a delayed spectator's game expires

IDLE_S = 2


@pytest.fixture(scope="module")
def short(redis_server: RedisProcess) -> Iterator[ServerThread]:
    """A referee whose moves give a game a short --idle-ttl."""
    with ServerThread(redis_server.url, http=True, store_options={"idle_ttl_s": IDLE_S}) as server:
        yield server


@pytest.mark.parametrize("port", ["grpc", "connect"])
def test_a_delayed_spectator_gets_everything_held_back_then_game_expired_when_the_game_expires(
    pair: tuple[ServerThread, ServerThread], short: ServerThread, port: str
) -> None:
    """README, Spectator delay: when the game expires its watchers get a last event, game_expired, and the stream
    ends with OK, "a delayed spectator first gets everything held back". Moves made through a referee that keeps
    games (so nothing expires before the watch is open), the last one through ``short``: the game then expires
    IDLE_S later; the spectator, 3 moves behind, must get every event of the game, then game_expired."""
    lasting, moving = Client(pair[0].address), Client(short.address)
    try:
        game = lasting.create("gin", token=ORGANIZER, seed=bytes([11 + (port == "grpc")]) * 16,
                              allow_spectators=True, spectator_delay=pb.SpectatorDelay(moves=3),
                              match=rpb.MatchSettings(target_score=100, max_hands=1))  # fmt: skip
        rng = random.Random(11)
        moved: list[Position] = []  # the positions of the moves' events (the replay is gone with the game)

        def move(c: Client) -> None:
            seat = c.view(game, game.tokens[0]).to_act
            answer = c.move(game, game.tokens[seat], bot_move(c.view(game, game.tokens[seat]), rng))
            moved.extend((e.version, e.index) for e in answer.events)

        for _ in range(5):
            move(lasting)
        request = rpb.WatchGameRequest(game_id=game.game_id)
        stream = _Stream(_grpc_reader if port == "grpc" else _connect_reader,
                         short.address if port == "grpc" else short.http_url, request, game.spectator)  # fmt: skip
        assert stream.started.wait(60) and stream.snapshot == 2, stream.end
        move(moving)  # version 6, kept IDLE_S from now
        stream.thread.join(IDLE_S + 60)
        assert not stream.thread.is_alive(), "the stream did not end with the game's expiry"
        assert stream.end == ("OK", None), stream.end
        assert stream.got[:-1] == [p for p in moved if p[0] > 2], stream.got
        assert stream.kinds[-1] == "game_expired" and stream.got[-1] == (6, moved[-1][1] + 1), stream.kinds
    finally:
        lasting.close()
        moving.close()


# ------------------------------------------------------------------ cancel and reconnect storms


def test_watchers_that_cancel_and_reconnect_in_a_storm_over_two_referees_get_every_event_once(
    pair: tuple[ServerThread, ServerThread],
) -> None:
    """While the game is played through both referees, each of several watchers opens a stream from its last
    position, takes one to three events (or none: cancelled at once, before anything came), cancels, and opens
    the next on the other referee, until the match ends: the feeds are made and forgotten again and again (the
    last watcher leaving unsubscribes). Each watcher's events, put together, are the game's, once each, in order."""
    clients = [Client(pair[0].address), Client(pair[1].address)]
    try:
        game = _new_game(clients[0], 12)
        tokens = [game.tokens[0], game.tokens[1], game.spectator] * 2
        results: dict[int, list[Position]] = {}
        done = threading.Event()
        errors: list[BaseException] = []

        def watcher(n: int) -> None:
            rng = random.Random(100 + n)
            got: list[Position] = []
            turn = n
            try:
                while True:
                    after = {"after_version": 0, "after_index": 0} if not got else \
                        {"after_version": got[-1][0], "after_index": got[-1][1]}  # fmt: skip
                    stream = clients[turn % 2].stub.WatchGame(
                        rpb.WatchGameRequest(game_id=game.game_id, **after), metadata=md(tokens[n]), timeout=120)
                    turn += 1
                    take = rng.randrange(4)
                    if not take:  # cancelled at once: maybe before the referee has even registered it
                        stream.cancel()  # type: ignore[attr-defined]
                        continue
                    ended = True
                    for message in stream:
                        got.append((message.event.version, message.event.index))
                        if message.event.kind == "match_ended":
                            break
                        take -= 1
                        if take <= 0:
                            ended = False
                            break
                    stream.cancel()  # type: ignore[attr-defined]
                    if ended and got and done.is_set():
                        break
            except BaseException as exc:
                errors.append(exc)
            results[n] = got

        threads = [threading.Thread(target=watcher, args=(n,), daemon=True) for n in range(len(tokens))]
        for t in threads:
            t.start()
        refkit.play_over(clients, game, random.Random(12))
        done.set()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert not any(t.is_alive() for t in threads)
        positions = _positions(clients[0], game)
        for n in range(len(tokens)):
            assert results[n] == positions, n
        for server in pair:  # nothing left behind: no stream counted open, no game followed
            wait_for(lambda s=server: _hub_idle(s), "every stream ended on both referees", 30)  # type: ignore[misc]
    finally:
        for c in clients:
            c.close()


# ------------------------------------------------------------------ Redis stalls and restarts under a stream


def _serves(client: Client, game: Game) -> bool:
    try:
        client.view(game, game.tokens[0])
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
        return False
    return True


@pytest.mark.parametrize("fault", ["SIGSTOP", "restart"])
def test_a_stream_through_a_redis_stall_or_restart_ends_as_unavailable_or_goes_on_and_loses_nothing(
    private_redis: RedisProcess, fault: str
) -> None:
    """Redis frozen (SIGSTOP) for a while, or restarted (SIGKILL, then started again on its append-only file),
    under a live stream, moves made before and after: the stream either goes on or ends with UNAVAILABLE (and
    its ErrorInfo); resumed from its last event, its events are the game's, once each (design.md: "a subscriber
    connection lost and not made again at once means Redis is unreachable: every watcher ends with
    STORAGE_UNAVAILABLE and resumes later")."""
    settings = kit.referee_settings(private_redis.url, organizer_token=ORGANIZER, op_timeout_s=1.0)
    with kit.ServerThread(settings) as server:
        client = Client(server.address)
        try:
            game = _new_game(client, 13)
            rng = random.Random(13)
            refkit.play(client, game, rng, moves=2)
            request = rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0)
            stream = _Stream(_grpc_reader, server.address, request, game.tokens[0])
            refkit.play(client, game, rng, moves=2)
            wait_for(lambda: len(stream.got) >= 5, "the stream got the moves", 60)
            if fault == "SIGSTOP":
                os.kill(private_redis.pid, signal.SIGSTOP)
                try:  # until the stream ends, or long enough for the safety check to have read the feed
                    stream.thread.join(12)
                finally:
                    os.kill(private_redis.pid, signal.SIGCONT)
            else:
                private_redis.kill()
                stream.thread.join(30)  # the subscriber cannot reconnect at once: the stream ends
                assert not stream.thread.is_alive(), "the stream outlived its Redis"
                private_redis.restart()
            wait_for(lambda: _serves(client, game), "the game is served again", 60)
            refkit.play(client, game, rng, moves=3)
            streams = [stream]
            if not stream.thread.is_alive():
                assert stream.end is not None and stream.end[0] == "UNAVAILABLE", stream.end
                assert stream.end[1] in ("STORAGE_UNAVAILABLE", "STORAGE_BUSY"), stream.end
                version, index = stream.got[-1]
                streams.append(_Stream(_grpc_reader, server.address, rpb.WatchGameRequest(
                    game_id=game.game_id, after_version=version, after_index=index), game.tokens[0]))  # fmt: skip
            refkit.play(client, game, rng)
            streams[-1].thread.join(60)
            assert streams[-1].end == ("OK", None), streams[-1].end
            assert [p for s in streams for p in s.got] == _positions(client, game), fault
        finally:
            client.close()


# ------------------------------------------------------------------ the HTTP streams' framing


def _frames(body: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    while at < len(body):
        assert len(body) - at >= 5, "a partial frame header"
        flags, size = body[at], int.from_bytes(body[at + 1 : at + 5], "big")
        assert len(body) - at - 5 >= size, "a partial frame"
        out.append((flags, body[at + 5 : at + 5 + size]))
        at += 5 + size
    return out


def _grpc_web_text_body(body: bytes) -> bytes:
    """A grpc-web-text answer: base64 pieces, each padded on its own (http_server.grpc_web_text)."""
    return b"".join(base64.b64decode(piece) for piece in re.findall(rb"[^=]*=*", body) if piece)


def _watch_by_every_framing(http: httpx.Client, request: rpb.WatchGameRequest,
                            token: str) -> Iterator[tuple[str, httpx.Response, list[tuple[int, bytes]]]]:  # fmt: skip
    """WatchGame by each HTTP stream framing (Connect binary and JSON, gRPC-Web binary and text), read whole: the
    framing's name, the answer (HTTP 200: any end is in the body or the trailers) and its frames."""
    auth = {"authorization": f"Bearer {token}"}
    binary = envelope(request.SerializeToString())
    for kind, content_type, body in [
        ("connect", "application/connect+proto", binary),
        ("connect-json", "application/connect+json", envelope(json_format.MessageToJson(request).encode())),
        ("grpc-web", "application/grpc-web+proto", binary),
        ("grpc-web-text", "application/grpc-web-text", base64.b64encode(binary)),
    ]:
        reply = http.post(f"/{SERVICE}/WatchGame", content=body, headers={**auth, "content-type": content_type})
        assert reply.status_code == 200, (kind, reply.content[:200])
        raw = _grpc_web_text_body(reply.content) if kind == "grpc-web-text" else reply.content
        yield kind, reply, _frames(raw)


@pytest.mark.parametrize("token_of", ["seat", "spectator"])
def test_every_http_stream_framing_carries_the_grpc_stream_s_bytes_and_its_end(capped: ServerThread,
                                                                               client: Client,
                                                                               token_of: str) -> None:  # fmt: skip
    """WatchGame of a finished game from its first deal by Connect (binary and JSON), gRPC-Web binary and text:
    the same messages as the gRPC stream, byte for byte (JSON: the same message), then an end that says OK
    (Connect: an EndStreamResponse with no error; gRPC-Web: a trailers frame, grpc-status 0)."""
    game = _new_game(client, 14)
    refkit.play(client, game, random.Random(14))
    token = game.tokens[1] if token_of == "seat" else game.spectator
    request = rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0)
    method = client.channel.unary_stream(f"/{SERVICE}/WatchGame",
                                         request_serializer=rpb.WatchGameRequest.SerializeToString,
                                         response_deserializer=None)  # fmt: skip
    native = list(method(request, metadata=md(token), timeout=60))
    assert len(native) > 10
    with httpx.Client(base_url=capped.http_url, timeout=60) as http:
        for kind, _, frames in _watch_by_every_framing(http, request, token):
            messages, (end_flags, end) = frames[:-1], frames[-1]
            assert all(flags == 0 for flags, _ in messages), kind
            if kind == "connect-json":
                assert [json_format.Parse(m, rpb.WatchGameResponse()) for _, m in messages] == [
                    rpb.WatchGameResponse.FromString(m) for m in native]  # fmt: skip
            else:
                assert [m for _, m in messages] == native, kind
            if kind.startswith("connect"):
                assert end_flags == 0x02 and "error" not in json.loads(end), (kind, end)
            else:
                assert end_flags & 0x80 and b"grpc-status: 0" in end.lower().replace(b"grpc-status:0",
                                                                                      b"grpc-status: 0"), (kind, end)


def test_every_http_stream_framing_ends_a_refused_watch_with_its_error_and_error_info(
    capped: ServerThread, client: Client
) -> None:
    game = _new_game(client, 15)
    request = rpb.WatchGameRequest(game_id=game.game_id)
    with httpx.Client(base_url=capped.http_url, timeout=60) as http:
        for kind, reply, frames in _watch_by_every_framing(http, request, "st_nobodys"):
            if kind.startswith("connect"):
                assert len(frames) == 1 and frames[0][0] == 0x02, kind
                answer = connect_error_answer(json.dumps(json.loads(frames[0][1])["error"]).encode(), 200)
            else:
                fields = {k.lower(): v for k, v in reply.headers.items()}
                if "grpc-status" not in fields:  # not trailers-only: the trailers frame
                    assert len(frames) == 1 and frames[0][0] & 0x80, kind
                    fields = webkit.trailer_fields(frames[0][1])
                answer = webkit.grpc_status_answer(fields)
            assert (answer.status, answer.reason) == ("UNAUTHENTICATED", "BAD_TOKEN"), (kind, answer)


def test_http_streams_whose_client_leaves_without_reading_free_their_place_under_the_cap(
    capped: ServerThread, client: Client
) -> None:
    """The same storm, each client gone without reading a byte once its stream is admitted (counted open for its
    address): every such stream ends on the referee too, and frees its place."""
    game = _new_game(client, 16)
    host, port = capped.http_url.removeprefix("http://").split(":")
    body = envelope(json.dumps({"gameId": game.game_id}).encode())
    head = (f"POST /{SERVICE}/WatchGame HTTP/1.1\r\nHost: x\r\ncontent-type: application/connect+json\r\n"
            f"authorization: Bearer {game.spectator}\r\ncontent-length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    assert capped.app is not None and capped.app.limiter is not None
    watches = capped.app.limiter.watches
    for _ in range(CAP * 4):
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + body)
            wait_for(lambda: len(watches) > 0, "the stream is admitted", 30)
        wait_for(lambda: not len(watches), "the abandoned stream ended on the referee", 30)
    wait_for(lambda: _hub_idle(capped), "no game followed", 30)
    assert _grpc_opens(client, game)


# ------------------------------------------------------------------ a watcher that never reads


def test_a_grpc_watcher_that_never_reads_is_cut_too_slow_then_resumes_without_a_gap(
    pair: tuple[ServerThread, ServerThread], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real gRPC client that reads nothing after the snapshot while hundreds of moves are made: once HTTP/2's
    flow control stops the referee's writes, the hub's queue for it fills (here 3 events) and it is cut; when the
    client reads at last it gets a gap-free start of the game, then RESOURCE_EXHAUSTED WATCHER_TOO_SLOW, and a
    watch resumed from its last event gets the rest (README: "a watcher further behind is cut off with
    WATCHER_TOO_SLOW and resumes")."""
    server = pair[0]
    assert server.referee is not None
    hub = server.referee.hub
    monkeypatch.setattr(hub, "watch", dataclasses.replace(hub.watch, queue_limit=3))
    client = Client(server.address)
    try:
        game = client.create("gin", token=ORGANIZER, seed=bytes([17]) * 16, allow_spectators=True,
                             match=rpb.MatchSettings(target_score=1000))  # fmt: skip
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0),
                                       metadata=md(game.spectator), timeout=300)  # fmt: skip
        first = next(stream)
        got = [(first.event.version, first.event.index)]
        rng = random.Random(17)
        cut = False
        for _ in range(40):  # rounds of 50 moves, until the hub has cut the watcher (it no longer follows)
            refkit.play(client, game, rng, moves=50)
            if hub.cursor(game.game_id) is None:
                cut = True
                break
        assert cut, "the watcher that never reads was never cut"
        with pytest.raises(grpc.RpcError) as ended:
            for message in stream:
                got.append((message.event.version, message.event.index))
        assert (ended.value.code(), reason_of(ended.value)) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                               "WATCHER_TOO_SLOW")  # fmt: skip
        positions = _positions(client, game)
        assert got == positions[: len(got)] and len(got) < len(positions)
        version, index = got[-1]
        rest = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=version,
                                                          after_index=index), metadata=md(game.spectator))  # fmt: skip
        more = [(m.event.version, m.event.index) for _, m in zip(positions[len(got) :], rest, strict=False)]
        rest.cancel()
        assert got + more == positions
    finally:
        client.close()


# ------------------------------------------------------------------ a Redis Cluster: leave and rejoin at once


def _on_loop(server: ServerThread, work: Any) -> Any:
    assert server._loop is not None
    return asyncio.run_coroutine_threadsafe(work, server._loop).result(60)


async def _call(fn: Any) -> Any:
    return fn()


def test_the_last_watcher_leaving_and_a_new_one_arriving_before_the_unsubscribe_is_acknowledged_keeps_the_link(
    redis_cluster: LocalCluster,
) -> None:
    """On a Redis Cluster each master's subscriber connection (events._Link) carries the channels of every
    watched game of that shard; an SUNSUBSCRIBE the hub did not ask for means the slot moved, and the link is cut
    and made again (every game of the shard resubscribed, and read by polling meanwhile). The last watcher of a
    game leaving makes the hub ask for one; a new watcher of the same game arriving before Redis's
    acknowledgement of it has been read (here: the subscriber's reading paused, as a busy loop or a slow network
    would) subscribes the channel again on the same link. That acknowledgement was asked for: the link must
    stay up. (An SDK renewing its stream, or a client reconnecting after a cut, is such a leave and rejoin.)"""
    server = ServerThread(redis_cluster.url)
    client = Client(server.address)
    try:
        assert server.referee is not None
        hub = server.referee.hub
        game = _new_game(client, 18)
        request = rpb.WatchGameRequest(game_id=game.game_id)
        first = client.stub.WatchGame(request, metadata=md(game.spectator), timeout=120)
        assert next(first).HasField("snapshot")
        wait_for(lambda: hub.cursor(game.game_id) is not None, "the game is followed", 60)
        feed = hub._feeds[game.game_id]
        wait_for(lambda: feed.read_at > 0 and feed.link is not None and feed.link.sub is not None,
                 "the game's channel is subscribed (its acknowledgement read the feed)", 60)  # fmt: skip
        assert feed.link is not None and feed.link.sub is not None
        link, sub = feed.link, feed.link.sub
        assert sub.transport is not None
        _on_loop(server, _call(sub.transport.pause_reading))
        try:
            first.cancel()  # the last watcher leaves: SUNSUBSCRIBE
            wait_for(lambda: hub.cursor(game.game_id) is None, "the game is no longer followed", 60)
            second = client.stub.WatchGame(request, metadata=md(game.spectator), timeout=120)
            assert next(second).HasField("snapshot")  # a new watcher: SSUBSCRIBE on the same connection
            wait_for(lambda: hub.cursor(game.game_id) is not None, "the game is followed again", 60)
            again = hub._feeds[game.game_id]
            assert again.link is link and link.sub is sub
        finally:
            _on_loop(server, _call(sub.transport.resume_reading))
        # a PING after both: once its answer is read (Redis answers in order), both acknowledgements have been
        _on_loop(server, _call(lambda: (setattr(sub, "pong_due", True), sub.send("PING"))))
        wait_for(lambda: not sub.pong_due or sub.lost.done(), "the PING after the acknowledgements answered", 60)
        assert not sub.lost.done(), "the link was cut for an unsubscribe the hub had asked for"
        refkit.play(client, game, random.Random(18), moves=1)
        assert next(second).event.version == 1
        second.cancel()
    finally:
        client.close()
        server.stop()
