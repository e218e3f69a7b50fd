"""Idempotent moves: a request_id resent returns the first response and applies nothing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    expect_error,
    md,
    move_from_text,
)

DRAW = move_from_text("draw stock")


def _knock_game(client: Client) -> Game:
    return client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])


def _events_of(client: Client, game: Game) -> list[tuple[int, int, str]]:
    """The events of the moves (version 0, the first deal, left out)."""
    return [(e.version, e.index, e.kind) for page in client.replay(game) for e in page.events if e.version]


def test_one_move_sent_ten_times_in_sequence_is_applied_once(client: Client) -> None:
    game = _knock_game(client)
    request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-1")
    responses = [client.stub.SubmitMove(request, metadata=md(game.tokens[1])) for _ in range(10)]
    assert len({r.SerializeToString(deterministic=True) for r in responses}) == 1
    assert responses[0].version == 1
    assert client.view(game, game.tokens[1]).version == 1
    assert _events_of(client, game) == [(1, 1, "drew")]


def test_one_move_sent_ten_times_concurrently_is_applied_once(referee_server: ServerThread) -> None:
    clients = [Client(referee_server.address) for _ in range(10)]
    try:
        game = _knock_game(clients[0])
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="draw-concurrent")
        barrier = threading.Barrier(10)

        def send(c: Client) -> bytes:
            barrier.wait()
            response = c.stub.SubmitMove(request, metadata=md(game.tokens[1]))
            return bytes(response.SerializeToString(deterministic=True))

        with ThreadPoolExecutor(10) as pool:
            responses = list(pool.map(send, clients))
        assert len(set(responses)) == 1
        assert clients[0].view(game, game.tokens[1]).version == 1
        assert _events_of(clients[0], game) == [(1, 1, "drew")]
    finally:
        for c in clients:
            c.close()


def test_the_same_key_with_another_move_is_refused_and_changes_nothing(client: Client) -> None:
    game = _knock_game(client)
    first = client.move(game, game.tokens[1], DRAW, request_id="k")
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "IDEMPOTENCY_KEY_REUSED"):
        client.move(game, game.tokens[1], move_from_text("discard KC"), request_id="k")
    assert client.view(game, game.tokens[1]).version == first.version == 1


def test_a_resent_request_gets_its_first_response_after_later_moves(client: Client) -> None:
    game = _knock_game(client)
    first = client.move(game, game.tokens[1], DRAW, request_id="a", expected_version=0)
    client.move(game, game.tokens[1], move_from_text("discard KC"), request_id="b")
    again = client.move(game, game.tokens[1], DRAW, request_id="a", expected_version=0)
    assert again == first


def test_keys_are_per_seat(client: Client) -> None:
    """Seat 0 reusing seat 1's key gets its own move applied, never seat 1's stored response (which holds the
    card seat 1 drew)."""
    game = _knock_game(client)
    drew = client.move(game, game.tokens[1], DRAW, request_id="same")
    client.move(game, game.tokens[1], move_from_text("discard KC"))
    mine = client.move(game, game.tokens[0], DRAW, request_id="same")
    assert mine.version == 3 and drew.version == 1
    assert mine.view.viewer_seat == 0
