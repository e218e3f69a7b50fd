"""Spectator delay (server/delay.py): a spectator of a delayed game never receives anything of a version not yet
released, through any channel its token reaches, and gets everything, in order, by the end.

Twin games, same organizer seed, same moves: A (no delay) is the control, B has the delay. Seats play both
through a real server; B's spectator watches over native gRPC (raw bytes) and over the HTTP port (Connect JSON,
raw bodies). An Event carries no game id, so A's spectator events are byte for byte what B's spectator may get.
At every step (the game at version v, released version r):

- B's spectator streams hold exactly A's spectator events of versions <= r (complete, in order, nothing more);
- every message B's spectator got, at whatever live version it arrived, has no event of an unreleased version
  (byte scan for A's serialized events) and no card text that only unreleased versions show;
- GetGame by B's spectator is A's spectator view at version r (the game id aside); GetReplay is refused;
- a watch started now begins with that view, and cannot resume beyond r; B's seats see version v.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field

import grpc
import httpx
import pytest
from google.protobuf import json_format

from engine import card_text
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, expect_error, md
from tests.server.test_hidden_info import ALL, _find
from tests.server.webkit import SERVICE, call, connect_watch_frames

SEED = bytes(range(40, 72))
WAIT_S = 60.0  # failure bound for a stream to catch up


@dataclass
class Stream:
    """What one watch got: (the live version when it arrived, the message), and how it ended."""

    got: list[tuple[int, rpb.WatchGameResponse, bytes]] = field(default_factory=list)
    status: str = ""
    changed: threading.Condition = field(default_factory=threading.Condition)

    def add(self, live: int, message: rpb.WatchGameResponse, raw: bytes) -> None:
        with self.changed:
            self.got.append((live, message, raw))
            self.changed.notify_all()

    def end(self, status: str) -> None:
        with self.changed:
            self.status = status
            self.changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.got) >= count or bool(self.status), WAIT_S), "stalled"

    def events(self) -> list[bytes]:
        return [m.event.SerializeToString(deterministic=True) for _, m, _ in self.got if m.HasField("event")]


def grpc_stream(channel: grpc.Channel, game_id: str, token: str, live: list[int]) -> Stream:
    stream = Stream()
    method = channel.unary_stream(f"/{SERVICE}/WatchGame", request_serializer=rpb.WatchGameRequest.SerializeToString,
                                  response_deserializer=None)  # fmt: skip

    def read() -> None:
        try:
            for raw in method(rpb.WatchGameRequest(game_id=game_id), metadata=md(token)):
                stream.add(live[0], rpb.WatchGameResponse.FromString(raw), raw)
            stream.end("OK")
        except grpc.RpcError as exc:
            stream.end(exc.code().name)

    threading.Thread(target=read, daemon=True).start()
    return stream


def http_stream(http_url: str, game_id: str, token: str, live: list[int]) -> Stream:
    stream = Stream()

    def read() -> None:
        for flags, payload in connect_watch_frames(http_url, game_id, token, timeout=120.0):
            if flags & 0x02:
                stream.end("OK" if "error" not in json.loads(payload) else "error")
            else:
                stream.add(live[0], json_format.Parse(payload, rpb.WatchGameResponse()), payload)
        if not stream.status:
            stream.end("cut")

    threading.Thread(target=read, daemon=True).start()
    return stream


def _released(moves: int, until_hand_end: bool, version: int, hand_ends: list[int], over: bool) -> int:
    if over:
        return version
    released = version
    if moves:
        released = min(released, max(0, version - moves))
    if until_hand_end:
        released = min(released, max([0] + [h for h in hand_ends if h <= version]))
    return released


def _spectator_view(client: Client, game: Game) -> bytes:
    view = client.view(game, game.spectator)
    view.game_id = ""
    return view.SerializeToString(deterministic=True)


def _cards_in(data: bytes) -> frozenset[int]:
    """The cards whose text occurs in protobuf bytes (a 2-byte string)."""
    return frozenset(c for c in ALL if b"\x02" + card_text(c).encode() in data)


def _json_cards(payload: bytes, cards: frozenset[int]) -> list[str]:
    return [card_text(c) for c in cards if b'"' + card_text(c).encode() + b'"' in payload]


@pytest.mark.parametrize(("moves", "until_hand_end"), [(3, False), (0, True)], ids=["3-moves", "until-hand-end"])
def test_a_delayed_spectator_never_receives_a_move_before_its_delay(
    web: ServerThread, moves: int, until_hand_end: bool
) -> None:
    client = Client(web.address)
    delay = pb.SpectatorDelay(moves=moves, until_hand_end=until_hand_end)
    fields = {"token": ORGANIZER, "seed": SEED, "allow_spectators": True,
              "match": rpb.MatchSettings(target_score=30, max_hands=2)}  # fmt: skip
    a, b = client.create("gin", **fields), client.create("gin", **fields, spectator_delay=delay)  # type: ignore[arg-type]
    assert b.created.settings.spectator_delay == delay and not a.created.settings.HasField("spectator_delay")
    got = client.stub.GetGame(rpb.GetGameRequest(game_id=b.game_id), metadata=md(b.spectator))
    assert got.settings.spectator_delay == delay
    http = httpx.Client(base_url=web.http_url, timeout=60.0)
    live = [0]
    control = grpc_stream(client.channel, a.game_id, a.spectator, live)
    streams = {"gRPC": grpc_stream(client.channel, b.game_id, b.spectator, live),
               "HTTP": http_stream(web.http_url, b.game_id, b.spectator, live)}  # fmt: skip
    views = {0: _spectator_view(client, a)}
    hand_ends: list[int] = []
    counts: dict[int, int] = {}  # events of each version after 0
    rng = random.Random(moves)
    version, over, started_late = 0, False, False
    while True:
        released = _released(moves, until_hand_end, version, hand_ends, over)
        # the control's events up to this version, all of them (a version's events may arrive in several
        # messages: its first alone is not enough); each version's count is its answer's (every viewer gets every
        # event of a version, redacted for it, never fewer: their indexes are the same)
        due = sum(counts.values())
        with control.changed:
            assert control.changed.wait_for(lambda n=due: len(_control_events(control)) >= n, WAIT_S)
        expected = [e for e, v in zip(control.events(), _control_events(control), strict=True) if v <= released]
        for name, stream in streams.items():
            stream.wait_for(1 + len(expected))
            assert stream.events() == expected, f"{name}: not exactly the released events at version {version}"
        assert _spectator_view(client, b) == views[released]
        for protocol in ("connect-json", "grpc-web"):  # GetGame on the HTTP port: the same view
            answer = call(http, protocol, "GetGame", rpb.GetGameRequest(game_id=b.game_id), rpb.GetGameResponse,
                          b.spectator)  # fmt: skip
            answer.message.view.game_id = ""
            assert answer.message.view.SerializeToString(deterministic=True) == views[released], protocol
        for seat, token in b.tokens.items():
            assert client.view(b, token).version == version, f"seat {seat} is held back"
        if over:
            break
        with expect_error(grpc.StatusCode.PERMISSION_DENIED, "MATCH_NOT_OVER"):
            client.replay(b, b.spectator)
        if version >= 8 and not started_late:  # a watch started now: the released view, no resume beyond it
            started_late = True
            first = next(iter(client.stub.WatchGame(rpb.WatchGameRequest(game_id=b.game_id), metadata=md(b.spectator))))
            first.snapshot.game_id = ""
            assert first.snapshot.SerializeToString(deterministic=True) == views[released]
            if released < version:
                with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "VERSION_AHEAD"):
                    request = rpb.WatchGameRequest(game_id=b.game_id, after_version=released + 1)
                    next(iter(client.stub.WatchGame(request, metadata=md(b.spectator))))
        seat = client.view(a, a.tokens[0]).to_act
        move = bot_move(client.view(a, a.tokens[seat]), rng)
        live[0] = version + 1  # from now on, a message may be of the game at this version
        response = client.move(a, a.tokens[seat], move)
        client.move(b, b.tokens[seat], move)
        version = response.version
        counts[version] = len(response.events)
        assert [e.index for e in response.events] == list(range(1, counts[version] + 1))
        if any(e.kind == "hand_ended" for e in response.events):
            hand_ends.append(version)
        over = response.view.phase == pb.PHASE_MATCH_OVER
        views[version] = _spectator_view(client, a)
    assert hand_ends and version > 2 * max(moves, 1)
    _scan(streams, control, views, (moves, until_hand_end), hand_ends, version)
    for name, stream in streams.items():
        with stream.changed:
            assert stream.changed.wait_for(lambda s=stream: bool(s.status), WAIT_S), f"{name}: the stream did not end"
        assert stream.status == "OK", name
    client.replay(b, b.spectator)  # the match is over: the replay is everyone's
    client.close()
    http.close()


def test_a_spectator_delay_out_of_range_is_refused(web: ServerThread) -> None:
    client = Client(web.address)
    try:
        with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):
            client.create("gin", allow_spectators=True, spectator_delay=pb.SpectatorDelay(moves=1001))
    finally:
        client.close()


def _control_events(control: Stream) -> list[int]:
    return [m.event.version for _, m, _ in control.got if m.HasField("event")]


def _scan(streams: dict[str, Stream], control: Stream, views: dict[int, bytes], delay: tuple[int, bool],
          hand_ends: list[int], last: int) -> None:  # fmt: skip
    """No message of B's spectator, at the live version it arrived, holds an unreleased event, or a card that only
    unreleased versions show (not in the released events, nor in the spectator's view of the released version)."""
    moves, until_hand_end = delay
    events = list(zip(_control_events(control), control.events(), strict=True))

    def public_at(released: int) -> frozenset[int]:
        return _cards_in(b"".join(e for v, e in events if v <= released) + views[released])

    cards_of_later: dict[int, frozenset[int]] = {}
    checked = 0
    for name, stream in streams.items():
        for live, message, raw in stream.got:
            released = _released(moves, until_hand_end, live, hand_ends, live == last)
            if message.HasField("event"):
                assert message.event.version <= released, f"{name}: version {message.event.version} at {live}"
            for version, data in events:
                if version > released:
                    assert data not in raw, f"{name}: an event of version {version} at live version {live}"
            if released not in cards_of_later:
                later = _cards_in(b"".join(e for v, e in events if v > released))
                cards_of_later[released] = later - public_at(released)
            hidden = cards_of_later[released]
            leaks = _find(raw, hidden) if name == "gRPC" else _json_cards(raw, hidden)
            assert not leaks, f"{name}: cards {leaks} of unreleased moves at live version {live}"
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("delay", [pb.SpectatorDelay(moves=2), pb.SpectatorDelay(until_hand_end=True)])
def test_a_delayed_spectator_sees_the_clocks_of_the_released_version(web: ServerThread,
                                                                     delay: pb.SpectatorDelay) -> None:  # fmt: skip
    """The clocks are held back with the rest: a delayed spectator's view (GetGame, and a watch's snapshot) at
    version r showed the live game's clocks, which said whose decision runs now and since when (each move's time,
    as it was made), though the view was of version r. Now they are the clocks the seats saw at version r."""
    client = Client(web.address)
    try:
        per_move = pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=600_000))
        game = client.create("gin", allow_spectators=True, spectator_delay=delay, time_control=per_move)
        seat_views = {0: client.view(game, game.tokens[1])}
        rng = random.Random(7)
        for version in range(1, 6):
            mover = game.tokens[seat_views[version - 1].to_act]
            client.move(game, mover, bot_move(client.view(game, mover), rng))
            seat_views[version] = client.view(game, game.tokens[1])
        spectator = client.view(game, game.spectator)
        assert spectator.version < 5
        released = seat_views[spectator.version]
        assert list(spectator.clocks) == list(released.clocks), (spectator.clocks, released.clocks)
        assert spectator.deadline_ms == released.deadline_ms
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.spectator),
                                       timeout=30)  # fmt: skip
        try:
            snapshot = next(stream).snapshot
        finally:
            stream.cancel()
        assert snapshot.version == spectator.version and list(snapshot.clocks) == list(released.clocks)
    finally:
        client.close()
