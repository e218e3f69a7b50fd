"""An adversarial review of WatchGame (README: "resumable after after_version (and after_index) with no gap and no
duplicate"; docs/design.md, Live streams): every resume position, streams cut and reopened in storms on both
ports, many watchers over two referees sharing one Redis, streams of games that do not exist or are gone, the
HTTP streams' end-of-stream errors, and each viewer's events against the replay after the match."""

from __future__ import annotations

import json
import random
import signal
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
from server.redis_launcher import RedisProcess
from tests.kit import ServerProcess
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, md, reason_of, wait_for
from tests.server.webkit import SERVICE, connect_error_answer, envelope
from tests.server.webkit import _grpc_status as _webkit_grpc_status
from tests.server.webkit import watch as http_watch

Position = tuple[int, int]
CAP = 3  # --watches-per-address of this module's referee
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


def _play(client: Client, game: Game, rng: random.Random, moves: int | None = None) -> None:
    n = 0
    while moves is None or n < moves:
        view = client.view(game, game.tokens[0])
        if view.phase == pb.PHASE_MATCH_OVER:
            return
        own = client.view(game, game.tokens[view.to_act])
        client.move(game, game.tokens[view.to_act], bot_move(own, rng))
        n += 1


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
    _play(client, game, random.Random(3))
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


def _play_over(clients: list[Client], game: Game, rng: random.Random, moves: int | None = None) -> None:
    """Bot moves sent to the referees in turn."""
    n = 0
    while moves is None or n < moves:
        c = clients[n % len(clients)]
        view = c.view(game, game.tokens[0])
        if view.phase == pb.PHASE_MATCH_OVER:
            return
        c.move(game, game.tokens[view.to_act], bot_move(c.view(game, game.tokens[view.to_act]), rng))
        n += 1


def test_a_live_game_resumed_from_every_position_on_two_referees_gives_exactly_the_events_after_it(
    pair: tuple[ServerThread, ServerThread],
) -> None:
    """Streams opened mid-game from every position, for every viewer, half on each referee, while the moves go
    to both in turn: each stream gets exactly the events after its position, in order, then ends with the match."""
    clients = [Client(pair[0].address), Client(pair[1].address)]
    try:
        game = _new_game(clients[0], 4)
        rng = random.Random(4)
        _play_over(clients, game, rng, moves=6)
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
        _play_over(clients, game, rng)
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
    buffer = b""
    with httpx.Client(base_url=http_url, timeout=120) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:  # fmt: skip
        for chunk in reply.iter_raw():
            buffer += chunk
            while len(buffer) >= 5 and len(buffer) >= 5 + int.from_bytes(buffer[1:5], "big"):
                size = int.from_bytes(buffer[1:5], "big")
                flags, payload, buffer = buffer[0], buffer[5 : 5 + size], buffer[5 + size :]
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
    buffer = b""
    with httpx.Client(base_url=http_url, timeout=120) as http, \
            http.stream("POST", f"/{SERVICE}/WatchGame", content=envelope(request.SerializeToString()),
                        headers=headers) as reply:  # fmt: skip
        for chunk in reply.iter_raw():
            buffer += chunk
            while len(buffer) >= 5 and len(buffer) >= 5 + int.from_bytes(buffer[1:5], "big"):
                size = int.from_bytes(buffer[1:5], "big")
                flags, payload, buffer = buffer[0], buffer[5 : 5 + size], buffer[5 + size :]
                if flags & 0x80:
                    trailers = {}
                    for line in payload.decode().split("\r\n"):
                        if line:
                            key, _, value = line.partition(":")
                            trailers[key.strip().lower()] = value.strip()
                    answer = grpc_status_answer(trailers)
                    return answer.status, answer.reason
                s.add(rpb.WatchGameResponse.FromString(payload))
    return "CUT", None


def grpc_status_answer(trailers: dict[str, str]) -> Any:
    return _webkit_grpc_status(trailers, b"", None, 200)


@pytest.fixture
def two(redis_server: RedisProcess, tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two `rummy-referee serve` processes over one Redis, each with its HTTP port."""
    a = ServerProcess(redis_server.url, ORGANIZER, log_dir=tmp_path, http=True)
    b = ServerProcess(redis_server.url, ORGANIZER, log_dir=tmp_path, http=True)
    a.start()
    b.start()
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


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
        _play_over(clients[1:], game, rng, moves=3)
        request = rpb.WatchGameRequest(game_id=game.game_id)
        assert a.http_port and b.http_port
        a_url, b_url = f"http://127.0.0.1:{a.http_port}", f"http://127.0.0.1:{b.http_port}"
        streams = [(_Stream(_grpc_reader, a.address, request, game.tokens[0]), game.tokens[0]),
                   (_Stream(_connect_reader, a_url, request, game.tokens[1]), game.tokens[1]),
                   (_Stream(_grpc_web_reader, a_url, request, game.spectator), game.spectator)]  # fmt: skip
        for s, _ in streams:
            assert s.started.wait(60) and s.snapshot == 3, s.end
        _play_over(clients[1:], game, rng, moves=3)
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
        _play_over(clients[1:], game, rng, moves=4)  # the game goes on meanwhile, on the other referee
        resumed = []
        for (s, token), reader, target in zip(streams, (_grpc_reader, _connect_reader, _grpc_web_reader),
                                              (b.address, b_url, b_url), strict=True):  # fmt: skip
            version, index = s.got[-1]
            again = rpb.WatchGameRequest(game_id=game.game_id, after_version=version, after_index=index)
            resumed.append(_Stream(reader, target, again, token))
        _play_over(clients[1:], game, rng)
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
