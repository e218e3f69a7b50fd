"""Resign through a real referee and Redis: any seat, any time, idempotent, racing a move, never a spectator."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.protobuf import json_format

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, expect_error, md


def _resign(client: Client, game: Game, token: str, **fields: object) -> rpb.ResignResponse:
    response: rpb.ResignResponse = client.stub.Resign(
        rpb.ResignRequest(game_id=game.game_id, **fields), metadata=md(token)  # type: ignore[arg-type]
    )
    return response


def _play(client: Client, game: Game, moves: int, seed: int = 1) -> pb.GameView:
    """A few moves by the seats to act (quick legal choices); the view of the seat to act after them."""
    rng = random.Random(seed)
    view = client.view(game, game.tokens[0])
    for _ in range(moves):
        token = game.tokens[view.to_act]
        view = client.move(game, token, bot_move(client.view(game, token), rng)).view
        assert view.phase != pb.PHASE_MATCH_OVER
    return client.view(game, game.tokens[view.to_act])


def _kinds(events: object) -> list[str]:
    return [e.kind for e in events]  # type: ignore[attr-defined]


def _replay_events(client: Client, game: Game, token: str | None = ORGANIZER) -> list[tuple[int, int, str]]:
    return [(e.version, e.index, e.kind) for page in client.replay(game, token) for e in page.events]


@pytest.mark.parametrize("by_seat_to_act", [True, False])
def test_gin_resign_by_either_seat_ends_the_match_and_the_other_wins(client: Client, by_seat_to_act: bool) -> None:
    game = client.create("gin")
    view = _play(client, game, 3)
    seat = view.to_act if by_seat_to_act else 1 - view.to_act
    response = _resign(client, game, game.tokens[seat])
    assert response.version == view.version + 1
    assert _kinds(response.events) == ["resigned", "hand_ended", "match_ended"]
    assert response.events[0].seat == seat
    result = response.view.result
    assert response.view.phase == pb.PHASE_MATCH_OVER and not response.view.HasField("to_act")
    assert list(result.winners) == [1 - seat]
    assert result.ended == pb.MATCH_END_RESIGNED and result.resigned_seat == seat
    ends = [pb.SEAT_END_FINISHED, pb.SEAT_END_FINISHED]
    ends[seat] = pb.SEAT_END_RESIGNED
    assert list(result.seat_ends) == ends
    assert response.view.last_hand.reason == "resigned" and not response.view.last_hand.HasField("winner")
    # every view and the replay (open to the seats now) show the same end
    other = client.view(game, game.tokens[1 - seat])
    assert other.result == result and other.version == response.version
    kinds = [k for _, _, k in _replay_events(client, game, game.tokens[1 - seat])]
    assert kinds[-3:] == ["resigned", "hand_ended", "match_ended"]


def test_a_match_played_to_its_end_says_completed_for_every_seat(client: Client) -> None:
    game = client.create("gin", options={"target_score": pb.OptionValue(int_value=1)})
    rng = random.Random(2)
    view = client.view(game, game.tokens[0])
    while view.phase != pb.PHASE_MATCH_OVER:
        token = game.tokens[view.to_act]
        view = client.move(game, token, bot_move(client.view(game, token), rng)).view
    assert view.result.ended == pb.MATCH_END_COMPLETED
    assert list(view.result.seat_ends) == [pb.SEAT_END_FINISHED] * 2 and not view.result.HasField("resigned_seat")


def test_hollywood_resign_the_other_player_wins(client: Client) -> None:
    game = client.create("hollywood-gin")
    _play(client, game, 4)
    response = _resign(client, game, game.tokens[1])
    assert list(response.view.result.winners) == [0]
    assert list(response.view.result.seat_ends) == [pb.SEAT_END_FINISHED, pb.SEAT_END_RESIGNED]


def test_rummy_three_seats_resign_by_a_seat_not_to_act(client: Client) -> None:
    game = client.create("rummy", names=("Ann", "Bob", "Cy"))
    view = _play(client, game, 5)
    seat = (view.to_act + 1) % 3
    response = _resign(client, game, game.tokens[seat])
    result = response.view.result
    others = [i for i in range(3) if i != seat]
    top = max(result.totals[i] for i in others)
    assert list(result.winners) == [i for i in others if result.totals[i] == top]
    assert [e == pb.SEAT_END_RESIGNED for e in result.seat_ends] == [i == seat for i in range(3)]
    assert _kinds(response.events) == ["resigned", "hand_ended", "match_ended"]


def test_resign_resent_with_its_request_id_answers_the_same_bytes(client: Client) -> None:
    game = client.create("gin")
    first = _resign(client, game, game.tokens[0], request_id="resign-1")
    again = [_resign(client, game, game.tokens[0], request_id="resign-1") for _ in range(3)]
    assert {r.SerializeToString(deterministic=True) for r in again} == {first.SerializeToString(deterministic=True)}
    assert client.view(game, game.tokens[0]).version == first.version


def test_a_second_resign_answers_the_same_outcome_and_changes_nothing(client: Client) -> None:
    game = client.create("gin")
    _play(client, game, 2)
    first = _resign(client, game, game.tokens[1])
    before = _replay_events(client, game)
    second = _resign(client, game, game.tokens[1])
    assert second.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    assert _replay_events(client, game) == before
    # the other seat cannot resign a match that is over
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER"):
        _resign(client, game, game.tokens[0])
    assert _replay_events(client, game) == before


def test_a_spectator_cannot_resign(client: Client) -> None:
    game = client.create("gin", allow_spectators=True)
    with expect_error(grpc.StatusCode.PERMISSION_DENIED, "SPECTATOR"):
        _resign(client, game, game.spectator)
    with expect_error(grpc.StatusCode.UNAUTHENTICATED):
        client.stub.Resign(rpb.ResignRequest(game_id=game.game_id))
    with expect_error(grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN"):
        _resign(client, game, "st_not-a-token")
    assert client.view(game, game.tokens[0]).version == 0


def test_resign_with_a_stale_expected_version_is_aborted(client: Client) -> None:
    game = client.create("gin")
    _play(client, game, 1)
    with expect_error(grpc.StatusCode.ABORTED, "VERSION_MISMATCH"):
        _resign(client, game, game.tokens[0], expected_version=0)
    assert client.view(game, game.tokens[0]).phase != pb.PHASE_MATCH_OVER


def test_resign_racing_a_move_exactly_one_order_applies(referee_server: ServerThread) -> None:
    clients = [Client(referee_server.address) for _ in range(2)]
    try:
        for trial in range(8):
            game = clients[0].create("gin")
            view = clients[0].view(game, game.tokens[1])  # dealer 0: seat 1 acts first
            move = view.legal_moves[0]
            barrier = threading.Barrier(2)

            def play_move(
                c: Client = clients[0], g: Game = game, m: pb.Move = move, b: threading.Barrier = barrier
            ) -> int | str:
                b.wait()
                try:
                    return c.move(g, g.tokens[1], m).version
                except grpc.RpcError as exc:
                    assert exc.code() == grpc.StatusCode.FAILED_PRECONDITION, exc.details()
                    return "refused"

            def resign(
                c: Client = clients[1], g: Game = game, seat: int = trial % 2, b: threading.Barrier = barrier
            ) -> int:
                b.wait()
                return _resign(c, g, g.tokens[seat]).version

            with ThreadPoolExecutor(2) as pool:
                moved, resigned = pool.submit(play_move), pool.submit(resign)
                moved_version, resign_version = moved.result(), resigned.result()
            kinds = [(v, k) for v, _, k in _replay_events(clients[0], game) if v]
            if moved_version == "refused":  # the resignation came first: the move found the match over
                assert resign_version == 1 and kinds[0] == (1, "resigned")
            else:
                assert moved_version == 1 and resign_version == 2
                assert kinds[0][0] == 1 and kinds[0][1] != "resigned" and (2, "resigned") in kinds
            assert kinds[-1] == (resign_version, "match_ended")
    finally:
        for c in clients:
            c.close()


def test_resigned_event_carries_no_card_and_the_end_of_hand_reveals_every_hand(client: Client) -> None:
    game = client.create("gin", allow_spectators=True)
    _play(client, game, 2)
    hidden = client.view(game, game.spectator)
    assert not hidden.hands  # nothing of the hands before the end
    response = _resign(client, game, game.tokens[0])
    resigned = json_format.MessageToDict(response.events[0].data)
    assert set(resigned) == {"hand_no", "phase"} and response.events[0].seat == 0
    # the hand ends as every hand ends: every hand face up, for everyone (the match is over)
    spectator_view = client.view(game, game.spectator)
    assert sum(len(h.cards) for h in spectator_view.last_hand.hands) in (20, 21)
    assert spectator_view.result.ended == pb.MATCH_END_RESIGNED


def test_watchers_see_the_resignation_and_their_streams_end(client: Client) -> None:
    game = client.create("gin", allow_spectators=True)
    _play(client, game, 2)
    streams = {
        name: client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token))
        for name, token in (("seat", game.tokens[0]), ("spectator", game.spectator))
    }
    received: dict[str, list[rpb.WatchGameResponse]] = {name: [next(s)] for name, s in streams.items()}  # snapshots
    readers = [
        threading.Thread(target=lambda n=name, s=s: received[n].extend(s)) for name, s in streams.items()  # type: ignore[misc]
    ]
    for r in readers:
        r.start()
    response = _resign(client, game, game.tokens[1])
    for r in readers:
        r.join(60)
        assert not r.is_alive(), "a stream did not end with the match"
    for messages in received.values():
        assert messages[0].WhichOneof("update") == "snapshot"
        events = [m.event for m in messages[1:]]
        assert [(e.version, e.kind) for e in events] == [
            (response.version, "resigned"), (response.version, "hand_ended"), (response.version, "match_ended"),
        ]
        assert events[-1].data.fields["ended"].string_value == "resigned"


def test_codec_names_the_ending_of_every_result() -> None:
    from server import codec

    older = {"totals": [120, 40], "winners": [0], "detail": {"boxes": [3, 1]}}  # stored before results named it
    proto = codec._match_result(older)
    assert proto.ended == pb.MATCH_END_COMPLETED and list(proto.seat_ends) == [pb.SEAT_END_FINISHED] * 2
    assert not proto.HasField("resigned_seat") and "ended" not in json_format.MessageToDict(proto.details)
    resigned = {**older, "ended": "resigned", "resigned": 1, "seat_ends": ["finished", "resigned"]}
    proto = codec._match_result(resigned)
    assert proto.ended == pb.MATCH_END_RESIGNED and proto.resigned_seat == 1
    assert list(proto.seat_ends) == [pb.SEAT_END_FINISHED, pb.SEAT_END_RESIGNED]
    assert set(json_format.MessageToDict(proto.details)) == {"detail"}
