"""WatchGame: snapshot then live events; a cut stream resumed from its last position gets every later event
exactly once; spectators get the spectator view; the stream ends with the match."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Iterator

import grpc

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, Game, md, play

Position = tuple[int, int]


def _all_positions(client: Client, game: Game) -> list[Position]:
    """Positions of every event of the moves (the first deal, version 0, is in the snapshot of a watch)."""
    return [(e.version, e.index) for page in client.replay(game) for e in page.events if e.version]


def _new_game(client: Client, seed: int, **fields: object) -> Game:
    return client.create(
        "gin", token=ORGANIZER, seed=bytes([seed]) * 16, match=rpb.MatchSettings(target_score=30), **fields
    )


def _watch(client: Client, game: Game, token: str, **fields: int) -> Iterator[rpb.WatchGameResponse]:
    stream: Iterator[rpb.WatchGameResponse] = client.stub.WatchGame(
        rpb.WatchGameRequest(game_id=game.game_id, **fields), metadata=md(token)
    )
    return stream


def test_snapshot_then_every_event_until_the_match_ends(client: Client) -> None:
    game = _new_game(client, 1)
    play(client, game, random.Random(1), moves=3)
    stream = _watch(client, game, game.tokens[0])
    first = next(stream)
    assert first.WhichOneof("update") == "snapshot"
    assert first.snapshot.version == 3 and first.snapshot.viewer_seat == 0 and first.snapshot.hand
    received: list[rpb.WatchGameResponse] = []
    reader = threading.Thread(target=lambda: received.extend(stream))  # ends when the stream ends
    reader.start()
    play(client, game, random.Random(2))
    reader.join(30)
    assert not reader.is_alive(), "the stream did not end with the match"
    assert all(m.WhichOneof("update") == "event" for m in received)
    assert [(m.event.version, m.event.index) for m in received] == [p for p in _all_positions(client, game) if p[0] > 3]
    assert received[-1].event.kind == "match_ended"


def _cut_and_resume(client: Client, game: Game, token: str, *, cut_after: int, exact: bool) -> list[Position]:
    """Read ``cut_after`` events, cut the stream, let the game go on, then resume from the last event received
    (``exact``: its version and index; else the last whole version) and read to the end."""
    stream = _watch(client, game, token, after_version=0)
    got: list[Position] = []
    for message in stream:
        got.append((message.event.version, message.event.index))
        if len(got) == cut_after:
            break
    stream.cancel()  # type: ignore[attr-defined]
    play(client, game, random.Random(3), moves=25)
    last_version, last_index = got[-1]
    if exact:
        resumed = _watch(client, game, token, after_version=last_version, after_index=last_index)
    else:
        got = [p for p in got if p[0] < last_version]  # the last version may be partial: take it again whole
        resumed = _watch(client, game, token, after_version=last_version - 1)
    reader_got: list[Position] = []
    reader = threading.Thread(target=lambda: reader_got.extend((m.event.version, m.event.index) for m in resumed))
    reader.start()
    play(client, game, random.Random(4))
    reader.join(30)
    assert not reader.is_alive()
    return got + reader_got


def test_a_cut_stream_resumed_from_its_last_event_gets_every_later_event_exactly_once(client: Client) -> None:
    game = _new_game(client, 5)
    rng = random.Random(5)
    # play on until some version holds several events (a hand ended), and cut after the first of them
    while not (cuts := [i for i, (p, q) in enumerate(itertools.pairwise(_all_positions(client, game)), 1)
                        if p[0] == q[0]]):  # fmt: skip
        play(client, game, rng, moves=1)
    cut = cuts[0]
    got = _cut_and_resume(client, game, game.tokens[1], cut_after=cut, exact=True)
    assert got == _all_positions(client, game)


def test_a_stream_resumed_from_a_whole_version_gets_every_later_event_exactly_once(client: Client) -> None:
    game = _new_game(client, 6)
    play(client, game, random.Random(6), moves=10)
    got = _cut_and_resume(client, game, game.tokens[0], cut_after=7, exact=False)
    assert got == _all_positions(client, game)


def test_a_spectator_watches_the_spectator_view(client: Client) -> None:
    game = _new_game(client, 7, allow_spectators=True)
    stream = _watch(client, game, game.spectator)
    snapshot = next(stream).snapshot
    assert snapshot.viewer_role == pb.ROLE_SPECTATOR and not snapshot.HasField("viewer_seat")
    assert not snapshot.hand and not snapshot.legal_moves and not snapshot.hands and not snapshot.stock
    play(client, game, random.Random(7), moves=6)
    for _ in range(6):
        event = next(stream).event
        if event.kind == "drew" and event.data["source"] == "stock":
            assert "card" not in event.data
    stream.cancel()  # type: ignore[attr-defined]


def test_watching_a_finished_game_replays_its_events_and_ends(client: Client) -> None:
    game = _new_game(client, 8)
    play(client, game, random.Random(8))
    every = [(m.event.version, m.event.index) for m in _watch(client, game, game.tokens[0], after_version=0)]
    assert every == _all_positions(client, game)
    assert [m.WhichOneof("update") for m in _watch(client, game, game.tokens[0])] == ["snapshot"]


def test_resuming_from_a_version_not_reached_yet_is_refused(client: Client) -> None:
    game = _new_game(client, 9)
    try:
        next(_watch(client, game, game.tokens[0], after_version=99))
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
    else:
        raise AssertionError("a watch from the future was accepted")


def test_replay_pages_hold_whole_versions_and_add_up_to_the_game(client: Client) -> None:
    game = _new_game(client, 10)
    play(client, game, random.Random(10))
    whole = [(e.version, e.index, e.kind) for page in client.replay(game) for e in page.events]
    paged: list[tuple[int, int, str]] = []
    request = rpb.GetReplayRequest(game_id=game.game_id, max_events=3)
    while True:
        page = client.stub.GetReplay(request)  # the match is over: anyone may ask, without a token
        events = [(e.version, e.index, e.kind) for e in page.events]
        assert events, "an empty page before the end"
        assert len(events) <= 3 or len({v for v, _, _ in events}) == 1  # over the limit only for one big version
        assert not paged or paged[-1][0] < events[0][0], "a version split over two pages"
        paged += events
        if not page.HasField("next_after_version"):
            break
        assert page.next_after_version == events[-1][0]
        request = rpb.GetReplayRequest(game_id=game.game_id, max_events=3, after_version=page.next_after_version)
    assert paged == whole
    assert page.current.phase == pb.PHASE_MATCH_OVER and len(page.initial.hands) == 2 and page.initial.stock
